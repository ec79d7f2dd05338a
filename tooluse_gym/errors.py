"""Exceptions raised for programmer and data errors (never for model output)."""

from __future__ import annotations


class ToolUseGymError(Exception):
    """Base class of every error this package raises on purpose."""


class TaskLoadError(ToolUseGymError):
    """A task source (BFCL data, a scenario file) could not be loaded."""


class DependencyNotInstalled(ToolUseGymError):
    """An optional dependency is missing; the message says what to install."""
