from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from collections import Counter
from pathlib import Path

import pytest

from tooluse_gym.tasks import bfcl


def test_loads_all_800_tasks_in_four_categories(all_tasks):
    assert len(all_tasks) == 800
    assert Counter(t.category for t in all_tasks) == {c: 200 for c in bfcl.CATEGORIES}
    assert len({t.task_id for t in all_tasks}) == 800


def test_held_out_functions_only_in_miss_func(all_tasks):
    for task in all_tasks:
        if task.category == "miss_func":
            assert len(task.held_out) == 1
            (turn,) = task.held_out
            assert task.turns[turn] == ()  # the holdout turn has no user message
            held = {d["name"] for d in task.held_out[turn]}
            assert not held & {d["name"] for d in task.functions}
            assert held <= task.offered_names(turn) and not held & task.offered_names(turn - 1)
        else:
            assert task.held_out == {}


def test_ground_truth_is_parsed_and_turns_align(all_tasks):
    calls = [c for t in all_tasks for turn in t.ground_truth for c in turn]
    assert len(calls) == 1142 + 1140 + 1140 + 1203  # the counts documented for bfcl-eval 2026.3.23
    assert all(c.error is None for c in calls)
    assert not any(c.positional for c in calls)  # the 160 positional GT calls are bound to parameter names
    assert all(len(t.turns) == len(t.ground_truth) for t in all_tasks)


def test_positional_ground_truth_is_bound_by_signature(tasks_by_id):
    from tests._reference.bfcl_reference import ground_truth_strings

    task = tasks_by_id["multi_turn_base_0"]
    raw = [c for turn in ground_truth_strings(task.task_id) for c in turn]
    parsed = [c for turn in task.ground_truth for c in turn]
    assert len(raw) == len(parsed)
    positional = 0
    for task in tasks_by_id.values():
        for raw_turn, turn in zip(ground_truth_strings(task.task_id), task.ground_truth, strict=True):
            for text, call in zip(raw_turn, turn, strict=True):
                if "=" not in text and "()" not in text:
                    positional += 1
                    assert call.arguments, text
    assert positional > 100


def test_long_context_flag_and_excluded_functions(all_tasks):
    assert {t.long_context for t in all_tasks if t.category == "long_context"} == {True}
    assert {t.long_context for t in all_tasks if t.category != "long_context"} == {False}
    assert sum(1 for t in all_tasks if t.excluded_functions) == 4 * 18


def test_task_ids_filter_and_errors():
    tasks = bfcl.load_bfcl_tasks("base", ["multi_turn_base_3", "multi_turn_base_1"])
    assert [t.task_id for t in tasks] == ["multi_turn_base_3", "multi_turn_base_1"]
    with pytest.raises(ValueError, match="unknown BFCL category"):
        bfcl.load_bfcl_tasks("parallel")
    with pytest.raises(ValueError, match="unknown task ids"):
        bfcl.load_bfcl_tasks("base", ["multi_turn_miss_func_0"])


def test_import_does_not_write_into_site_packages(tmp_path):
    site = Path(sysconfig.get_paths()["purelib"])
    before = {p.name for p in site.iterdir()}
    env = {k: v for k, v in os.environ.items() if k != "BFCL_PROJECT_ROOT"}
    env["XDG_CACHE_HOME"] = str(tmp_path)
    code = "from tooluse_gym.tasks import bfcl; bfcl.load_bfcl_tasks('base'); print(bfcl.bfcl_project_root())"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    root = Path(out.stdout.strip())
    assert root == tmp_path / "tooluse-gym" / "bfcl"
    assert (root / "result").is_dir() and (root / ".file_locks").is_dir()
    assert {p.name for p in site.iterdir()} - before == set()
    assert not (site / "result").exists() and not (site / "score").exists()
