"""BFCL's agentic checker (memory and web search): is a gold answer in the model's last message without calls?

As bfcl-eval 2026.3.23 checks (``eval_checker/agentic_eval/agentic_checker.py`` and the last-message
rule of ``eval_runner.py``): the message and each gold answer lose ``,./-_*^()``, are lower-cased and
have ``'`` turned into ``"``; the answer passes when one gold answer occurs in the message between
word boundaries. Whitespace is kept (BFCL's docstring says otherwise; its code keeps it).

That rule passes a reply that lists many candidates. `strict_check` is the opt-in stricter verdict
(the ``answer_check="strict"`` setting): the reply must be BFCL's answer format
``{'answer': ..., 'context': ...}`` and the gold answer must occur in its ``answer`` field, which may
name at most `STRICT_MAX_CANDIDATES` items.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tooluse_gym.decoding.limits import MAX_MESSAGE_CHARS

_PUNCTUATION = re.compile(r"[,./\-_*^()]")
ANSWER_CHECKS = ("bfcl", "strict")
STRICT_MAX_CANDIDATES = 1
"""How many items the strict check lets an ``answer`` field name (split at commas, semicolons, ``or``, ``and``)."""
_SPLIT = re.compile(r"\s*(?:[,;/]|\bor\b|\band\b)\s*", re.IGNORECASE)

__all__ = ["ANSWER_CHECKS", "AgenticVerdict", "agentic_check", "answer_field", "standardize", "strict_check"]


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


def _found(message: str, answers: Sequence[str]) -> bool:
    text = standardize(message[:MAX_MESSAGE_CHARS])
    return any(re.search(rf"\b{re.escape(standardize(a))}\b", text) for a in answers)


def agentic_check(last_message: str | None, answers: Sequence[str]) -> AgenticVerdict:
    """BFCL's verdict on the last message without calls (None: the episode had none)."""
    if last_message is None:
        return AgenticVerdict(
            False, "agentic:no_last_message", "Cannot find the last chat message that is not a function call."
        )
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
    """The stricter verdict: BFCL's, on the ``answer`` field alone, which may name at most one candidate."""
    if last_message is None:
        return agentic_check(None, answers)
    field = answer_field(last_message)
    if field is None:
        return AgenticVerdict(False, "agentic:answer_format", "The reply is not {'answer': ..., 'context': ...}.")
    if len([p for p in _SPLIT.split(field) if p.strip()]) > STRICT_MAX_CANDIDATES and not _found_whole(field, answers):
        return AgenticVerdict(False, "agentic:many_candidates", "The answer field names more than one candidate.")
    return agentic_check(field, answers)


def _found_whole(field: str, answers: Sequence[str]) -> bool:
    """The field is one gold answer as a whole (a gold answer may itself hold a comma or an ``and``)."""
    return any(standardize(field).strip() == standardize(a).strip() for a in answers)
