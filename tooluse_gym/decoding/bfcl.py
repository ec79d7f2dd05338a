r"""bfcl_eval's eval-time decoders, reproduced without `eval` (the ``decoder="bfcl"`` knob).

BFCL turns each model response into *call strings* such as ``cd(folder='docs')`` and its
executor evaluates those strings. This module produces the very same strings from the same
inputs, and `tooluse_gym.tools.call_strings` runs them against the simulators without
evaluating anything. Three response shapes, each as the handler BFCL uses for it:

* python text, ``[f(a=1)]`` (prompting mode, ``default_decode_execute_prompting``):
  only ``` ` ```, newlines and spaces are stripped from the ends, ``[ ]`` are added when
  missing, and the text must then parse as a list of calls. Only keyword arguments are
  kept (positional ones are dropped), a bare name becomes its string (``folder=docs`` is
  ``'docs'``), a unary operator on a number negates it (whatever the operator), binary
  arithmetic is computed (bounded: `tooluse_gym.decoding.literals`), a call without
  keywords becomes its source text, a call with keywords stays a nested call, a subscript
  becomes its source text, and a dict whose values are all dicts is written as a call of
  its first key. Anything else (prose, a code fence with a language tag, two lists, a
  lambda, an attribute, a comprehension...) fails to decode, which ends the turn.
* ``<tool_call>`` JSON text (``QwenFCHandler.decode_execute``): blocks must read
  ``<tool_call>\n{...}\n</tool_call>``; blocks that are not JSON are skipped; every other
  block must be an object with ``name`` and ``arguments``, or the response fails.
* structured ``tool_calls`` (function-calling mode, ``convert_to_function_call``): each
  call is ``{name: arguments_json}``; one call whose arguments are not a JSON object makes
  the whole response fail.

Text after the last ``</think>`` is decoded, as BFCL's handlers for reasoning models do.
A response that fails to decode, or decodes to no call, ends the user turn.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tooluse_gym.decoding.base import DecodeError
from tooluse_gym.decoding.call_lists import certain_syntax_error, read_call_list
from tooluse_gym.decoding.json_values import json_value
from tooluse_gym.decoding.lenient import literal_call, parse_python_calls
from tooluse_gym.decoding.limits import MAX_CALLS_PER_MESSAGE, MAX_MESSAGE_CHARS
from tooluse_gym.decoding.literals import BFCL_ARGUMENTS, Walk, bfcl_call
from tooluse_gym.decoding.text import content_failure, parse_expression, visible_response
from tooluse_gym.tools.call_strings import call_tree, plain_arguments, plain_call
from tooluse_gym.types import ParsedAction, ToolCall

__all__ = [
    "BfclDecoder",
    "decode_function_calls",
    "decode_python",
    "decode_tool_call_tags",
    "parse_action_bfcl",
    "python_call_list",
    "python_calls",
    "tool_call_blocks",
    "tool_call_objects",
]

_OPEN_TAG, _CLOSE_TAG = "<tool_call>\n", "\n</tool_call>"


@dataclass(frozen=True)
class BfclDecoder:
    """BFCL's decoding on multi-turn tasks (`parse_action_bfcl`): each call carries its call string.

    Attributes:
        tool_format: ``python`` (call lists) or ``json`` (``<tool_call>`` blocks).
    """

    tool_format: str

    def decode(self, action: Any) -> ParsedAction:
        """The calls of one message as BFCL decodes them (`parse_action_bfcl`)."""
        return parse_action_bfcl(action, self.tool_format)


# --- python text ---------------------------------------------------------------------


def decode_python(text: str) -> list[str]:
    """The call strings ``default_decode_execute_prompting(text)`` returns; raises `DecodeError`."""
    return [source for source, _, _ in _decode_python(text)]


_Decoded = list[tuple[str, Any, Any]]
"""Each call as (call string, name, arguments as decoded)."""


def _decode_python(text: str) -> _Decoded:
    calls = python_calls(text)
    try:
        return [(_call_string(name, args), name, args) for name, args in calls]
    except (ValueError, RecursionError) as e:  # e.g. an int too long to print
        raise DecodeError(f"cannot write the call ({type(e).__name__})") from None


def python_calls(text: str) -> list[tuple[Any, dict[Any, Any]]]:
    """The calls ``default_decode_ast_prompting(text)`` returns, as (name, arguments); raises `DecodeError`.

    BFCL's AST decoder for Python text: the same reading as `decode_python`, before the
    calls are written as call strings.
    """
    result = text.strip("`\n ")
    if not result.startswith("["):
        result = "[" + result
    if not result.endswith("]"):
        result = result + "]"
    return python_call_list(result)


def python_call_list(text: str) -> list[tuple[Any, dict[Any, Any]]]:
    """The calls BFCL's ``ast_parse`` reads from Python text (no brackets added), as (name, arguments).

    What `python_calls` does after adding the brackets, and what BFCL does with the text of a
    ``<TOOLCALL>`` tag (`tooluse_gym.decoding.bfcl_format`). Raises `DecodeError`.
    """
    cleaned = text.strip().strip("'")
    read = read_call_list(cleaned, names=True)  # the common shape, read as `ast` would read it
    if read is not None:
        return list(read)
    if certain_syntax_error(cleaned):  # prose: what `ast` would say, without the failed parse
        raise DecodeError("not a Python call list (SyntaxError)")
    try:
        body = parse_expression(cleaned).body
    except (SyntaxError, ValueError, RecursionError, MemoryError) as e:
        raise DecodeError(f"not a Python call list ({type(e).__name__})") from None
    if isinstance(body, ast.Call):
        elts: list[ast.expr] = [body]
    elif isinstance(body, (ast.List, ast.Tuple, ast.Set)):
        elts = body.elts
    else:
        raise DecodeError(f"not a list of calls ({type(body).__name__})")
    nodes = [n for n in elts if isinstance(n, ast.Call)]
    if len(nodes) != len(elts):
        raise DecodeError("the list holds something other than calls")
    if len(nodes) > MAX_CALLS_PER_MESSAGE:
        raise DecodeError(f"more than {MAX_CALLS_PER_MESSAGE} calls in one message")
    walk = Walk(BFCL_ARGUMENTS)
    decoded = [bfcl_call(walk, n, 0) for n in nodes]
    return [(name, args) for call in decoded for name, args in call.items()]


def _nested(value: Any) -> str:
    """BFCL's ``parse_nested_value``: a dict of dicts is a call of its first key."""
    if isinstance(value, dict):
        if all(isinstance(v, dict) for v in value.values()):
            if not value:
                raise DecodeError("an empty dict as an argument (BFCL's decoder fails on it)")
            name = next(iter(value))
            return _call_string(name, value[name])
        return "{" + ", ".join(f"'{k}': {_nested(v)}" for k, v in value.items()) + "}"
    return repr(value)


