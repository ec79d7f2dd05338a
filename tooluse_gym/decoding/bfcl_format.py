r"""BFCL's decoders for the return formats of its format-sensitivity grid, reproduced without eval.

Under a ``prompt_format`` configuration (`tooluse_gym.prompt_formats`) BFCL decodes a response
with ``default_decode_ast_prompting(text, ret_fmt, tool_call_tag)``: the text loses
``` ` ```, newlines and spaces at its ends and gains ``[`` / ``]`` where missing; with the tag,
what lies between the first ``<TOOLCALL>`` and the ``</TOOLCALL>`` after it is decoded (none:
a failure); then, by return format:

* ``python``: a Python call list, read as `tooluse_gym.decoding.bfcl.python_calls`
  reads it (bounded arithmetic in place of BFCL's ``eval``);
* ``json``: the text from the first ``[`` to the last ``]``, narrowed by BFCL's pattern
  ``\[\s*{.*?}\s*(?:,\s*{.*?}\s*)*\]`` (found here by a linear scan that returns the match
  Python's backtracking `re` returns: the pattern itself takes exponential time on some
  text), read with `json.loads` (not JSON: no calls); each object of the list gives
  ``{item["function"]: item["parameters"]}``, other items are skipped;
* ``verbose_xml`` / ``concise_xml``: the first ``<functions>...</functions>`` element, read
  with `xml.etree.ElementTree` (safe here: the text starts at ``<functions>``, so it has no
  prolog and cannot declare entities); each ``<function name>`` gives its parameters,
  from ``<param name value type/>`` attributes (verbose) or ``<param name type>value</param>``
  (concise), converted by their ``type``: ``integer`` with `int`, ``float`` with `float`,
  ``boolean`` true when the text is ``true`` in any case, ``null`` None, ``array`` /
  ``tuple`` / ``object`` / ``dict`` as a Python literal (read here without
  `ast.literal_eval`'s unbounded recursion, to the same values: the `PYTHON_LITERAL` rule of
  `tooluse_gym.decoding.literals`), anything else as text.

Any exception BFCL's decoder would raise is a decoding failure (BFCL's runner scores it
``ast_decoder:decoder_failed``). Text after the last ``</think>`` is decoded, as in the other
decoders. Intended differences: a message over `MAX_MESSAGE_CHARS`, more than 64 calls, or a
literal deeper than 100 levels or over 20,000 nodes fails to decode here, where BFCL would read it.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tooluse_gym.decoding.base import AstDecoded, Call, DecodeError
from tooluse_gym.decoding.bfcl import python_call_list
from tooluse_gym.decoding.limits import MAX_CALLS_PER_MESSAGE, MAX_MESSAGE_CHARS
from tooluse_gym.decoding.literals import PYTHON_LITERAL, Walk
from tooluse_gym.decoding.text import parse_expression, visible_response

__all__ = ["BfclFormatDecoder", "decode_format_action", "json_list_span", "literal_value"]

_TAG_OPEN, _TAG_CLOSE = "<TOOLCALL>", "</TOOLCALL>"
_XML_OPEN, _XML_CLOSE = "<functions>", "</functions>"


@dataclass(frozen=True)
class BfclFormatDecoder:
    """BFCL's decoding of one format-grid configuration's return format (`decode_format_action`).

    Attributes:
        return_format: ``python``, ``json``, ``verbose_xml`` or ``concise_xml``.
        tool_call_tag: The calls stand inside ``<TOOLCALL>...</TOOLCALL>``.
    """

    return_format: str
    tool_call_tag: bool

    def decode(self, action: Any) -> AstDecoded:
        """The calls of one message as BFCL's checker takes them (`decode_format_action`)."""
        return decode_format_action(action, self.return_format, self.tool_call_tag)


