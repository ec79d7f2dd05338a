"""Start an episode's simulator instances from a snapshot of freshly loaded ones instead of loading them again.

Loading a BFCL simulator (`_load_scenario`) deep-copies its module's default state in Python,
much of the cost of a new episode, and gives the same instance every time for a task. An env
keeps, per task and backend, a snapshot taken right after an instance was loaded (before any
call): its attributes as one `marshal` blob, with the state of each `random.Random` among them
kept aside. Restoring makes a new instance (without `__init__`) whose attributes are read back
from the blob: equal values of the same types, in the same order, an object held by two
attributes held by both again, nothing shared with the snapshot or with any other episode; each
generator carries on from its saved state.

Only backends whose hooks allow it (`BackendHooks.snapshots`) are snapshotted: their instances
hold builtin data that marshal copies exactly (dicts, lists, tuples, sets, strings, numbers,
booleans, None: never a bytearray or another buffer, which marshal would turn into bytes) and
generators, at the top level only. An instance holding anything else is declined (BFCL's
GorillaFileSystem, whose directories are objects) and loaded for every episode.
"""

from __future__ import annotations

import marshal
import random
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from tooluse_gym.tasks.task import Task


@dataclass(frozen=True)
class _Snapshot:
    task: Task
    cls: type[Any]
    blob: bytes | None  # None: declined
    generators: tuple[tuple[str, tuple[Any, ...]], ...] = ()


class InstanceSnapshots:
    """One env's snapshots of freshly loaded instances, by task and backend (least recently used dropped).

    Args:
        max_entries: Snapshots kept (a task has one per stateful backend).
    """

    def __init__(self, max_entries: int = 2048):
        self._entries: OrderedDict[tuple[int, str], _Snapshot] = OrderedDict()
        self._max_entries = max_entries
        self._states: dict[tuple[Any, ...], tuple[Any, ...]] = {}  # one copy of each generator state (~25 kB)

    def restore(self, task: Task, backend: str, cls: type[Any]) -> Any | None:
        """A new instance as the snapshot of `task`'s `backend` was, or None (none taken, or declined)."""
        snapshot = self._entries.get((id(task), backend))
        if snapshot is None or snapshot.task is not task or snapshot.cls is not cls or snapshot.blob is None:
            return None
        self._entries.move_to_end((id(task), backend))
        attributes = marshal.loads(snapshot.blob)
        for name, state in snapshot.generators:
            generator = random.Random(0)
            generator.setstate(state)
            attributes[name] = generator
        instance = cls.__new__(cls)  # type: ignore[call-overload]  # mypy reads type.__new__ here
        instance.__dict__.update(attributes)
        return instance

    def take(self, task: Task, backend: str, instance: Any) -> None:
        """Snapshot a freshly loaded instance (once per task and backend; declined when not plain data)."""
        key = (id(task), backend)
        known = self._entries.get(key)
        if known is not None and known.task is task:
            return
        snapshot = _take(task, instance)
        if snapshot.generators:  # tasks mostly share their seeds: keep each state once
            if len(self._states) >= self._max_entries:
                self._states.clear()
            generators = tuple((name, self._states.setdefault(state, state)) for name, state in snapshot.generators)
            snapshot = _Snapshot(task, snapshot.cls, snapshot.blob, generators)
        self._entries[key] = snapshot
        if len(self._entries) > self._max_entries:
            self._entries.popitem(last=False)


def _take(task: Task, instance: Any) -> _Snapshot:
    cls = type(instance)
    attributes = getattr(instance, "__dict__", None)
    if type(attributes) is not dict or hasattr(cls, "__slots__"):
        return _Snapshot(task, cls, None)
    plain = dict(attributes)
    generators = []
    for name, value in attributes.items():
        if type(value) is random.Random:
            generators.append((name, value.getstate()))
            plain[name] = None
    if len({id(attributes[name]) for name, _ in generators}) != len(generators):
        return _Snapshot(task, cls, None)  # one generator under two names
    try:
        blob = marshal.dumps(plain)
    except ValueError:  # an object marshal cannot write
        return _Snapshot(task, cls, None)
    return _Snapshot(task, cls, blob, tuple(generators))
