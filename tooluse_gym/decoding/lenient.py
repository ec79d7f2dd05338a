"""The lenient decoder (``decoder="lenient"``): tool calls read out of model messages, never evaluated.

Three input shapes are understood:

* ``python``: BFCL's prompting format, ``[f(a=1), g('x', b=[1, 2])]``, parsed with `ast`.
  Only literal arguments are accepted (numbers, strings, booleans, None, and lists,
  tuples and dicts of those: the `LENIENT` rule of `tooluse_gym.decoding.literals`);
  positional arguments are kept and bound to parameter names by the runtime.
* ``json``: one or more ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` blocks.
* structured: an OpenAI chat message dict whose ``tool_calls`` hold ``function.name`` and
  ``function.arguments`` (a JSON string or an object).

A message in which no call can be found ends the user turn, as in BFCL (whose decoder
fails on prose). A call that is recognised but malformed is returned with `error` set, so
the runtime can send the error back to the model as that call's result.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tooluse_gym.decoding.call_lists import certain_syntax_error, read_call_list
from tooluse_gym.decoding.limits import (
    MAX_CALLS_PER_MESSAGE,
    MAX_LENIENT_LITERAL_DEPTH,
    MAX_LENIENT_LITERAL_NODES,
    MAX_MESSAGE_CHARS,
)
from tooluse_gym.decoding.literals import LENIENT, NotLiteral, Walk
from tooluse_gym.decoding.text import content_failure, parse_expression, strip_reasoning
from tooluse_gym.types import ParsedAction, ToolCall

__all__ = [
    "LenientDecoder",
    "literal_call",
    "parse_action",
    "parse_call_string",
    "parse_json_calls",
    "parse_python_calls",
    "parse_structured_calls",
]

_TOOL_CALL_BLOCK = re.compile(r"<tool_call>(.*?)</tool_call>", re.DOTALL)
_FENCE = re.compile(r"^```[A-Za-z0-9_+-]*\s*\n?(.*?)\n?```$", re.DOTALL)
_LOOKS_LIKE_CALL = re.compile(r"^\s*\[?\s*[A-Za-z_][\w.]*\s*\(")


@dataclass(frozen=True)
class LenientDecoder:
    """The lenient rule on multi-turn tasks (`parse_action`): each malformed call gets its own error.

    Attributes:
        tool_format: ``python`` (call lists) or ``json`` (``<tool_call>`` blocks).
    """

    tool_format: str

    def decode(self, action: Any) -> ParsedAction:
        """The calls of one message (`parse_action`)."""
        return parse_action(action, self.tool_format)


def parse_action(action: Any, tool_format: str) -> ParsedAction:
    """Parse an env action (text or OpenAI-shaped dict) in the given tool format."""
    if isinstance(action, Mapping):
        content = action.get("content")
        if content is not None and not isinstance(content, str):
            return ParsedAction(content="", failure=content_failure(content))
        content = content or ""
        raw_calls = action.get("tool_calls")
        if raw_calls:
            return parse_structured_calls(raw_calls, content)
        action = content
    if not isinstance(action, str):
        return ParsedAction(content="", failure=f"action must be str or dict, got {type(action).__name__}")
    if tool_format == "python":
        return parse_python_calls(action)
    if tool_format == "json":
        return parse_json_calls(action)
    raise ValueError(f"unknown tool_format {tool_format!r}; expected 'python' or 'json'")


def parse_python_calls(text: str) -> ParsedAction:
    """Parse ``[f(a=1), g(b='x')]`` (brackets optional, code fences and reasoning ignored)."""
    if len(text) > MAX_MESSAGE_CHARS:
        return ParsedAction(content=text, failure=f"message longer than {MAX_MESSAGE_CHARS} characters")
    body = strip_reasoning(text).strip()
    fenced = _FENCE.match(body)
    if fenced:
        body = fenced.group(1).strip()
    if not body:
        return ParsedAction(content=text)
    wrapped = body if body.startswith("[") else "[" + body
    wrapped = wrapped if wrapped.endswith("]") else wrapped + "]"
    read = read_call_list(wrapped, names=False)  # the common shape, read as `ast` would read it
    if read is not None:
        return ParsedAction(content=text, calls=tuple(ToolCall(name=name, arguments=args) for name, args in read))
    if certain_syntax_error(wrapped):  # prose: what `ast` would say, without the failed parse
        return _no_calls(text, body, "not a Python call list (SyntaxError)")
    try:
        tree = parse_expression(wrapped).body
    except (SyntaxError, ValueError, RecursionError, MemoryError, OverflowError) as e:
        return _no_calls(text, body, f"not a Python call list ({type(e).__name__})")
    nodes = tree.elts if isinstance(tree, (ast.List, ast.Tuple)) else [tree]
    if not nodes:
        return ParsedAction(content=text)
    call_nodes = [n for n in nodes if isinstance(n, ast.Call)]
    if len(call_nodes) != len(nodes):
        return _no_calls(text, body, "the list holds something other than calls")
    if len(call_nodes) > MAX_CALLS_PER_MESSAGE:
        return ParsedAction(content=text, failure=f"more than {MAX_CALLS_PER_MESSAGE} calls in one message")
    return ParsedAction(content=text, calls=tuple(_call_from_node(n) for n in call_nodes))


def parse_call_string(source: str) -> ToolCall:
    """Parse one Python call such as BFCL ground truth ``cd(folder='docs')``."""
    parsed = parse_python_calls(source)
    if len(parsed.calls) != 1:
        raise ValueError(f"expected exactly one call in {source!r}: {parsed.failure or 'found none'}")
    call = parsed.calls[0]
    if call.error:
        raise ValueError(f"cannot parse {source!r}: {call.error}")
    return call


def parse_json_calls(text: str) -> ParsedAction:
    """Parse every ``<tool_call>{...}</tool_call>`` block in the message."""
    if len(text) > MAX_MESSAGE_CHARS:
        return ParsedAction(content=text, failure=f"message longer than {MAX_MESSAGE_CHARS} characters")
    visible = strip_reasoning(text)
    blocks = _TOOL_CALL_BLOCK.findall(visible)
    if not blocks:
        failure = "unterminated <tool_call> block" if "<tool_call>" in visible else None
        return ParsedAction(content=text, failure=failure)
    if len(blocks) > MAX_CALLS_PER_MESSAGE:
        return ParsedAction(content=text, failure=f"more than {MAX_CALLS_PER_MESSAGE} calls in one message")
    calls = []
    for i, block in enumerate(blocks):
        try:
            obj = json.loads(block)
        except (ValueError, RecursionError) as e:
            calls.append(_bad_call(f"tool call {i} is not valid JSON: {_short(e)}"))
            continue
        if not isinstance(obj, Mapping):
            calls.append(_bad_call(f"tool call {i} must be a JSON object with 'name' and 'arguments'"))
            continue
        arguments = obj.get("arguments", obj.get("parameters", {}))
        calls.append(_call_from_json(obj.get("name"), arguments, None))
    return ParsedAction(content=text, calls=tuple(calls))


def parse_structured_calls(raw_calls: Any, content: str = "") -> ParsedAction:
    """Parse OpenAI chat ``tool_calls`` (``[{"id", "type", "function": {"name", "arguments"}}]``)."""
    if not isinstance(raw_calls, Sequence) or isinstance(raw_calls, (str, bytes)):
        return ParsedAction(content=content, failure="tool_calls must be a list")
    if len(raw_calls) > MAX_CALLS_PER_MESSAGE:
        return ParsedAction(content=content, failure=f"more than {MAX_CALLS_PER_MESSAGE} calls in one message")
    calls = []
    for i, raw in enumerate(raw_calls):
        if not isinstance(raw, Mapping):
            calls.append(_bad_call(f"tool_calls[{i}] must be an object"))
            continue
        fn = raw.get("function", raw)
        call_id = raw.get("id") if isinstance(raw.get("id"), str) else None
        if not isinstance(fn, Mapping):
            calls.append(_bad_call(f"tool_calls[{i}].function must be an object", call_id))
            continue
        calls.append(_call_from_json(fn.get("name"), fn.get("arguments", {}), call_id))
    return ParsedAction(content=content, calls=tuple(calls))


# --- helpers -------------------------------------------------------------------------


def _no_calls(text: str, body: str, reason: str) -> ParsedAction:
    """A message without calls; keep the reason only when it looked like an attempted call."""
    return ParsedAction(content=text, failure=reason if _LOOKS_LIKE_CALL.match(body) else None)


def _short(e: BaseException) -> str:
    return str(e)[:200]


def _bad_call(error: str, call_id: str | None = None, name: str = "<invalid>") -> ToolCall:
    return ToolCall(name=name, call_id=call_id, error=error)


def _call_name(func: ast.expr) -> str | None:
    parts = []
    while isinstance(func, ast.Attribute):
        parts.append(func.attr)
        func = func.value
    if not isinstance(func, ast.Name):
        return None
    parts.append(func.id)
    return ".".join(reversed(parts))


def literal_call(node: ast.Call) -> ToolCall:
    """The call a parsed call node stands for, with literal arguments (`error` set where one is not)."""
    return _call_from_node(node)


def _call_from_node(node: ast.Call) -> ToolCall:
    name = _call_name(node.func)
    if name is None:
        return _bad_call("the called object must be a function name")
    kwargs: dict[str, Any] = {}
    positional: list[Any] = []
    walk = Walk(LENIENT)
    try:
        for arg in node.args:
            if isinstance(arg, ast.Starred):
                raise NotLiteral("*args is not allowed")
            positional.append(walk.value(arg))
        for kw in node.keywords:
            if kw.arg is None:
                raise NotLiteral("**kwargs is not allowed")
            if kw.arg in kwargs:
                raise NotLiteral(f"argument {kw.arg!r} given twice")
            kwargs[kw.arg] = walk.value(kw.value)
    except NotLiteral as e:
        return _bad_call(f"invalid arguments for {name}: {e}", name=name)
    return ToolCall(name=name, arguments=kwargs, positional=tuple(positional))


def _check_json_value(value: Any, depth: int, budget: list[int]) -> None:
    budget[0] -= 1
    if budget[0] < 0:
        raise NotLiteral("argument value too large")
    if depth > MAX_LENIENT_LITERAL_DEPTH:
        raise NotLiteral(f"argument nested deeper than {MAX_LENIENT_LITERAL_DEPTH}")
    if isinstance(value, Mapping):
        for v in value.values():
            _check_json_value(v, depth + 1, budget)
    elif isinstance(value, (list, tuple)):
        for v in value:
            _check_json_value(v, depth + 1, budget)
    elif value is not None and type(value) not in (str, int, float, bool):
        raise NotLiteral(f"unsupported value of type {type(value).__name__}")


def _call_from_json(name: Any, arguments: Any, call_id: str | None) -> ToolCall:
    if not isinstance(name, str) or not name:
        return _bad_call("tool call needs a non-empty string 'name'", call_id)
    if isinstance(arguments, str):
        if len(arguments) > MAX_MESSAGE_CHARS:
            return _bad_call(f"arguments of {name} are too long", call_id, name)
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except (ValueError, RecursionError) as e:
            return _bad_call(f"arguments of {name} are not valid JSON: {_short(e)}", call_id, name)
    if not isinstance(arguments, Mapping):
        return _bad_call(f"arguments of {name} must be a JSON object", call_id, name)
    try:
        _check_json_value(arguments, 0, [MAX_LENIENT_LITERAL_NODES])
    except (NotLiteral, RecursionError) as e:
        return _bad_call(f"invalid arguments for {name}: {e}", call_id, name)
    if not all(isinstance(k, str) for k in arguments):
        return _bad_call(f"argument names of {name} must be strings", call_id, name)
    return ToolCall(name=name, arguments=dict(arguments), call_id=call_id)
