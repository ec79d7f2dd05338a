"""`ContextTemplate`: every step as a fresh single-turn prompt holding the whole earlier interaction."""

from __future__ import annotations

import json
from typing import Any

import gymnasium as gym

from tooluse_gym.envs.base import task_env

CONTEXT_HEADER = "The conversation so far is below. Write the assistant's next message."


def serialize_history(messages: list[dict[str, Any]], call_names: dict[str, str]) -> str:
    """Render messages as labelled text blocks: ``[user]``, ``[assistant]``, ``[tool: <call>]``."""
    blocks = [CONTEXT_HEADER]
    for m in messages:
        label = m["role"]
        if label == "tool":
            label = f"tool: {call_names.get(m.get('tool_call_id', ''), m.get('name', ''))}"
        content = m.get("content") or ""
        for call in m.get("tool_calls") or ():
            fn = call["function"]
            arguments = fn["arguments"]
            content += f'\n<tool_call>\n{{"name": {json.dumps(fn["name"])}, "arguments": {arguments}}}\n</tool_call>'
        blocks.append(f"[{label}]\n{content.strip()}")
    return "\n\n".join(blocks)


class ContextTemplate(gym.ObservationWrapper, gym.utils.RecordConstructorArgs):
    """``context`` template: the system message (if any) plus one user message with the serialized history.

    Example of the user message at the second step::

        The conversation so far is below. Write the assistant's next message.

        [user]
        Move 'final_report.pdf' within document directory to 'temp' directory in document. ...

        [assistant]
        [cd(folder='document')]

        [tool: cd(folder='document')]
        {"current_working_directory": "document"}
    """

    def __init__(self, env: gym.Env):
        gym.utils.RecordConstructorArgs.__init__(self)
        gym.ObservationWrapper.__init__(self, env)

    def observation(self, observation: dict[str, Any]) -> dict[str, Any]:
        """The observation with all messages after the system message as one user message (`serialize_history`)."""
        messages = observation["messages"]
        head = [messages[0]] if messages and messages[0]["role"] == "system" else []
        records = task_env(self.env).call_records
        names = {call_id: record.call.render() for call_id, record in records.items()}
        text = serialize_history(messages[len(head) :], names)
        return {**observation, "messages": [*head, {"role": "user", "content": text}]}
