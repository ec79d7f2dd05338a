"""Where training prompts come from: task sources, next-turn prompts, and the env that plays them.

A *prompt* is what a group of rollouts starts from. In ``episode`` mode it is a whole task
(the model plays every turn; terminal reward). In ``next_turn`` mode (the paper's) it is a
task cut after turn t: turns before t are played from the ground truth by the oracle, the
model plays turn t, and the terminal reward is exactly "turn t passes the checker". Turns
with no ground-truth calls are not checked, so they make no next-turn prompt.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import gymnasium as gym

from tooluse_gym import __version__
from tooluse_gym.envs.protocol_stack import ProtocolKnobs
from tooluse_gym.envs.tool_env import EnvConfig, ToolUseEnv
from tooluse_gym.protocol import ProtocolCard
from tooluse_gym.tasks import bfcl
from tooluse_gym.tasks.schema import Task
from tooluse_gym.tools.runtime import BackendHooks

MODES = ("next_turn", "episode")
TURN_SEPARATOR = "@turn"


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
    """

    source: str = "bfcl"
    path: str | None = None
    category: str | None = None
    task_ids: tuple[str, ...] | None = None
    limit: int | None = None

    def __post_init__(self) -> None:
        if self.source not in ("bfcl", "scenario"):
            raise ValueError(f"source must be 'bfcl' or 'scenario', got {self.source!r}")
        if self.source == "scenario" and not self.path:
            raise ValueError("a scenario source needs a path")


@dataclass(frozen=True, kw_only=True)
class ProtocolConfig:
    """What the model sees and how its messages are parsed (the env's protocol knobs).

    Defaults are the paper's training protocol: the stronger system prompt with JSON calls in
    ``<tool_call>`` tags, the native template, reasoning history kept.
    """

    system_prompt: str = "strong"
    tool_format: str = "json"
    template: str = "native"
    reasoning: str = "keep"
    tool_results: str = "tool_messages"
    max_steps_per_turn: int = bfcl.MAX_STEPS_PER_TURN

    def knobs(self) -> ProtocolKnobs:
        return ProtocolKnobs(
            template=self.template,
            reasoning=self.reasoning,
            system_prompt=self.system_prompt,
            tool_format=self.tool_format,
            tool_results=self.tool_results,
        )


@dataclass(frozen=True)
class TaskPool:
    """Tasks with the backends that run them."""

    tasks: tuple[Task, ...]
    classes: dict[str, type]
    stateless: frozenset[str]
    hooks: BackendHooks | None
    label: str


def load_pool(source: TaskSource) -> TaskPool:
    """Load a task source."""
    if source.source == "bfcl":
        category = source.category or "base"
        tasks = bfcl.load_bfcl_tasks(category, list(source.task_ids) if source.task_ids else None)
        pool = bfcl_pool(tasks, label=f"bfcl:{category}")
    else:
        from tooluse_gym.tasks.scenario import load_scenario_set

        loaded = load_scenario_set(source.path)
        tasks = list(loaded.tasks)
        if source.category:
            wanted = set(source.category.split(","))
            tasks = [t for t in tasks if t.category in wanted]
        if source.task_ids:
            by_id = {t.task_id: t for t in tasks}
            tasks = [by_id[i] for i in source.task_ids]
        pool = TaskPool(tuple(tasks), loaded.classes(), loaded.stateless(), loaded.hooks(), f"scenario:{loaded.sha256}")
    if source.limit is not None and source.limit < len(pool.tasks):
        n = len(pool.tasks)
        pool = dataclasses.replace(pool, tasks=tuple(pool.tasks[i * n // source.limit] for i in range(source.limit)))
    if not pool.tasks:
        raise ValueError(f"the task source {source} selects no tasks")
    return pool


def bfcl_pool(tasks: Sequence[Task], label: str = "bfcl") -> TaskPool:
    """Tasks that run on the BFCL simulators (BFCL entries or hand-built tasks)."""
    return TaskPool(tuple(tasks), bfcl.backend_classes(), bfcl.stateless_backends(), bfcl.HOOKS, label)


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


def prompts_for(pool: TaskPool, mode: str) -> TaskPool:
    """The pool's prompts in a training mode: whole tasks, or one next-turn task per checked turn."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    if mode == "episode":
        return pool
    tasks = tuple(next_turn_task(t, i) for t in pool.tasks for i in range(t.num_turns) if t.ground_truth[i])
    return dataclasses.replace(pool, tasks=tasks)


def env_factory(pool: TaskPool, protocol: ProtocolConfig) -> Callable[[], gym.Env]:
    """A function that builds one env over the pool's tasks, wrapped for the protocol."""
    knobs = protocol.knobs()
    fields = knobs.card_fields()
    card = ProtocolCard(
        env_id="ToolUse-GRPO-train",
        category=pool.label,
        max_steps_per_turn=protocol.max_steps_per_turn,
        bfcl_version=bfcl.bfcl_version(),
        tooluse_gym_version=__version__,
        **fields,
    )
    config = EnvConfig(
        tool_format=protocol.tool_format,
        max_steps_per_turn=protocol.max_steps_per_turn,
        holdout_notice=bfcl.holdout_notice_template(prompting=knobs.prompt.carries_tools),
    )

    def make() -> gym.Env:
        env = ToolUseEnv(
            pool.tasks,
            pool.classes,
            config=config,
            protocol=card,
            stateless_backends=pool.stateless,
            hooks=pool.hooks,
        )
        return knobs.wrap(env)

    return make


def scripted_turns(task: Any, mode: str) -> int:
    """How many leading turns of a prompt the oracle plays (all but the last in next-turn mode)."""
    return task.num_turns - 1 if mode == "next_turn" else 0
