"""Where training prompts come from: task sources, next-turn prompts, and the env that plays them.

A *prompt* is what a group of rollouts starts from. In ``episode`` mode it is a whole task
(the model plays every turn; terminal reward). In ``next_turn`` mode (the paper's) it is a
task cut after turn t: turns before t are played from the ground truth by the oracle, the
model plays turn t, and the terminal reward is exactly "turn t passes the checker". Turns
with no ground-truth calls are not checked, so they make no next-turn prompt.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from dataclasses import dataclass

import gymnasium as gym

import tooluse_gym  # noqa: F401  (registers the env ids)
from tooluse_gym.envs.builder import TASKS_ENV_ID, TaskPool
from tooluse_gym.envs.knobs import Knobs
from tooluse_gym.envs.multi_turn import bfcl_pool
from tooluse_gym.tasks import bfcl, select_tasks
from tooluse_gym.tasks.task import Task

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
        keep_list: A file written by ``tooluse-train prefilter`` (`tooluse_agents.grpo.prefilter`): train
            only on the prompts it kept, among those the rest of this source selects.
    """

    source: str = "bfcl"
    path: str | None = None
    category: str | None = None
    task_ids: tuple[str, ...] | None = None
    limit: int | None = None
    keep_list: str | None = None

    def __post_init__(self) -> None:
        if self.source not in ("bfcl", "scenario"):
            raise ValueError(f"source must be 'bfcl' or 'scenario', got {self.source!r}")
        if self.source == "scenario" and not self.path:
            raise ValueError("a scenario source needs a path")


@dataclass(frozen=True, kw_only=True)
class ProtocolConfig(Knobs):
    """What the model sees and how its messages are parsed: the env's knobs (`Knobs`), with training defaults.

    The defaults are the paper's training protocol: the stronger system prompt with JSON calls in
    ``<tool_call>`` tags, the native template, reasoning history kept, and the ``lenient`` decoder
    (each malformed call answered with its own error: a denser signal for a small model).
    """

    system_prompt: str = "strong"
    tool_format: str = "json"
    decoder: str = "lenient"


def load_pool(source: TaskSource) -> TaskPool:
    """Load a task source."""
    if source.source == "bfcl":
        category = source.category or "base"
        tasks = bfcl.load_bfcl_tasks(category, list(source.task_ids) if source.task_ids else None)
        pool = bfcl_pool(tasks, label=f"bfcl:{category}")
    else:
        from tooluse_gym.envs.scenario import scenario_pool
        from tooluse_gym.tasks.scenario import load_scenario_set

        assert source.path is not None  # TaskSource requires a path for a scenario source
        loaded = load_scenario_set(source.path)
        categories = source.category.split(",") if source.category else None
        pool = scenario_pool(loaded, source.task_ids, categories)
        pool = dataclasses.replace(pool, label=f"scenario:{loaded.sha256}")
    pool = dataclasses.replace(pool, tasks=tuple(select_tasks(pool.tasks, limit=source.limit)))
    if not pool.tasks:
        raise ValueError(f"the task source {source} selects no tasks")
    return pool


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


def env_factory(pool: TaskPool, protocol: Knobs) -> Callable[[], gym.Env]:
    """A function that builds one env over the pool's tasks (`ToolUse-Tasks-v0`), wrapped for the protocol."""
    knobs = {f.name: getattr(protocol, f.name) for f in dataclasses.fields(Knobs)}
    return functools.partial(gym.make, TASKS_ENV_ID, pool=pool, **knobs)
