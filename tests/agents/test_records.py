"""The episode file format as types: today's files round-trip exactly, newer schemas are refused clearly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agents.episode import EpisodeWriter, read_episodes
from agents.records import SCHEMA_VERSION, EpisodeRecord, RecordError
from agents.rollout import RolloutJob, run_rollouts

FIXTURES = Path(__file__).resolve().parents[1] / "tui" / "data"


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

    from agents.base import SamplingConfig
    from agents.oracle import OracleAgent

    (episode,) = run_rollouts(
        lambda: gym.make("ToolUse-MultiTurn-v0", category="miss_func"),
        OracleAgent(),
        [RolloutJob("multi_turn_miss_func_47", 0)],
        sampling=SamplingConfig(),
        num_envs=1,
    )
    record = EpisodeRecord.from_dict(episode.record)
    assert record.to_dict() == episode.record and record.reward == 1.0 and record.schema_version == SCHEMA_VERSION
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
    with EpisodeWriter(path) as w:
        w.write({"task_id": "a", "reward": 1.0})
        w.write({"schema_version": 99, "task_id": "b", "reward": 0.0})
        w.write({"step": 1})  # not an episode: left out, not counted
    with pytest.warns(UserWarning, match="schema 99"):
        records, health = read_episodes(path)
    assert [r["task_id"] for r in records] == ["a"] and health.corrupt_lines == 1
