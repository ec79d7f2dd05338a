"""`tooluse eval run/export` on web-search runs (``ToolUse-WebSearch-v0``), scored by BFCL's own `bfcl evaluate`.

Runs play BFCL's web-search questions on the synthetic gold-hops backend (the oracle through the CLI) and
on the committed replay recording (a scripted agent answering some questions wrongly, one with an agent
error). Each is exported and scored by BFCL's real evaluator: it must give every question our verdict and
every category our accuracy. The CLI refuses a web-search run without a backend and writes nothing.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.tooluse_agents.export.test_bfcl_export import bfcl_evaluate as bfcl_evaluate  # the fixture, shared
from tests.tooluse_agents.export.test_bfcl_export import run_bfcl
from tooluse_agents.backends.base import AgentError, Generation
from tooluse_agents.backends.oracle import OracleAgent
from tooluse_agents.cli.eval import main
from tooluse_agents.eval.run import EvalConfig, run_eval
from tooluse_agents.export.pipeline import export_bfcl
from tooluse_agents.runs.records import read_episodes

CATEGORIES = ("web_search_base", "web_search_no_snippet")
RECORDING = Path(__file__).parents[2] / "tooluse_gym" / "tools" / "data" / "web_search_recording.jsonl"
MODEL_DIR = "Qwen_Qwen3-8B"


def lines(path):
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]


def assert_bfcl_agrees(run, export, scores):
    """BFCL's verdict on every question equals ours, its accuracy per category results.json's; returns BFCL's."""
    records = read_episodes(run / "episodes.jsonl")[0]
    summary = json.loads((run / "results.json").read_text())["summary"]["categories"]
    (command,) = export.commands
    ours = {r.task_id: r.reward == 1.0 for r in records}
    verdicts = {}
    for category in CATEGORIES:
        header, failed = scores[(export.target.model, category)]
        folder = command.root / "result" / MODEL_DIR / "agentic"
        ids = [x["id"] for x in lines(folder / f"BFCL_v4_{category}_result.json")]
        assert header["total_count"] == len(ids) == sum(i.startswith(category + "_") for i in ours)
        for task_id in ids:
            assert (task_id not in failed) == ours[task_id], f"{task_id}: BFCL {failed.get(task_id)}"
            verdicts[task_id] = failed.get(task_id)
        assert header["accuracy"] == pytest.approx(summary[category]["per_seed"]["0"])
    return verdicts


def test_a_web_search_run_needs_a_backend_and_a_refused_run_writes_nothing(tmp_path, capsys):
    run = tmp_path / "refused"
    assert main(["run", "--agent", "oracle", "--categories", "web_search", "--out", str(run), "--no-progress"]) != 0
    assert "need --search" in capsys.readouterr().err and not run.exists()
    assert main(["run", "--agent", "oracle", "--categories", "base", "--search", "gold-hops", "--out", str(run)]) != 0
    assert "are for web-search categories" in capsys.readouterr().err and not run.exists()


def test_the_oracle_run_on_gold_hops_says_what_answered_and_bfcl_scores_it_100(tmp_path, capsys, bfcl_evaluate):
    run, out = tmp_path / "oracle", tmp_path / "bfcl"
    argv = ["run", "--agent", "oracle", "--categories", "web_search", "--limit", "3", "--search", "gold-hops"]
    assert main([*argv, "--out", str(run), "--no-progress"]) == 0
    printed = capsys.readouterr().out
    note = "Web search answered by search backend gold-hops"
    assert note in printed and "not a BFCL score" in printed and note in (run / "report.md").read_text()
    assert json.loads((run / "run.json").read_text())["search"] == "gold-hops"
    export = export_bfcl(run, out)
    assert export.exported == 6 and not export.mismatches
    assert any("searched with gold-hops" in w for w in export.warnings)
    verdicts = assert_bfcl_agrees(run, export, run_bfcl(export.commands, bfcl_evaluate))
    assert set(verdicts.values()) == {None}