def _call_string(name: Any, args: Mapping[Any, Any]) -> str:
    return f"{name}({', '.join(f'{k}={_nested(v)}' for k, v in args.items())})"


# --- JSON in text and structured calls -------------------------------------------------


def decode_function_calls(calls: Any) -> list[str]:
    """The call strings ``convert_to_function_call(calls)`` returns; raises `DecodeError`.

    `calls` is BFCL's function-calling response: a list of ``{name: arguments}`` dicts
    (arguments a JSON string or a dict), or one such dict.
    """
    return [source for source, _, _ in _decode_function_calls(calls)]


def _decode_function_calls(calls: Any) -> _Decoded:
    if type(calls) is dict:
        calls = [calls]
    if isinstance(calls, str):  # a text reply: BFCL iterates its characters and fails (or finds none)
        if calls:
            raise DecodeError("a text reply has no function calls")
        return []
    if not isinstance(calls, Sequence) or len(calls) > MAX_CALLS_PER_MESSAGE:
        raise DecodeError("function calls must be a list (of at most 64)")
    out = []
    for call in calls:
        if not isinstance(call, Mapping):
            raise DecodeError("each function call must be a {name: arguments} object")
        for name, arguments in call.items():
            if type(arguments) is str:
                if len(arguments) > MAX_MESSAGE_CHARS:
                    raise DecodeError(f"arguments of {name} are too long")
                try:
                    arguments = json.loads(arguments)
                except (ValueError, RecursionError) as e:
                    raise DecodeError(f"arguments of {name} are not valid JSON: {str(e)[:200]}") from None
            if not isinstance(arguments, Mapping):
                raise DecodeError(f"arguments of {name} are not a JSON object")
            try:
                out.append((f"{name}({','.join(f'{k}={v!r}' for k, v in arguments.items())})", name, arguments))
            except (ValueError, RecursionError) as e:
                raise DecodeError(f"cannot write the call ({type(e).__name__})") from None
    return out


