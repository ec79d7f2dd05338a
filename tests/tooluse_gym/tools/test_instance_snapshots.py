"""Instances restored from a snapshot are the freshly loaded ones, for every BFCL task, and share nothing."""

from __future__ import annotations

import random
from typing import Any

import pytest

from tooluse_gym.tasks import bfcl
from tooluse_gym.tools.runtime import BackendHooks, ToolRuntime
from tooluse_gym.tools.snapshots import InstanceSnapshots


def _typed(value: Any, seen: dict[int, int]) -> Any:
    """Value, types, order (sets in iteration order) and which objects are the same object."""
    if isinstance(value, (dict, list, set, tuple)):
        tag = seen.setdefault(id(value), len(seen))
        if isinstance(value, dict):
            items = [(_typed(k, seen), _typed(v, seen)) for k, v in value.items()]
        else:
            items = [_typed(v, seen) for v in value]
        return (type(value).__name__, tag, items)
    if isinstance(value, random.Random):
        return ("Random", seen.setdefault(id(value), len(seen)), value.getstate())
    return (type(value).__name__, repr(value))


def _attributes(instance: Any) -> Any:
    return _typed(vars(instance), {})


def _runtime(task, snapshots=None) -> ToolRuntime:
    return ToolRuntime(task, bfcl.backend_classes(), bfcl.stateless_backends(), hooks=bfcl.HOOKS, snapshots=snapshots)


@pytest.mark.parametrize("category", bfcl.CATEGORIES)
def test_restored_instances_are_freshly_loaded_ones(category, all_tasks):
    restored_backends = set()
    for task in [t for t in all_tasks if t.category == category]:
        snapshots = InstanceSnapshots()
        first = _runtime(task, snapshots)  # loads, and takes the snapshots
        fresh, restored = _runtime(task), _runtime(task, snapshots)
        for backend in task.backends:
            assert _attributes(restored.instances[backend]) == _attributes(fresh.instances[backend]), backend
            assert _attributes(first.instances[backend]) == _attributes(fresh.instances[backend]), backend
            if snapshots.restore(task, backend, type(fresh.instances[backend])) is not None:
                restored_backends.add(backend)
        for calls in task.ground_truth:  # the same results and states, turn by turn
            assert [r.result for r in restored.execute(calls)] == [r.result for r in fresh.execute(calls)]
            assert restored.state() == fresh.state()
        for backend in task.backends:
            assert _attributes(restored.instances[backend]) == _attributes(fresh.instances[backend]), backend
    assert "GorillaFileSystem" not in restored_backends  # its directories are objects: declined
    assert restored_backends  # the others start from snapshots


def test_restored_instances_share_nothing(tasks_by_id):
    task = tasks_by_id["multi_turn_long_context_2"]
    snapshots = InstanceSnapshots()
    _runtime(task, snapshots)
    a, b = _runtime(task, snapshots), _runtime(task, snapshots)
    backend = next(n for n in task.backends if snapshots.restore(task, n, type(a.instances[n])) is not None)
    before = _attributes(b.instances[backend])

    def containers(value: Any, out: set[int]) -> set[int]:
        if isinstance(value, random.Random):
            out.add(id(value))
        elif isinstance(value, (dict, list, set)):
            out.add(id(value))
            for item in value.values() if isinstance(value, dict) else value:
                containers(item, out)
        return out

    assert not containers(vars(a.instances[backend]), set()) & containers(vars(b.instances[backend]), set())
    for calls in task.ground_truth:
        a.execute(calls)
    assert _attributes(b.instances[backend]) == before  # b did not move
    assert _attributes(_runtime(task, snapshots).instances[backend]) == before  # nor did the snapshot


def test_snapshots_only_where_the_hooks_allow_them(tasks_by_id):
    task = tasks_by_id["multi_turn_base_0"]
    snapshots = InstanceSnapshots()
    hooks = BackendHooks(isolate=bfcl.HOOKS.isolate, guard=bfcl.HOOKS.guard)
    ToolRuntime(task, bfcl.backend_classes(), bfcl.stateless_backends(), hooks=hooks, snapshots=snapshots)
    for backend in task.backends:
        assert snapshots.restore(task, backend, bfcl.backend_classes()[backend]) is None


def test_snapshots_keep_the_most_recent_tasks(all_tasks):
    tasks = [t for t in all_tasks if "GorillaFileSystem" not in t.backends and len(t.backends) == 1][:3]
    snapshots = InstanceSnapshots(max_entries=2)
    for task in tasks:
        _runtime(task, snapshots)
    (backend,) = tasks[0].backends
    assert snapshots.restore(tasks[0], backend, bfcl.backend_classes()[backend]) is None
    for task in tasks[1:]:
        (backend,) = task.backends
        assert snapshots.restore(task, backend, bfcl.backend_classes()[backend]) is not None
