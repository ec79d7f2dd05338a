"""BFCL's agentic checker (memory and web search): is a gold answer in the model's last message without calls?

As bfcl-eval 2026.3.23 checks (``eval_checker/agentic_eval/agentic_checker.py`` and the last-message
rule of ``eval_runner.py``): the message and each gold answer lose ``,./-_*^()``, are lower-cased and
have ``'`` turned into ``"``; the answer passes when one gold answer occurs in the message between
word boundaries. Whitespace is kept (BFCL's docstring says otherwise; its code keeps it). The whole
message is searched, whatever its length. A gold answer that standardizes to ``""`` matches any
message holding a word character (BFCL then searches for two word boundaries in a row). No message,
or an empty one, is BFCL's runner's ``agentic:no_last_message`` (it tests ``if not last_message``).

That rule passes a reply that lists many candidates. `strict_check` is the opt-in stricter verdict
(the ``answer_check="strict"`` setting). It passes a reply only when all of these hold:

1. BFCL's verdict on the whole reply passes (so strict never passes what BFCL fails);
2. the reply is BFCL's answer format ``{'answer': ..., 'context': ...}`` (a JSON or Python dict
   literal, read without evaluating it) with a string ``answer``;
3. BFCL's verdict on the ``answer`` field alone passes;
4. the ``answer`` field names one candidate, or only gold answers. The rule: every occurrence of a
   gold answer in the field (as BFCL matches it: standardized, between word boundaries) is first
   set aside as one item, so a gold answer that itself holds a comma or an ``and`` (``Dallas, Texas``)
   is never cut; the rest is split at ``, ; / | &``, line breaks and the words ``and`` / ``or``.
   With more than `STRICT_MAX_CANDIDATES` items, each item must hold a gold answer:
   ``frothing pitcher and filters`` (both gold) passes, ``Seattle, Portland, Boston`` does not.

A list written with spaces alone (``Seattle Portland Boston``) is one item to this rule, and passes.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tooluse_gym.decoding.limits import MAX_MESSAGE_CHARS

_REMOVED = ",./-_*^()"
_PUNCTUATION = re.compile(r"[,./\-_*^()]")
ANSWER_CHECKS = ("bfcl", "strict")
STRICT_MAX_CANDIDATES = 1
"""How many items an ``answer`` field may name when they are not all gold answers (see the module rule)."""
_SPLIT = re.compile(r"\s*(?:[,;/|&\n]|\bor\b|\band\b)\s*", re.IGNORECASE)
_GOLD = "\x00"
"""Stands for one gold answer in the field while it is split (no separator, not a word character)."""

__all__ = [
    "ANSWER_CHECKS",
    "STRICT_MAX_CANDIDATES",
    "AgenticVerdict",
    "agentic_check",
    "answer_field",
    "candidates",
    "standardize",
    "strict_check",
]


@dataclass(frozen=True)
class AgenticVerdict:
    """The checker's verdict on one answer.

    BFCL's error types: ``agentic:answer_not_found``, ``agentic:no_last_message``; the strict check adds
    ``agentic:answer_format`` and ``agentic:many_candidates``.
    """

    valid: bool
    error_type: str | None = None
    error_message: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """``valid``, ``error_type``, ``error_message``."""
        return {"valid": self.valid, "error_type": self.error_type, "error_message": self.error_message}


def standardize(text: str) -> str:
    """BFCL's normalisation: drop ``,./-_*^()``, lower-case, ``'`` -> ``"``."""
    return _PUNCTUATION.sub("", text).lower().replace("'", '"')


def _pattern(answer: str) -> re.Pattern[str]:
    return re.compile(rf"\b{re.escape(standardize(answer))}\b")


def _found(message: str, answers: Sequence[str]) -> bool:
    text = standardize(message)
    return any(_pattern(a).search(text) for a in answers)


_NO_MESSAGE = AgenticVerdict(
    False, "agentic:no_last_message", "Cannot find the last chat message that is not a function call."
)


def agentic_check(last_message: str | None, answers: Sequence[str]) -> AgenticVerdict:
    """BFCL's verdict on the last message without calls (None or empty: the episode had none)."""
    if not last_message:
        return _NO_MESSAGE
    if _found(last_message, answers):
        return AgenticVerdict(True)
    return AgenticVerdict(
        False, "agentic:answer_not_found", "None of the expected answers were found in the model response."
    )


def answer_field(message: str) -> str | None:
    """The ``answer`` value of a reply in BFCL's format (a JSON or Python dict literal), else None. Never evaluates."""
    text = message.strip()[:MAX_MESSAGE_CHARS]
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end <= start:
        return None
    body = text[start : end + 1]
    for parse in (json.loads, ast.literal_eval):
        try:
            value = parse(body)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
        if isinstance(value, dict) and isinstance(value.get("answer"), str):
            return value["answer"]
    return None


def strict_check(last_message: str | None, answers: Sequence[str]) -> AgenticVerdict:
    """The stricter verdict (the module's rule): BFCL's, on an ``answer`` field naming one candidate or only gold."""
    whole = agentic_check(last_message, answers)
    if whole.error_type == _NO_MESSAGE.error_type:
        return whole
    assert last_message is not None
    field = answer_field(last_message)
    if field is None:
        return AgenticVerdict(False, "agentic:answer_format", "The reply is not {'answer': ..., 'context': ...}.")
    items = candidates(field, answers)
    if len(items) > STRICT_MAX_CANDIDATES and not all(_GOLD in item for item in items):
        return AgenticVerdict(
            False, "agentic:many_candidates", "The answer field names more than one candidate, not all of them gold."
        )
    field_verdict = agentic_check(field, answers)
    return field_verdict if not field_verdict.valid else whole


def candidates(field: str, answers: Sequence[str]) -> list[str]:
    """The items `strict_check` counts in an ``answer`` field: each gold answer set aside as `_GOLD`, the rest split."""
    text, raw_at = _standardized_with_positions(field)
    spans: list[tuple[int, int]] = []
    for answer in answers:
        if not standardize(answer):
            continue  # matches everywhere with zero width: nothing to set aside
        for m in _pattern(answer).finditer(text):
            spans.append((raw_at[m.start()], raw_at[m.end() - 1] + 1))
    masked, last = [], 0
    for start, end in _merged(spans):
        masked.append(field[last:start].replace(_GOLD, " ") + _GOLD)
        last = end
    masked.append(field[last:].replace(_GOLD, " "))
    return [p for p in _SPLIT.split("".join(masked)) if p.strip()]


def _standardized_with_positions(field: str) -> tuple[str, list[int]]:
    """`standardize` char by char, with the raw position of each standardized char."""
    out: list[str] = []
    raw_at: list[int] = []
    for i, c in enumerate(field):
        if c in _REMOVED:
            continue
        low = c.lower().replace("'", '"')
        out.append(low)
        raw_at.extend([i] * len(low))
    return "".join(out), raw_at


def _merged(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out
