"""Agents that act in tooluse-gym environments, the rollout loop and the command-line tools."""
