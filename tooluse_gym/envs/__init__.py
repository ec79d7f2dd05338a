"""Environment classes (imported by `gymnasium.make` through string entry points), and the env ids."""

from tooluse_gym.envs.ids import MEMORY_ID, MULTI_TURN_ID, SCENARIO_ID, SINGLE_TURN_ID, TASKS_ID, WEB_SEARCH_ID

__all__ = ["MEMORY_ID", "MULTI_TURN_ID", "SCENARIO_ID", "SINGLE_TURN_ID", "TASKS_ID", "WEB_SEARCH_ID"]
