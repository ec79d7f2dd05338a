r"""bfcl_eval's single-turn decoders (its handlers' ``decode_ast``), reproduced without `eval`.

BFCL scores a single-turn response by decoding it into a list of calls, each
``{name: {parameter: value}}``, and handing that list to its AST checker
(`tooluse_gym.checking.single_turn`). `decode_ast_action` gives the same list for the three response
shapes the multi-turn env accepts, each as the handler BFCL uses for it:

* python text, ``[f(a=1)]`` (``default_decode_ast_prompting``): read exactly as
  `tooluse_gym.decoding.bfcl.python_calls` reads it (keyword arguments only, bounded
  arithmetic instead of ``eval``), without writing call strings. In the Java and JavaScript
  categories BFCL reads this text as a Java or JavaScript call with its tree-sitter parsers
  (``parse_java_function_call`` / ``parse_javascript_function_call``); they evaluate nothing,
  and this module calls them, imported from bfcl_eval at run time (they need ``tree_sitter``
  and its Java and JavaScript grammars: `language_parser_available`);
* ``<tool_call>`` JSON text (``QwenFCHandler.decode_ast``): blocks that are not JSON are
  skipped; every other block must be an object with ``name`` (a JSON scalar) and
  ``arguments`` (an object);
* structured ``tool_calls`` (``OpenAICompletionsHandler.decode_ast`` in function-calling
  mode): each call's arguments must be a JSON *string*, decoded with `json.loads`; a reply
  without ``tool_calls`` is its text, which decodes to no call when empty and fails otherwise.

The decoded list may be malformed even when decoding succeeds (structured arguments that are
JSON but not an object): BFCL's runner then reports ``ast_decoder:decoder_wrong_output_format``,
and `AstDecoded.well_formed` is False. Text after the last ``</think>`` is decoded, as in the
multi-turn env.

Intended difference: a message over the size limits the multi-turn decoders share
(`MAX_MESSAGE_CHARS`, 64 calls, 20,000 argument nodes) fails to decode here, where BFCL would
read it.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tooluse_gym.decoding.base import AstDecoded, Call, DecodeError
from tooluse_gym.decoding.bfcl import python_calls, tool_call_objects
from tooluse_gym.decoding.limits import MAX_CALLS_PER_MESSAGE, MAX_MESSAGE_CHARS
from tooluse_gym.decoding.text import visible_response

__all__ = ["BfclAstDecoder", "decode_ast_action", "language_parser_available"]


@dataclass(frozen=True)
class BfclAstDecoder:
    """BFCL's decoding on single-turn tasks (`decode_ast_action`): the calls its AST checker takes.

    Attributes:
        tool_format: ``python`` (call lists) or ``json`` (``<tool_call>`` blocks).
        language: The category's language (``python``, ``java``, ``javascript``): the syntax of python text.
    """

    tool_format: str
    language: str = "python"

    def decode(self, action: Any) -> AstDecoded:
        """The calls of one message as BFCL's ``decode_ast`` reads them (`decode_ast_action`)."""
        return decode_ast_action(action, self.tool_format, self.language)


def decode_ast_action(action: Any, tool_format: str, language: str = "python") -> AstDecoded:
    """Decode an env action as BFCL's ``decode_ast`` would.

    A dict action with a ``tool_calls`` key is a function-calling response; otherwise the text
    (a string, or a dict's ``content``) is decoded in `tool_format` (``python`` or ``json``),
    ``python`` text in the syntax of the category's `language` (``python``, ``java``, ``javascript``).
    """
    if tool_format not in ("python", "json"):
        raise ValueError(f"unknown tool_format {tool_format!r}; expected 'python' or 'json'")
    if type(action) is not str and isinstance(action, Mapping):
        raw_content = action.get("content")
        content = raw_content if isinstance(raw_content, str) else ""
        if "tool_calls" in action:
            raw = action["tool_calls"]
            decoded = _decoded(content, lambda: _function_calls(raw, raw_content))
            return dataclasses.replace(decoded, ids=_call_ids(raw)) if decoded.calls else decoded
        action = content
    if not isinstance(action, str):
        return AstDecoded("", failure=f"action must be str or dict, got {type(action).__name__}")
    if len(action) > MAX_MESSAGE_CHARS:
        return AstDecoded(action, failure=f"message longer than {MAX_MESSAGE_CHARS} characters")
    visible = visible_response(action)
    if tool_format == "python" and language != "python":
        return _language_calls(action, visible, language)
    try:
        calls = python_calls(visible) if tool_format == "python" else _tool_call_tags(visible)
    except DecodeError as e:
        return AstDecoded(action, failure=str(e))
    return AstDecoded(action, tuple(calls))


