"""Task sources as JSON: what ``ToolUse-Tasks-v0`` plays, written so that the env's spec holds it.

Gymnasium rebuilds an env from its spec (``gym.make(env.spec)``) and can write the spec as
JSON only when every keyword is JSON, so a task pool is named by a plain mapping:

    gym.make("ToolUse-Tasks-v0", source={"kind": "bfcl", "category": "base", "limit": 20, "next_turn": True})
    gym.make("ToolUse-Tasks-v0", source={"kind": "scenario", "path": ["scenarios/curriculum/train.yaml"]})

Keys (all but ``kind`` optional):

- ``kind``: ``bfcl`` (BFCL multi-turn entries on the BFCL simulators) | ``scenario`` (scenario files).
- ``category``: ``bfcl``: one category or ``all`` (default ``base``); ``scenario``: categories,
  a list or comma-separated (default: all).
- ``path``: ``scenario``: a scenario file or folder, or a list of them (required).
- ``task_ids``: only these tasks, in this order.
- ``split``: ``bfcl``: ``train`` or ``heldout``, only the tasks on that side of the published RL
  split (`tooluse_gym.tasks.rl_split`); the card's category is then ``bfcl:<category>@<split name>:<side>``.
- ``limit``: that many tasks, evenly spaced over the selection.
- ``next_turn``: each task cut after each of its checked turns, one prompt per cut
  (`next_turn_task`: the turns before are played from the ground truth, the model plays the
  last one); default false: whole tasks.

The card's ``category`` is ``bfcl:<category>`` or ``scenario:<sha256 of the files>``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from tooluse_gym.envs.builder import TaskPool
from tooluse_gym.tasks import bfcl, evenly_spaced, rl_split
from tooluse_gym.tasks.task import Task

SOURCE_KINDS = ("bfcl", "scenario")
SOURCE_KEYS = ("kind", "category", "path", "task_ids", "limit", "next_turn", "split")
TURN_SEPARATOR = "@turn"
"""Joins a task id and a turn into a next-turn prompt's id (``multi_turn_base_0@turn2``)."""

__all__ = ["SOURCE_KEYS", "SOURCE_KINDS", "TURN_SEPARATOR", "next_turn_prompts", "next_turn_task", "source_pool"]


def next_turn_task(task: Task, turn: int) -> Task:
    """The task cut after `turn`; its last turn is the one the model plays."""
    if not 0 <= turn < task.num_turns:
        raise ValueError(f"task {task.task_id} has no turn {turn}")
    return dataclasses.replace(
        task,
        task_id=f"{task.task_id}{TURN_SEPARATOR}{turn}",
        turns=task.turns[: turn + 1],
        ground_truth=task.ground_truth[: turn + 1],
        held_out={t: docs for t, docs in task.held_out.items() if t <= turn},
    )


def next_turn_prompts(pool: TaskPool) -> TaskPool:
    """One next-turn task per checked turn of each task (turns with no ground-truth calls are not checked).

    A single-turn pool is its own: each task is one turn, checked even without calls (an irrelevant request).
    """
    if pool.single_turn:
        return pool
    tasks = tuple(next_turn_task(t, i) for t in pool.tasks for i in range(t.num_turns) if t.ground_truth[i])
    return dataclasses.replace(pool, tasks=tasks)


def source_pool(source: Mapping[str, Any]) -> TaskPool:
    """The task pool a source mapping names (see the module docstring).

    Raises:
        ValueError: An unknown key or kind, a scenario source without a path, or a source that
            selects no task.
    """
    unknown = sorted(set(source) - set(SOURCE_KEYS))
    if unknown:
        raise ValueError(f"unknown task source keys {unknown}; the keys are: {', '.join(SOURCE_KEYS)}")
    kind = source.get("kind")
    if kind not in SOURCE_KINDS:
        raise ValueError(f"a task source's kind must be one of {', '.join(SOURCE_KINDS)}; got {kind!r}")
    category = source.get("category")
    task_ids = source.get("task_ids")
    if source.get("split") is not None and kind != "bfcl":
        raise ValueError("a task source's split is for kind bfcl (the published BFCL multi-turn RL split)")
    if kind == "bfcl":
        category = category or "base"
        tasks = bfcl.load_bfcl_tasks(category, list(task_ids) if task_ids else None)
        from tooluse_gym.envs.multi_turn import bfcl_pool, in_split

        label = f"bfcl:{category}"
        if split := source.get("split"):
            tasks = in_split(tasks, split, named=bool(task_ids))
            label = f"{label}@{rl_split.SPLIT_NAME}:{split}"
        pool = bfcl_pool(tasks, label)
    else:
        from tooluse_gym.envs.scenario import scenario_pool
        from tooluse_gym.tasks.scenario import load_scenario_set

        path = source.get("path")
        if not path:
            raise ValueError("a scenario task source needs a path")
        loaded = load_scenario_set(path)
        categories = category.split(",") if isinstance(category, str) else category
        pool = scenario_pool(loaded, task_ids, list(categories) if categories else None)
        pool = dataclasses.replace(pool, label=f"scenario:{loaded.sha256}")
    pool = dataclasses.replace(pool, tasks=tuple(evenly_spaced(pool.tasks, source.get("limit"))))
    if source.get("next_turn", False):
        pool = next_turn_prompts(pool)
    if not pool.tasks:
        raise ValueError(f"the task source {dict(source)} selects no tasks")
    return pool
