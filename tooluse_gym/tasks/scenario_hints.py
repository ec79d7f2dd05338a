"""Plain-words reasons and fix hints for the problems a scenario file can have.

`schema_problems` turns JSON Schema errors into ``(path, reason, hint)``: a turn missing its
``user`` says that a turn needs ``user``, an unknown key says which keys are allowed (with a
did-you-mean). `rejoin_calls` recognises a call list that YAML split at its commas (an unquoted
``[add(a=2, b=3)]`` reads as the two strings ``'add(a=2'`` and ``'b=3)'``).
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Sequence
from typing import Any

from jsonschema.exceptions import ValidationError

from tooluse_gym.decoding.lenient import parse_call_string

_NOUNS = {
    "scenarios": "a scenario",
    "turns": "a turn",
    "ground_truth": "a call",
    "possible_answer": "an expected call",
    "request": "a request",
}
_ALTERNATIVES = {
    "a turn": "a turn needs `user` (the user's message); only a turn that adds held-out functions may give "
    "`held_out` instead",
    "a scenario": "a scenario needs `turns` (a multi-turn task) or `single_turn` (one request with its possible "
    "answers)",
}
_CALL_SHAPES = 'a call is a string such as "add(a=2, b=3)" or a mapping such as {name: add, arguments: {a: 2, b: 3}}'
_ANSWER_SHAPE = (
    "an expected call is {function: {parameter: [acceptable values]}}, one function each, e.g. "
    '{add: {a: [2], b: [3, 3.0]}}; "" among the values marks the parameter optional'
)
_REQUEST_SHAPE = (
    "a request is the user's message as a string, or a list of {role: system|user|assistant, content: text} "
    "messages with at least one from the user"
)
_UNEXPECTED = re.compile(r"'([^']*)'")


def _noun(path: Sequence[Any]) -> str:
    for part in reversed(path):
        if isinstance(part, str):
            return _NOUNS.get(part, f"`{part}`")
    return "the file"


def schema_problems(errors: Sequence[ValidationError]) -> list[tuple[list[Any], str, str]]:
    """``(path in the file, reason, hint)`` for each schema error (hint "" when there is none to give)."""
    return [(list(e.absolute_path), *_explain(e)) for e in errors]


def _explain(error: ValidationError) -> tuple[str, str]:
    path = list(error.absolute_path)
    noun = _noun(path)
    if error.validator in ("anyOf", "oneOf"):
        options = error.validator_value
        if all(set(option) == {"required"} for option in options):
            keys = " or ".join(f"`{k}`" for option in options for k in option["required"])
            hint = _ALTERNATIVES.get(noun, f"{noun} needs {keys}")
            held = error.instance if isinstance(error.instance, dict) else {}
            given = [k for option in options for k in option["required"] if k in held]
            if len(given) > 1:
                return f"{noun} takes one of {keys}, and this one has " + " and ".join(f"`{k}`" for k in given), hint
            return f"{noun} needs {keys}, and this one has neither", hint
        if noun == "a request":
            return f"{error.instance!r:.80} is not a request", _REQUEST_SHAPE
        if noun == "a call":
            detail = sorted({c.message for c in error.context or () if c.validator != "type"})
            reason = f"{error.instance!r:.80} is not a call" + (f" ({'; '.join(detail)})" if detail else "")
            return reason, _CALL_SHAPES
    if error.validator == "additionalProperties" and isinstance(error.schema, dict):
        allowed = sorted(error.schema.get("properties", {}))
        extra = [k for k in error.instance if k not in allowed] if isinstance(error.instance, dict) else []
        means = [f"`{k}` -> `{m[0]}`" for k in extra if (m := difflib.get_close_matches(str(k), allowed, n=1))]
        hint = (f"did you mean {', '.join(means)}? " if means else "") + f"{noun} may have: {', '.join(allowed)}"
        return error.message, hint
    if error.validator == "required":
        missing = [k for k in error.validator_value if isinstance(error.instance, dict) and k not in error.instance]
        return error.message, f"add {', '.join(f'`{k}:`' for k in missing)} to {noun}"
    if "possible_answer" in path[:-1] or (path and path[-1] == "possible_answer" and error.validator != "type"):
        return error.message, _ANSWER_SHAPE
    if "request" in path:
        return error.message, _REQUEST_SHAPE
    return error.message, ""


def rejoin_calls(items: Sequence[Any]) -> list[str] | None:
    """The calls of a ground-truth list that YAML split at commas, rejoined; None when it was not split.

    Consecutive strings are joined with ", " until each group parses as one call; the list counts
    as split when some group took more than one string and every group parses.
    """
    if not items or not all(isinstance(item, str) for item in items):
        return None
    groups: list[str] = []
    current: str | None = None
    merged = False
    for item in items:
        current = item if current is None else f"{current}, {item}"
        if _parses(current):
            merged = merged or current != item
            groups.append(current)
            current = None
    if current is not None or not merged:
        return None
    return groups


def quoted_list(calls: Sequence[str]) -> str:
    """The calls as a YAML flow list of quoted strings: ``["add(a=2, b=3)"]``."""
    return "[" + ", ".join(json.dumps(c) for c in calls) + "]"


def _parses(text: str) -> bool:
    try:
        parse_call_string(text)
    except (ValueError, TypeError, SyntaxError):
        return False
    return True
