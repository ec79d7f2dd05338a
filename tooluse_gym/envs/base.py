"""`TaskEnv`: what every tooluse-gym base env shares (its tasks, its card, lazy seeding), and `task_env`.

The multi-turn env (`tooluse_gym.envs.tool_env.ToolUseEnv`) and the single-turn one
(`tooluse_gym.envs.single_turn_env.SingleTurnEnv`) derive from it; the protocol wrappers
read only what it declares.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.utils import seeding

from tooluse_gym.protocol import ProtocolCard
from tooluse_gym.tasks.task import Task
from tooluse_gym.tools.runtime import CallRecord

RESET_OPTIONS = ("task_id",)
"""The keys `reset(options=...)` takes."""
_RESET_KEYS = frozenset(RESET_OPTIONS)
_RENDER_CLIP = 400


class TaskEnv(gym.Env[dict, Any]):
    """A base env that plays one `Task` per episode and issues a protocol card at every reset.

    Attributes:
        tasks: The tasks, in order.
        protocol: The protocol card (its seed is set per reset in `info["protocol"]`).
        task: The current episode's task (None before the first reset).
        call_records: Call id -> the executed call, for the tool results shown so far.
    """

    tasks: list[Task]
    protocol: ProtocolCard
    task: Task | None = None
    call_records: dict[str, CallRecord]
    _by_id: dict[str, int] | None = None  # task id -> index in `tasks`, made at the first reset naming a task

    def render(self) -> str | None:
        """Under ``ansi``, the episode's messages, one clipped line each, and the verdict once known; else None."""
        if self.render_mode != "ansi":
            return None
        lines = [f"# {self.task.task_id}" if self.task else "# (not reset)"]
        for m in getattr(self, "messages", []):
            label = m["role"] if m["role"] != "tool" else f"tool {m.get('name', '')}".rstrip()
            content = m.get("content") or ""
            if m.get("tool_calls"):
                content += " " + " ".join(c["function"]["name"] + "(...)" for c in m["tool_calls"])
            clipped = content if len(content) <= _RENDER_CLIP else content[:_RENDER_CLIP] + "..."
            lines.append(f"[{label}] {clipped}")
        verdict = self._shown_verdict()
        if verdict is not None:
            lines.append(f"= valid={verdict.valid} error_type={verdict.error_type}")
        return "\n".join(lines) + "\n"

    def _show_results(self, records: Sequence[CallRecord]) -> tuple[str, ...]:
        """Append one tool message per executed call (the assistant's call ids, else made-up ones); their results.

        For envs that keep ``messages``, ``turn`` and ``steps_in_turn`` (counted after the step's calls ran).
        """
        messages: list[dict[str, Any]] = self.messages  # type: ignore[attr-defined]
        turn, step = self.turn, self.steps_in_turn  # type: ignore[attr-defined]
        ids = messages[-1].get("tool_calls") or []
        for i, record in enumerate(records):
            call_id = ids[i]["id"] if i < len(ids) else f"call_{turn}_{step}_{i}"
            self.call_records[call_id] = record
            messages.append(
                {"role": "tool", "tool_call_id": call_id, "name": record.call.name, "content": record.result}
            )
        return tuple(r.result for r in records)

    def _shown_verdict(self) -> Any:
        """The episode's verdict once known (with ``valid`` and ``error_type``), for `render`; None before."""
        return None

    def episode_task(self) -> Task:
        """The current episode's task (`task`); `gymnasium.error.ResetNeeded` before the first `reset`."""
        if self.task is None:
            raise gym.error.ResetNeeded("call reset() before using the env")
        return self.task

    def draw_task(self, seed: int | None, options: dict[str, Any] | None) -> Task:
        """The task a reset plays: ``options["task_id"]``, or one drawn with the seed.

        `ValueError` for an unknown task id or an option other than those in `RESET_OPTIONS`.
        """
        if options and not _RESET_KEYS.issuperset(options):
            unknown = sorted(set(options) - _RESET_KEYS, key=str)
            raise ValueError(f"unknown reset options {unknown}; the known ones are: {', '.join(RESET_OPTIONS)}")
        if seed is not None:  # seeded lazily (see `np_random`)
            if not (isinstance(seed, int) and seed >= 0):
                seeding.np_random(seed)  # raises gymnasium's own error for this seed
            self._pending_seed = seed
            self._np_random = None
            self._np_random_seed = None
        task_id = options.get("task_id") if options else None
        if task_id is None:
            return self.tasks[int(self.np_random.integers(len(self.tasks)))]
        index = (self._by_id or self._task_index()).get(task_id)
        if index is None:
            raise ValueError(f"unknown task_id {task_id!r} (this env has {len(self.tasks)} tasks)")
        return self.tasks[index]

    def _task_index(self) -> dict[str, int]:
        index = self._by_id
        if index is None:
            index = self._by_id = {t.task_id: i for i, t in enumerate(self.tasks)}
        return index

    # --- seeding ---------------------------------------------------------------------------
    # `reset(seed=s)` makes `np_random` the generator `seeding.np_random(s)` gives, as
    # `gym.Env.reset` does, but builds it on first use: most resets name their task and never
    # draw from it. A generator built later from the same seed draws the same numbers.
    # (`draw_task` records the seed; `_materialize_seed` builds the generator.)

    def _materialize_seed(self) -> None:
        seed = self.__dict__.pop("_pending_seed", None)
        if seed is not None:
            self._np_random, self._np_random_seed = seeding.np_random(seed)

    @property
    def np_random(self) -> np.random.Generator:
        """The env's generator: built on first use from the last reset's seed (a random one if never seeded)."""
        self._materialize_seed()
        return super().np_random

    @np_random.setter
    def np_random(self, value: np.random.Generator) -> None:
        self.__dict__.pop("_pending_seed", None)
        self._np_random = value
        self._np_random_seed = -1

    @property
    def np_random_seed(self) -> int:
        """The seed `np_random` was built from (-1 when a generator was assigned directly)."""
        self._materialize_seed()
        return super().np_random_seed


def task_env(env: gym.Env) -> TaskEnv:
    """The tooluse-gym base env under `env`'s wrappers (``env.unwrapped``); `TypeError` if it is another env."""
    base = env.unwrapped
    if not isinstance(base, TaskEnv):
        raise TypeError(f"expected a tooluse-gym env, got {type(base).__name__}")
    return base
