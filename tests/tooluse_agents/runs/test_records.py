"""The run files as types: today's episode and metrics files round-trip exactly, newer schemas are refused clearly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tooluse_agents.rollout.loop import RolloutJob, run_rollouts
from tooluse_agents.runs.jsonl import JsonlWriter
from tooluse_agents.runs.records import (
    EVAL_KEY,
    METRIC_KEYS,
    SCHEMA_VERSION,
    EpisodeRecord,
    MetricsRecord,
    RecordError,
    as_records,
    read_episodes,
    read_metrics,
)
from tooluse_agents.runs.runlog import RunFiles

FIXTURES = Path(__file__).resolve().parents[2] / "tooluse_tui" / "data"


def _fixture_records():
    """Every episode record in the committed run folders: files written before the typed layer existed."""
    out = []
    for path in sorted(FIXTURES.glob("*/episodes.jsonl")):
        for line in path.read_bytes().split(b"\n"):
            try:
                obj = json.loads(line)
            except ValueError:
                continue  # the damaged fixture's bad lines
            if isinstance(obj, dict) and "task_id" in obj:
                out.append(obj)
    return out


def test_todays_files_round_trip_exactly():
    records = _fixture_records()
    assert len(records) == 48
    for data in records:
        record = EpisodeRecord.from_dict(data)
        assert record.to_dict() == data
        assert len(record.steps) == sum(len(t["steps"]) for t in data["turns"])
    # the trainer's records carry their training marks (and evaluation step) as extra keys, kept as written
    trained = {**records[0], "train": {"advantage": 0.5, "used": True}, "eval_step": 3}
    record = EpisodeRecord.from_dict(trained)
    assert record.extra == {"train": {"advantage": 0.5, "used": True}, "eval_step": 3}
    assert record.to_dict() == trained


def test_a_real_episode_round_trips():
    import gymnasium as gym

    from tooluse_agents.backends.base import SamplingConfig
    from tooluse_agents.backends.oracle import OracleAgent

    (episode,) = run_rollouts(
        lambda: gym.make("ToolUse-MultiTurn-v0", category="miss_func"),
        OracleAgent(),
        [RolloutJob("multi_turn_miss_func_47", 0)],
        sampling=SamplingConfig(),
        num_envs=1,
    )
    record = episode.record
    assert isinstance(record, EpisodeRecord)  # the loop hands out the typed record; its line reads back equal
    assert EpisodeRecord.from_dict(json.loads(json.dumps(record.to_dict()))) == record
    assert record.reward == 1.0 and record.schema_version == SCHEMA_VERSION
    assert any(t.held_out for t in record.turns) and record.error_type is None
    assert len(episode.generations) == len(record.steps)  # one generation per step travels with the record


def test_newer_schemas_and_malformed_records_are_refused():
    with pytest.raises(RecordError, match="schema 2, written by a newer tooluse-gym"):
        EpisodeRecord.from_dict({"schema_version": SCHEMA_VERSION + 1, "task_id": "t", "reward": 1.0})
    for bad in ({"task_id": "t"}, {"task_id": "t", "reward": "x"}, {"task_id": "t", "reward": 1, "turns": {}}, [1]):
        with pytest.raises(RecordError):
            EpisodeRecord.from_dict(bad)
    old = EpisodeRecord.from_dict({"task_id": "t", "reward": 1})  # no version written: schema 1, defaults
    assert old.schema_version == 1 and old.turns == () and old.num_turns == 0


def test_readers_skip_what_they_cannot_read_and_say_why(tmp_path):
    path = tmp_path / "episodes.jsonl"
    with JsonlWriter(path) as w:
        w.write({"task_id": "a", "reward": 1.0})
        w.write({"schema_version": 99, "task_id": "b", "reward": 0.0})
        w.write({"step": 1})  # not an episode: left out, not counted
    with pytest.warns(UserWarning, match="schema 99"):
        records, health = read_episodes(path)
    assert [r.task_id for r in records] == ["a"] and health.corrupt_lines == 1


def test_summaries_take_records_or_their_json_objects_alike():
    from tooluse_agents.runs.results import summarize

    episode = {"task_id": "t", "category": "c", "reward": 0.0, "tokens": {"prompt": 2}}
    objects = [{**episode, "seed": s, "reward": float(s)} for s in (0, 1)]
    records = as_records(objects)
    assert all(isinstance(r, EpisodeRecord) for r in records) and as_records(records)[0] is records[0]
    assert summarize(objects) == summarize(records)
    with pytest.raises(RecordError):
        as_records([{"task_id": "t"}])


def test_metrics_files_round_trip_and_read_like_json_objects(tmp_path):
    written = FIXTURES / "train_run" / "metrics.jsonl"  # a file of today's format (no schema_version)
    objects = [json.loads(line) for line in written.read_text().splitlines()]
    records, health = read_metrics(written)
    assert len(records) == len(objects) and not health.describe()
    for obj, record in zip(objects, records, strict=True):
        assert record.to_dict() == {"schema_version": 1, **obj} and record.schema_version == 1
        assert record.step == obj["step"] and record["rollout/reward_mean"] == obj["rollout/reward_mean"]
        assert record.get(EVAL_KEY) == obj.get(EVAL_KEY) and (EVAL_KEY in record) == (EVAL_KEY in obj)
    assert MetricsRecord.from_dict(records[0].to_dict()) == records[0]
    assert records[0].number("missing/key") is None


def test_metrics_records_refuse_newer_schemas_and_lines_without_a_step(tmp_path):
    with pytest.raises(RecordError, match="schema 2, written by a newer tooluse-gym"):
        MetricsRecord.from_dict({"schema_version": SCHEMA_VERSION + 1, "step": 1})
    for bad in ({"epoch": 1}, {"step": "x"}, [1]):
        with pytest.raises(RecordError):
            MetricsRecord.from_dict(bad)
    path = tmp_path / "metrics.jsonl"
    path.write_text('{"step": 1, "loss/policy": 0.5}\n{"schema_version": 7, "step": 2}\n{"epoch": 3}\n')
    with pytest.warns(UserWarning) as caught:
        records, health = read_metrics(path)
    assert ["schema 7" in str(w.message) for w in caught] == [True, False]
    assert "metrics record (no step)" in str(caught[1].message)
    assert [r.step for r in records] == [1] and health.corrupt_lines == 2


def test_the_trainer_writes_only_complete_metrics_records(tmp_path):
    files = RunFiles(tmp_path)
    with pytest.raises(ValueError, match="lacks"):
        files.metrics(MetricsRecord(step=1, values={"epoch": 1}))
    full = MetricsRecord(step=1, values={k: 0.0 for k in METRIC_KEYS if k != "step"})
    assert full.missing == ()
    with pytest.raises(ValueError, match="does not declare"):
        files.metrics(MetricsRecord(step=1, values={**full.values, "loss/new_thing": 0.0}))
    files.metrics(full)
    (back,), _ = read_metrics(tmp_path / "metrics.jsonl")
    assert back == full


def _step(files: RunFiles, step: int, *, evaluate: bool = False) -> None:
    """What one training step appends: its rollouts, maybe an evaluation, then its metrics line."""
    files.episode({"task_id": f"t{step}", "train": {"step": step}})
    if evaluate:
        files.eval_episode({"task_id": f"h{step}", "eval_step": step})
        files.eval({"step": step, "eval/heldout_reward": 0.5})
    files.metrics(MetricsRecord(step=step, values={k: 0.0 for k in METRIC_KEYS if k != "step"}))


def test_a_resume_cuts_every_run_file_back_to_what_its_checkpoint_covers(tmp_path):
    """A kill after step 3's lines reached the files and before step 3's checkpoint: none of them stays."""
    files = RunFiles(tmp_path)
    files.eval({"step": 0, "eval/heldout_reward": 0.0})  # the evaluation before the first step
    for step in (1, 2):
        _step(files, step, evaluate=step == 2)
    covered = {p.name: p.read_bytes() for p in files.appended}
    sizes = files.sizes()
    files.eval({"step": 2, "eval/heldout_reward": 0.6})  # a last evaluation after step 2's checkpoint: not covered
    _step(files, 3, evaluate=True)
    with (tmp_path / "episodes.jsonl").open("a") as f:
        f.write('{"task_id": "t4", "train": {"st')  # torn by the kill
    files.close()
    files.rewind(sizes, 2)
    assert {p.name: p.read_bytes() for p in files.appended} == covered
    steps = [r.step for r in read_metrics(tmp_path / "metrics.jsonl")[0]]
    assert steps == [1, 2]  # step 3's line is gone: the resumed run writes it once

    # a checkpoint that recorded no sizes (an older run): lines of later steps are dropped
    _step(files, 3)
    files.rewind(None, 2)
    assert [r.step for r in read_metrics(tmp_path / "metrics.jsonl")[0]] == [1, 2]
    # no checkpoint at all: the run starts over, so nothing written before counts (not even step 0's evaluation)
    files.rewind(None, None)
    assert all(p.read_bytes() == b"" for p in files.appended if p.exists())
    assert RunFiles(tmp_path, write=False).sizes() == {}
