"""BFCL's memory backends with their state kept in the env instead of BFCL's snapshot folders.

Each class derives from bfcl-eval's own (``func_source_code/memory_kv.py``, ``memory_rec_sum.py``), so
every tool call runs BFCL's code; only the two methods that read and write ``memory_snapshot/`` files
are replaced: ``_load_scenario`` takes a snapshot (the JSON object BFCL's flush would have written) and
`snapshot` returns one. A snapshot is plain JSON: ``{"core_memory": {...}, "archival_memory": {...}}``
for ``kv``, ``{"memory": "..."}`` for ``rec_sum``, exactly the content of BFCL's ``{scenario}_final.json``.

``vector`` needs ``sentence-transformers`` and ``faiss-cpu`` and a cached ``all-MiniLM-L6-v2`` encoder
(bfcl-eval loads it when its module is imported); it is refused with what to install otherwise.
"""

from __future__ import annotations

import copy
import importlib.util
from functools import cache
from typing import Any

from tooluse_gym.errors import ToolUseGymError
from tooluse_gym.tasks.bfcl import _import

_MODULE = "bfcl_eval.eval_checker.multi_turn_eval.func_source_code.memory_{}"
_STATE_KEYS = {"MemoryAPI_kv": ("core_memory", "archival_memory"), "MemoryAPI_rec_sum": ("memory",)}
VECTOR_NEEDS = ("sentence_transformers", "faiss")

__all__ = ["MemoryBackendUnavailable", "check_snapshot", "memory_backend", "snapshot", "vector_available"]


class MemoryBackendUnavailable(ToolUseGymError, ValueError):
    """A memory backend whose dependencies are not installed."""


def vector_available() -> bool:
    """Whether ``memory_vector`` can run here (its encoder libraries import; the weights are BFCL's to load)."""
    return all(importlib.util.find_spec(m) is not None for m in VECTOR_NEEDS)


@cache
def memory_backend(name: str) -> type:
    """The env's class for BFCL's memory backend `name` (``MemoryAPI_kv``, ``MemoryAPI_rec_sum``).

    Raises:
        MemoryBackendUnavailable: ``MemoryAPI_vector`` without its libraries; any other unknown name.
    """
    if name == "MemoryAPI_vector":
        missing = [m for m in VECTOR_NEEDS if importlib.util.find_spec(m) is None]
        raise MemoryBackendUnavailable(
            "memory_vector needs " + " and ".join(missing or VECTOR_NEEDS) + " (pip install sentence-transformers "
            "faiss-cpu==1.11.0) and the all-MiniLM-L6-v2 encoder in the local cache; it is not run by this "
            "version: play memory_kv and memory_rec_sum (BFCL counts a category not run as 0 in Overall)"
        )
    if name not in _STATE_KEYS:
        raise MemoryBackendUnavailable(f"unknown memory backend {name!r}; expected one of {', '.join(_STATE_KEYS)}")
    base = getattr(_import(_MODULE.format(name.removeprefix("MemoryAPI_"))), name)
    keys = _STATE_KEYS[name]

    def _load_scenario(self: Any, initial_config: dict[str, Any], long_context: bool = False) -> None:
        for key in keys:
            if key in initial_config:
                setattr(self, key, copy.deepcopy(initial_config[key]))

    def _flush_memory_to_local_file(self: Any) -> None:
        raise RuntimeError("the env keeps memory snapshots itself (tooluse_gym.tools.memory.snapshot)")

    return type(
        name,
        (base,),
        {
            "_load_scenario": _load_scenario,
            "_flush_memory_to_local_file": _flush_memory_to_local_file,
            "__module__": __name__,
            "__doc__": base.__doc__,
        },
    )


def snapshot(instance: Any) -> dict[str, Any]:
    """The memory's state as BFCL's flush writes it (a deep copy: later calls do not change it)."""
    return {key: copy.deepcopy(getattr(instance, key)) for key in _STATE_KEYS[type(instance).__name__]}


def check_snapshot(backend: str, state: Any, source: str) -> dict[str, Any]:
    """`state` as a snapshot of `backend`, or a `ValueError` naming `source` and what is wrong with it."""
    keys = _STATE_KEYS.get(backend)
    if keys is None:
        raise ValueError(f"{source}: no snapshot format for {backend}")
    if not isinstance(state, dict) or set(state) != set(keys):
        got = sorted(state) if isinstance(state, dict) else type(state).__name__
        raise ValueError(f"{source}: not a {backend} snapshot (expected keys {list(keys)}, got {got})")
    for key in keys:
        want = str if key == "memory" else dict
        if not isinstance(state[key], want):
            raise ValueError(f"{source}: {key} must be a {want.__name__}, got {type(state[key]).__name__}")
    return state
