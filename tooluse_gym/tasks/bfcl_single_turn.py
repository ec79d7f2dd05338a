"""BFCL's single-turn data (the non-live, live and irrelevance categories), imported from `bfcl_eval`.

The single-turn half of `tooluse_gym.tasks.bfcl`: where the data and possible answers live in
the package, the category names and groups, and how an entry becomes a `SingleTurnTask` (one
turn, the possible answers, and which of BFCL's checks scores it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from tooluse_gym.checking import languages
from tooluse_gym.errors import TaskLoadError
from tooluse_gym.tasks import bfcl
from tooluse_gym.tasks.selection import select_tasks
from tooluse_gym.tasks.task import Task
from tooluse_gym.types import ToolCall

__all__ = [
    "CATEGORIES",
    "GROUPS",
    "UNSATISFIABLE",
    "SingleTurnTask",
    "category_names",
    "load_single_turn_tasks",
    "realize_value",
]

NON_LIVE = (
    "simple_python",
    "simple_java",
    "simple_javascript",
    "multiple",
    "parallel",
    "parallel_multiple",
    "irrelevance",
)
LIVE = (
    "live_simple",
    "live_multiple",
    "live_parallel",
    "live_parallel_multiple",
    "live_irrelevance",
    "live_relevance",
)
CATEGORIES = NON_LIVE + LIVE
"""BFCL's single-turn categories (its names), every one of which this env plays."""
LANGUAGE_CATEGORIES = ("simple_java", "simple_javascript")
"""Categories whose values are Java or JavaScript source strings (`tooluse_gym.checking.languages`)."""
GROUPS: Mapping[str, tuple[str, ...]] = {"non_live": NON_LIVE, "live": LIVE, "single_turn": CATEGORIES}
"""BFCL's group names, each with the categories it holds."""
CHECKS = ("ast", "irrelevance", "relevance")
UNSATISFIABLE: Mapping[str, str] = {
    "live_simple_106-63-0": "required parameters with no acceptable value",
    "live_simple_112-68-0": "required parameters with no acceptable value",
    "live_multiple_507-149-4": "a required parameter is missing from the possible answer",
    "live_multiple_862-181-3": "the possible answer has a parameter the function does not define",
    "live_multiple_964-207-0": "a required parameter is missing from the possible answer",
    "simple_java_36": "an ArrayList of any: its items convert to strings, the possible answer's hold numbers",
    "simple_java_65": "an ArrayList of any: its items convert to strings, the possible answer's hold booleans",
}
"""Entries whose possible answers no response can satisfy under BFCL's checker (its own data; tests check it)."""


@dataclass(frozen=True)
class SingleTurnTask(Task):
    """A BFCL single-turn entry: one turn, answered by one message, scored by BFCL's AST checker or relevance rules.

    `ground_truth` holds one realization of the possible answers (each expected call with the
    first acceptable value of each parameter, optional ones left out unless the doc requires
    them, Java and JavaScript values written as source strings; for ``live_relevance``,
    which has no answers, a call of the first function): what the oracle sends.

    Attributes:
        answer: BFCL's possible answers, one ``{name: {param: [acceptable values]}}`` per
            expected call (empty for the relevance categories).
        check: ``ast``, ``irrelevance`` (valid without a call) or ``relevance`` (valid with one).
        underscore_to_dot: Dotted function names are expected with underscores.
        checked_functions: The docs BFCL's checker reads, where they differ from the `functions`
            shown to the model (Java and JavaScript: the shown docs, with BFCL's language hint,
            declare every parameter a string; the checker reads the declared language types).
        scored_as: The BFCL category whose checker and language score the task, where it is not
            `category` (single-turn scenarios: `tooluse_gym.tasks.scenario_single_turn`).
    """

    answer: tuple[Mapping[str, Any], ...] = ()
    check: str = "ast"
    underscore_to_dot: bool = False
    checked_functions: tuple[Mapping[str, Any], ...] = ()
    scored_as: str = ""

    @property
    def test_category(self) -> str:
        """The BFCL category name that picks the checker and the language (`scored_as`, else `category`)."""
        return self.scored_as or self.category

    @property
    def checker_docs(self) -> tuple[Mapping[str, Any], ...]:
        """The function docs the checker reads."""
        return self.checked_functions or self.functions

    def reference_message(self, turn: int, steps_in_turn: int, tool_format: str) -> str:
        """`Task.reference_message`, in the Java and JavaScript categories as BFCL reads their call text.

        There python-format text is read by BFCL's parser of that language, so each value is written
        as call text that parser reads back as the ground truth (`languages.call_text_value`).
        """
        calls = self.ground_truth[turn]
        if (
            tool_format != "python"
            or languages.language_of(self.test_category) == "python"
            or steps_in_turn
            or not calls
        ):
            return super().reference_message(turn, steps_in_turn, tool_format)
        written = (
            f"{c.name}({', '.join(f'{k}={languages.call_text_value(v)}' for k, v in c.arguments.items())})"
            for c in calls
        )
        return "[" + ", ".join(written) + "]"


def category_names(category: str) -> tuple[str, ...]:
    """The categories a ``category`` argument names: one category, or a group (`GROUPS`)."""
    if category in GROUPS:
        return GROUPS[category]
    if category in CATEGORIES:
        return (category,)
    names = ", ".join((*CATEGORIES, *GROUPS))
    raise ValueError(f"unknown BFCL single-turn category {category!r}; expected one of {names}")


