"""Differential test: ``decoder="bfcl"`` gives bfcl_eval's verdicts on what real models write.

Each *form* rewrites one step of a ground-truth trajectory (positional arguments bound to
their names, one step per turn) into a surface form models produce: positional arguments,
bare names, arithmetic, code fences, prose, a call without brackets, double quotes,
whitespace, nested values, shuffled keywords, ``<think>`` blocks, two lists, a trailing
newline; ``<tool_call>`` blocks with and without their newlines, a bad JSON block, a
block without ``arguments``; structured ``tool_calls`` with a malformed call, text-only
replies; and, in all three response formats, ``None`` for the parameters whose doc
default is the string ``"None"``, wrong argument types and 21-step force-quits.

Every 10th task of the 800 is rewritten (the ``None`` form adds tasks that call those
functions). On odd-numbered tasks the step is also perturbed (a call dropped, a value
changed, or a call repeated) so that each form yields failing verdicts that go through
its own decoding. Each trajectory is played through ``gym.make("ToolUse-MultiTurn-v0",
decoder="bfcl", ...)`` and through bfcl_eval's own handler, inference loop, executor and
checker (`tests._reference.bfcl_reference.official_run`): the verdicts ``(valid, error_type)`` and
the call strings and tool results of every executed step must be identical.
"""

from __future__ import annotations

import json
import keyword
import random
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import pytest

from tests._reference.bfcl_reference import ground_truth_strings, official_run, play_env
from tests.tooluse_gym.checking.test_checker_parity import _perturb_value
from tooluse_gym.tasks import bfcl
from tooluse_gym.types import ToolCall

NONE_DEFAULTS = {
    "find": ("name",),
    "echo": ("file_name",),
    "get_user_tickets": ("status",),
    "get_transaction_history": ("start_date", "end_date"),
    "get_budget_fiscal_year": ("lastModifiedAfter", "includeRemoved"),
    "retrieve_invoice": ("booking_id", "insurance_id"),
}
"""Parameters whose documented default is the string "None" (checked against the docs below)."""
NONE_EXTRA_CALLS = {  # a call added for each involved class whose None-default function the step lacks
    "GorillaFileSystem": ToolCall("find", {"path": ".", "name": None}),
    "TicketAPI": ToolCall("get_user_tickets", {"status": None}),
    "TradingBot": ToolCall("get_transaction_history", {"start_date": None, "end_date": None}),
    "TravelAPI": ToolCall("get_budget_fiscal_year", {"lastModifiedAfter": None, "includeRemoved": None}),
}
NESTED_EXTRAS = (
    [1, [2, 3], {"a": [4, {"b": (5, 6)}]}],
    {"a": {"b": 1}},  # a dict of dicts: BFCL writes it as the call a(b=1)
    {"a": {}, "b": {"c": {"d": 2}}},
    ({"k": (1, 2)}, []),
    {},  # BFCL's decoder fails on it (the turn ends)
    {"x": 1, "y": {"z": {}}},
)
MALFORMED_ARGUMENTS = ('{"order_id": 124?}', "", "[1, 2]", "null", '{"a": 1', '"text"')
BAD_JSON_BLOCK = '<tool_call>\n{"name": "ls", "arguments": {"a": tru}}\n</tool_call>'


# --- rendering calls as models write them ------------------------------------------------


def py_value(value: Any, style: frozenset[str] = frozenset()) -> str:
    """A value in Python syntax; style: ``bare`` names, ``arith``metic, ``double`` quotes, ``tuples``."""
    if isinstance(value, bool) or value is None:
        return repr(value)
    if isinstance(value, int):
        return f"{value - 1} + 1" if "arith" in style else repr(value)
    if isinstance(value, float):
        return f"{value * 2!r} / 2" if "arith" in style else repr(value)
    if isinstance(value, str):
        if "bare" in style and value.isidentifier() and not keyword.iskeyword(value):
            return value
        if "arith" in style and len(value) >= 2:
            half = len(value) // 2
            return f"{value[:half]!r} + {value[half:]!r}"
        return json.dumps(value) if "double" in style else repr(value)
    if isinstance(value, (list, tuple)):
        items = [py_value(v, style) for v in value]
        if isinstance(value, tuple) or "tuples" in style:
            return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
        return "[" + ", ".join(items) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{py_value(k, style)}: {py_value(v, style)}" for k, v in value.items()) + "}"
    raise TypeError(f"cannot render {value!r}")


