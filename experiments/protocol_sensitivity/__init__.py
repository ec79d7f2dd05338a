"""Protocol sensitivity: one knob at a time (pre-registered; `study` holds its rules)."""
