"""`ToolResultPlacement`: tool results as ``tool`` messages or, as BFCL's prompting handlers do, one user message."""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from tooluse_gym.envs.base import task_env
from tooluse_gym.envs.knobs import TOOL_RESULT_PLACEMENTS, check_choice


class ToolResultPlacement(gym.ObservationWrapper, gym.utils.RecordConstructorArgs):
    """Where the results of a step's calls appear.

    - ``tool_messages``: one ``{"role": "tool", "tool_call_id", "name", "content"}`` per call.
    - ``user_message``: one user message per step holding the Python repr of
      ``[{"role": "tool", "name": "<call>", "content": "<result>"}, ...]``, the way BFCL's
      prompting-mode API handlers send them (``name`` is the call as text, e.g. ``cd(folder='x')``).
    """

    def __init__(self, env: gym.Env, placement: str = "tool_messages"):
        check_choice("tool_results", placement, TOOL_RESULT_PLACEMENTS)
        gym.utils.RecordConstructorArgs.__init__(self, placement=placement)
        gym.ObservationWrapper.__init__(self, env)
        self.placement = placement

    def observation(self, observation: dict[str, Any]) -> dict[str, Any]:
        """The observation with each step's ``tool`` messages merged into one user message, under ``user_message``."""
        if self.placement == "tool_messages":
            return observation
        records = task_env(self.env).call_records
        out: list[dict[str, Any]] = []
        pending: list[dict[str, str]] = []
        for message in observation["messages"]:
            if message["role"] == "tool":
                record = records.get(message.get("tool_call_id", ""))
                name = record.call.render() if record is not None else message.get("name", "")
                pending.append({"role": "tool", "name": name, "content": message["content"]})
                continue
            if pending:
                out.append({"role": "user", "content": repr(pending)})
                pending = []
            out.append(message)
        if pending:
            out.append({"role": "user", "content": repr(pending)})
        return {**observation, "messages": out}
