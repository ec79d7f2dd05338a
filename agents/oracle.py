"""A scripted agent that replays a task's ground truth through the Gym API.

For every user turn it sends one message with all of the turn's ground-truth calls, then
one message without calls (which ends the turn). Turns with empty ground truth get only
the closing message. It reads the task from the unwrapped env: it is a reference agent
for parity tests and smoke runs, not a model.
"""

from __future__ import annotations

import json
from typing import Any

import gymnasium as gym

END_OF_TURN = "Done."


class OracleAgent:
    """Replays ground truth in the env's tool format (``python`` or ``json``)."""

    name = "oracle"

    def act(self, env: gym.Env, observation: dict[str, Any]) -> str:
        base = env.unwrapped
        calls = base.task.ground_truth[base.turn]
        if base.steps_in_turn > 0 or not calls:
            return END_OF_TURN
        if base.config.tool_format == "python":
            return "[" + ", ".join(c.render() for c in calls) + "]"
        blocks = (json.dumps({"name": c.name, "arguments": base.runtime.keyword_arguments(c)}) for c in calls)
        return "\n".join(f"<tool_call>{b}</tool_call>" for b in blocks)


def run_episode(env: gym.Env, agent: OracleAgent, task_id: str, seed: int = 0) -> tuple[float, dict[str, Any]]:
    """Play one episode; returns the final reward and the final info."""
    obs, info = env.reset(seed=seed, options={"task_id": task_id})
    while True:
        obs, reward, terminated, truncated, info = env.step(agent.act(env, obs))
        if terminated or truncated:
            return float(reward), info
