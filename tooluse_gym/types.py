"""Typed data passed between the parser, the tool runtime, the checker and the env.

`ToolCall` and `StepRecord`, built at every step, write their ``__init__`` out: a frozen
dataclass's generated one sets each field through ``object.__setattr__``, which cost as much
as the rest of a single-turn step; theirs store the instance's fields in one assignment.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

_NEW_DICT: Any = object()
"""`ToolCall`'s default ``arguments``: a new empty dict per call (the field's ``default_factory``)."""


@dataclass(frozen=True, init=False)
class ToolCall:
    """One call parsed from a model message (or from ground truth).

    `error` is set when the call was recognised but cannot be executed as written
    (a non-literal argument, malformed JSON arguments, ...). Such a call is not
    executed; the runtime returns the error to the model as the call's tool result.

    `source` is set by the ``bfcl`` decoder: the call string exactly as bfcl_eval's
    decoder writes it, which the runtime executes (`tooluse_gym.tools.call_strings`);
    `arguments` then only shows its literal keyword arguments, for transcripts.
    """

    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)
    positional: tuple[Any, ...] = ()
    call_id: str | None = None
    error: str | None = None
    source: str | None = None

    def __init__(
        self,
        name: str,
        arguments: Mapping[str, Any] = _NEW_DICT,
        positional: tuple[Any, ...] = (),
        call_id: str | None = None,
        error: str | None = None,
        source: str | None = None,
    ) -> None:
        fields = {
            "name": name,
            "arguments": {} if arguments is _NEW_DICT else arguments,
            "positional": positional,
            "call_id": call_id,
            "error": error,
            "source": source,
        }
        object.__setattr__(self, "__dict__", fields)

    def render(self) -> str:
        """Python call syntax, e.g. ``cd(folder='docs')`` (for transcripts, never for execution)."""
        if self.source is not None:
            return self.source
        parts = [repr(v) for v in self.positional]
        parts += [f"{k}={v!r}" for k, v in self.arguments.items()]
        return f"{self.name}({', '.join(parts)})"

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form for episode files."""
        out: dict[str, Any] = {"name": self.name, "arguments": dict(self.arguments)}
        if self.positional:
            out["positional"] = list(self.positional)
        if self.call_id is not None:
            out["id"] = self.call_id
        if self.error is not None:
            out["error"] = self.error
        if self.source is not None:
            out["source"] = self.source
        return out


@dataclass(frozen=True)
class ParsedAction:
    """What the parser found in one assistant message.

    `calls` empty means the message contains no call: it ends the current user turn.
    `failure` explains why nothing could be parsed: under the ``bfcl`` decoder, BFCL's decoding
    error for any message it fails on (a text reply too: that is how BFCL ends a turn); under the
    lenient parser only when the text looked like an attempted call.
    """

    content: str
    calls: tuple[ToolCall, ...] = ()
    failure: str | None = None

    def parsed(self) -> ParsedAction:
        """Itself: the calls the runtime executes are those the step record shows (`tooluse_gym.decoding.Decoded`)."""
        return self


@dataclass(frozen=True, init=False)
class StepRecord:
    """One assistant message as the env handled it: the calls it found and their results.

    A message without calls (which ends its turn) has empty `calls` and `results`.
    """

    turn: int
    content: str
    calls: tuple[ToolCall, ...] = ()
    results: tuple[str, ...] = ()
    parse_failure: str | None = None

    def __init__(
        self,
        turn: int,
        content: str,
        calls: tuple[ToolCall, ...] = (),
        results: tuple[str, ...] = (),
        parse_failure: str | None = None,
    ) -> None:
        fields = {"turn": turn, "content": content, "calls": calls, "results": results, "parse_failure": parse_failure}
        object.__setattr__(self, "__dict__", fields)

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form for episode files (the content under ``assistant``; ``parse_failure`` only when set)."""
        out: dict[str, Any] = {
            "turn": self.turn,
            "assistant": self.content,
            "calls": [c.to_dict() for c in self.calls],
            "results": list(self.results),
        }
        if self.parse_failure:
            out["parse_failure"] = self.parse_failure
        return out
