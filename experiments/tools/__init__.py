"""Standalone scripts beside the studies: the check model, the shipped adapter, the first-run timing, SB3 baselines."""
