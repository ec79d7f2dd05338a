"""The registered env ids, defined once; import them rather than retyping the strings.

No imports at all: every layer can import them (the TUI's run files name the BFCL env by it).
"""

MULTI_TURN_ID = "ToolUse-MultiTurn-v0"
"""BFCL multi-turn (`tooluse_gym.envs.multi_turn`)."""
SINGLE_TURN_ID = "ToolUse-SingleTurn-v0"
"""BFCL single-turn (`tooluse_gym.envs.single_turn`)."""
SCENARIO_ID = "ToolUse-Scenario-v0"
"""Tasks from scenario files (`tooluse_gym.envs.scenario`)."""
TASKS_ID = "ToolUse-Tasks-v0"
"""Any `tooluse_gym.envs.builder.TaskPool` (`tooluse_gym.envs.builder`)."""
MEMORY_ID = "ToolUse-Memory-v0"
"""BFCL's memory categories (`tooluse_gym.envs.memory`)."""
WEB_SEARCH_ID = "ToolUse-WebSearch-v0"
"""BFCL's web-search categories (`tooluse_gym.envs.web_search`)."""
