"""`tooluse eval rescore`: a run scored again on today's checker and data, with nothing generated.

Re-scoring a run made today changes nothing; re-scoring on an edited copy of the data changes exactly
the edited entries, each said to be a data change; a folder written before the digests loads as
"data version unknown".
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tooluse_agents.backends.base import AgentRequest
from tooluse_agents.backends.oracle import OracleAgent
from tooluse_agents.eval.rescore import EPISODES, RESULTS, rescore_run
from tooluse_agents.eval.run import EvalConfig, compare_runs, run_eval
from tooluse_agents.runs.records import read_episodes
from tooluse_agents.runs.rundir import RunConflict
from tooluse_gym.tasks import bfcl_data

TASKS = (
    "multi_turn_base_0",
    "multi_turn_base_1",
    "simple_python_0",
    "simple_python_1",
    "live_irrelevance_0-0-0",
    "memory_kv-customer",
)
WRONG = ("multi_turn_base_1", "simple_python_1")


class WrongOnSome(OracleAgent):
    """The oracle, but for some tasks its first message is a text reply with no call."""

    name = "wrong-on-some"

    def message(self, request: AgentRequest) -> str:
        assert request.task is not None
        if request.task.task_id in WRONG and request.turn == 0 and request.steps_in_turn == 0:
            return "I cannot help with that."
        return super().message(request)


def _files(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.iterdir() if p.is_file()}


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("rescore")
    config = EvalConfig(agent="oracle", task_ids=TASKS, seeds=(0, 1), num_envs=2)
    run_eval(config, root / "oracle", progress=False)
    run_eval(config, root / "wrong", agent=WrongOnSome(), progress=False)
    return {"oracle": root / "oracle", "wrong": root / "wrong"}


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _copy(run: Path, tmp_path: Path) -> Path:
    out = tmp_path / run.name
    shutil.copytree(run, out)
    return out


@pytest.mark.parametrize("name", ["oracle", "wrong"])
def test_rescoring_a_run_made_today_changes_nothing(runs, tmp_path, name):
    run = _copy(runs[name], tmp_path)
    before = _files(run)
    done = rescore_run(run)
    assert done.changes == () and done.kept == () and done.replayed == 2 * len(TASKS)
    assert {k: v for k, v in _files(run).items() if k in before} == before  # the originals untouched
    results = json.loads((run / RESULTS).read_text())
    original = json.loads((run / "results.json").read_text())
    assert results["summary"] == original["summary"] and results["fingerprint"] == original["fingerprint"]
    assert results["rescore"]["data_version"] == results["rescore"]["run_data_version"] != "unknown"
    # every record as the run wrote it: the same steps, results, verdicts, costs
    assert _lines(run / EPISODES) == _lines(run / "episodes.jsonl")
    if name == "wrong":  # the run has wrong answers to keep
        failed = {r.task_id for r in read_episodes(run / EPISODES)[0] if r.reward == 0.0}
        assert failed == set(WRONG)


def _edit_data(tmp_path: Path) -> Path:
    copy = tmp_path / "data"
    shutil.copytree(bfcl_data.package_data_folder(), copy)
    answers = copy / "possible_answer" / "BFCL_v4_simple_python.json"
    lines = answers.read_text().splitlines()
    first = json.loads(lines[0])
    assert first["id"] == "simple_python_0"
    first["ground_truth"][0]["calculate_triangle_area"]["base"] = [11]
    answers.write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
    truth = copy / "possible_answer" / "BFCL_v4_multi_turn_base.json"
    text = truth.read_text()
    assert text.startswith('{"id": "multi_turn_base_0"')
    truth.write_text(text.replace("mkdir(dir_name='temp')", "mkdir(dir_name='temp2')", 1))
    memory = copy / "possible_answer" / "BFCL_v4_memory.json"
    lines = memory.read_text().splitlines()
    first = json.loads(lines[0])
    assert first["id"] == "memory_0-customer-0"
    first["ground_truth"] = ["Edited"]
    memory.write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
    return copy


@pytest.mark.parametrize("name", ["oracle", "wrong"])
def test_rescoring_on_edited_data_changes_exactly_the_edited_entries(runs, tmp_path, name):
    run = _copy(runs[name], tmp_path)
    before = _files(run)
    env = {**os.environ, bfcl_data.DATA_ENV: str(_edit_data(tmp_path))}
    command = [sys.executable, "-m", "tooluse_agents.cli.eval", "rescore", str(run)]
    out = subprocess.run(command, env=env, capture_output=True, text=True, check=True).stdout
    results = json.loads((run / RESULTS).read_text())
    changes = results["rescore"]["changes"]
    edited = {"multi_turn_base_0", "simple_python_0", "memory_kv_0-customer-0"}
    assert {c["task_id"] for c in changes} == edited
    assert len(changes) == 2 * len(edited)  # each seed's episode
    assert all(c["before"] and not c["after"] and c["cause"] == "data" for c in changes)
    files = {c["task_id"]: c["files"] for c in changes}
    assert files["simple_python_0"] == ["possible_answer/BFCL_v4_simple_python.json"]
    assert files["multi_turn_base_0"] == ["possible_answer/BFCL_v4_multi_turn_base.json"]
    assert files["memory_kv_0-customer-0"] == ["possible_answer/BFCL_v4_memory.json"]
    assert results["rescore"]["data_version"] != results["rescore"]["run_data_version"]
    assert "6 verdicts changed" in out and "simple_python_0 seed 0: valid -> invalid" in out
    assert {k: v for k, v in _files(run).items() if k in before} == before


def test_a_changed_verdict_with_the_same_data_is_the_checkers(runs, tmp_path):
    run = _copy(runs["oracle"], tmp_path)
    lines = (run / "episodes.jsonl").read_text().splitlines()
    records = [json.loads(line) for line in lines]
    for r in records:  # as if an older checker had marked simple_python_1 invalid
        if r["task_id"] == "simple_python_1":
            r["reward"], r["checker"] = 0.0, {"valid": False, "error_type": "old:bug", "error_message": ""}
    (run / "episodes.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    done = rescore_run(run)
    assert [(c.task_id, c.seed, c.cause, c.error_before) for c in done.changes] == [
        ("simple_python_1", 0, "checker", "old:bug"),
        ("simple_python_1", 1, "checker", "old:bug"),
    ]
    assert "simple_python_1 seed 0: invalid (old:bug) -> valid  [checker]" in done.report()


def _strip_digests(run: Path) -> None:
    """The folder as a run written before the cards held task data and the checkers' version."""
    records = [json.loads(line) for line in (run / "episodes.jsonl").read_text().splitlines()]
    for r in records:
        del r["protocol"]["task_data"], r["protocol"]["checker_version"]
    (run / "episodes.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    results = json.loads((run / "results.json").read_text())
    for card in [results["protocol"], *results.get("protocols", {}).values()]:
        del card["task_data"], card["checker_version"]
    (run / "results.json").write_text(json.dumps(results))


def test_old_folders_load_as_data_version_unknown(runs, tmp_path):
    old = _copy(runs["wrong"], tmp_path)
    _strip_digests(old)
    assert len(read_episodes(old / "episodes.jsonl")[0]) == 2 * len(TASKS)
    done = rescore_run(old)
    assert done.changes == () and "data version unknown" in done.report()
    assert done.results["rescore"]["run_data_version"] == "unknown"
    text, data = compare_runs(old, runs["oracle"])
    assert "**Task data version unknown for A" in text and data["task_data"]["same"] is None
    config = EvalConfig(agent="oracle", task_ids=TASKS, seeds=(0, 1), num_envs=2)
    with pytest.raises(RunConflict, match="written before the task data were recorded"):
        run_eval(config, old, progress=False)


def test_compare_says_in_bold_when_the_task_data_differ(runs, tmp_path):
    other = _copy(runs["wrong"], tmp_path)
    results = json.loads((other / "results.json").read_text())
    name = "possible_answer/BFCL_v4_simple_python.json"
    results["protocol"]["task_data"][name] = "0" * 64
    (other / "results.json").write_text(json.dumps(results))
    text, data = compare_runs(runs["oracle"], other)
    assert text.startswith("**DIFFERENT TASK DATA: A ran on data ")
    assert f"  {name}: " in text and "(A) vs 000000000000 (B)" in text
    assert data["task_data"]["same"] is False and set(data["task_data"]["files"]) == {name}
    same_text, same = compare_runs(runs["oracle"], runs["oracle"])
    assert same["task_data"]["same"] is True and "TASK DATA" not in same_text
