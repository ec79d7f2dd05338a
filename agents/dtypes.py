"""``dtype: auto``: bfloat16 where the hardware computes it natively, float32 elsewhere.

bf16 halves memory traffic, but on a CPU without native bf16 matrix units it is emulated and
far slower than fp32 (measured on an AMD EPYC without them: a 1,000-token update 15.5 + 195.7 s
under bf16 autocast vs 3.0 + 5.4 s in fp32). The rule, and the measurements it rests on, are in
the README's "Which dtype" table; runs record what ``auto`` became (``describe()`` of an agent,
the trainer's ``run.json``).
"""

from __future__ import annotations

import os
from pathlib import Path

DTYPES = ("auto", "float32", "bfloat16", "float16")

# CPU flags (as /proc/cpuinfo names them) that mean bf16 matrix products run in hardware fast enough
# to beat fp32 (see the module docstring and the README for what was measured where).
NATIVE_BF16_FLAGS = frozenset({"amx_bf16"})


def cpu_flags(cpuinfo: str | None = None) -> frozenset[str]:
    """The CPU's feature flags (from /proc/cpuinfo; empty where it cannot be read)."""
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text()
        except OSError:
            return frozenset()
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("flags", "Features"):
            return frozenset(value.split())
    return frozenset()


def native_bf16(flags: frozenset[str] | None = None) -> bool:
    """Whether this CPU computes bf16 matrix products natively (see `NATIVE_BF16_FLAGS`)."""
    return bool(NATIVE_BF16_FLAGS & (cpu_flags() if flags is None else flags))


def resolve_dtype(dtype: str, device: str, flags: frozenset[str] | None = None) -> str:
    """The dtype to use: `dtype` itself, or for ``auto`` bfloat16 on a GPU or a native-bf16 CPU, else float32."""
    if dtype not in DTYPES:
        raise ValueError(f"dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
    if dtype != "auto":
        return dtype
    if device.startswith("cuda"):
        return "bfloat16"
    return "bfloat16" if native_bf16(flags) else "float32"


def machine(cpuinfo: str | None = None) -> dict[str, object]:
    """What a result file records about the CPU a dtype was chosen on (model, bf16-related flags, cores)."""
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text()
        except OSError:
            cpuinfo = ""
    model = next(
        (line.partition(":")[2].strip() for line in cpuinfo.splitlines() if line.startswith("model name")), "unknown"
    )
    flags = cpu_flags(cpuinfo)
    return {
        "cpu_model": model,
        "bf16_flags": sorted(flags & {"amx_bf16", "amx_tile", "avx512_bf16", "avx512f"}),
        "native_bf16": native_bf16(flags),
        "cpu_count": os.cpu_count(),
    }
