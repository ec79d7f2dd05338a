"""BFCL's memory backends used as BFCL uses them, for differential tests of `tooluse_gym.tools.memory`.

`bfcl_memory_run` plays a chain of prerequisite sessions, then one question, on bfcl-eval's own class
(``MemoryAPI_kv`` / ``MemoryAPI_rec_sum``) the way its inference does: a fresh instance per entry,
``_load_scenario`` with the initial config ``populate_initial_settings_for_memory_test_cases`` builds
(``model_result_dir``, ``scenario``, ``test_id``, ``test_category``) so that ``_prepare_snapshot``
finds the previous entry's ``{scenario}_final.json`` in a scratch result folder, the calls, and at the
end of a prerequisite entry ``_flush_memory_to_local_file`` (``base_handler.py``); question entries
are not flushed. `ours_memory_run` plays the same on the env's classes from in-memory snapshots.

Each returns one `EntryRun` per entry: the core-memory text BFCL puts in the system prompt at the
entry's start and at its end, every call's result as a string (`stringify_result`, or BFCL's
``Error during execution: ...`` for an exception) and the state after the entry (the JSON text BFCL
wrote; ours as ``json.dumps(snapshot, indent=4)``, as BFCL's flush writes it).
"""

from __future__ import annotations

import copy
import json
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tooluse_gym.tasks.bfcl import _import
from tooluse_gym.tools.memory import memory_backend, snapshot
from tooluse_gym.tools.runtime import stringify_result

__all__ = ["Call", "EntryRun", "bfcl_class", "bfcl_memory_run", "ours_memory_run"]

Call = tuple[str, dict[str, Any]]


@dataclass(frozen=True)
class EntryRun:
    """One entry's observable effects (see the module)."""

    entry_id: str
    dump_before: str
    results: tuple[str, ...]
    dump_after: str
    state: str | None


def bfcl_class(backend: str) -> type:
    """bfcl-eval's own class (``MemoryAPI_kv`` -> ``func_source_code/memory_kv.py``'s)."""
    module = _import("bfcl_eval.eval_checker.multi_turn_eval.func_source_code.memory_" + backend.split("_", 1)[1])
    return getattr(module, backend)


def _category(backend: str) -> str:
    return "memory_" + backend.split("_", 1)[1]


def _entry_ids(backend: str, scenario: str, sessions: int) -> list[str]:
    category = _category(backend)
    return [f"{category}_prereq_{i}-{scenario}-{i}" for i in range(sessions)] + [f"{category}_0-{scenario}-0"]


def _call(instance: Any, call: Call) -> str:
    name, kwargs = call
    try:
        return stringify_result(getattr(instance, name)(**copy.deepcopy(kwargs)))
    except Exception as e:  # BFCL's executor's text for a call that raised
        return f"Error during execution: {e}"


def bfcl_memory_run(backend: str, entries: list[list[Call]], scenario: str = "customer") -> list[EntryRun]:
    """`entries`' calls on BFCL's class: all but the last are prerequisite sessions, the last a question."""
    utils = _import("bfcl_eval.utils")
    ids = _entry_ids(backend, scenario, len(entries) - 1)
    runs = []
    with tempfile.TemporaryDirectory(prefix="bfcl-memory-") as scratch:
        root = Path(scratch)
        for entry_id, calls in zip(ids, entries, strict=True):
            config = {
                "model_result_dir": root,
                "scenario": scenario,
                "test_id": entry_id,
                "test_category": utils.extract_test_category_from_id(entry_id),
            }
            instance = bfcl_class(backend)()
            instance._load_scenario(copy.deepcopy(config))
            before = instance._dump_core_memory_to_context()
            results = tuple(_call(instance, c) for c in calls)
            after = instance._dump_core_memory_to_context()
            state = None
            if utils.is_memory_prereq(entry_id):
                instance._flush_memory_to_local_file()
                state = instance.latest_snapshot_file.read_text(encoding="utf-8")
                assert (instance.snapshot_folder / f"{entry_id}.json").read_text(encoding="utf-8") == state
            runs.append(EntryRun(entry_id, before, results, after, state))
    return runs


def ours_memory_run(backend: str, entries: list[list[Call]], scenario: str = "customer") -> list[EntryRun]:
    """The same on `memory_backend(backend)`: each entry loads the snapshot the previous session left."""
    ids = _entry_ids(backend, scenario, len(entries) - 1)
    memory: dict[str, Any] | None = None
    runs = []
    for n, (entry_id, calls) in enumerate(zip(ids, entries, strict=True)):
        instance = memory_backend(backend)()
        instance._load_scenario(copy.deepcopy(memory or {}))
        before = instance._dump_core_memory_to_context()
        results = tuple(_call(instance, c) for c in calls)
        after = instance._dump_core_memory_to_context()
        state = None
        if n < len(entries) - 1:
            memory = snapshot(instance)
            state = json.dumps(memory, indent=4)
        runs.append(EntryRun(entry_id, before, results, after, state))
    return runs
