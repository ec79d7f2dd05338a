"""Single-turn scenarios: one request, the functions offered, and BFCL's possible answers.

A scenario with a ``single_turn`` block instead of ``turns`` is one request answered by one
message and judged as BFCL judges its single-turn entries (`tooluse_gym.checking.single_turn`); nothing
is executed, so its backends only lend their function docs:

    - id: add_then_multiply
      category: several_calls
      tools: {MathAPI: {}}
      functions: [add, multiply]
      single_turn:
        request: "Add 3 and 4, and multiply 5 by 6."
        possible_answer:                 # one {function: {parameter: [acceptable values]}} per call
          - add: {a: [3], b: [4]}
          - multiply: {a: [5, 5.0], b: [6]}

``possible_answer: []`` is an irrelevant request (valid only without a call). BFCL picks its
checker by category name; here the possible answer picks it (`scored_as`): no call is
``irrelevance``, one call ``simple_python`` (one function offered) or ``multiple`` (several), more
``parallel`` (one function) or ``parallel_multiple``: the calls may come in any order.

`single_turn_task` checks what the schema cannot: each expected function is offered, each
parameter is the function's, each required parameter has an acceptable value, each acceptable
value validates against the function's schema, and (``replay``) the reference answer, the first
acceptable value of each parameter, passes the checker. Problems go through ``fail`` with the
scenario loader's kinds (`tooluse_gym.tasks.scenario`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from tooluse_gym.checking.single_turn import check_calls
from tooluse_gym.tasks.bfcl_single_turn import SingleTurnTask, realize_value
from tooluse_gym.types import ToolCall

__all__ = ["OPTIONAL", "scored_as", "single_turn_task"]

OPTIONAL = ""
"""BFCL's mark, among a parameter's acceptable values, for "may be left out"."""
FIELD = "single_turn"

Fail = Callable[..., None]
Validate = Callable[[Mapping[str, Any], Mapping[str, Any]], "str | None"]
"""(function doc, arguments) -> why the arguments do not validate, or None."""


def scored_as(functions: int, calls: int) -> str:
    """The BFCL category whose checker scores a request with `calls` expected calls among `functions` functions."""
    if calls == 0:
        return "irrelevance"
    if calls == 1:
        return "simple_python" if functions == 1 else "multiple"
    return "parallel" if functions == 1 else "parallel_multiple"


def request_messages(request: str | Sequence[Mapping[str, str]]) -> tuple[dict[str, str], ...]:
    """The request as chat messages: a string is one user message."""
    if isinstance(request, str):
        return ({"role": "user", "content": request},)
    return tuple({"role": m["role"], "content": m["content"]} for m in request)


def single_turn_task(
    spec: Mapping[str, Any],
    functions: Sequence[Mapping[str, Any]],
    *,
    fail: Fail,
    validate: Validate,
    source: str,
    backends: Sequence[str],
    replay: bool = True,
) -> SingleTurnTask | None:
    """The scenario's `SingleTurnTask`, or None when ``fail`` was called.

    Args:
        spec: The scenario (schema-valid, with a ``single_turn`` block).
        functions: The docs of the functions offered (unknown names already reported).
        fail: Records a problem: ``fail(field, kind, reason, hint="")``.
        validate: Checks arguments against a doc (the checks the scenario loader applies to calls).
        source: The scenario file.
        backends: The backends' names.
        replay: Check that the reference answer passes BFCL's checker.
    """
    problems = 0

    def failed(*args: Any) -> None:
        nonlocal problems
        problems += 1
        fail(*args)

    for name, state in spec["tools"].items():
        if state:
            hint = f"give it no state: {name}: {{}}"
            failed(f"tools.{name}", "bad_state", "a single-turn scenario executes nothing", hint)
    if spec.get("long_context"):
        failed("long_context", "schema", "long_context pads backend state; a single-turn scenario has none")
    block = spec[FIELD]
    answer = [dict(item) for item in block["possible_answer"]]
    docs = {doc["name"]: doc for doc in functions}
    calls = []
    for i, item in enumerate(answer):
        call = _reference_call(item, docs, f"{FIELD}.possible_answer[{i}]", failed, validate)
        if call is not None:
            calls.append(call)
    if problems:
        return None
    task = SingleTurnTask(
        task_id=spec["id"],
        category=spec.get("category", "scenario"),
        turns=(request_messages(block["request"]),),
        ground_truth=(tuple(calls),),
        functions=tuple(functions),
        backends=tuple(backends),
        initial_config={},
        source=source,
        answer=tuple(answer),
        check="ast" if answer else "irrelevance",
        scored_as=scored_as(len(functions), len(answer)),
    )
    if replay and answer:
        decoded = tuple((c.name, dict(c.arguments)) for c in calls)
        result = check_calls(decoded, task.functions, task.answer, task.test_category)
        if not result.valid:
            reason = f"the reference answer fails BFCL's checker: {result.error_type}: {result.message}"
            fail(f"{FIELD}.possible_answer", "replay_failed", reason)
            return None
    return task


def _reference_call(
    item: Mapping[str, Any], docs: Mapping[str, Mapping[str, Any]], field: str, fail: Fail, validate: Validate
) -> ToolCall | None:
    """One expected call checked against its doc, realized with each parameter's first acceptable value."""
    name, params = next(iter(item.items()))
    doc = docs.get(name)
    if doc is None:
        fail(field, "unknown_function", f"{name!r} is not offered", f"offer it: functions: [..., {name}]")
        return None
    properties = doc["parameters"].get("properties", {})
    required = doc["parameters"].get("required", [])
    bad = False
    for param in params:
        if param not in properties:
            known = ", ".join(properties) or "none"
            fail(f"{field}.{name}.{param}", "invalid_arguments", f"{name} has no parameter {param!r} (it has: {known})")
            bad = True
    for param in required:
        if not any(v != OPTIONAL for v in params.get(param, ())):
            reason = f"{name}'s required parameter {param!r} has no acceptable value"
            fail(f"{field}.{name}", "invalid_arguments", reason, f"add {param}: [value, ...]")
            bad = True
    if bad:
        return None
    arguments = {  # a dict's keys (or a list of dicts') take their first acceptable values, as in BFCL's answers
        p: realize_value(next(v for v in vs if v != OPTIONAL), properties[p])
        for p, vs in params.items()
        if OPTIONAL not in vs or p in required
    }
    problem = validate(doc, arguments)
    if problem is not None:
        fail(f"{field}.{name}", "invalid_arguments", f"the first acceptable values do not validate: {problem}")
        return None
    for param, accepted in params.items():
        for k, value in enumerate(accepted):
            if value == OPTIONAL:
                continue
            problem = validate(doc, {**arguments, param: realize_value(value, properties[param])})
            if problem is not None:
                fail(f"{field}.{name}.{param}[{k}]", "invalid_arguments", f"{value!r} does not validate: {problem}")
    return ToolCall(name=name, arguments=arguments)