def py_call(call: ToolCall, style: frozenset[str] = frozenset(), sep: str = ", ", eq: str = "=") -> str:
    args = list(call.arguments.items())
    if "reversed" in style:
        args.reverse()
    positional = [py_value(v, style) for v in call.positional]
    return f"{call.name}({sep.join([*positional, *(f'{k}{eq}{py_value(v, style)}' for k, v in args)])})"


def py_list(calls: list[ToolCall], style: frozenset[str] = frozenset()) -> str:
    return "[" + ", ".join(py_call(c, style) for c in calls) + "]"


def _jsonable(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    return value


def json_block(call: ToolCall, newlines: bool = True, arguments: Any = ..., name_only: bool = False) -> str:
    item: dict[str, Any] = {"name": call.name}
    if not name_only:
        item["arguments"] = _jsonable(dict(call.arguments)) if arguments is ... else arguments
    body = json.dumps(item)
    return f"<tool_call>\n{body}\n</tool_call>" if newlines else f"<tool_call>{body}</tool_call>"


def json_text(calls: list[ToolCall]) -> str:
    return "\n".join(json_block(c) for c in calls)


def fc_call(call: ToolCall, index: int, arguments: str | None = None) -> dict[str, Any]:
    args = json.dumps(_jsonable(dict(call.arguments))) if arguments is None else arguments
    return {"id": f"call_{index}", "type": "function", "function": {"name": call.name, "arguments": args}}


def fc_message(calls: list[ToolCall]) -> dict[str, Any]:
    return {"content": "", "tool_calls": [fc_call(c, i) for i, c in enumerate(calls)]}


RENDER: dict[str, Callable[[list[ToolCall]], Any]] = {"python": py_list, "json": json_text, "fc": fc_message}


# --- forms -------------------------------------------------------------------------------


@dataclass
class Case:
    """One task as a form sees it."""

    task: Any
    index: int
    rng: random.Random
    response_format: str
    notes: Counter = field(default_factory=Counter)

    @property
    def truth(self) -> list[list[ToolCall]]:
        return [list(turn) for turn in self.task.ground_truth]

    @property
    def perturbed(self) -> bool:
        return self.index % 2 == 1

    def pick_turn(self, want: Callable[[list[ToolCall]], bool] = lambda calls: True) -> int | None:
        turns = [t for t, calls in enumerate(self.truth) if calls and want(calls)]
        return self.rng.choice(turns) if turns else None

    def step(self, t: int) -> list[ToolCall]:
        """The calls of turn `t`, perturbed on odd-numbered tasks."""
        calls = self.truth[t]
        if not self.perturbed:
            return calls
        if len(calls) >= 2:
            return calls[:-1]
        (call,) = calls
        if call.arguments:
            key = self.rng.choice(sorted(call.arguments))
            return [ToolCall(call.name, {**call.arguments, key: _perturb_value(call.arguments[key], self.rng)})]
        return [call, call]

    def trajectory(self, t: int, messages: list[Any]) -> list[list[Any]]:
        """The ground truth in this response format, with turn `t`'s step replaced by `messages`."""
        render = RENDER[self.response_format]
        out = [[render(calls)] if calls else [] for calls in self.truth]
        out[t] = list(messages)
        return out


Form = Callable[[Case], "list[list[Any]] | None"]


def _has(pred: Callable[[Any], bool]) -> Callable[[list[ToolCall]], bool]:
    def walk(v: Any) -> bool:
        if pred(v):
            return True
        if isinstance(v, (list, tuple)):
            return any(walk(x) for x in v)
        if isinstance(v, dict):
            return any(walk(x) for x in v.values())
        return False

    return lambda calls: any(walk(v) for c in calls for v in c.arguments.values())


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _text_form(make: Callable[[Case, list[ToolCall]], str], want=lambda calls: True) -> Form:
    def form(case: Case):
        t = case.pick_turn(want)
        return None if t is None else case.trajectory(t, [make(case, case.step(t))])

    return form


def form_positional(case: Case):
    """The ground truth exactly as written (160 of its calls pass arguments by position)."""
    return [["[" + ", ".join(turn) + "]"] if turn else [] for turn in ground_truth_strings(case.task.task_id)]


def _two_lists(case: Case, calls: list[ToolCall]) -> str:
    first, rest = (calls[:1], calls[1:]) if len(calls) > 1 else (calls, calls)
    return py_list(first) + ("\n" if case.index % 4 < 2 else " ") + py_list(rest)


def _whitespace(case: Case, calls: list[ToolCall]) -> str:
    body = "[ " + " ,\n\t".join(py_call(c, sep=" ,\t", eq=" = ") for c in calls) + " ]"
    # a tab before the list is not stripped by BFCL's decoder (it then fails), spaces are
    return ("\t" + body if case.index % 3 == 0 else "  " + body) + ("\n" if case.index % 5 == 0 else "")


def _think(case: Case, calls: list[ToolCall]) -> str:
    reasoning = f"The user wants this done. Maybe [{calls[0].name}()]?\nNo, with arguments."
    head = f"<think>\n{reasoning}\n</think>\n\n" if case.index % 3 else f"{reasoning}</think>"
    return head + py_list(calls)


def form_nested(case: Case):
    t = case.pick_turn(_has(lambda v: isinstance(v, (list, dict))))
    if case.index % 3 == 2 or t is None:
        t = case.pick_turn() if t is None else t
        calls = case.step(t)
        extra = NESTED_EXTRAS[(case.index // 3) % len(NESTED_EXTRAS)]
        first = ToolCall(calls[0].name, {**calls[0].arguments, "extra": extra})
        return case.trajectory(t, [py_list([first, *calls[1:]])])
    style = frozenset({"tuples"}) if case.index % 3 == 1 else frozenset()
    return case.trajectory(t, [py_list(case.step(t), style)])


def form_shuffled(case: Case):
    t = case.pick_turn(lambda calls: any(len(c.arguments) > 1 for c in calls))
    if t is None:
        return None
    calls = []
    for call in case.step(t):
        items = list(call.arguments.items())
        case.rng.shuffle(items)
        if len(items) > 1 and items == list(call.arguments.items()):
            items.reverse()
        calls.append(ToolCall(call.name, dict(items)))
    return case.trajectory(t, [py_list(calls)])


# <tool_call> text


def _json_compact(case: Case, calls: list[ToolCall]) -> str:
    if case.index % 4 < 2:
        return "".join(json_block(c, newlines=False) for c in calls)
    return "\n".join(json_block(c, newlines=i != 0) for i, c in enumerate(calls))


def _json_bad_block(case: Case, calls: list[ToolCall]) -> str:
    blocks = [json_block(c) for c in calls]
    blocks.insert(case.rng.randrange(len(blocks) + 1), BAD_JSON_BLOCK)
    return "\n".join(blocks)


def _json_missing_arguments(case: Case, calls: list[ToolCall]) -> str:
    i = case.rng.randrange(len(calls))
    return "\n".join(json_block(c, name_only=j == i) for j, c in enumerate(calls))


def _json_arguments_string(case: Case, calls: list[ToolCall]) -> str:
    return "\n".join(json_block(c, arguments=json.dumps(_jsonable(dict(c.arguments)))) for c in calls)


def _json_think(case: Case, calls: list[ToolCall]) -> str:
    hidden = json_block(ToolCall("definitely_not_a_function", {"x": 1}))
    return f"<think>\nFirst try:\n{hidden}\nno.\n</think>\n\n" + json_text(calls)


def _json_prose(case: Case, calls: list[ToolCall]) -> str:
    return "Sure, here are the calls.\n" + json_text(calls) + "\nLet me know if you need more."


# structured tool_calls


def form_fc_malformed(case: Case):
    t = case.pick_turn()
    calls = case.step(t)
    out = [fc_call(c, i) for i, c in enumerate(calls)]
    bad = MALFORMED_ARGUMENTS[case.index % len(MALFORMED_ARGUMENTS)]
    out.insert(case.rng.randrange(len(out) + 1), fc_call(ToolCall("get_order_details"), 99, arguments=bad))
    return case.trajectory(t, [{"content": "", "tool_calls": out}])


def form_fc_text_only(case: Case):
    t = case.pick_turn()
    variant = case.index % 3
    reply = {"content": "I need more information first.", "tool_calls": None}
    if variant == 1:
        reply = {"content": "", "tool_calls": []}
    messages = [reply, fc_message(case.step(t))]  # the calls come after the turn has ended: never sent
    if variant == 2:  # the text-only reply after the calls is the normal end of the turn
        messages = [fc_message(case.step(t)), {"content": "All done.", "tool_calls": None}]
    return case.trajectory(t, messages)


# all three formats


def _none_step(case: Case, calls: list[ToolCall]) -> list[ToolCall]:
    out = []
    for call in calls:
        params = NONE_DEFAULTS.get(call.name, ())
        replace = [p for p in params if p not in call.arguments or case.perturbed]
        case.notes.update((call.name, p) for p in replace)
        out.append(ToolCall(call.name, {**call.arguments, **dict.fromkeys(replace)}) if replace else call)
    called = {c.name for c in calls}
    for backend in case.task.backends:
        extra = NONE_EXTRA_CALLS.get(backend)
        if extra is not None and not called & set(NONE_DEFAULTS):
            out.append(extra)
            case.notes.update((extra.name, p) for p in extra.arguments if extra.arguments[p] is None)
    return out


def form_none(case: Case):
    t = case.pick_turn(lambda calls: any(c.name in NONE_DEFAULTS for c in calls))
    if t is None:
        if not set(case.task.backends) & set(NONE_EXTRA_CALLS):
            return None
        t = case.pick_turn()
    calls = _none_step(case, case.truth[t])
    return case.trajectory(t, [RENDER[case.response_format](calls)])


def _wrong_type(value: Any) -> Any:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, str):
        return int(value) if value.isdigit() else [value]
    if isinstance(value, list):
        return ", ".join(map(str, value))
    return str(value)


def form_wrong_types(case: Case):
    t = case.pick_turn(lambda calls: any(c.arguments for c in calls))
    if t is None:
        return None
    calls = list(case.truth[t])
    i = case.rng.choice([i for i, c in enumerate(calls) if c.arguments])
    keys = sorted(calls[i].arguments)
    changed = keys if case.perturbed else [case.rng.choice(keys)]
    calls[i] = ToolCall(
        calls[i].name, {k: _wrong_type(v) if k in changed else v for k, v in calls[i].arguments.items()}
    )
    return case.trajectory(t, [RENDER[case.response_format](calls)])


def form_force_quit(case: Case):
    """21 executing steps in one turn (a middle turn: force-quit; the last turn: checked), or 20."""
    full = [t for t, calls in enumerate(case.truth) if calls]
    variant = case.index % 3
    t = full[-1] if variant == 1 or len(full) == 1 else case.rng.choice(full[:-1])
    steps = 20 if variant == 2 else 21
    render = RENDER[case.response_format]
    calls = case.truth[t]
    return case.trajectory(t, [render(calls), *[render(calls[:1])] * (steps - 1)])


PYTHON_FORMS: dict[str, Form] = {
    "positional": form_positional,
    "bare_names": _text_form(
        lambda case, calls: py_list(calls, frozenset({"bare"})),
        _has(lambda v: isinstance(v, str) and v.isidentifier() and not keyword.iskeyword(v)),
    ),
    "arithmetic": _text_form(
        lambda case, calls: py_list(calls, frozenset({"arith"})),
        _has(lambda v: _is_number(v) or (isinstance(v, str) and len(v) >= 2)),
    ),
    "python_fence": _text_form(lambda case, calls: f"```python\n{py_list(calls)}\n```"),
    "plain_fence": _text_form(lambda case, calls: f"```\n{py_list(calls)}\n```"),
    "prose_before": _text_form(lambda case, calls: "Sure, I will do that now.\n" + py_list(calls)),
    "prose_after": _text_form(lambda case, calls: py_list(calls) + "\nI have done what you asked."),
    "no_brackets": _text_form(lambda case, calls: ", ".join(py_call(c) for c in calls)),
    "double_quotes": _text_form(
        lambda case, calls: py_list(calls, frozenset({"double"})), _has(lambda v: isinstance(v, str))
    ),
    "whitespace": _text_form(_whitespace),
    "nested_values": form_nested,
    "shuffled_keywords": form_shuffled,
    "think": _text_form(_think),
    "two_lists": _text_form(_two_lists),
    "trailing_newline": _text_form(lambda case, calls: py_list(calls) + "\n" * (1 + case.index % 2)),
}
JSON_FORMS: dict[str, Form] = {
    "tool_call": _text_form(lambda case, calls: json_text(calls)),
    "tool_call_no_newlines": _text_form(_json_compact),
    "tool_call_bad_json_block": _text_form(_json_bad_block),
    "tool_call_missing_arguments": _text_form(_json_missing_arguments),
    "tool_call_arguments_string": _text_form(_json_arguments_string),
    "tool_call_think": _text_form(_json_think),
    "tool_call_prose": _text_form(_json_prose),
}
FC_FORMS: dict[str, Form] = {
    "fc": _text_form(lambda case, calls: fc_message(calls)),
    "fc_malformed_call": form_fc_malformed,
    "fc_text_only": form_fc_text_only,
}
ALL_FORMATS: dict[str, Form] = {
    "none_defaults": form_none,
    "wrong_types": form_wrong_types,
    "force_quit": form_force_quit,
}

CASES = [
    *((name, "python") for name in PYTHON_FORMS),
    *((name, "json") for name in JSON_FORMS),
    *((name, "fc") for name in FC_FORMS),
    *((name, fmt) for name in ALL_FORMATS for fmt in ("python", "json", "fc")),
]
NEVER_PASS = {
    "python_fence",
    "prose_before",
    "prose_after",
    "two_lists",
    "tool_call_missing_arguments",
    "fc_malformed_call",
}
"""Forms BFCL never decodes (every such step ends its turn with no call)."""


def _form(name: str) -> Form:
    return {**PYTHON_FORMS, **JSON_FORMS, **FC_FORMS, **ALL_FORMATS}[name]


@pytest.fixture(scope="module")
def envs():
    made: dict[tuple[str, str], gym.Env] = {}

    def get(category: str, tool_format: str) -> gym.Env:
        key = (category, tool_format)
        if key not in made:
            made[key] = gym.make("ToolUse-MultiTurn-v0", category=category, decoder="bfcl", tool_format=tool_format)
        return made[key]

    yield get
    for env in made.values():
        env.close()


def _sample(all_tasks, name: str) -> list:
    tasks = all_tasks[::10]
    if name == "none_defaults":  # also tasks whose ground truth calls find / echo / retrieve_invoice
        callers = [t for t in all_tasks if any(c.name in NONE_DEFAULTS for turn in t.ground_truth for c in turn)]
        tasks = [*tasks, *[t for t in callers[::4] if t not in tasks]]
    return tasks


def test_none_default_parameters_match_the_docs():
    found = {
        doc["name"]: tuple(p for p, spec in doc["parameters"]["properties"].items() if spec.get("default") == "None")
        for docs in bfcl.function_docs().values()
        for doc in docs
    }
    assert {name: params for name, params in found.items() if params} == NONE_DEFAULTS


SUMMARY: dict[str, str] = {}


@pytest.mark.parametrize(("name", "response_format"), CASES, ids=[f"{n}[{f}]" for n, f in CASES])
def test_form_verdicts_and_results_match_bfcl(name, response_format, all_tasks, envs):
    form = _form(name)
    tool_format = "json" if response_format == "json" else "python"
    verdicts: Counter = Counter()
    mismatches = []
    steps = 0
    none_written: Counter = Counter()
    for index, task in enumerate(_sample(all_tasks, name)):
        case = Case(task, index, random.Random(f"{name}-{task.task_id}"), response_format)
        trajectory = form(case)
        if trajectory is None:
            continue
        none_written.update(case.notes)
        ours = play_env(envs(task.category, tool_format), task.task_id, trajectory, response_format)
        official = official_run(task.task_id, trajectory, response_format)
        verdicts[official.error_type or "valid"] += 1
        steps += len(official.executed)
        if ours.verdict != official.verdict:
            mismatches.append((task.task_id, "verdict", ours.verdict, official.verdict, trajectory))
        elif ours.executed != official.executed:
            diff = (
                next((o, b) for o, b in zip(ours.executed, official.executed, strict=True) if o != b)
                if len(ours.executed) == len(official.executed)
                else (len(ours.executed), len(official.executed))
            )
            mismatches.append((task.task_id, "step results", diff, trajectory))
    total = sum(verdicts.values())
    summary = f"{name}[{response_format}]: {total} trajectories, {steps} executed steps, {dict(verdicts)}"
    SUMMARY[f"{name}[{response_format}]"] = summary
    print(summary)
    assert not mismatches, f"{summary}\n{len(mismatches)} mismatches; first: {mismatches[0]}"
    assert total >= 20, summary
    assert total - verdicts["valid"] > 0, f"no failing verdict: {summary}"
    if name not in NEVER_PASS:
        assert verdicts["valid"] > 0, f"no passing verdict: {summary}"
    else:
        assert verdicts["valid"] == 0, summary
    if name == "none_defaults":
        for function, params in NONE_DEFAULTS.items():
            for param in params:
                assert none_written[(function, param)] > 0, (function, param, none_written)
