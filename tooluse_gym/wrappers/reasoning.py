"""`ReasoningHistory`: what happens to the reasoning of earlier assistant messages."""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from tooluse_gym.decoding.text import strip_reasoning
from tooluse_gym.envs.knobs import REASONING_MODES, check_choice


def remove_reasoning(message: dict[str, Any]) -> dict[str, Any]:
    """The message without ``<think>...</think>`` blocks in its content and without `reasoning_content`."""
    content = message.get("content")
    thinking = content if isinstance(content, str) and "<think>" in content else None
    if thinking is None and "reasoning_content" not in message:
        return message
    out = {k: v for k, v in message.items() if k != "reasoning_content"}
    if thinking is not None:
        out["content"] = strip_reasoning(thinking).lstrip()
    return out


class ReasoningHistory(gym.ObservationWrapper, gym.utils.RecordConstructorArgs):
    """Keep or remove ``<think>`` content (and `reasoning_content`) of earlier assistant messages.

    - ``keep``: every assistant message keeps its reasoning.
    - ``strip``: only the assistant messages of the current user turn keep it.
    - ``last``: only the most recent assistant message keeps it.

    Example (``strip``, second user turn): ``[user] A``, ``[assistant] [f()]`` (was
    ``<think>..</think>[f()]``), ``[tool] ...``, ``[user] B``.
    """

    def __init__(self, env: gym.Env, mode: str = "keep"):
        check_choice("reasoning", mode, REASONING_MODES)
        gym.utils.RecordConstructorArgs.__init__(self, mode=mode)
        gym.ObservationWrapper.__init__(self, env)
        self.mode = mode

    def observation(self, observation: dict[str, Any]) -> dict[str, Any]:
        """The observation with reasoning removed from the assistant messages that `mode` does not keep."""
        if self.mode == "keep":
            return observation
        messages = observation["messages"]
        roles = [m["role"] for m in messages]
        if self.mode == "strip":
            turn_start = max((i for i, r in enumerate(roles) if r == "user"), default=-1)
            keep = set(range(turn_start + 1, len(messages)))
        else:
            keep = {max((i for i, r in enumerate(roles) if r == "assistant"), default=-1)}
        out = [m if i in keep or m["role"] != "assistant" else remove_reasoning(m) for i, m in enumerate(messages)]
        return {**observation, "messages": out}
