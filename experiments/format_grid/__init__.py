"""The single-turn prompt-format grid (pre-registered; `study` holds its rules)."""
