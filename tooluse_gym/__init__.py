"""tooluse-gym: LLM tool calling as Gymnasium environments, scored like the official checkers.

    import gymnasium as gym
    import tooluse_gym  # registers the ids

    env = gym.make("ToolUse-MultiTurn-v0", category="base", template="native", reasoning="keep",
                   system_prompt="bfcl", tool_format="python")

Importing this package registers environment ids only; it never imports torch or vLLM.
"""

from __future__ import annotations

from gymnasium.envs.registration import register, registry

__version__ = "0.1.0"

__all__ = ["__version__"]

if "ToolUse-MultiTurn-v0" not in registry:
    register(
        id="ToolUse-MultiTurn-v0",
        entry_point="tooluse_gym.envs.multi_turn:make_multi_turn_env",
        disable_env_checker=False,
    )
