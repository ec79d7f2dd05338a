"""Read the common shape of a Python call list exactly as Python's parser would, without `compile`.

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
  comma, more than 64 calls, nesting deeper than 8 lists, more than 4096 characters or a lone
  surrogate all give up, as does any other character outside a string.
"""

from __future__ import annotations

import re
from keyword import iskeyword
from typing import Any

MAX_CHARS = 4096
MAX_CALLS = 64
MAX_DEPTH = 8

_TOKENS = re.compile(
    r"""[ \t\n]*(?:('[^'\\\x00-\x08\x0a-\x1f\x7f]*'|"[^"\\\x00-\x08\x0a-\x1f\x7f]*")"""  # 1: string
    r"""|(-?(?:0|[1-9][0-9]{0,17})(?:\.[0-9]{1,17})?)(?![0-9A-Za-z_.])"""  # 2: number
    r"""|([A-Za-z_][A-Za-z0-9_]*)"""  # 3: name
    r"""|([\[\](),=])"""  # 4: punctuation
    r"""|(.))""",  # 5: anything else
    re.DOTALL,
)
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


class _GiveUp(Exception):
    pass


def read_call_list(text: str, names: bool) -> list[tuple[str, dict[str, Any]]] | None:
    """The calls of ``text`` (``[f(a=1), ...]``) as (name, keyword arguments), or None to use `ast` instead.

    Args:
        text: A bracketed call list.
        names: Read a bare name as its string (BFCL's decoder); when False a bare name gives up.
    """
    if len(text) > MAX_CHARS or not text.startswith("[") or not text.endswith("]"):
        return None
    if "(" not in text:  # no call: only an empty list reads as one
        return [] if not text[1:-1].strip(" \t\n") else None
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            return None
    tokens = _TOKENS.findall(text)
    try:
        return _Reader(tokens, names).calls()
    except (_GiveUp, IndexError):
        return None


class _Reader:
    def __init__(self, tokens: list[tuple[str, str, str, str, str]], names: bool):
        self.tokens = tokens
        self.names = names
        self.i = 0

    def punct(self) -> str:
        token = self.tokens[self.i]
        if not token[3]:
            raise _GiveUp
        self.i += 1
        return token[3]

    def expect(self, mark: str) -> None:
        if self.punct() != mark:
            raise _GiveUp

    def name(self) -> str:
        name = self.tokens[self.i][2]
        if not name or iskeyword(name) or name == "__debug__":
            raise _GiveUp
        self.i += 1
        return name

    def calls(self) -> list[tuple[str, dict[str, Any]]]:
        self.expect("[")
        out: list[tuple[str, dict[str, Any]]] = []
        if self.tokens[self.i][3] == "]":
            self.i += 1
        else:
            while True:
                out.append(self.call())
                if self.punct() == "]":
                    break
                if len(out) >= MAX_CALLS:
                    raise _GiveUp
        if self.i != len(self.tokens):
            raise _GiveUp
        return out

    def call(self) -> tuple[str, dict[str, Any]]:
        name = self.name()
        self.expect("(")
        kwargs: dict[str, Any] = {}
        if self.tokens[self.i][3] == ")":
            self.i += 1
            return name, kwargs
        while True:
            key = self.name()
            if key in kwargs:
                raise _GiveUp
            self.expect("=")
            kwargs[key] = self.value(1)
            mark = self.punct()
            if mark == ")":
                return name, kwargs
            if mark != ",":
                raise _GiveUp

    def value(self, depth: int) -> Any:
        string, number, name, punct, _ = self.tokens[self.i]
        self.i += 1
        if string:
            return string[1:-1]
        if number:
            negative = number.startswith("-")
            digits = number[1:] if negative else number
            value = float(digits) if "." in digits else int(digits)
            return -value if negative else value
        if name:
            if name in _CONSTANTS:
                return _CONSTANTS[name]
            if not self.names or iskeyword(name) or name == "__debug__":
                raise _GiveUp
            return name
        if punct == "[" and depth < MAX_DEPTH:
            items: list[Any] = []
            if self.tokens[self.i][3] == "]":
                self.i += 1
                return items
            while True:
                items.append(self.value(depth + 1))
                mark = self.punct()
                if mark == "]":
                    return items
                if mark != ",":
                    raise _GiveUp
        raise _GiveUp