def load_single_turn_tasks(
    category: str = "simple_python",
    task_ids: Sequence[str] | None = None,
    *,
    underscore_to_dot: bool = False,
) -> list[SingleTurnTask]:
    """Load BFCL single-turn entries of a category or group, optionally only the given ids, in data order.

    Args:
        category: A category or group name (`category_names`).
        task_ids: Only these entries, in this order.
        underscore_to_dot: Dotted function names are expected with underscores (tools offered
            through an API, which refuses dots); the reference calls are written so.
    """
    tasks = [t for c in category_names(category) for t in _load(c, underscore_to_dot)]
    return tasks if task_ids is None else select_tasks(tasks, task_ids=task_ids)


@cache
def _entries(category: str) -> tuple[tuple[dict[str, Any], list[Any], list[Any]], ...]:
    """(entry as shown, with BFCL's language hint; possible answers; the function docs without the hint)."""
    utils = bfcl._import("bfcl_eval.utils")
    entries = utils.load_dataset_entry(category, include_language_specific_hint=True)
    plain = {e["id"]: e["function"] for e in utils.load_dataset_entry(category, include_language_specific_hint=False)}
    if check_of(category) != "ast":
        return tuple((e, [], plain[e["id"]]) for e in entries)
    truths = {g["id"]: g["ground_truth"] for g in utils.load_ground_truth_entry(category)}
    missing = [e["id"] for e in entries if e["id"] not in truths]
    if missing:
        raise TaskLoadError(f"{category}: no possible answer for {missing[:3]}")
    return tuple((e, truths[e["id"]], plain[e["id"]]) for e in entries)


@cache
def _load(category: str, underscore_to_dot: bool) -> tuple[SingleTurnTask, ...]:
    return tuple(_to_task(e, answer, docs, category, underscore_to_dot) for e, answer, docs in _entries(category))


def check_of(category: str) -> str:
    """Which of BFCL's checks scores a category: ``irrelevance``, ``relevance`` or ``ast``."""
    if "irrelevance" in category:
        return "irrelevance"
    if "relevance" in category:
        return "relevance"
    return "ast"


def _to_task(
    entry: dict[str, Any], answer: list[Any], docs: list[Any], category: str, underscore_to_dot: bool
) -> SingleTurnTask:
    task_id = entry["id"]
    if len(entry["question"]) != 1:
        raise TaskLoadError(f"{task_id}: expected one turn, got {len(entry['question'])}")
    messages = []
    for m in entry["question"][0]:
        if m.get("role") not in ("system", "user", "assistant") or not isinstance(m.get("content"), str):
            raise TaskLoadError(f"{task_id}: unexpected message {m!r:.80}")
        messages.append({"role": m["role"], "content": m["content"]})
    functions = bfcl._shared_docs(entry["function"])
    checked = bfcl._shared_docs(docs) if category in LANGUAGE_CATEGORIES else ()
    check = check_of(category)
    if check == "ast":
        language = languages.language_of(category)
        calls = tuple(_reference_call(item, checked or functions, underscore_to_dot, language) for item in answer)
    elif check == "relevance":
        calls = (ToolCall(name=_name(functions[0]["name"], underscore_to_dot)),)
    else:
        calls = ()
    return SingleTurnTask(
        task_id=task_id,
        category=category,
        turns=(tuple(messages),),
        ground_truth=(calls,),
        functions=functions,
        backends=(),
        initial_config={},
        source="bfcl",
        answer=tuple(answer),
        check=check,
        underscore_to_dot=underscore_to_dot,
        checked_functions=checked,
    )


def _name(name: str, underscore_to_dot: bool) -> str:
    return name.replace(".", "_") if underscore_to_dot else name


_OPTIONAL = object()


def _first(accepted: Any) -> Any:
    """The first acceptable value that is not the optional mark ``""`` (`_OPTIONAL` when there is none)."""
    for value in accepted:
        if value != "":
            return value
    return _OPTIONAL


def realize_value(value: Any, spec: Mapping[str, Any]) -> Any:
    """An acceptable value as a call would give it: a dict's (or a list of dicts') keys take their first values."""
    kind = spec.get("type")
    if kind == "dict" and type(value) is dict:
        return {k: v for k, v in ((k, _first(vs)) for k, vs in value.items()) if v is not _OPTIONAL}
    if kind == "array" and spec.get("items", {}).get("type") == "dict" and type(value) is list:
        return [realize_value(d, {"type": "dict"}) for d in value]
    return value


def _reference_call(
    item: Mapping[str, Any], functions: Sequence[Mapping[str, Any]], dot: bool, language: str
) -> ToolCall:
    name, params = next(iter(item.items()))
    doc = next((d for d in functions if d["name"] == name), None)
    properties = doc["parameters"].get("properties", {}) if doc else {}
    required = doc["parameters"].get("required", ()) if doc else ()
    arguments = {}
    for param, accepted in params.items():
        value = _first(accepted)
        if value is not _OPTIONAL and ("" not in accepted or param in required):
            spec = properties.get(param, {})
            if language == "python":
                arguments[param] = realize_value(value, spec)
            else:
                arguments[param] = languages.realize(language, value, spec)
    return ToolCall(name=_name(name, dot), arguments=arguments)
