"""Task type and loaders."""

from tooluse_gym.tasks.schema import Task

__all__ = ["Task"]
