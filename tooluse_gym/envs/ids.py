"""The registered env ids, defined once; import them rather than retyping the strings.

Standard library only, with no imports at all, so that code which must not import the
`tooluse_gym` package (it registers the envs, which imports gymnasium) can load this file
on its own (the TUI does).
"""

MULTI_TURN_ID = "ToolUse-MultiTurn-v0"
"""BFCL multi-turn (`tooluse_gym.envs.multi_turn`)."""
SCENARIO_ID = "ToolUse-Scenario-v0"
"""Tasks from scenario files (`tooluse_gym.envs.scenario`)."""
TASKS_ID = "ToolUse-Tasks-v0"
"""Any `tooluse_gym.envs.builder.TaskPool` (`tooluse_gym.envs.builder`)."""
