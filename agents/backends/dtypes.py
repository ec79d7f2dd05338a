"""``dtype: auto``: bfloat16 where the hardware computes it natively, float32 elsewhere.

bf16 halves memory traffic, but on a CPU without native bf16 instructions it is emulated and
far slower than fp32 (measured on an AMD EPYC without them: a 1,000-token update 15.5 + 195.7 s
under bf16 autocast vs 3.0 + 5.4 s in fp32); with AVX-512 BF16 or AMX it is faster (`NATIVE_BF16_FLAGS`).
bf16 logits on a CPU move with the batch's composition, so a run that must replay exactly pins
float32. The measurements are in benchmarks/results/dtype_cpu.json; runs record what ``auto``
became (an agent's ``describe()``, the trainer's ``runtime.json``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

DTYPES = ("auto", "float32", "bfloat16", "float16")
DTYPE_HELP = "local backends' dtype; auto: bfloat16 on a GPU or a CPU with native bf16 (AMX, AVX-512 BF16), else fp32"
"""The ``--dtype`` help of every command that loads a model (`tooluse eval`, `tooluse train prefilter`)."""

# CPU flags (as /proc/cpuinfo names them) that mean bf16 matrix products run in hardware fast enough
# to beat fp32. Measured (`benchmarks/dtype_cpu.py`, benchmarks/results/dtype_cpu.json): on a 2-core AMD
# EPYC with avx512_bf16 and no AMX, bf16 over fp32 was 1.33x (vLLM rollouts one at a time), 1.20x (8 at
# once) and 1.58x (a 1,000-token update); on an Intel Xeon with AMX, vLLM rollouts 1.51x / 1.32x (README);
# on an AMD EPYC without either flag bf16 was emulated and 2-25x slower than fp32.
NATIVE_BF16_FLAGS = frozenset({"amx_bf16", "avx512_bf16"})


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


def autocast(device: str, dtype: str | None) -> Any:
    """``torch.autocast`` to `dtype` on `device`'s type (``cuda:1`` -> ``cuda``); a no-op context for None."""
    import contextlib

    import torch

    if dtype is None:
        return contextlib.nullcontext()
    return torch.autocast(device_type=str(device).split(":")[0], dtype=getattr(torch, dtype))


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
