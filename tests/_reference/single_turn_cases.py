"""Responses to BFCL single-turn entries for the parity tests: the reference answer and perturbations of it.

Each perturbation is one kind of mistake BFCL's checker distinguishes (or one it forgives):
a wrong or extra function, a missing, extra or mistyped parameter, a wrong value, an optional
parameter added or omitted, the order of parallel calls, normalised strings, a call where none
is relevant and none where one is. Every value is a JSON literal, so bfcl_eval may decode them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

from tooluse_gym.tasks.bfcl_single_turn import SingleTurnTask

Calls = list[tuple[str, dict[str, Any]]]
FORMATS = ("python", "json", "fc")


_CODE = re.compile(r"-?\d+(\.\d+)?([eE][+-]?\d+)?[fFlLn]?|true|false|new .*|\[.*\]|\{.*\}", re.DOTALL)


def _source(value: Any) -> str:
    """A value in Java or JavaScript call text: code-like strings as they are, other strings quoted."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value if _CODE.fullmatch(value) else json.dumps(value)
    return json.dumps(value)


def message(calls: Calls | str, response_format: str, language: str = "python") -> Any:
    """The calls (or plain text) as a raw response in `response_format` (also an env action).

    Python-format text is written in the category's `language`: Python call syntax, or Java /
    JavaScript calls whose values are the source strings themselves (BFCL's prompting format there).
    """
    if isinstance(calls, str):
        return {"content": calls, "tool_calls": None} if response_format == "fc" else calls
    if response_format == "python" and language != "python":
        return "[" + ", ".join(f"{n}({', '.join(f'{k}={_source(v)}' for k, v in a.items())})" for n, a in calls) + "]"
    if response_format == "python":
        return "[" + ", ".join(f"{n}({', '.join(f'{k}={v!r}' for k, v in a.items())})" for n, a in calls) + "]"
    if response_format == "json":
        return "\n".join("<tool_call>\n" + json.dumps({"name": n, "arguments": a}) + "\n</tool_call>" for n, a in calls)
    tool_calls = [
        {"id": f"call_{i}", "type": "function", "function": {"name": n, "arguments": json.dumps(a)}}
        for i, (n, a) in enumerate(calls)
    ]
    return {"content": None if calls else "", "tool_calls": tool_calls}


_TYPED = {"string": "zz", "integer": 3, "float": 2.5, "boolean": True, "array": [], "tuple": [], "dict": {}, "any": "z"}


def _mistyped(value: Any) -> Any:
    if isinstance(value, bool):
        return "true"
    if isinstance(value, str):
        return 12345
    if isinstance(value, int):
        return "7"
    if isinstance(value, float):
        return "7.5"
    return "x"


def _wrong(value: Any) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, str):
        return value + " zzz"
    if isinstance(value, (int, float)):
        return value + 1000
    if isinstance(value, list):
        return [*value, value[0]] if value else ["zzz"]
    if isinstance(value, dict):
        return {**value, "zz_key": 1}
    return "zzz"


def _bad_item(value: list[Any]) -> list[Any]:
    return [*value, 123] if value and isinstance(value[0], str) else [*value, "zzz"]


def _doc(task: SingleTurnTask, name: str) -> Mapping[str, Any] | None:
    return next((d for d in task.functions if d["name"].replace(".", "_") == name.replace(".", "_")), None)


def _call_cases(task: SingleTurnTask, calls: Calls, index: int) -> Iterator[tuple[str, Calls]]:
    name, args = calls[index]
    doc = _doc(task, name)
    params = doc["parameters"] if doc else {}
    required = params.get("required", [])
    properties = params.get("properties", {})

    def with_args(new: dict[str, Any]) -> Calls:
        return [*calls[:index], (name, new), *calls[index + 1 :]]

    yield f"wrong_name@{index}", [*calls[:index], (name + "_zz", args), *calls[index + 1 :]]
    yield f"extra_param@{index}", with_args({**args, "zz_unknown": 1})
    for p in [p for p in required if p in args][:1]:
        yield f"missing_required:{p}@{index}", with_args({k: v for k, v in args.items() if k != p})
    for p in [p for p in args if p not in required][:2]:
        yield f"optional_omitted:{p}@{index}", with_args({k: v for k, v in args.items() if k != p})
    for p in [p for p in properties if p not in args][:2]:
        yield f"optional_added:{p}@{index}", with_args({**args, p: _TYPED.get(properties[p].get("type"), "zz")})
    for p, value in list(args.items())[:4]:
        yield f"mistyped:{p}@{index}", with_args({**args, p: _mistyped(value)})
        yield f"wrong_value:{p}@{index}", with_args({**args, p: _wrong(value)})
        if isinstance(value, str) and value:
            yield f"normalised:{p}@{index}", with_args({**args, p: value.upper() + " ."})
        if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
            yield f"int_for_float:{p}@{index}", with_args({**args, p: int(value)})
        if isinstance(value, int) and not isinstance(value, bool):
            yield f"float_for_int:{p}@{index}", with_args({**args, p: float(value)})
        if isinstance(value, list):
            yield f"bad_item:{p}@{index}", with_args({**args, p: _bad_item(value)})
            yield f"tuple_as_text:{p}@{index}", with_args({**args, p: str(value)})
        if isinstance(value, dict) and value:
            key = next(iter(value))
            yield f"dict_value:{p}@{index}", with_args({**args, p: {**value, key: _wrong(value[key])}})
            yield f"dict_missing:{p}@{index}", with_args({**args, p: {k: v for k, v in value.items() if k != key}})


def cases(task: SingleTurnTask, *, full: bool = True) -> Iterator[tuple[str, Calls | str]]:
    """(label, calls or text) for one entry: the reference answer first, then its perturbations."""
    reference: Calls = [(c.name, dict(c.arguments)) for c in task.ground_truth[0]]

    def named(doc: Mapping[str, Any]) -> str:
        return doc["name"].replace(".", "_") if task.underscore_to_dot else doc["name"]

    first = task.functions[0] if task.functions else {"name": "some_function", "parameters": {}}
    typed = {p: _TYPED.get(s.get("type"), "zz") for p, s in first["parameters"].get("properties", {}).items()}
    if task.check == "irrelevance":
        yield "reference", "I cannot help with that using these functions."
        yield "a_call", [(named(first), {})]
        yield "a_typed_call", [(named(first), typed)]
        yield "empty_list", []
        return
    if task.check == "relevance":
        yield "reference", reference
        yield "text", "I cannot help with that using these functions."
        yield "empty_list", []
        yield "a_typed_call", [(named(first), typed)]
        return
    yield "reference", reference
    yield "text", "I cannot help with that."
    yield "empty_list", []
    yield "extra_call", [*reference, reference[0]]
    if len(reference) > 1:
        yield "reversed", reference[::-1]
        yield "one_missing", reference[:-1]
    other = next((d for d in task.functions if named(d) not in {n for n, _ in reference}), None)
    if other is not None:
        yield "other_function", [(named(other), dict(reference[0][1])), *reference[1:]]
    if not full:
        return
    yield from _call_cases(task, reference, 0)
    if len(reference) > 1:
        yield from _call_cases(task, reference, len(reference) - 1)


UNWRITTEN_AS_JAVA_TEXT = ("simple_java_1", "simple_java_35", "simple_java_67", "simple_java_68", "simple_java_85")
"""Java entries whose reference answer the Python-text writer cannot write as Java text BFCL parses back."""
