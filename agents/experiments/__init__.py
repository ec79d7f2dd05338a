"""Experiments built on the library: the classic-RL baselines and the GRPO efficiency benchmark.

They are drivers, not library code: `tooluse_gym` and `tooluse_agents` never import them. They live in a
package so that their logic is importable (and tested) like any other module; the scripts under
``benchmarks/`` are thin entry points into them.
"""
