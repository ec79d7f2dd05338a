"""What every decoder is: the `Decoder` protocol, its results, and `DecodeError`.

A decoder reads one env action (the assistant's message: text, or an OpenAI-shaped dict) in one
wire format and never evaluates it. `tooluse_gym.decoding.dispatch.decoder_for` picks the decoder
the knobs and the task ask for; the envs call only it and `Decoder.decode`.

Two results satisfy `Decoded`, one per kind of task:

* `tooluse_gym.types.ParsedAction` (multi-turn tasks): the calls the runtime executes, each with
  its own error when it is malformed;
* `AstDecoded` (single-turn tasks): the calls as BFCL's AST checker takes them,
  ``(name, parameters)``, or None when the message does not decode, as one whole.

Both give `Decoded.parsed`, the calls as the env's step record shows them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from tooluse_gym.decoding.json_values import json_copy
from tooluse_gym.errors import ToolUseGymError
from tooluse_gym.types import ParsedAction, ToolCall

__all__ = ["NOT_AN_OBJECT", "AstDecoded", "Call", "DecodeError", "Decoded", "Decoder"]


class DecodeError(ToolUseGymError, ValueError):
    """The message does not decode under the decoder's rules (under BFCL's, its decoder would raise)."""


class Decoded(Protocol):
    """One decoded message, whatever its decoder."""

    @property
    def content(self) -> str:
        """The message text (a dict action's ``content``)."""
        ...

    @property
    def failure(self) -> str | None:
        """Why decoding failed, or why a message that looked like an attempted call holds none."""
        ...

    def parsed(self) -> ParsedAction:
        """The calls as the env's step record shows them (and as the runtime executes them)."""
        ...


D_co = TypeVar("D_co", bound=Decoded, covariant=True)


class Decoder(Protocol[D_co]):
    """Reads one env action in one wire format; never raises on model output."""

    def decode(self, action: Any) -> D_co:
        """The message decoded; a message that does not decode gives a result with ``failure`` set."""
        ...


NOT_AN_OBJECT = "the parameters are not an object"
"""The ``error`` of a decoded call whose parameters are not a dict (BFCL: not function-calling output)."""


Call = tuple[Any, Any]
"""One decoded call: (name, parameters); the parameters are a dict unless the output is malformed."""


@dataclass(frozen=True, init=False)
class AstDecoded:
    """One response as BFCL's AST decoder sees it.

    Attributes:
        content: The message text (a dict action's ``content``).
        calls: The decoded calls, or None when decoding failed.
        failure: Why decoding failed.
        ids: The ``id`` of each structured call (function calling), as the response gave them.
    """

    content: str
    calls: tuple[Call, ...] | None = None
    failure: str | None = None
    ids: tuple[str | None, ...] = ()

    def __init__(
        self,
        content: str,
        calls: tuple[Call, ...] | None = None,
        failure: str | None = None,
        ids: tuple[str | None, ...] = (),
    ) -> None:
        # one store of the fields (as `tooluse_gym.types.ToolCall` does): one result per message decoded
        object.__setattr__(self, "__dict__", {"content": content, "calls": calls, "failure": failure, "ids": ids})

    @property
    def well_formed(self) -> bool:
        """BFCL's ``is_function_calling_format_output``: every call's parameters are a dict."""
        return self.calls is not None and all(type(params) is dict for _, params in self.calls)

    @property
    def has_call(self) -> bool:
        """Whether BFCL's relevance rule counts a function call: decoded, well formed and not empty."""
        return self.well_formed and bool(self.calls)

    def parsed(self) -> ParsedAction:
        """The same response as the env's step record shows it (`shown_calls`)."""
        return ParsedAction(content=self.content, calls=self.shown_calls(), failure=self.failure)

    def shown_calls(self) -> tuple[ToolCall, ...]:
        """The calls as the env's step record shows them (plain literal arguments only).

        A structured call keeps its ``id``; one whose parameters are not an object (JSON that is
        not one) has an ``error`` saying so, its parameters not shown.
        """
        if not self.calls:
            return ()
        ids, shown = self.ids, []
        for i, (name, params) in enumerate(self.calls):
            call_id = ids[i] if i < len(ids) else None
            if type(params) is dict:
                shown.append(ToolCall(str(name), _shown(params), (), call_id))
            else:
                shown.append(ToolCall(str(name), {}, (), call_id, NOT_AN_OBJECT))
        return tuple(shown)


def _shown(params: dict[Any, Any]) -> dict[str, Any]:
    """The parameters as JSON values (tuples become lists), for transcripts; {} when they are not JSON."""
    try:
        shown = json_copy(params)
    except (TypeError, ValueError, RecursionError):
        return {}
    return shown if isinstance(shown, dict) else {}
