"""The one env builder: a task pool and its knobs in, the base env wrapped for the protocol out.

Every env id is built here (`ToolUse-MultiTurn-v0`, `ToolUse-SingleTurn-v0`, `ToolUse-Scenario-v0`, and
`ToolUse-Tasks-v0`: a JSON task source (`tooluse_gym.envs.sources`) or any `TaskPool`, what GRPO
trains on), so an env id differs from another only by its tasks and its knob defaults.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import gymnasium as gym

from tooluse_gym import __version__
from tooluse_gym.checking import CHECKER_VERSION
from tooluse_gym.envs.ids import TASKS_ID
from tooluse_gym.envs.knobs import ENV_DEFAULTS, Knobs
from tooluse_gym.envs.single_turn_env import SingleTurnEnv, resolve_single_turn_knobs
from tooluse_gym.envs.tool_env import EnvConfig, ToolUseEnv
from tooluse_gym.protocol import ProtocolCard
from tooluse_gym.tasks import bfcl
from tooluse_gym.tasks.task import Task
from tooluse_gym.tools.runtime import BackendHooks
from tooluse_gym.wrappers import ContextTemplate, ReasoningHistory, RenderedPrompt, SystemPrompt, ToolResultPlacement

TASKS_ENV_ID = TASKS_ID
TASKS_DEFAULTS = ENV_DEFAULTS[TASKS_ENV_ID]
"""`ToolUse-Tasks-v0`'s defaults: tasks of your own have no official score to match (see the scenario env)."""


@dataclass(frozen=True, repr=False)
class TaskPool:
    """Tasks with the backends that run them.

    Attributes:
        tasks: The tasks; an episode plays one.
        classes: Backend name -> simulator class.
        stateless: Backends whose instances carry no state (shared across tasks).
        hooks: How the simulators are set up and compared (BFCL's, or a scenario set's).
        label: The card's ``category``.
        single_turn: The tasks are single-turn tasks (`tooluse_gym.tasks.bfcl_single_turn.SingleTurnTask`:
            BFCL's entries or single-turn scenarios), played by `SingleTurnEnv` (one message each,
            nothing executed, the ``decoder`` knob's decoder and BFCL's checker).
        task_data: The data files the tasks come from, each with its sha256 (the card's ``task_data``:
            `tooluse_gym.tasks.bfcl_data`, `tooluse_gym.tasks.scenario.ScenarioSet.file_digests`);
            empty for tasks built in code.
    """

    tasks: tuple[Task, ...]
    classes: Mapping[str, type]
    stateless: frozenset[str] = frozenset()
    hooks: BackendHooks | None = None
    label: str = "all"
    single_turn: bool = False
    task_data: tuple[tuple[str, str], ...] = ()

    def __repr__(self) -> str:  # short: gym.make puts its kwargs into error messages
        return f"TaskPool({len(self.tasks)} tasks, {len(self.classes)} backends, label={self.label!r})"


def pool_knobs(pool: TaskPool, defaults: Knobs, given: Mapping[str, Any]) -> Knobs:
    """An env id's `defaults` with the `given` knobs; a single-turn pool takes the env id's decoder too.

    Single-turn tasks are played with the env id's default decoder like any other (``lenient``
    for the scenario and task envs: `tooluse_gym.decoding.lenient_ast` reads the message,
    BFCL's checker judges it, and the card says ``lenient``), or with the decoder given
    (``bfcl``: BFCL's own decoding). `build_env` resolves and refuses what cannot apply to a
    single-turn pool (`tooluse_gym.envs.single_turn_env.resolve_single_turn_knobs`).
    """
    return defaults.with_defaults(**given)


def wrap(env: gym.Env, knobs: Knobs) -> gym.Env:
    """Wrap a base env for the protocol (one concern per wrapper, innermost first)."""
    if knobs.reasoning != "keep":
        env = ReasoningHistory(env, knobs.reasoning)
    if knobs.tool_results != "tool_messages":
        env = ToolResultPlacement(env, knobs.tool_results)
    if knobs.prompt.name != "none":
        env = SystemPrompt(env, knobs.system_prompt, knobs.tool_format, resolved=knobs.prompt)
    if knobs.template == "context":
        env = ContextTemplate(env)
    if knobs.tokenizer is not None:
        env = RenderedPrompt(env, knobs.tokenizer, knobs.chat_template)
    return env


