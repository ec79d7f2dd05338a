"""Which tasks of a source to play: by category, by id, and how many (evenly spaced)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from tooluse_gym.tasks.task import Task

T = TypeVar("T")
TaskT = TypeVar("TaskT", bound=Task)
LIMITS_PER = ("selection", "category")


def evenly_spaced(items: Sequence[T], limit: int | None) -> list[T]:
    """`limit` items spread evenly over `items` (the first included), in order; all when `limit` is None or more."""
    if limit is None or limit >= len(items):
        return list(items)
    return [items[i * len(items) // limit] for i in range(limit)]


def select_tasks(
    tasks: Sequence[TaskT],
    *,
    categories: Sequence[str] | None = None,
    task_ids: Sequence[str] | None = None,
    limit: int | None = None,
    limit_per: str = "selection",
) -> list[TaskT]:
    """The tasks to play, chosen in three steps: categories, then ids, then the limit.

    Args:
        tasks: The source's tasks, in its order.
        categories: Keep the tasks of these categories (None: all); an unknown one raises ValueError.
        task_ids: Keep these tasks, in this order (None: all); an unknown id raises ValueError.
        limit: How many tasks to keep, evenly spaced (None: all).
        limit_per: ``selection``: `limit` tasks over the whole selection, in its order.
            ``category``: the selection category by category (in the order of `categories`,
            else of first appearance), `limit` tasks of each.

    Returns:
        The selected tasks.
    """
    if limit_per not in LIMITS_PER:
        raise ValueError(f"limit_per must be one of {', '.join(LIMITS_PER)}, got {limit_per!r}")
    selected = list(tasks)
    if categories is not None:
        known = sorted({t.category for t in selected})
        unknown = [c for c in categories if c not in known]
        if unknown:
            raise ValueError(f"unknown categories {unknown}; these tasks have {known}")
        wanted = set(categories)
        selected = [t for t in selected if t.category in wanted]
    if task_ids is not None:
        by_id = {t.task_id: t for t in selected}
        missing = [i for i in task_ids if i not in by_id]
        if missing:
            raise ValueError(f"unknown task ids: {missing[:5]}")
        selected = [by_id[i] for i in task_ids]
    if limit_per == "selection":
        return evenly_spaced(selected, limit)
    by_category: dict[str, list[TaskT]] = {}
    for task in selected:
        by_category.setdefault(task.category, []).append(task)
    order = categories if categories is not None else list(by_category)
    return [task for category in order for task in evenly_spaced(by_category.get(category, []), limit)]