class PartlyWrong(OracleAgent):
    """One search from the recording, then an answer chosen by the task's index."""

    name = "partly-wrong"

    def generate(self, requests, sampling=None):
        return [self.reply(r) for r in requests]

    def submit(self, items, sampling=None):
        self._done.extend((key, self.reply(r)) for key, r in items)

    def reply(self, request):
        question = request.task.questions[0]
        if request.steps_in_turn == 0:
            return Generation(text="[search_engine_query(keywords='Usher birthplace')]")
        kind = question.index % 4
        if kind == 0:
            return Generation(text=f"{{'answer': '{question.answers[0]}', 'context': 'searched'}}")
        if kind == 1:
            return Generation(text="{'answer': 'I do not know', 'context': 'I do not know'}")
        if kind == 2:
            return Generation(text="")
        return Generation(error=AgentError("agent_exception", "a scripted failure"))


def test_a_replayed_partly_wrong_run_gets_the_same_verdicts_from_bfcl(tmp_path, bfcl_evaluate):
    run = tmp_path / "partly"
    config = EvalConfig(agent="oracle", categories=CATEGORIES, limit=8, num_envs=4, search=str(RECORDING))
    run_eval(config, run, agent=PartlyWrong(), progress=False)
    records = read_episodes(run / "episodes.jsonl")[0]
    assert len(records) == 16 and sum(r.error is not None for r in records) == 4
    export = export_bfcl(run, tmp_path / "bfcl")
    assert export.inference_errors == 4 and not export.mismatches
    assert any("searched with replay recording" in w for w in export.warnings)
    verdicts = assert_bfcl_agrees(run, export, run_bfcl(export.commands, bfcl_evaluate))
    want = {None, "agentic:answer_not_found", "agentic:no_last_message", "agentic:inference_error"}
    assert set(verdicts.values()) == want


def test_one_run_over_every_family_exports_to_one_root_and_bfcl_prints_our_overall(tmp_path, bfcl_evaluate):
    """Single-turn, multi-turn, memory and web search in one run, one export: BFCL's Overall Acc is ours."""
    run, out = tmp_path / "all", tmp_path / "bfcl"
    categories = ["simple_python", "irrelevance", "base", "memory_rec_sum", "web_search"]
    argv = ["run", "--agent", "oracle", "--categories", *categories, "--limit", "1", "--search", str(RECORDING)]
    assert main([*argv, "--out", str(run), "--no-progress"]) == 0
    export = export_bfcl(run, out)
    (command,) = export.commands
    assert set(command.categories) == {"simple_python", "irrelevance", "multi_turn_base", "memory_rec_sum", *CATEGORIES}
    assert not export.mismatches
    scores = run_bfcl([command], bfcl_evaluate)
    overall = json.loads((run / "results.json").read_text())["summary"]["bfcl_scores"]["overall"]["as_bfcl"]["mean"]
    header, row = (command.root / "score" / "data_overall.csv").read_text().splitlines()[:2]
    printed = dict(zip(header.split(","), row.split(","), strict=False))["Overall Acc"]
    assert printed == f"{100 * overall:.2f}%"
    assert scores[(export.target.model, "web_search_base")][0]["accuracy"] == 1.0  # the oracle, on a replay too


def test_a_replayed_run_rescores_to_the_same_verdicts(tmp_path, capsys):
    run = tmp_path / "replayed"
    config = EvalConfig(agent="oracle", categories=CATEGORIES, limit=6, num_envs=4, search=str(RECORDING))
    run_eval(config, run, agent=PartlyWrong(), progress=False)
    assert main(["rescore", str(run)]) == 0
    before = {(r.task_id, r.seed): r.reward for r in read_episodes(run / "episodes.jsonl")[0]}
    after = {(r.task_id, r.seed): r.reward for r in read_episodes(run / "episodes.rescored.jsonl")[0]}
    assert after == before and 0.0 in before.values() and 1.0 in before.values()