def decode_format_action(action: Any, return_format: str, tool_call_tag: bool) -> AstDecoded:
    """Decode an env action as ``default_decode_ast_prompting(text, return_format, tool_call_tag)`` would.

    The action is text (a string, or a dict's ``content``); structured ``tool_calls`` are not
    read (BFCL runs its grid on prompting models only), so a dict that holds some fails.
    """
    if return_format not in _DECODERS:
        raise ValueError(f"unknown return format {return_format!r}; expected one of {', '.join(_DECODERS)}")
    if isinstance(action, Mapping):
        raw = action.get("content")
        content = raw if isinstance(raw, str) else ""
        if action.get("tool_calls"):
            return AstDecoded(content, failure="prompt_format asks for calls in the message text, not tool_calls")
        action = content
    if not isinstance(action, str):
        return AstDecoded("", failure=f"action must be str or dict, got {type(action).__name__}")
    if len(action) > MAX_MESSAGE_CHARS:
        return AstDecoded(action, failure=f"message longer than {MAX_MESSAGE_CHARS} characters")
    try:
        calls = _decode(visible_response(action), return_format, tool_call_tag)
    except DecodeError as e:
        return AstDecoded(action, failure=str(e))
    if len(calls) > MAX_CALLS_PER_MESSAGE:
        return AstDecoded(action, failure=f"more than {MAX_CALLS_PER_MESSAGE} calls in one message")
    return AstDecoded(action, calls=tuple(calls))


def _decode(text: str, return_format: str, tool_call_tag: bool) -> list[Call]:
    text = text.strip("`\n ")
    if not text.startswith("["):
        text = "[" + text
    if not text.endswith("]"):
        text = text + "]"
    if tool_call_tag:
        inner = _between(text, _TAG_OPEN, _TAG_CLOSE)
        if inner is None:
            raise DecodeError("no <TOOLCALL>...</TOOLCALL> in the message")
        text = inner.strip()
    return _DECODERS[return_format](text)


def _between(text: str, open_: str, close: str) -> str | None:
    """What ``re.search(open_ + "(.*?)" + close, text, re.DOTALL).group(1)`` gives, in linear time."""
    start = text.find(open_)
    if start < 0:
        return None
    end = text.find(close, start + len(open_))
    return None if end < 0 else text[start + len(open_) : end]


# --- python ----------------------------------------------------------------------------


def _python(text: str) -> list[Call]:
    return python_call_list(text)


# --- json ------------------------------------------------------------------------------


def json_list_span(text: str) -> tuple[int, int] | None:
    r"""The span ``re.search(r"\[\s*{.*?}\s*(?:,\s*{.*?}\s*)*\]", text, re.DOTALL)`` matches, or None.

    The same match in linear time. Any match ends with ``}``, whitespace, ``]``. Backtracking
    tries each start ``[``, whitespace, ``{`` from the left; for one, the lazy ``.*?`` tries each
    later ``}`` in turn, and after each the greedy repetition first tries ``,``, whitespace,
    ``{`` followed by a later ``}`` (again in turn), and only then ``]``. So the end reached
    after a ``}`` (``after[c]``) depends on that ``}`` alone, and one right-to-left pass finds,
    for every position, the end reached through the first ``}`` at or after it that reaches one.
    """
    n = len(text)
    solid = [n] * (n + 1)  # solid[i]: the first index >= i that is not whitespace (as `\s`)
    for i in range(n - 1, -1, -1):
        solid[i] = solid[i + 1] if text[i].isspace() else i
    first_end: list[int | None] = [None] * (n + 2)  # the end reached through the first good `}` at or after i
    for i in range(n - 1, -1, -1):
        first_end[i] = first_end[i + 1]
        if text[i] == "}":
            end = _end_from(text, solid, first_end, solid[i + 1])
            if end is not None:
                first_end[i] = end
    for p in range(n):
        if text[p] == "[":
            q = solid[p + 1]
            if q < n and text[q] == "{":
                end = first_end[q + 1]
                if end is not None:
                    return p, end + 1
    return None


def _end_from(text: str, solid: list[int], first_end: list[int | None], pos: int) -> int | None:
    r"""Where ``(?:,\s*{.*?}\s*)*\]`` starting at `pos` ends (the ``]``'s index), as backtracking finds it."""
    if pos >= len(text):
        return None
    if text[pos] == "]":
        return pos
    if text[pos] == ",":
        q = solid[pos + 1]
        if q < len(text) and text[q] == "{":
            return first_end[q + 1]
    return None


