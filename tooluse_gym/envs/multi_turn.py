"""`ToolUse-MultiTurn-v0`: the 800 BFCL multi-turn tasks, with the evaluation protocol as explicit knobs."""

from __future__ import annotations

from collections.abc import Sequence

import gymnasium as gym

from tooluse_gym import __version__
from tooluse_gym.envs.protocol_stack import TOOL_FORMATS, ProtocolKnobs, check_choice
from tooluse_gym.envs.tool_env import DECODERS, EnvConfig, ToolUseEnv, resolve_validate_args
from tooluse_gym.protocol import ProtocolCard
from tooluse_gym.tasks import bfcl
from tooluse_gym.tasks.known_issues import registry_version

ENV_ID = "ToolUse-MultiTurn-v0"
__all__ = ["ENV_ID", "TOOL_FORMATS", "MultiTurnEnv", "make_multi_turn_env", "protocol_card"]


class MultiTurnEnv(ToolUseEnv):
    """BFCL multi-turn (base, miss_func, miss_param, long_context) as a Gymnasium env, without protocol wrappers.

    `gym.make("ToolUse-MultiTurn-v0", ...)` builds this env and wraps it (`make_multi_turn_env`).

    ## Arguments
    - `category`: ``base`` | ``miss_func`` | ``miss_param`` | ``long_context`` | ``all``.
    - `task_ids`: optional list of task ids to restrict the env to.
    - `tool_format`, `decoder`, `strict_tools`, `validate_args`, `max_steps_per_turn`: see `EnvConfig`
      (`validate_args` None: off under the ``bfcl`` decoder, on under ``lenient``).
    - `render_mode`: ``None`` or ``"ansi"``.
    - `holdout_prompting`: show held-out functions' docs in the notice (BFCL prompting mode).
    - `protocol`: the card to report; by default one for this env without wrappers.

    ## Version History
    - v0: initial version (bfcl-eval 2026.3.23 data and simulators).
    """

    def __init__(
        self,
        category: str = "base",
        task_ids: Sequence[str] | None = None,
        tool_format: str = "python",
        strict_tools: bool = False,
        validate_args: bool | None = None,
        max_steps_per_turn: int = bfcl.MAX_STEPS_PER_TURN,
        render_mode: str | None = None,
        *,
        decoder: str = "bfcl",
        holdout_prompting: bool = False,
        protocol: ProtocolCard | None = None,
    ):
        validate_args = resolve_validate_args(decoder, validate_args)
        config = EnvConfig(
            tool_format=tool_format,
            decoder=decoder,
            strict_tools=strict_tools,
            validate_args=validate_args,
            max_steps_per_turn=max_steps_per_turn,
            holdout_notice=bfcl.holdout_notice_template(prompting=holdout_prompting),
        )
        protocol = protocol or protocol_card(
            category=category,
            tool_format=tool_format,
            decoder=decoder,
            strict_tools=strict_tools,
            validate_args=validate_args,
            max_steps_per_turn=max_steps_per_turn,
        )
        super().__init__(
            bfcl.load_bfcl_tasks(category, task_ids),
            bfcl.backend_classes(),
            config=config,
            protocol=protocol,
            stateless_backends=bfcl.stateless_backends(),
            hooks=bfcl.HOOKS,
            render_mode=render_mode,
        )


def protocol_card(**knobs: object) -> ProtocolCard:
    """The card of this env id with the given knobs, stamped with the bfcl-eval and tooluse-gym versions."""
    return ProtocolCard(
        env_id=ENV_ID,
        bfcl_version=bfcl.bfcl_version(),
        known_issues=registry_version(),
        tooluse_gym_version=__version__,
        **knobs,
    )


def make_multi_turn_env(
    category: str = "base",
    task_ids: Sequence[str] | None = None,
    template: str = "native",
    reasoning: str = "keep",
    system_prompt: str = "bfcl",
    tool_format: str = "python",
    tool_results: str = "tool_messages",
    decoder: str = "bfcl",
    strict_tools: bool = False,
    validate_args: bool | None = None,
    max_steps_per_turn: int = bfcl.MAX_STEPS_PER_TURN,
    tokenizer: str | None = None,
    chat_template: str | None = None,
    render_mode: str | None = None,
) -> gym.Env:
    """Build `ToolUse-MultiTurn-v0`: the BFCL env wrapped for the requested protocol.

    Args:
        category: ``base`` | ``miss_func`` | ``miss_param`` | ``long_context`` | ``all``.
        task_ids: Restrict the env to these task ids.
        template: ``native`` (role-separated messages) | ``context`` (history in one user message).
        reasoning: Earlier ``<think>`` content: ``keep`` | ``strip`` (all but the current turn's) | ``last``.
        system_prompt: ``bfcl`` | ``strong`` | ``none`` | any other text (a literal prompt; a
            ``{functions}`` placeholder in it receives the function list).
        tool_format: ``python`` (``[f(a=1)]``) | ``json`` (``<tool_call>{...}</tool_call>`` blocks).
        tool_results: ``tool_messages`` | ``user_message`` (BFCL's prompting handlers).
        decoder: ``bfcl`` (default: messages decoded, executed and ended exactly as bfcl_eval
            does, without eval) | ``lenient`` (a friendlier parser; see `EnvConfig.decoder`).
        strict_tools: Refuse held-out functions before their turn and excluded functions.
        validate_args: Validate arguments against the function schema before calling
            (None: off under ``bfcl``, which runs every call BFCL would; on under ``lenient``).
        max_steps_per_turn: Executing steps allowed per turn (BFCL: 20).
        tokenizer: Add ``prompt`` rendered with this tokenizer's chat template (a local
            folder, a cached hub id, or ``smollm2-135m``).
        chat_template: Jinja text or a file path replacing the tokenizer's template.
        render_mode: ``None`` or ``"ansi"``.
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
    if category != "all":
        bfcl.normalize_category(category)
    check_choice("decoder", decoder, DECODERS)
    validate_args = resolve_validate_args(decoder, validate_args)
    card = protocol_card(
        category=category,
        decoder=decoder,
        strict_tools=strict_tools,
        validate_args=validate_args,
        max_steps_per_turn=max_steps_per_turn,
        **knobs.card_fields(),
    )
    env = MultiTurnEnv(
        category,
        task_ids,
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
