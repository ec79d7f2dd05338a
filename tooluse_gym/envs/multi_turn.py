"""`ToolUse-MultiTurn-v0`: the 800 BFCL multi-turn tasks."""

from __future__ import annotations

from tooluse_gym import __version__
from tooluse_gym.envs.tool_env import EnvConfig, ToolUseEnv
from tooluse_gym.protocol import ProtocolCard
from tooluse_gym.tasks import bfcl


class MultiTurnEnv(ToolUseEnv):
    """BFCL multi-turn (base, miss_func, miss_param, long_context) as a Gymnasium env.

    ## Arguments
    - `category`: ``base`` | ``miss_func`` | ``miss_param`` | ``long_context`` | ``all``.
    - `task_ids`: optional list of task ids to restrict the env to.
    - `tool_format`, `strict_tools`, `validate_args`, `max_steps_per_turn`: see `EnvConfig`.
    - `render_mode`: ``None`` or ``"ansi"``.

    ## Version History
    - v0: initial version (bfcl-eval 2026.3.23 data and simulators).
    """

    def __init__(
        self,
        category: str = "base",
        task_ids: list[str] | None = None,
        tool_format: str = "python",
        strict_tools: bool = False,
        validate_args: bool = True,
        max_steps_per_turn: int = bfcl.MAX_STEPS_PER_TURN,
        render_mode: str | None = None,
    ):
        config = EnvConfig(
            tool_format=tool_format,
            strict_tools=strict_tools,
            validate_args=validate_args,
            max_steps_per_turn=max_steps_per_turn,
            holdout_notice=bfcl.holdout_notice(),
        )
        protocol = ProtocolCard(
            env_id="ToolUse-MultiTurn-v0",
            category=category,
            tool_format=tool_format,
            strict_tools=strict_tools,
            validate_args=validate_args,
            max_steps_per_turn=max_steps_per_turn,
            bfcl_version=bfcl.bfcl_version(),
            tooluse_gym_version=__version__,
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
