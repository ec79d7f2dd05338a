"""Task type and loaders."""

from __future__ import annotations

from tooluse_gym.tasks.selection import evenly_spaced, select_tasks
from tooluse_gym.tasks.task import Task

__all__ = ["Task", "evenly_spaced", "select_tasks"]
