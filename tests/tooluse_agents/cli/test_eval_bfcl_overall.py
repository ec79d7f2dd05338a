"""One `tooluse eval run` over several BFCL envs (single-turn, multi-turn, memory) and BFCL's Overall from it."""

from __future__ import annotations

import json

import pytest

from tooluse_agents.cli.eval import QUIET_ENV, main
from tooluse_agents.eval.run import eval_task_ids
from tooluse_agents.rollout.episode import read_episodes
from tooluse_agents.runs.bfcl_scores import bfcl_scores


@pytest.fixture(autouse=True)
def clean_environ(monkeypatch):
    for name in QUIET_ENV:
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)


def test_one_run_plays_each_env_its_share_and_scores_questions_one_by_one(tmp_path, capsys):
    out = tmp_path / "mixed"
    args = ["run", "--agent", "oracle", "--categories", "simple_python", "base", "memory_rec_sum", "--limit", "2"]
    assert main([*args, "--out", str(out), "--no-progress"]) == 0
    results = json.loads((out / "results.json").read_text())
    assert set(results["protocols"]) == {"ToolUse-SingleTurn-v0", "ToolUse-MultiTurn-v0", "ToolUse-Memory-v0"}
    episodes = read_episodes(out / "episodes.jsonl")[0]
    assert {e.protocol["env_id"] for e in episodes} == set(results["protocols"])
    assert len(episodes) == 6  # two tasks of each category: two memory scenarios
    memory = [e for e in episodes if e.category == "memory_rec_sum"]
    questions = sum(len(e.questions) for e in memory)
    assert questions == 55  # customer (30) and notetaker (25): --limit 2 takes two of five scenarios, evenly spaced
    summary = results["summary"]
    assert summary["categories"]["memory_rec_sum"]["episodes"] == questions  # BFCL counts questions
    scores = summary["bfcl_scores"]
    expected = bfcl_scores({"simple_python": (1.0, 2), "multi_turn_base": (1.0, 2), "memory_rec_sum": (1.0, questions)})
    assert scores["overall"]["per_seed"] == {}  # not every category: no value of ours
    assert scores["overall"]["as_bfcl"]["per_seed"]["0"] == expected["overall"].as_bfcl  # BFCL's number
    assert "memory_kv" in scores["overall"]["missing"] and "irrelevance" in scores["overall"]["missing"]
    printed = capsys.readouterr().out
    assert "the categories this run lacks count as 0" in printed

    # resuming the same command plays nothing again
    assert main([*args, "--out", str(out), "--no-progress"]) == 0
    assert len(read_episodes(out / "episodes.jsonl")[0]) == 6


def test_bfcl_names_every_category_and_all_names_the_multi_turn_ones():
    ids = eval_task_ids(["bfcl"], 1)
    assert ids[0] == "simple_python_0" and "multi_turn_base_0" in ids and "memory_kv-customer" in ids
    assert eval_task_ids(["all"], 1) == [
        "multi_turn_base_0",
        "multi_turn_miss_func_0",
        "multi_turn_miss_param_0",
        "multi_turn_long_context_0",
    ]


def test_an_unknown_memory_category_is_refused_before_anything_is_written(tmp_path, capsys):
    out = tmp_path / "bad"
    assert main(["run", "--agent", "oracle", "--categories", "memory_kvv", "--out", str(out), "--no-progress"]) != 0
    assert not out.exists()


def test_task_ids_without_categories_play_on_the_envs_they_name(tmp_path):
    out = tmp_path / "ids"
    ids = ["simple_python_0", "multi_turn_base_0", "live_simple_0-0-0", "memory_rec_sum-notetaker"]
    assert main(["run", "--agent", "oracle", "--task-ids", *ids, "--out", str(out), "--no-progress"]) == 0
    episodes = read_episodes(out / "episodes.jsonl")[0]
    assert {e.task_id: e.protocol["env_id"] for e in episodes} == {
        "simple_python_0": "ToolUse-SingleTurn-v0",
        "multi_turn_base_0": "ToolUse-MultiTurn-v0",
        "live_simple_0-0-0": "ToolUse-SingleTurn-v0",
        "memory_rec_sum-notetaker": "ToolUse-Memory-v0",
    }
    assert all(e.reward == 1.0 for e in episodes)
