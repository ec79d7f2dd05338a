"""tooluse-gym: LLM tool calling as Gymnasium environments, scored like the official checkers.

    import gymnasium as gym
    import tooluse_gym  # registers the ids

    env = gym.make("ToolUse-MultiTurn-v0", category="base", template="native", reasoning="keep",
                   system_prompt="bfcl", tool_format="python")
    env = gym.make("ToolUse-SingleTurn-v0", category="simple_python")   # BFCL single-turn
    env = gym.make("ToolUse-Memory-v0", category="memory_kv")            # BFCL memory
    env = gym.make("ToolUse-Scenario-v0", path="scenarios/curriculum/train.yaml")
    env = gym.make("ToolUse-Tasks-v0", source={"kind": "bfcl", "category": "base", "next_turn": True})
    env = gym.make("ToolUse-Tasks-v0", pool=pool)   # any `tooluse_gym.envs.builder.TaskPool`

Importing this package registers environment ids only; it never imports torch or vLLM.
"""

from __future__ import annotations

from gymnasium.envs.registration import register, registry

from tooluse_gym.envs.ids import MEMORY_ID, MULTI_TURN_ID, SCENARIO_ID, SINGLE_TURN_ID, TASKS_ID, WEB_SEARCH_ID

__version__ = "0.1.0"

__all__ = ["__version__", "register_tools"]

_ENV_IDS = {
    MULTI_TURN_ID: "tooluse_gym.envs.multi_turn:make_multi_turn_env",
    SINGLE_TURN_ID: "tooluse_gym.envs.single_turn:make_single_turn_env",
    SCENARIO_ID: "tooluse_gym.envs.scenario:make_scenario_env",
    TASKS_ID: "tooluse_gym.envs.builder:make_task_env",
    MEMORY_ID: "tooluse_gym.envs.memory:make_memory_env",
    WEB_SEARCH_ID: "tooluse_gym.envs.web_search:make_web_search_env",
}
for _id, _entry_point in _ENV_IDS.items():
    if _id not in registry:
        register(id=_id, entry_point=_entry_point, disable_env_checker=False)


def register_tools(name: str, cls: type, **kwargs):
    """Register a tool backend class for scenarios (see `tooluse_gym.tools.registry.register_tools`)."""
    from tooluse_gym.tools.registry import register_tools as _register

    return _register(name, cls, **kwargs)
