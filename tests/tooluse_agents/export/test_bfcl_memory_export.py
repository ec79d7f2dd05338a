"""`tooluse-eval export --format bfcl` on memory runs (``ToolUse-Memory-v0``), scored by BFCL's own `bfcl evaluate`.

Runs are played over memory_kv and memory_rec_sum (a few scenarios each): the oracle through the CLI, and a
scripted agent that answers some questions wrongly (``I do not know``, an empty reply, a force-quit read loop)
and fails one scenario with an agent error. Each is exported and scored by BFCL's real evaluator (the
``bfcl_evaluate`` fixture of the multi-turn tests: skipped while BFCL's evaluator dependencies are not
installed). BFCL must give every question our verdict, and every category our accuracy.
"""

from __future__ import annotations

import dataclasses
import json

import pytest

from tests.tooluse_agents.export.test_bfcl_export import bfcl_evaluate as bfcl_evaluate  # the fixture, shared
from tests.tooluse_agents.export.test_bfcl_export import run_bfcl
from tooluse_agents.backends.base import AgentError, Generation
from tooluse_agents.backends.oracle import OracleAgent
from tooluse_agents.cli.eval import main
from tooluse_agents.eval.run import EvalConfig, eval_task_ids, run_eval
from tooluse_agents.export.memory import bfcl_verdict, played_segments
from tooluse_agents.export.pipeline import export_bfcl
from tooluse_agents.runs.records import EpisodeRecord, StepEntry, TurnEntry, read_episodes
from tooluse_gym.envs import MEMORY_ID
from tooluse_gym.envs.memory import read_snapshot_file
from tooluse_gym.tasks.bfcl_memory import load_memory_tasks

CATEGORIES = ("memory_kv", "memory_rec_sum")
MODEL_DIR = "Qwen_Qwen3-8B"


def memory_folder(root, category):
    return root / "result" / MODEL_DIR / "agentic" / "memory" / category.removeprefix("memory_")


def lines(path):
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines()]


def question_verdicts(run):
    """(question id, seed) -> valid, as results count them (an agent error fails every question of its episode)."""
    records = read_episodes(run / "episodes.jsonl")[0]
    return {(qid, r.seed): reward == 1.0 for r in records for qid, reward in r.scored()}


def assert_bfcl_agrees(run, export, scores):
    """BFCL's verdict on every question equals ours, its accuracy per category results.json's. Returns ours."""
    ours = question_verdicts(run)
    summary = json.loads((run / "results.json").read_text())["summary"]["categories"]
    (command,) = export.commands
    seed = int(command.root.name.removeprefix("seed_"))
    assert command.categories == CATEGORIES
    verdicts = {}
    for category in command.categories:
        header, failed = scores[(export.target.model, category)]
        ids = [x["id"] for x in lines(memory_folder(command.root, category) / f"BFCL_v4_{category}_result.json")]
        assert header["total_count"] == len(ids) and set(failed) <= set(ids)
        for qid in ids:
            assert (qid not in failed) == ours[(qid, seed)], f"{qid}: BFCL {failed.get(qid)}, ours {ours[(qid, seed)]}"
            verdicts[qid] = failed.get(qid)
        assert header["accuracy"] == pytest.approx(summary[category]["per_seed"][str(seed)])
    assert set(verdicts) == {qid for qid, s in ours if s == seed}
    return verdicts


def test_the_oracle_run_exports_as_bfcl_generate_lays_it_out_and_scores_100_in_bfcl(tmp_path, capsys, bfcl_evaluate):
    run, out = tmp_path / "oracle", tmp_path / "bfcl"
    argv = ["run", "--agent", "oracle", "--categories", *CATEGORIES, "--limit", "1", "--out", str(run), "--no-progress"]
    assert main(argv) == 0
    assert main(["export", "--format", "bfcl", str(run), str(out)]) == 0
    printed = capsys.readouterr().out
    export = export_bfcl(run, out, force=True)
    assert f"  {export.commands[0].shell()}" in printed.splitlines()
    assert export.target.model == "Qwen/Qwen3-8B" and not export.mismatches and not export.warnings
    assert export.exported == 2 and export.steps_checked > 0
    (command,) = export.commands
    records = read_episodes(run / "episodes.jsonl")[0]
    for record in records:
        (task,) = load_memory_tasks([record.category], "scenario", [record.task_id])
        folder = memory_folder(command.root, record.category)
        questions = lines(folder / f"BFCL_v4_{record.category}_result.json")
        prereqs = lines(folder / f"BFCL_v4_{record.category}_prereq_result.json")
        assert [x["id"] for x in questions] == [q.task_id for q in task.questions]  # BFCL's order
        assert [x["id"] for x in prereqs] == [s.entry_id for s in task.segments if s.kind == "session"]
        for line in questions:  # one turn: the read call, then the answer
            (turn,) = line["result"]
            assert len(turn) == 2 and turn[0].startswith("[") and "answer" in turn[1]
        sessions = [s for s in task.segments if s.kind == "session"]
        assert [len(x["result"]) for x in prereqs] == [s.num_turns for s in sessions]
        snapshots = folder / "memory_snapshot"
        played = [p for p in played_segments(record, task) if p.segment.kind == "session"]
        for p in played:
            checkpoint = json.loads((snapshots / "prereq_checkpoints" / f"{p.segment.entry_id}.json").read_text())
            assert checkpoint == p.memory
        # the final memory is what the questions read, and ToolUse-Memory-v0 reads BFCL's snapshot folder back
        final = read_snapshot_file(snapshots, [record.category])
        assert final == {(record.category, task.scenario): played[-1].memory}
    verdicts = assert_bfcl_agrees(run, export, run_bfcl([command], bfcl_evaluate))
    assert set(verdicts.values()) == {None}