def _json(text: str) -> list[Call]:
    first, last = text.find("["), text.rfind("]")
    if 0 <= first < last:  # re.search(r"\[.*\]", text, re.DOTALL)
        text = text[first : last + 1]
    span = json_list_span(text)
    if span is not None:
        text = text[span[0] : span[1]]
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return []
    except (ValueError, RecursionError) as e:  # an int too long to read, nesting too deep: not JSONDecodeError
        raise DecodeError(f"JSON not read ({type(e).__name__})") from None
    if isinstance(data, (dict, str)):  # iterating them gives strings, which BFCL skips
        return []
    if not isinstance(data, list):
        raise DecodeError(f"the JSON is a {type(data).__name__}, not a list")
    calls = []
    for item in data:
        if isinstance(item, dict):
            if "function" not in item or "parameters" not in item:
                raise DecodeError("a call object lacks 'function' or 'parameters'")
            name = item["function"]
            if isinstance(name, (list, dict)):
                raise DecodeError("a call's function name is not hashable")
            calls.append((name, item["parameters"]))
    return calls


# --- xml -------------------------------------------------------------------------------


def _xml_root(text: str) -> ET.Element:
    inner = _between(text, _XML_OPEN, _XML_CLOSE)
    if inner is None:
        raise DecodeError("no <functions>...</functions> in the message")
    try:
        return ET.fromstring(_XML_OPEN + inner + _XML_CLOSE)
    except ET.ParseError as e:
        raise DecodeError(f"not well-formed XML: {str(e)[:200]}") from None
    except (ValueError, RecursionError, MemoryError) as e:  # e.g. lone surrogates, which UTF-8 cannot encode
        raise DecodeError(f"XML not read ({type(e).__name__})") from None


def _verbose_xml(text: str) -> list[Call]:
    calls = []
    for func in _xml_root(text).findall("function"):
        name = _attribute(func, "name")
        container = func.find("params")
        params = container.findall("param") if container is not None else func.findall("param")
        values: dict[Any, Any] = {}
        for param in params:
            raw = param.attrib.get("value", "")
            values[param.attrib.get("name")] = _typed(raw, param.attrib.get("type", "string"))
        calls.append((name, values))
    return calls


def _concise_xml(text: str) -> list[Call]:
    calls = []
    for func in _xml_root(text).findall("function"):
        name = _attribute(func, "name")
        values: dict[Any, Any] = {}
        for param in func.findall("param"):
            key = _attribute(param, "name")
            values[key] = _typed((param.text or "").strip(), param.attrib.get("type", "string"))
        calls.append((name, values))
    return calls


def _attribute(element: ET.Element, name: str) -> str:
    if name not in element.attrib:
        raise DecodeError(f"a <{element.tag}> lacks its {name!r} attribute")
    return element.attrib[name]


def _typed(raw: str, kind: str) -> Any:
    """BFCL's ``convert_value_by_type``: the text as the declared type."""
    try:
        if kind == "integer":
            return int(raw)
        if kind == "float":
            return float(raw)
    except ValueError as e:
        raise DecodeError(f"{raw[:50]!r} is not a {kind} ({str(e)[:100]})") from None
    if kind == "boolean":
        return raw.lower() == "true"
    if kind == "null":
        return None
    if kind in ("array", "tuple", "object", "dict"):
        return literal_value(raw)
    return raw


# --- Python literals -------------------------------------------------------------------


def literal_value(source: str) -> Any:
    """What ``ast.literal_eval(source)`` returns, with the decoders' size limits; raises `DecodeError`."""
    try:
        body = parse_expression(source.lstrip(" \t")).body
    except (SyntaxError, ValueError, RecursionError, MemoryError) as e:
        raise DecodeError(f"not a Python literal ({type(e).__name__})") from None
    return Walk(PYTHON_LITERAL).value(body)


_DECODERS = {"python": _python, "json": _json, "verbose_xml": _verbose_xml, "concise_xml": _concise_xml}
