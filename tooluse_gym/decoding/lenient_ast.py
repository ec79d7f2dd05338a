"""The ``lenient`` decoder for single-turn tasks: the multi-turn lenient parser, then BFCL's AST checker.

`decode_lenient_action` reads one message with the parser of `tooluse_gym.decoding.lenient` (the
one ``decoder="lenient"`` uses on multi-turn tasks) and hands the calls to BFCL's checker in the
shape BFCL's own decoder gives them (`AstDecoded`), so only how text becomes calls changes; the
verdicts and error types are the checker's (`tooluse_gym.checking.single_turn.verdict`). What it reads
beyond BFCL's decoder (`tooluse_gym.decoding.bfcl_ast`):

* positional arguments, bound to parameter names in the order the function's schema lists
  them (``parameters.properties``); a function the task does not offer has no schema, so its
  positional arguments are dropped, as BFCL's decoder drops every positional argument;
* ``<think>`` blocks anywhere (and the reasoning before a lone ``</think>``), a code fence
  around the call list, and prose around it: when the whole message is not a call list, the
  first fenced block or bracketed call list (``[name(...), ...]``) in it that holds calls is
  read (at most `MAX_LENIENT_CANDIDATES` are tried);
* ``<tool_call>`` blocks without the newlines BFCL's handler needs, with ``parameters`` for
  ``arguments``; structured ``tool_calls`` whose arguments are an object rather than a JSON string.

Values are literals only (strings, numbers, booleans, None, lists, tuples and dicts of those):
nothing is evaluated, so ``a=4+1`` or a bare name, which BFCL's decoder computes or writes as a
string, make the call malformed here.

**A message with a malformed call does not decode, as a whole** (a call with a value that is not a
literal, JSON arguments that do not parse, more positional arguments than the function has
parameters, a parameter given twice, a ``<tool_call>`` block that is not a JSON object...):
``calls`` is None and ``failure`` names each malformed call. The checker then scores it as it
scores a response BFCL's decoder fails on: ``ast_decoder:decoder_failed`` in the AST categories,
no call on an irrelevance entry (valid) and on a relevance entry (``relevance_error:decoder_failed``).
The multi-turn env answers each malformed call with its own error and runs the others; a
single-turn message is judged once, as a whole, as BFCL judges it. A message in which no call is
found (prose, an empty list, no ``<tool_call>`` block, an empty reply) decodes to no calls, which the
AST checker counts (``..._checker:wrong_count``); one that looked like an attempted call but does not
parse (the whole message, or a bracketed list in prose) keeps the parser's failure
(``ast_decoder:decoder_failed``).

The size limits are the parser's (`MAX_MESSAGE_CHARS`, 64 calls, literal depth and size).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tooluse_gym.decoding.base import AstDecoded, Call
from tooluse_gym.decoding.lenient import parse_json_calls, parse_python_calls, parse_structured_calls
from tooluse_gym.decoding.limits import MAX_LENIENT_CANDIDATES, MAX_MESSAGE_CHARS
from tooluse_gym.decoding.text import content_failure, strip_reasoning, visible_response
from tooluse_gym.types import ParsedAction, ToolCall

__all__ = ["LenientAstDecoder", "decode_lenient_action", "embedded_call_lists"]

_FENCED = re.compile(r"```[\w+-]*[ \t]*\n(.*?)```", re.DOTALL)
_LIST_START = re.compile(r"\[\s*[^\W\d][\w.]*\s*\(")


@dataclass(frozen=True)
class LenientAstDecoder:
    """The lenient rule on single-turn tasks (`decode_lenient_action`): the calls BFCL's checker takes.

    Attributes:
        tool_format: ``python`` (call lists) or ``json`` (``<tool_call>`` blocks).
        functions: The task's function docs (their schemas bind positional arguments).
        underscore_to_dot: The functions are offered with dots written as underscores.
    """

    tool_format: str
    functions: Sequence[Mapping[str, Any]] = field(default=())
    underscore_to_dot: bool = False

    def decode(self, action: Any) -> AstDecoded:
        """The calls of one message, read leniently (`decode_lenient_action`)."""
        return decode_lenient_action(action, self.tool_format, self.functions, underscore_to_dot=self.underscore_to_dot)


def decode_lenient_action(
    action: Any,
    tool_format: str,
    functions: Sequence[Mapping[str, Any]],
    *,
    underscore_to_dot: bool = False,
) -> AstDecoded:
    """Decode an env action with the lenient parser, as `AstDecoded` for BFCL's checker.

    Args:
        action: The message: text in `tool_format`, or an OpenAI-shaped dict (its ``tool_calls``
            when it has any, else its ``content`` as text).
        tool_format: ``python`` (call lists) or ``json`` (``<tool_call>`` blocks).
        functions: The task's function docs (their schemas bind positional arguments).
        underscore_to_dot: The functions are offered with dots written as underscores.
    """
    if tool_format not in ("python", "json"):
        raise ValueError(f"unknown tool_format {tool_format!r}; expected 'python' or 'json'")
    if isinstance(action, Mapping):
        content = action.get("content")
        if content is not None and not isinstance(content, str):
            return AstDecoded("", failure=content_failure(content))
        raw_calls = action.get("tool_calls")
        if raw_calls:
            return _as_checked(parse_structured_calls(raw_calls, content or ""), functions, underscore_to_dot)
        action = content or ""
    if not isinstance(action, str):
        return AstDecoded("", failure=f"action must be str or dict, got {type(action).__name__}")
    if len(action) > MAX_MESSAGE_CHARS:
        return AstDecoded(action, failure=f"message longer than {MAX_MESSAGE_CHARS} characters")
    visible = visible_response(action)
    parsed = parse_json_calls(visible) if tool_format == "json" else _python_calls(visible)
    return _as_checked(ParsedAction(action, parsed.calls, parsed.failure), functions, underscore_to_dot)


def _python_calls(text: str) -> ParsedAction:
    """The message as a call list; else the first fenced block or bracketed list in it that holds calls.

    When none does, the parser's failure on the whole message, else on the first candidate that
    looked like an attempted call (too many calls, a syntax error inside the brackets), else none.
    """
    whole = parse_python_calls(text)
    if whole.calls:
        return whole
    failure = whole.failure
    for candidate in embedded_call_lists(strip_reasoning(text)):
        found = parse_python_calls(candidate)
        if found.calls:
            return ParsedAction(text, found.calls)
        failure = failure or found.failure
    return ParsedAction(text, failure=failure)


def embedded_call_lists(text: str) -> Iterator[str]:
    """Fenced blocks' bodies and bracketed lists that start with a call (``[name(``), in text order.

    At most `MAX_LENIENT_CANDIDATES`; a bracketed list runs to its matching ``]`` (brackets inside string
    literals skipped), and one without a match is not a candidate.
    """
    starts: list[tuple[int, str]] = []
    for match in _FENCED.finditer(text):
        starts.append((match.start(), match.group(1)))
        if len(starts) >= MAX_LENIENT_CANDIDATES:
            break
    for n, match in enumerate(_LIST_START.finditer(text)):
        if n >= MAX_LENIENT_CANDIDATES:
            break
        end = _closing(text, match.start())
        if end is not None:
            starts.append((match.start(), text[match.start() : end]))
    for _, candidate in sorted(starts, key=lambda s: s[0])[:MAX_LENIENT_CANDIDATES]:
        yield candidate


def _closing(text: str, start: int) -> int | None:
    """The index after the ``]`` that closes the ``[`` at `start`, skipping string literals; None if none does."""
    depth = 0
    i, n = start, len(text)
    while i < n:
        char = text[i]
        if char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
            if depth == 0:
                return i + 1 if char == "]" else None
        elif char in "'\"":
            i = _string_end(text, i)
            if i < 0:
                return None
            continue
        i += 1
    return None


def _string_end(text: str, start: int) -> int:
    """The index after the string literal opening at `start` (``'``, ``"`` or tripled); -1 if it never closes."""
    quote = text[start] * 3 if text.startswith(text[start] * 3, start) else text[start]
    i, n = start + len(quote), len(text)
    while i < n:
        char = text[i]
        if char == "\\":
            i += 2
            continue
        if len(quote) == 1 and char == "\n":
            return -1
        if text.startswith(quote, i):
            return i + len(quote)
        i += 1
    return -1


def _as_checked(parsed: ParsedAction, functions: Sequence[Mapping[str, Any]], underscore_to_dot: bool) -> AstDecoded:
    """The parser's calls as BFCL's checker takes them; a malformed call makes the whole message fail."""
    if parsed.failure and not parsed.calls:
        return AstDecoded(parsed.content, failure=parsed.failure)
    bad = [f"call {i} ({c.name}): {c.error}" for i, c in enumerate(parsed.calls) if c.error]
    if bad:
        return AstDecoded(parsed.content, failure="malformed calls: " + "; ".join(bad))
    docs = {_offered_name(d["name"], underscore_to_dot): d for d in functions}
    calls: list[Call] = []
    for i, call in enumerate(parsed.calls):
        try:
            calls.append((call.name, _bound(call, docs.get(call.name))))
        except ValueError as e:
            return AstDecoded(parsed.content, failure=f"malformed calls: call {i} ({call.name}): {e}")
    return AstDecoded(parsed.content, calls=tuple(calls), ids=tuple(c.call_id for c in parsed.calls))


def _offered_name(name: str, underscore_to_dot: bool) -> str:
    return name.replace(".", "_") if underscore_to_dot else name


def _bound(call: ToolCall, doc: Mapping[str, Any] | None) -> dict[str, Any]:
    """The call's arguments by parameter name: positional ones bound in the schema's parameter order."""
    if not call.positional:
        return dict(call.arguments)
    if doc is None:  # not offered: no schema to bind by; BFCL's decoder drops positional arguments too
        return dict(call.arguments)
    names = list(doc.get("parameters", {}).get("properties", {}))
    if len(call.positional) > len(names):
        raise ValueError(f"{len(call.positional)} positional arguments, but {call.name} has {len(names)} parameters")
    bound = dict(zip(names, call.positional, strict=False))  # the names may outnumber the values
    twice = [name for name in bound if name in call.arguments]
    if twice:
        raise ValueError(f"parameter {twice[0]!r} given by position and by name")
    return {**bound, **call.arguments}
