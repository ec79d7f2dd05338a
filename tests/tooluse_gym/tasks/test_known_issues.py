"""The known-issues registry: every entry names a real BFCL task, and its evidence holds in the data."""

from __future__ import annotations

import ast
import datetime
import json
import re
import sys
from pathlib import Path

import pytest

from tests._reference.bfcl_reference import ground_truth_strings, official_verdict
from tooluse_gym.tasks.known_issues import KINDS, KnownIssues, load_known_issues, registry_version

REGISTRY = load_known_issues()
ENTRIES = list(REGISTRY)
ROOT = Path(__file__).resolve().parents[3]


def _ids(kind):
    return [e.task_id for e in ENTRIES if e.kind == kind]


def _user_text(task, upto=None):
    turns = task.turns if upto is None else task.turns[: upto + 1]
    return " ".join(m["content"] for turn in turns for m in turn)


def _checked_call(task, check):
    """The ground-truth call the entry's evidence is about."""
    calls = [c for c in task.ground_truth[check["turn"]] if c.name == check["function"]]
    assert calls, f"{task.task_id}: no {check['function']} in ground-truth turn {check['turn']}"
    return calls[0]


def test_registry_metadata():
    assert re.fullmatch(r"20\d\d\.\d{1,2}\.\d+", REGISTRY.version) and registry_version() == REGISTRY.version
    assert re.fullmatch(r"\d{4}\.\d{1,2}\.\d+", REGISTRY.bfcl_version)  # recorded, not enforced
    assert len(REGISTRY) == len(REGISTRY.ids) == len(ENTRIES) > 0
    assert load_known_issues() is REGISTRY  # cached


def test_lookup():
    entry = REGISTRY.get("multi_turn_base_4")
    assert entry is not None and entry.kind == "wrong_ground_truth" and entry.label == "wrong gt"
    assert "multi_turn_base_4" in REGISTRY and "multi_turn_base_5" not in REGISTRY
    assert REGISTRY.get("multi_turn_base_5") is None
    assert entry.to_dict()["check"]["function"] == "post_tweet"


def test_every_entry_is_a_bfcl_task_with_kind_source_and_a_check(tasks_by_id):
    for entry in ENTRIES:
        assert entry.task_id in tasks_by_id, entry.task_id
        assert entry.kind in KINDS
        assert re.fullmatch(r"https://github\.com/ShishirPatil/gorilla/(issues|pull)/\d+", entry.source)
        assert entry.summary != entry.evidence and entry.check is not None


def test_each_check_is_the_ground_truth(tasks_by_id):
    """The value an entry is about is the one in the ground-truth call it names."""
    for entry in ENTRIES:
        check = entry.check
        call = _checked_call(tasks_by_id[entry.task_id], check)
        assert call.arguments[check["argument"]] == check["value"], entry.task_id


@pytest.mark.parametrize("task_id", _ids("time_dependent"))
def test_time_dependent_dates_have_passed_and_are_the_users(task_id, tasks_by_id):
    entry, task = REGISTRY.get(task_id), tasks_by_id[task_id]
    date = entry.check["value"]
    assert datetime.date.fromisoformat(date) < datetime.date.today()
    assert entry.check["quote"] in _user_text(task, upto=entry.check["turn"])  # the user asked for that day
    truth = ground_truth_strings(task_id)
    assert official_verdict(task_id, [[turn] for turn in truth]) == (True, None)  # the checker ignores dates


@pytest.mark.parametrize("task_id", _ids("wrong_ground_truth"))
def test_wrong_ground_truth_cannot_be_produced(task_id, tasks_by_id):
    """The expected value is in neither the user's words nor the initial state; what the tools
    give instead fails the official checker, while the ground truth passes."""
    entry, task = REGISTRY.get(task_id), tasks_by_id[task_id]
    value, produced = entry.check["value"], entry.check["produced"]
    assert value not in _user_text(task) and value not in json.dumps(task.initial_config)
    assert produced in json.dumps(task.initial_config) and produced != value
    truth = ground_truth_strings(task_id)
    assert official_verdict(task_id, [[turn] for turn in truth]) == (True, None)
    faithful = [[[c.replace(repr(value), repr(produced)) for c in turn]] for turn in truth]
    assert faithful != [[turn] for turn in truth]
    assert official_verdict(task_id, faithful) == (False, "multi_turn:instance_state_mismatch")


def test_variants_of_a_scenario_are_listed_together():
    """The four categories share scenarios by index; an issue in a shared call is listed in each."""
    by_index: dict[str, set[str]] = {}
    for entry in ENTRIES:
        category, index = entry.task_id.removeprefix("multi_turn_").rsplit("_", 1)
        by_index.setdefault(index, set()).add(category)
    assert all(cats == {"base", "miss_func", "miss_param", "long_context"} for cats in by_index.values())


def test_left_out_reports_are_not_entries(tasks_by_id):
    entries = {(e.task_id, e.source) for e in ENTRIES}
    for item in REGISTRY.left_out:
        assert item["task_id"] in tasks_by_id and item["reason"]
        assert (item["task_id"], item["source"]) not in entries


def test_base_198_booking_id_comes_from_a_tool_result():
    """Why issue #1267 is left out: book_flight returns the id that cancel_booking then uses."""
    from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_utils
    from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils import execute_multi_turn_func_call

    from tests._reference.bfcl_reference import _entries

    entry, truth = _entries("base")["multi_turn_base_198"]
    (turn,) = truth
    try:
        results, _ = execute_multi_turn_func_call(
            turn, entry["initial_config"], entry["involved_classes"], "known_issues_probe", "multi_turn_base_198"
        )
    finally:  # the executor keeps its instances in module globals
        g = vars(multi_turn_utils)
        for key in [k for k in g if k.startswith("known_issues_probe")]:
            del g[key]
    booked = json.loads(results[turn.index(next(c for c in turn if c.startswith("book_flight")))])
    assert "booking_id='3426812'" in next(c for c in turn if c.startswith("cancel_booking"))
    assert booked["booking_id"] == "3426812"
    assert "3426812" not in json.dumps(entry["question"]) and "3426812" not in json.dumps(entry["initial_config"])
    assert "multi_turn_base_198" not in REGISTRY


def test_parse_rejects_malformed_files():
    good = {"task_id": "t", "kind": "time_dependent", "summary": "s", "evidence": "e", "source": "u"}
    KnownIssues.from_dict({"version": "1", "bfcl_version": "2", "entries": [good]})
    with pytest.raises(ValueError, match="twice"):
        KnownIssues.from_dict({"version": "1", "bfcl_version": "2", "entries": [good, good]})
    with pytest.raises(ValueError, match="kind"):
        KnownIssues.from_dict({"version": "1", "bfcl_version": "2", "entries": [{**good, "kind": "odd"}]})
    with pytest.raises(ValueError, match="lacks evidence"):
        KnownIssues.from_dict({"version": "1", "bfcl_version": "2", "entries": [{**good, "evidence": ""}]})
    with pytest.raises(ValueError, match="version"):
        KnownIssues.from_dict({"entries": []})


def test_module_is_stdlib_only_and_shipped_as_package_data():
    path = ROOT / "tooluse_gym" / "tasks" / "known_issues.py"
    tree = ast.parse(path.read_text())
    imported = {
        (node.module if isinstance(node, ast.ImportFrom) else alias.name).split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
    }
    assert imported <= set(sys.stdlib_module_names) | {"__future__"}, imported
    assert len(path.read_text().splitlines()) < 150
    assert "tasks/bfcl_known_issues.json" in (ROOT / "pyproject.toml").read_text()