def decode_tool_call_tags(text: str) -> list[str]:
    """The call strings ``QwenFCHandler.decode_execute(text)`` returns; raises `DecodeError`."""
    return [source for source, _, _ in _decode_tool_call_tags(text)]


def tool_call_blocks(text: str) -> list[str]:
    r"""The text of each ``<tool_call>`` block as BFCL's Qwen FC handlers find them.

    What ``re.findall(r"<tool_call>\n(.*?)\n</tool_call>", text, re.DOTALL)`` returns, found
    with `str.find`: each block runs from an opening tag and its line break to the first line
    break and closing tag after it; the next block is looked for after that closing tag.
    """
    blocks = []
    start = text.find(_OPEN_TAG)
    while start >= 0:
        body = start + len(_OPEN_TAG)
        end = text.find(_CLOSE_TAG, body)
        if end < 0:  # no later opening tag has a closing tag after it either
            break
        blocks.append(text[body:end])
        start = text.find(_OPEN_TAG, end + len(_CLOSE_TAG))
    return blocks


def tool_call_objects(text: str) -> list[Any]:
    """The JSON value of each ``<tool_call>`` block, as BFCL's Qwen FC handlers read them.

    Blocks that are not JSON are skipped; more than `MAX_CALLS_PER_MESSAGE` blocks raise `DecodeError`.
    """
    items = []
    for block in tool_call_blocks(text):
        try:
            items.append(json_value(block))  # json.loads(block), as BFCL reads it
        except (ValueError, RecursionError):
            continue  # BFCL skips blocks that are not JSON
    if len(items) > MAX_CALLS_PER_MESSAGE:
        raise DecodeError(f"more than {MAX_CALLS_PER_MESSAGE} calls in one message")
    return items


def _decode_tool_call_tags(text: str) -> _Decoded:
    items = tool_call_objects(text)
    if any(type(item) is not dict for item in items):
        raise DecodeError("every <tool_call> must hold a JSON object")
    try:
        calls = [{item["name"]: item["arguments"]} for item in items]
    except (KeyError, TypeError) as e:
        raise DecodeError(f"a <tool_call> lacks 'name' or 'arguments' ({type(e).__name__})") from None
    return _decode_function_calls(calls)


# --- actions ---------------------------------------------------------------------------


