"""A scripted agent that replays a task's ground truth through the Gym API.

For every user turn it sends one message with all of the turn's ground-truth calls, then
one message without calls (which ends the turn). Turns with empty ground truth get only
the closing message. It reads the task from the request: it is a reference agent for
parity tests and smoke runs, not a model.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

from tooluse_agents.backends.base import AgentRequest, Generation, SamplingConfig
from tooluse_gym.prompt_formats import PromptFormat
from tooluse_gym.tasks.task import END_OF_TURN

__all__ = ["END_OF_TURN", "OracleAgent"]


class OracleAgent:
    """Replays ground truth in the env's tool format (``python`` or ``json``), or as its ``prompt_format`` asks."""

    name = "oracle"

    def __init__(self) -> None:
        self._done: list[tuple[Hashable, Generation]] = []

    def generate(self, requests: Sequence[AgentRequest], sampling: SamplingConfig | None = None) -> list[Generation]:
        """The ground-truth message for each request (sampling settings are ignored)."""
        return [Generation(text=self.message(r)) for r in requests]

    def submit(self, items: Sequence[tuple[Hashable, AgentRequest]], sampling: SamplingConfig | None = None) -> None:
        """Answer each request at once (`collect` hands them back)."""
        self._done.extend((key, Generation(text=self.message(r))) for key, r in items)

    def collect(self) -> list[tuple[Hashable, Generation]]:
        """Every generation submitted since the last call, with its key."""
        done, self._done = self._done, []
        return done

    def message(self, request: AgentRequest) -> str:
        """The turn's ground-truth calls in the request's tool format, or a message without calls once they ran.

        Raises:
            ValueError: The request carries no task.
        """
        if request.task is None:
            raise ValueError("the oracle needs the task in its request")
        task, turn = request.task, request.turn
        reply = getattr(task, "reference_reply", None)
        if reply is not None:  # a task whose reference reads what its tools returned (BFCL memory)
            return str(reply(turn, request.steps_in_turn, request.tool_format, request.observation.get("messages", ())))
        if request.prompt_format is not None and request.steps_in_turn == 0 and task.ground_truth[turn]:
            fmt = PromptFormat.parse(request.prompt_format)
            if not fmt.python_calls:  # the calls in the syntax the configuration asks for
                return fmt.write([(c.name, dict(c.arguments)) for c in task.ground_truth[turn]])
        return task.reference_message(turn, request.steps_in_turn, request.tool_format)

    def describe(self) -> dict[str, Any]:
        """The agent's identity for result files."""
        return {"name": self.name}

    def close(self) -> None:
        """Nothing to release."""
