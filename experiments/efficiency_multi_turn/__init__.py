"""The GRPO efficiency study v2 on multi-turn tasks (pre-registered; `study` holds its rules)."""