# A scripted agent: the oracle, but some questions answered wrongly, one scenario failed by an agent error.
KINDS = ("oracle", "unknown", "think", "empty", "oracle", "prose", "force_quit")


class PartlyWrong(OracleAgent):
    """The oracle's write phase and reads; each question's answer set by `KINDS` (by its BFCL index)."""

    name = "partly-wrong"

    def __init__(self, failing_task):
        super().__init__()
        self.failing = failing_task

    def generate(self, requests, sampling=None):
        return [self.reply(r) for r in requests]

    def submit(self, items, sampling=None):
        self._done.extend((key, self.reply(r)) for key, r in items)

    def reply(self, request):
        task, steps = request.task, request.steps_in_turn
        question = task.segments[task.segment_at(request.turn)].question
        if question is None:
            return Generation(text=self.message(request))
        if task.task_id == self.failing and question.index % 5 == 3:
            return Generation(error=AgentError("agent_exception", "a scripted failure"))
        kind = KINDS[question.index % len(KINDS)]
        if kind == "force_quit":  # the read call at every step: the 21st force-quits the question
            return Generation(text=self.message(dataclasses.replace(request, steps_in_turn=0)))
        if kind == "empty":
            return Generation(text="")
        if steps == 0 or kind == "oracle":
            return Generation(text=self.message(request))
        if kind == "unknown":
            return Generation(text="{'answer': 'I do not know', 'context': 'I do not know'}")
        if kind == "prose":
            return Generation(text=f"From my notes: {question.answers[0]}.")
        return Generation(text=f"<think>\nI read it back.\n</think>\n\n{self.message(request)}")  # think


def test_a_partly_wrong_run_gets_the_same_verdicts_from_bfcl(tmp_path, bfcl_evaluate):
    run = tmp_path / "partly"
    config = EvalConfig(agent="oracle", categories=CATEGORIES, limit=2, num_envs=4)
    failing = next(t for t in eval_task_ids(list(CATEGORIES), 2) if t.startswith("memory_rec_sum"))
    run_eval(config, run, agent=PartlyWrong(failing), progress=False)
    records = read_episodes(run / "episodes.jsonl")[0]
    assert len(records) == 4 and sum(r.error is not None for r in records) == 1
    export = export_bfcl(run, tmp_path / "bfcl")
    assert export.inference_errors == 1 and not export.mismatches and not export.warnings
    (command,) = export.commands
    verdicts = assert_bfcl_agrees(run, export, run_bfcl([command], bfcl_evaluate))
    kinds = set(verdicts.values())
    assert {None, "agentic:answer_not_found", "agentic:no_last_message", "agentic:inference_error"} <= kinds
    accuracies = [run_bfcl_header(command, c)["accuracy"] for c in CATEGORIES]
    assert all(0.0 < a < 1.0 for a in accuracies)


def run_bfcl_header(command, category):
    return lines(command.score_file(category))[0]


# --- hand-built: where BFCL would read a question otherwise ----------------------------------


def test_the_export_warns_where_bfcl_reads_an_answer_otherwise(tmp_path):
    (task,) = load_memory_tasks(["memory_kv"], "question", ["memory_kv_0-customer-0"])
    gold = task.questions[0].answers[0]
    hidden = f"<think>The answer is {gold}.</think>\n\nI do not know."  # the env checked the reasoning too
    assert not bfcl_verdict(["I do not know."], "python", [gold]).valid
    assert bfcl_verdict(["[archival_memory_retrieve(key='a')]", ""], "python", [gold]).error_type == (
        "agentic:no_last_message"
    )
    protocol = {"env_id": MEMORY_ID, "tool_format": "python", "decoder": "bfcl", "extra": {"episode": "question"}}
    verdict = {"turn": 0, "question": task.task_id, "valid": True, "error_type": None}
    record = EpisodeRecord(
        task_id=task.task_id,
        reward=1.0,
        category="memory_kv",
        protocol=protocol,
        turns=(TurnEntry(0, steps=(StepEntry(0, 0, hidden),), verdict=verdict),),
        num_turns=1,
        checker={"valid": True, "error_type": None, "error_message": None},
        questions=({"task_id": task.task_id, "valid": True, "error_type": None},),
    )
    run = tmp_path / "run"
    run.mkdir()
    (run / "episodes.jsonl").write_text(json.dumps(record.to_dict()) + "\n")
    export = export_bfcl(run, tmp_path / "out")
    text = "\n".join(export.warnings)
    assert "1 questions another verdict" in text and task.task_id in text and "answer_not_found" in text
    assert "question episodes were asked from a given memory" in text
    folder = memory_folder(export.commands[0].root, "memory_kv")
    assert lines(folder / "BFCL_v4_memory_kv_result.json") == [{"id": task.task_id, "result": [["I do not know."]]}]
    assert not (folder / "BFCL_v4_memory_kv_prereq_result.json").exists() and not (folder / "memory_snapshot").exists()
