"""Task type and loaders."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from tooluse_gym.tasks.task import Task

__all__ = ["Task", "evenly_spaced"]

T = TypeVar("T")


def evenly_spaced(items: Sequence[T], limit: int | None) -> list[T]:
    """`limit` items spread evenly over `items` (the first included), in order; all when `limit` is None or more."""
    if limit is None or limit >= len(items):
        return list(items)
    return [items[i * len(items) // limit] for i in range(limit)]
