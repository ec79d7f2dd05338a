"""Seed stability, single-turn against multi-turn (pre-registered; `study` holds its rules)."""