def _call_ids(raw_calls: Any) -> tuple[str | None, ...]:
    """The ``id`` of each structured call (None where it has none)."""
    calls = raw_calls if isinstance(raw_calls, list) else []
    return tuple(c["id"] if isinstance(c, Mapping) and isinstance(c.get("id"), str) else None for c in calls)


def _decoded(content: str, decode: Any) -> AstDecoded:
    try:
        calls = decode()
    except DecodeError as e:
        return AstDecoded(content, failure=str(e))
    return AstDecoded(content, calls=tuple(calls))


_PARSERS = {
    "java": ("bfcl_eval.model_handler.parser.java_parser", "parse_java_function_call"),
    "javascript": ("bfcl_eval.model_handler.parser.js_parser", "parse_javascript_function_call"),
}


def _language_parser(language: str) -> Any:
    import importlib

    from tooluse_gym.tasks import bfcl

    bfcl.backend_classes()  # sets BFCL_PROJECT_ROOT before bfcl_eval imports
    module, name = _PARSERS[language]
    return getattr(importlib.import_module(module), name)


def language_parser_available(language: str) -> bool:
    """Whether BFCL's parser for Java or JavaScript call text can be imported (it needs ``tree_sitter``)."""
    try:
        _language_parser(language)
    except ImportError:
        return False
    return True


def _language_calls(content: str, visible: str, language: str) -> AstDecoded:
    """``default_decode_ast_prompting`` for Java or JavaScript: BFCL's own tree-sitter parser on the text."""
    text = visible.strip("`\n ")
    text = text if text.startswith("[") else "[" + text
    text = text if text.endswith("]") else text + "]"
    try:
        parse = _language_parser(language)
    except ImportError as e:
        return AstDecoded(content, failure=f"decoding {language} call text needs tree_sitter ({e})")
    try:
        result = parse(text[1:-1])
    except Exception as e:  # BFCL's runner scores any exception here as a decoding failure
        return AstDecoded(content, failure=f"not a {language} call: {str(e)[:200]}")
    if type(result) is not list or not all(type(item) is dict and len(item) == 1 for item in result):
        return AstDecoded(content, calls=((None, None),))  # decoded, but not a list of calls
    return AstDecoded(content, calls=tuple(next(iter(item.items())) for item in result))


def _tool_call_tags(text: str) -> list[Call]:
    calls = []
    for item in tool_call_objects(text):
        if type(item) is not dict:
            raise DecodeError("every <tool_call> must hold a JSON object")
        if "name" not in item or "arguments" not in item:
            raise DecodeError("a <tool_call> lacks 'name' or 'arguments'")
        name, arguments = item["name"], item["arguments"]
        if type(name) in (list, dict):
            raise DecodeError("a <tool_call>'s name must be a JSON scalar")
        if type(arguments) is not dict:
            raise DecodeError("a <tool_call>'s arguments must be a JSON object")
        calls.append((name, dict(arguments)))
    return calls


def _function_calls(raw_calls: Any, raw_content: Any) -> list[Call]:
    """OpenAI ``tool_calls`` as BFCL's function-calling handler stores and then decodes them."""
    if raw_calls is None:  # no calls: the handler stores the text, and decoding iterates it
        if raw_content == "":
            return []
        raise DecodeError("a reply without tool calls is text, not function calls")
    if not isinstance(raw_calls, Sequence) or isinstance(raw_calls, (str, bytes)):
        raise DecodeError("tool_calls must be a list")
    if len(raw_calls) > MAX_CALLS_PER_MESSAGE:
        raise DecodeError(f"more than {MAX_CALLS_PER_MESSAGE} calls in one message")
    calls = []
    for raw in raw_calls:
        fn = raw.get("function", raw) if isinstance(raw, Mapping) else None
        if not isinstance(fn, Mapping) or not isinstance(fn.get("name"), str):
            raise DecodeError("each tool call needs function.name")
        arguments = fn.get("arguments", "")
        if not isinstance(arguments, str):
            raise DecodeError(f"arguments of {fn['name']} must be a JSON string")
        if len(arguments) > MAX_MESSAGE_CHARS:
            raise DecodeError(f"arguments of {fn['name']} are too long")
        try:
            calls.append((fn["name"], json.loads(arguments)))
        except (ValueError, RecursionError) as e:
            raise DecodeError(f"arguments of {fn['name']} are not valid JSON: {str(e)[:200]}") from None
    return calls
