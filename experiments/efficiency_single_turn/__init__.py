"""Study B: GRPO efficiency on single-turn tasks (pre-registered; `study` holds its rules)."""
