r"""The message text every decoder starts from: reasoning blocks, a dict action's content, Python's parser.

* `strip_reasoning`: the lenient rule hides every ``<think>...</think>`` block (and an unclosed one);
* `visible_response`: BFCL's handlers for reasoning models decode what follows the last ``</think>``;
* `parse_expression`: ``ast.parse(..., mode="eval")`` without the warnings the compiler would turn
  model text into (it compiles nothing and evaluates nothing).
"""

from __future__ import annotations

import ast
import re
import warnings

__all__ = ["content_failure", "parse_expression", "strip_reasoning", "visible_response"]

_THINK_BLOCK = re.compile(r"<think>.*?</think>", re.DOTALL)

# A run that starts with a digit (not inside a name) and reaches a keyword the tokenizer warns about.
_NUMBER_THEN_KEYWORD = re.compile(r"(?<![\w])\d[\w.]*?(?:and|else|for|if|in|is|or|not)")


def parse_expression(source: str, filename: str = "<unknown>") -> ast.Expression:
    r"""``ast.parse(source, filename, mode="eval")`` without the compiler's warnings.

    Model text such as ``grep(pattern='\d+')`` makes the compiler warn (an invalid escape
    sequence: `DeprecationWarning` before Python 3.12, `SyntaxWarning` since); an env step
    must not turn model text into warnings. Raises what `compile` raises.

    The parser warns about two things only: an invalid escape sequence (which needs a
    backslash) and a number immediately followed by a keyword (``1if``, ``0x1for``); text
    with neither is parsed without the cost of swapping the warning filters.
    """
    if "\\" not in source and not _NUMBER_THEN_KEYWORD.search(source):
        return ast.parse(source, filename, mode="eval")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntaxWarning)
        warnings.simplefilter("ignore", DeprecationWarning)
        return ast.parse(source, filename, mode="eval")


def strip_reasoning(text: str) -> str:
    """Remove ``<think>...</think>`` blocks; an unclosed ``<think>`` hides the rest."""
    text = _THINK_BLOCK.sub("", text)
    start = text.find("<think>")
    return text if start < 0 else text[:start]


def visible_response(text: str) -> str:
    """The text BFCL's reasoning-model handlers decode: what follows the last ``</think>``."""
    return text.split("</think>")[-1].lstrip("\n") if "</think>" in text else text


def content_failure(content: object) -> str:
    """The parse failure of a dict action whose ``content`` is neither a string nor None (the OpenAI shape's)."""
    return f"action content must be str or None, got {type(content).__name__}"
