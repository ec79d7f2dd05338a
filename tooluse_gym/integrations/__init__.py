"""Moved: the adapters drive envs with models, so they live in `tooluse_agents.integrations` now.

``from tooluse_gym.integrations import trl`` raises an `ImportError` that names the new path
(``from tooluse_agents.integrations import trl``); nothing here imports the agents package.
"""

from __future__ import annotations

_MOVED = {"trl", "verifiers", "chat_episode", "sequence", "token_sequences"}


def __getattr__(name: str) -> object:
    if name in _MOVED:
        new = "token_sequences" if name == "sequence" else name
        raise ImportError(
            f"tooluse_gym.integrations.{name} moved to tooluse_agents.integrations.{new}: "
            f"use `from tooluse_agents.integrations import {new}`"
        )
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
