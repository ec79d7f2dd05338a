"""`tooluse tui`: a terminal app that replays episodes, follows training runs and compares runs.

It reads the files the harness and the trainer write (`agents/rollout/episode.py`, `agents/runs/runlog.py`)
and nothing else: no model, no environment, no agent backend is imported.
"""
