"""Where training prompts come from: task sources, next-turn prompts, and the env that plays them.

A *prompt* is what a group of rollouts starts from. In ``episode`` mode it is a whole task
(the model plays every turn; terminal reward). In ``next_turn`` mode (the paper's) it is a
task cut after turn t: turns before t are played from the ground truth by the oracle, the
model plays turn t, and the terminal reward is exactly "turn t passes the checker". Turns
with no ground-truth calls are not checked, so they make no next-turn prompt.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import gymnasium as gym

import tooluse_gym  # noqa: F401  (registers the env ids)
from tooluse_agents.train.checks import require
from tooluse_agents.train.settings import TRAIN_PROTOCOL
from tooluse_gym.envs.builder import TASKS_ENV_ID, TaskPool
from tooluse_gym.envs.knobs import Knobs
from tooluse_gym.envs.multi_turn import bfcl_pool
from tooluse_gym.envs.sources import SOURCE_KINDS, TURN_SEPARATOR, next_turn_prompts, next_turn_task, source_pool

MODES = ("next_turn", "episode")
__all__ = [
    "MODES",
    "TRAIN_PROTOCOL",
    "TURN_SEPARATOR",
    "TaskPool",
    "TaskSource",
    "bfcl_pool",
    "env_factory",
    "load_pool",
    "next_turn_task",
    "prompts_for",
]


@dataclass(frozen=True, kw_only=True)
class TaskSource:
    """A set of tasks: BFCL multi-turn entries or scenario files.

    Attributes:
        source: ``bfcl`` or ``scenario``.
        path: Scenario file or folder (``scenario``).
        category: BFCL category (``base``, ``miss_func``, ..., ``all``), or scenario categories
            separated by commas (None: all).
        task_ids: Keep only these ids (in this order).
        limit: Keep this many tasks, evenly spaced over the selection.
        keep_list: A file written by ``tooluse train prefilter`` (`tooluse_agents.train.grpo.prefilter`): train
            only on the prompts it kept, among those the rest of this source selects.
    """

    source: str = "bfcl"
    path: str | None = None
    category: str | None = None
    task_ids: tuple[str, ...] | None = None
    limit: int | None = None
    keep_list: str | None = None

    def __post_init__(self) -> None:
        if self.source not in SOURCE_KINDS:
            raise ValueError(f"source must be 'bfcl' or 'scenario', got {self.source!r}")
        if self.source == "scenario" and not self.path:
            raise ValueError("a scenario source needs a path")
        require(self, limit=">= 1")

    def spec(self, mode: str = "episode") -> dict[str, Any]:
        """This source as ``ToolUse-Tasks-v0``'s JSON ``source`` (`tooluse_gym.envs.sources`), without `keep_list`.

        Args:
            mode: ``episode`` (whole tasks) or ``next_turn`` (one prompt per checked turn; `prompts_for`).
        """
        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
        spec: dict[str, Any] = {"kind": self.source, "category": self.category, "path": self.path}
        spec.update(task_ids=list(self.task_ids) if self.task_ids is not None else None, limit=self.limit)
        return {k: v for k, v in spec.items() if v is not None} | {"next_turn": mode == "next_turn"}


def load_pool(source: TaskSource) -> TaskPool:
    """Load a task source (its `keep_list` is applied to the prompts: `tooluse_agents.train.grpo.prefilter`)."""
    return source_pool(source.spec())


def prompts_for(pool: TaskPool, mode: str) -> TaskPool:
    """The pool's prompts in a training mode: whole tasks, or one next-turn task per checked turn."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    return pool if mode == "episode" else next_turn_prompts(pool)


def env_factory(pool: TaskPool, protocol: Knobs) -> Callable[[], gym.Env]:
    """A function that builds one env over the pool's tasks (`ToolUse-Tasks-v0`), wrapped for the protocol."""
    return functools.partial(gym.make, TASKS_ENV_ID, pool=pool, **protocol.to_dict())
