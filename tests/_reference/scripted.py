"""A scripted player for env tests: the task's ground truth, message by message, without the agents package.

Env tests may look inside the env they test, so `Reference.act` reads its position there; agents read
only what `reset` and `step` return (`tooluse_agents.rollout.loop`).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from tooluse_gym.tasks.task import END_OF_TURN

__all__ = ["END_OF_TURN", "Reference", "play_reference"]


class Reference:
    """The ground truth's next message at the env's current position, in the env's tool format."""

    def act(self, env: gym.Env, observation: Any = None) -> str:
        """The next message: all of the turn's ground-truth calls, then `END_OF_TURN` once they ran."""
        base = env.unwrapped
        task = base.episode_task()
        # a single-turn env has one turn and no steps in it
        turn, steps = getattr(base, "turn", 0), getattr(base, "steps_in_turn", 0)
        return task.reference_message(turn, steps, base.protocol.tool_format)


def play_reference(env: gym.Env, task_id: str, seed: int = 0) -> tuple[float, dict[str, Any]]:
    """Play one episode of the ground truth; returns the final reward and the final info."""
    reference = Reference()
    obs, info = env.reset(seed=seed, options={"task_id": task_id})
    while True:
        obs, reward, terminated, truncated, info = env.step(reference.act(env, obs))
        if terminated or truncated:
            return float(reward), info
