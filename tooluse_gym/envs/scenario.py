"""`ToolUse-Scenario-v0`: tasks from scenario files, with every protocol knob of the BFCL env."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import gymnasium as gym

from tooluse_gym import __version__
from tooluse_gym.envs.protocol_stack import ProtocolKnobs, check_choice
from tooluse_gym.envs.tool_env import DECODERS, EnvConfig, ToolUseEnv, resolve_validate_args
from tooluse_gym.protocol import ProtocolCard
from tooluse_gym.tasks import bfcl
from tooluse_gym.tasks.scenario import ScenarioSet, load_scenario_set

ENV_ID = "ToolUse-Scenario-v0"
MAX_STEPS_PER_TURN = 20


class ScenarioEnv(ToolUseEnv):
    """Tasks from scenario files (see `tooluse_gym.tasks.scenario`) as a Gymnasium env, without protocol wrappers.

    `gym.make("ToolUse-Scenario-v0", path=...)` builds this env and wraps it (`make_scenario_env`).

    ## Arguments
    - `scenarios`: the loaded `ScenarioSet`.
    - `task_ids`, `categories`: optional restrictions of its tasks.
    - the rest: see `EnvConfig` and `MultiTurnEnv`.

    ## Version History
    - v0: initial version.
    """

    def __init__(
        self,
        scenarios: ScenarioSet,
        task_ids: Sequence[str] | None = None,
        categories: Sequence[str] | None = None,
        tool_format: str = "python",
        strict_tools: bool = False,
        validate_args: bool | None = None,
        max_steps_per_turn: int = MAX_STEPS_PER_TURN,
        render_mode: str | None = None,
        *,
        decoder: str = "lenient",
        holdout_prompting: bool = False,
        protocol: ProtocolCard,
    ):
        tasks = select(scenarios, task_ids, categories)
        validate_args = resolve_validate_args(decoder, validate_args)
        config = EnvConfig(
            tool_format=tool_format,
            decoder=decoder,
            strict_tools=strict_tools,
            validate_args=validate_args,
            max_steps_per_turn=max_steps_per_turn,
            holdout_notice=bfcl.holdout_notice_template(prompting=holdout_prompting),
        )
        self.scenarios = scenarios
        super().__init__(
            tasks,
            scenarios.classes(),
            config=config,
            protocol=protocol,
            stateless_backends=scenarios.stateless(),
            hooks=scenarios.hooks(),
            render_mode=render_mode,
        )


def select(scenarios: ScenarioSet, task_ids: Sequence[str] | None, categories: Sequence[str] | None) -> list:
    """The scenario set's tasks, restricted to `task_ids` (in that order) and/or `categories`."""
    tasks = list(scenarios.tasks)
    if categories is not None:
        known = sorted({t.category for t in tasks})
        unknown = [c for c in categories if c not in known]
        if unknown:
            raise ValueError(f"unknown categories {unknown}; these files have {known}")
        tasks = [t for t in tasks if t.category in set(categories)]
    if task_ids is not None:
        by_id = {t.task_id: t for t in tasks}
        missing = [i for i in task_ids if i not in by_id]
        if missing:
            raise ValueError(f"unknown task ids: {missing[:5]}")
        tasks = [by_id[i] for i in task_ids]
    return tasks


def make_scenario_env(
    path: str | Path | Sequence[str | Path],
    task_ids: Sequence[str] | None = None,
    categories: Sequence[str] | None = None,
    template: str = "native",
    reasoning: str = "keep",
    system_prompt: str = "bfcl",
    tool_format: str = "python",
    tool_results: str = "tool_messages",
    decoder: str = "lenient",
    strict_tools: bool = False,
    validate_args: bool | None = None,
    max_steps_per_turn: int = MAX_STEPS_PER_TURN,
    tokenizer: str | None = None,
    chat_template: str | None = None,
    render_mode: str | None = None,
) -> gym.Env:
    """Build `ToolUse-Scenario-v0` over the scenario files at `path`, wrapped for the requested protocol.

    Args:
        path: A scenario file, a folder of them, or a list of files/folders.
        task_ids: Restrict the env to these scenario ids.
        categories: Restrict the env to these scenario categories.
        decoder: ``lenient`` by default here (scenario tasks have no official score to
            match, and training gets a denser signal when each malformed call is answered
            with its own error); ``bfcl`` decodes exactly as bfcl_eval does.
        Every other argument is the knob of the same name of ``ToolUse-MultiTurn-v0``
        (see `tooluse_gym.envs.multi_turn.make_multi_turn_env`).
    """
    knobs = ProtocolKnobs(
        template=template,
        reasoning=reasoning,
        system_prompt=system_prompt,
        tool_format=tool_format,
        tool_results=tool_results,
        tokenizer=tokenizer,
        chat_template=chat_template,
    )
    scenarios = load_scenario_set(path)
    check_choice("decoder", decoder, DECODERS)
    validate_args = resolve_validate_args(decoder, validate_args)
    card = ProtocolCard(
        env_id=ENV_ID,
        category=",".join(categories) if categories else "all",
        decoder=decoder,
        strict_tools=strict_tools,
        validate_args=validate_args,
        max_steps_per_turn=max_steps_per_turn,
        bfcl_version=bfcl.bfcl_version(),
        tooluse_gym_version=__version__,
        **knobs.card_fields(scenarios_sha256=scenarios.sha256),
    )
    env = ScenarioEnv(
        scenarios,
        task_ids,
        categories,
        tool_format,
        strict_tools,
        validate_args,
        max_steps_per_turn,
        render_mode,
        decoder=decoder,
        holdout_prompting=knobs.prompt.carries_tools,
        protocol=card,
    )
    return knobs.wrap(env)
