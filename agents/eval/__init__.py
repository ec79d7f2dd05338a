"""Evaluation: runs, sweeps, tables, comparisons and their statistics."""
