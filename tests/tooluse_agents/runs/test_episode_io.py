from __future__ import annotations

import json

import pytest

from tooluse_agents.runs.jsonl import JsonlWriter
from tooluse_agents.runs.records import read_episodes


def test_writer_appends_and_reader_skips_bad_lines(tmp_path):
    path = tmp_path / "episodes.jsonl"
    with JsonlWriter(path) as w:
        w.write({"task_id": "a", "reward": 1.0})
        w.write({"task_id": "b", "reward": 0.0})
    with path.open("a") as f:
        f.write("{not json}\n")
        f.write(json.dumps({"task_id": "c", "reward": 1.0}) + "\n")
        f.write('{"task_id": "d", "rew')  # torn last line (killed mid-write)
    with pytest.warns(UserWarning) as caught:
        records, stats = read_episodes(path)
    assert [r.task_id for r in records] == ["a", "b", "c"]
    assert stats.skipped == 2 and stats.torn_last_line
    assert any("torn last line" in str(w.message) for w in caught)
    assert any("corrupt line" in str(w.message) for w in caught)


def test_invalid_utf8_line_is_skipped(tmp_path):
    path = tmp_path / "episodes.jsonl"
    path.write_bytes(b'{"task_id": "a", "reward": 1}\n\xff\xfe\n')
    with pytest.warns(UserWarning):
        records, stats = read_episodes(path)
    assert len(records) == 1 and stats.skipped == 1
