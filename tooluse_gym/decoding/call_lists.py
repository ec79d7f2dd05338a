"""The decoders' fast path: the common shape of a Python call list, read as Python's parser would, without `compile`.

Models (and the oracle) mostly write ``[cd(folder='docs'), mv(source='a.txt', destination='b')]``:
calls of plain names with keyword arguments whose values are strings, numbers, True/False/None,
bare names or lists of those. Parsing such text with `ast` costs tens of microseconds, a large
share of an env step. `read_call_list` reads this shape with one regular expression and a small
recursive descent, and gives up (returns None) on anything outside it, so the caller falls back
to `ast` for every other text. Where it answers, the answer is what the `ast` tree gives:

* tokens are a strict subset of Python's: single-line strings in ``'`` or ``"`` without a
  backslash or control character (their value is the text between the quotes), decimal integers
  without leading zeros or underscores and ``digits.digits`` floats (converted as the parser
  converts them, ``-`` in front being a unary minus), ASCII names, and ``[ ] ( ) , =``, with
  spaces, tabs and newlines between them (all inside brackets, where Python ignores newlines);
* a number touching a name, a dot or a digit, two strings in a row, a keyword other than
  True/False/None, ``__debug__``, a repeated keyword argument, a positional argument, a trailing
  comma, more than 64 calls, nesting deeper than 8 lists, more than 4096 characters (the
  ``MAX_FAST_PATH_*`` limits of `tooluse_gym.decoding.limits`) or a lone surrogate all give up, as
  does any other character outside a string.
"""

from __future__ import annotations

import re
from keyword import iskeyword
from typing import Any

from tooluse_gym.decoding.limits import MAX_FAST_PATH_CALLS, MAX_FAST_PATH_CHARS, MAX_FAST_PATH_DEPTH
from tooluse_gym.errors import ToolUseGymError

_STRING = r"'[^'\\\x00-\x08\x0a-\x1f\x7f]*'" + "|" + r'"[^"\\\x00-\x08\x0a-\x1f\x7f]*"'
_NUMBER = r"-?(?:0|[1-9][0-9]{0,17})(?:\.[0-9]{1,17})?(?![0-9A-Za-z_.])"
_TOKEN = rf"{_STRING}|{_NUMBER}|[A-Za-z_][A-Za-z0-9_]*|[\[\](),=]"
_TOKENS = re.compile(rf"[ \t\n]*({_TOKEN})")
_ONLY_TOKENS = re.compile(rf"(?:[ \t\n]*+(?>{_TOKEN}))*+[ \t\n]*+")
"""The whole text is tokens (each the first alternative that matches, as `_TOKENS` finds them) and spacing."""
_CONSTANTS = {"True": True, "False": False, "None": None}


def certain_syntax_error(text: str) -> bool:
    """True when compiling `text` surely raises `SyntaxError` itself (not a subclass, nor another error).

    The text is plain ASCII without strings, comments, backslashes or line breaks (so its tokens
    are names, numbers and operators, and nothing can be an IndentationError, a ValueError or a
    warning), short and shallow, and holds one of two token pairs no Python expression contains:
    a name, number or keyword-free word followed by another name (``Nothing more``), or a name
    or number followed by a dot that no name follows (``Done.]``).
    """
    if len(text) > _PROSE_CHARS or not text.isascii() or _NOT_PROSE.search(text):
        return False
    if text.count("(") + text.count("[") + text.count("{") > _PROSE_BRACKETS:
        return False
    if _DOT_THEN_CLOSE.search(text):
        return True
    return any(_plain_word(a) and _plain_word(b) for a, b in _TWO_WORDS.findall(text))


def _plain_word(word: str) -> bool:
    return not iskeyword(word) and word not in _SOFT


_PROSE_CHARS = 1000
_PROSE_BRACKETS = 50
_NOT_PROSE = re.compile(r"[^\x20-\x7e]|[\\'\"#]")  # control characters (line breaks, tabs), quotes, comments
_DOT_THEN_CLOSE = re.compile(r"[A-Za-z_]\.[ ]*[\]),]")
_TWO_WORDS = re.compile(r"(?<![\w])([A-Za-z_]\w*)[ ]+(?=([A-Za-z_]\w*))")
_SOFT = frozenset({"match", "case", "type", "_"})


class _GiveUp(ToolUseGymError):
    pass


def read_call_list(text: str, names: bool) -> list[tuple[str, dict[str, Any]]] | None:
    """The calls of ``text`` (``[f(a=1), ...]``) as (name, keyword arguments), or None to use `ast` instead.

    Args:
        text: A bracketed call list.
        names: Read a bare name as its string (BFCL's decoder); when False a bare name gives up.
    """
    if len(text) > MAX_FAST_PATH_CHARS or not text.startswith("[") or not text.endswith("]"):
        return None
    if "(" not in text:  # no call: only an empty list reads as one
        return [] if not text[1:-1].strip(" \t\n") else None
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            return None
    if _ONLY_TOKENS.fullmatch(text) is None:
        return None
    try:
        return _calls(_TOKENS.findall(text), names)
    except (_GiveUp, IndexError):
        return None


_MARKS = frozenset("[](),=")


def _is_name(token: str) -> bool:
    first = token[0]
    return (first.isalpha() or first == "_") and not iskeyword(token) and token != "__debug__"


def _calls(tokens: list[str], names: bool) -> list[tuple[str, dict[str, Any]]]:
    if tokens[0] != "[":
        raise _GiveUp
    out: list[tuple[str, dict[str, Any]]] = []
    i = 1
    if tokens[1] == "]":
        i = 2
    else:
        while True:
            name = tokens[i]
            if not _is_name(name) or tokens[i + 1] != "(":
                raise _GiveUp
            i += 2
            kwargs: dict[str, Any] = {}
            if tokens[i] == ")":
                i += 1
            else:
                while True:
                    key = tokens[i]
                    if not _is_name(key) or key in kwargs or tokens[i + 1] != "=":
                        raise _GiveUp
                    kwargs[key], i = _value(tokens, i + 2, 1, names)
                    mark = tokens[i]
                    i += 1
                    if mark == ")":
                        break
                    if mark != ",":
                        raise _GiveUp
            out.append((name, kwargs))
            mark = tokens[i]
            i += 1
            if mark == "]":
                break
            if mark != "," or len(out) >= MAX_FAST_PATH_CALLS:
                raise _GiveUp
    if i != len(tokens):
        raise _GiveUp
    return out


def _value(tokens: list[str], i: int, depth: int, names: bool) -> tuple[Any, int]:
    """The value whose first token is ``tokens[i]``, and the index after it."""
    token = tokens[i]
    first = token[0]
    if first == "'" or first == '"':
        return token[1:-1], i + 1
    if first == "-" or first.isdigit():
        digits = token[1:] if first == "-" else token
        value = float(digits) if "." in digits else int(digits)
        return (-value if first == "-" else value), i + 1
    if first == "[":
        if depth >= MAX_FAST_PATH_DEPTH:
            raise _GiveUp
        items: list[Any] = []
        i += 1
        if tokens[i] == "]":
            return items, i + 1
        while True:
            item, i = _value(tokens, i, depth + 1, names)
            items.append(item)
            mark = tokens[i]
            i += 1
            if mark == "]":
                return items, i
            if mark != ",":
                raise _GiveUp
    if token in _MARKS:
        raise _GiveUp
    if token in _CONSTANTS:
        return _CONSTANTS[token], i + 1
    if not names or iskeyword(token) or token == "__debug__":
        raise _GiveUp
    return token, i + 1
