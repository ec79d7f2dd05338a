"""Gymnasium spaces for chat text and conversations.

Gymnasium's `Text` space only accepts characters from a fixed charset (letters and digits
by default), so an LLM message with spaces, punctuation or any unicode is not a member.
`ChatText` accepts any `str` up to `max_length` characters.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from gymnasium.spaces import Space

# Sampled characters: printable ASCII plus a spread of non-ASCII code points, so random
# actions exercise the parsers with real unicode (no surrogates: they cannot be encoded).
_SAMPLE_ALPHABET = (
    [chr(c) for c in range(32, 127)]
    + list("\n\t")
    + [chr(c) for c in (0xE9, 0xDF, 0x3B1, 0x416, 0x5D0, 0x627, 0x4E2D, 0x65E5, 0xAC00, 0x1F600)]
)

ROLES = frozenset({"system", "user", "assistant", "tool"})


class ChatText(Space[str]):
    """Any unicode string of at most `max_length` characters."""

    def __init__(self, max_length: int = 65536, *, seed: int | np.random.Generator | None = None):
        if max_length < 1:
            raise ValueError(f"max_length must be >= 1, got {max_length}")
        self.max_length = int(max_length)
        super().__init__(dtype=str, seed=seed)

    @property
    def is_np_flattenable(self) -> bool:
        return False

    def sample(self, mask: Any = None, probability: Any = None) -> str:
        if mask is not None or probability is not None:
            raise NotImplementedError("ChatText.sample does not support masks")
        length = int(self.np_random.integers(0, min(self.max_length, 64) + 1))
        idx = self.np_random.integers(0, len(_SAMPLE_ALPHABET), size=length)
        return "".join(_SAMPLE_ALPHABET[i] for i in idx)

    def contains(self, x: Any) -> bool:
        return isinstance(x, str) and len(x) <= self.max_length

    def __repr__(self) -> str:
        return f"ChatText({self.max_length})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ChatText) and other.max_length == self.max_length

    def to_jsonable(self, sample_n: Sequence[str]) -> list[str]:
        return list(sample_n)

    def from_jsonable(self, sample_n: Sequence[str]) -> list[str]:
        return list(sample_n)


class AssistantAction(ChatText):
    """The action: assistant text, or an OpenAI-shaped dict ``{"content", "tool_calls"}``.

    Membership only checks the outer shape; the env validates every field it reads and
    reports malformed calls back to the model instead of raising.
    """

    def contains(self, x: Any) -> bool:
        if isinstance(x, Mapping):
            content = x.get("content")
            calls = x.get("tool_calls")
            return (content is None or super().contains(content)) and (
                calls is None or (isinstance(calls, Sequence) and not isinstance(calls, str))
            )
        return super().contains(x)

    def __repr__(self) -> str:
        return f"AssistantAction({self.max_length})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, AssistantAction) and other.max_length == self.max_length


class Conversation(Space[list]):
    """A list of chat messages: dicts with a known `role` and `str` (or `None`) `content`."""

    def __init__(self, *, seed: int | np.random.Generator | None = None):
        super().__init__(dtype=object, seed=seed)

    @property
    def is_np_flattenable(self) -> bool:
        return False

    def sample(self, mask: Any = None, probability: Any = None) -> list[dict[str, str]]:
        text = ChatText(64, seed=int(self.np_random.integers(2**31)))
        return [{"role": "user", "content": text.sample()}]

    def contains(self, x: Any) -> bool:
        if not isinstance(x, list):
            return False
        for m in x:
            if not isinstance(m, Mapping) or m.get("role") not in ROLES:
                return False
            content = m.get("content")
            if content is not None and not isinstance(content, str):
                return False
        return True

    def __repr__(self) -> str:
        return "Conversation()"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Conversation)


class ToolSchemas(Space[list]):
    """A list of OpenAI-style tool schemas (``{"type": "function", "function": {...}}``)."""

    def __init__(self, *, seed: int | np.random.Generator | None = None):
        super().__init__(dtype=object, seed=seed)

    @property
    def is_np_flattenable(self) -> bool:
        return False

    def sample(self, mask: Any = None, probability: Any = None) -> list[dict[str, Any]]:
        return []

    def contains(self, x: Any) -> bool:
        return isinstance(x, list) and all(isinstance(t, Mapping) and isinstance(t.get("function"), Mapping) for t in x)

    def __repr__(self) -> str:
        return "ToolSchemas()"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ToolSchemas)