def parse_action_bfcl(action: Any, tool_format: str) -> ParsedAction:
    """Decode an env action as BFCL would; every call carries its call string as `source`.

    A dict action with a ``tool_calls`` key is a function-calling response; otherwise the
    text (a string, or a dict's ``content``) is decoded in `tool_format`.
    """
    if isinstance(action, Mapping):
        raw_content = action.get("content")
        if raw_content is not None and not isinstance(raw_content, str):
            return ParsedAction(content="", failure=content_failure(raw_content))
        content = raw_content or ""
        if "tool_calls" in action:
            raw = action["tool_calls"]
            ids = [c.get("id") if isinstance(c, Mapping) else None for c in raw] if isinstance(raw, list) else []
            return _parsed(content, lambda: _decode_function_calls(_fc_response(raw, content)), ids)
        action = content
    if not isinstance(action, str):
        return ParsedAction(content="", failure=f"action must be str or dict, got {type(action).__name__}")
    if len(action) > MAX_MESSAGE_CHARS:
        return ParsedAction(content=action, failure=f"message longer than {MAX_MESSAGE_CHARS} characters")
    visible = visible_response(action)
    if tool_format == "python":
        return _parsed(action, lambda: _decode_python(visible))
    if tool_format == "json":
        return _parsed(action, lambda: _decode_tool_call_tags(visible))
    raise ValueError(f"unknown tool_format {tool_format!r}; expected 'python' or 'json'")


def _fc_response(raw_calls: Any, content: str) -> Any:
    """OpenAI ``tool_calls`` as BFCL's handler sees them: ``[{name: arguments}]``, or the text when none."""
    if not raw_calls:
        return content if raw_calls is None else []
    if not isinstance(raw_calls, Sequence) or isinstance(raw_calls, (str, bytes)):
        raise DecodeError("tool_calls must be a list")
    out = []
    for raw in raw_calls:
        fn = raw.get("function", raw) if isinstance(raw, Mapping) else None
        if not isinstance(fn, Mapping) or not isinstance(fn.get("name"), str):
            raise DecodeError("each tool call needs function.name")
        out.append({fn["name"]: fn.get("arguments", "")})
    return out


def _parsed(content: str, decode: Callable[[], _Decoded], ids: Sequence[Any] = ()) -> ParsedAction:
    try:
        decoded = decode()
    except DecodeError as e:
        return ParsedAction(content=content, failure=str(e))
    calls = []
    for i, (source, name, arguments) in enumerate(decoded):
        call_id = ids[i] if i < len(ids) and isinstance(ids[i], str) else None
        # a plain call string reads back as its decoded arguments: no need to parse it (both decoders
        # write ``name(k=repr(v), ...)`` for such arguments)
        plain = plain_call(source, name, arguments, written_from_them=True)
        shown = plain_arguments(arguments) if plain else _shown(source)
        calls.append(ToolCall(name=source.split("(", 1)[0], arguments=shown, call_id=call_id, source=source))
    return ParsedAction(content=content, calls=tuple(calls))


def _shown(source: str) -> dict[str, Any]:
    """The call's arguments for transcripts, where they are plain literals (else none are shown).

    They are what the lenient parser reads in the call string. When the string is one that
    parser would only wrap in brackets (no reasoning block, fence, surrounding space or line
    break, not bracketed, shallow), they are read from the string's own tree, which the runtime
    then reuses to run the call (`call_tree`): "[s]" holds exactly one call if and only if s is one.
    """
    if _plain_call_text(source):
        try:
            body = call_tree(source).body
        except Exception:
            return {}
        call = literal_call(body) if isinstance(body, ast.Call) else None
    else:
        parsed = parse_python_calls(source)
        call = parsed.calls[0] if len(parsed.calls) == 1 else None
    if call is None or call.error or call.positional:
        return {}
    return dict(call.arguments)


_MAX_PLAIN_BRACKETS = 150


def _plain_call_text(source: str) -> bool:
    return (
        len(source) <= MAX_MESSAGE_CHARS
        and source.endswith(")")
        and not source.startswith(("[", "```"))
        and not source[0].isspace()
        and "<think>" not in source
        and "\n" not in source  # inside brackets Python joins lines, at the top level it does not
        and "\r" not in source
        and source.count("(") + source.count("[") + source.count("{") < _MAX_PLAIN_BRACKETS
    )