def build_env(
    pool: TaskPool,
    knobs: Knobs,
    *,
    env_id: str,
    render_mode: str | None = None,
    known_issues: str = "",
    card_extra: Mapping[str, str] | None = None,
) -> gym.Env:
    """The base env over `pool`, configured by `knobs`, stamped with its card, wrapped for the protocol.

    Raises:
        ValueError: A single-turn pool with a knob that cannot apply to it (`resolve_single_turn_knobs`).
    """
    if pool.single_turn:
        knobs = resolve_single_turn_knobs(knobs, env_id)
    # a prompt that carries the function list takes BFCL's prompting-mode notice (it shows the new
    # functions' docs: the ``tools`` field, emptied, cannot announce them), else the function-calling one
    notice = bfcl.holdout_notice_template(prompting=knobs.prompt.carries_tools)
    config = EnvConfig(knobs=knobs, holdout_notice=notice)
    card = ProtocolCard(
        env_id=env_id,
        category=pool.label,
        bfcl_version=bfcl.bfcl_version(),
        known_issues=known_issues,
        tooluse_gym_version=__version__,
        checker_version=CHECKER_VERSION,
        task_data=pool.task_data,
        **knobs.card_fields(**dict(card_extra or {})),
    )
    env: gym.Env
    if knobs.prompt_format is not None and not pool.single_turn:
        check_multi_turn_format(knobs.prompt_format, env_id)
    if pool.single_turn:
        env = SingleTurnEnv(pool.tasks, knobs=knobs, protocol=card, render_mode=render_mode)
        return wrap(env, knobs)
    env = ToolUseEnv(
        pool.tasks,
        pool.classes,
        config=config,
        protocol=card,
        stateless_backends=pool.stateless,
        hooks=pool.hooks,
        render_mode=render_mode,
    )
    return wrap(env, knobs)


def check_multi_turn_format(config: str, env_id: str) -> None:
    """Refuse a ``prompt_format`` whose calls BFCL's multi-turn decoding cannot read (`ValueError` saying why).

    BFCL runs its format grid on single-turn entries only. Its multi-turn loop decodes every
    message with ``decode_execute``, which reads a bare Python call list; so the configurations
    that ask for one (``ret_fmt=python&tool_call_tag=False``, any doc format, layout or style)
    apply to multi-turn envs cleanly (BFCL's prompt for them, the usual decoding), and the
    others would be scored by a rule BFCL never applies.
    """
    from tooluse_gym.prompt_formats import PromptFormat

    fmt = PromptFormat.parse(config)
    if not fmt.python_calls:
        raise ValueError(
            f"{env_id} cannot use prompt_format {config!r}: BFCL runs its format grid on single-turn entries "
            "only, and its multi-turn loop decodes every message as a bare Python call list (decode_execute), "
            "so only configurations with ret_fmt=python&tool_call_tag=False apply to multi-turn envs"
        )


def make_task_env(
    pool: TaskPool | None = None,
    render_mode: str | None = None,
    *,
    source: Mapping[str, Any] | None = None,
    **knobs: Any,
) -> gym.Env:
    """Build `ToolUse-Tasks-v0`: the tasks a source names (or any task pool), wrapped for the protocol.

    ``gym.make("ToolUse-Tasks-v0", source={"kind": "bfcl", "category": "base", "next_turn": True},
    system_prompt="strong", tool_format="json")``; the knobs are `Knobs`' (``decoder`` defaults to
    ``lenient`` here).

    Args:
        pool: Any `TaskPool` (tasks built in code): the escape hatch for what a source cannot name.
            The env's spec then holds the pool object, so ``gym.make(env.spec)`` rebuilds it in
            this process but the spec cannot be written as JSON.
        render_mode: ``None`` or ``"ansi"``.
        source: A JSON task source (`tooluse_gym.envs.sources`: ``kind``, ``category``, ``path``,
            ``task_ids``, ``limit``, ``next_turn``); give this or `pool`.
        **knobs: Knobs of `tooluse_gym.envs.knobs.Knobs` (``decoder`` defaults to ``lenient``, single-turn tasks too).

    Returns:
        The wrapped env.

    Raises:
        TypeError: Neither or both of `pool` and `source`, or a `pool` that is not a `TaskPool`.
        ValueError: An empty pool, a bad source, or a bad knob value.
    """
    if (pool is None) == (source is None):
        raise TypeError("ToolUse-Tasks-v0 takes one of a task source (source={...}) and a task pool (pool=...)")
    if source is not None:
        from tooluse_gym.envs.sources import source_pool

        pool = source_pool(source)
    if not isinstance(pool, TaskPool):
        raise TypeError(f"pool must be a TaskPool, got {type(pool).__name__}")
    if not pool.tasks:
        raise ValueError("the task pool is empty")
    return build_env(pool, pool_knobs(pool, TASKS_DEFAULTS, knobs), env_id=TASKS_ENV_ID, render_mode=render_mode)
