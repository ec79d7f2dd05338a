"""The agentic reward-hacking measurement: its JSON's shape on a slice, and the committed full result.

On every row the strict check passes no more replies than BFCL's checker, our `agentic_check` agrees
with BFCL's on every reply, and every gold answer passes both checks in BFCL's answer format.
"""

from __future__ import annotations

import json
from importlib import metadata
from pathlib import Path

import pytest

from experiments.framework.provenance import ROOT
from experiments.tools import agentic_reward_hacking as arh

ROW_KEYS = {"attack", "k", "separator", "replies", "bfcl", "strict"}


def _check_shape(data: dict, questions: dict[str, int]) -> None:
    assert data["bfcl_eval"] == metadata.version("bfcl-eval")
    assert data["command"].startswith("python -m experiments.tools.agentic_reward_hacking")
    assert "/" not in data["command"].replace("experiments.tools", "")  # no machine paths
    assert data["ks"] == list(arh.KS)
    assert set(data["categories"]) == {"memory", "web_search"}
    for category, block in data["categories"].items():
        assert block["questions"] == questions[category]
        assert block["bfcl_vs_agentic_check_disagreements"] == 0
        rows = block["rows"]
        assert len(rows) == (len(arh.KS) + 1) * len(arh.SEPARATORS)
        assert [(r["attack"], r["k"]) for r in rows[:: len(arh.SEPARATORS)]] == [
            *(("other_gold", k) for k in arh.KS),
            ("numbers", 101),
        ]
        for row in rows:
            assert set(row) == ROW_KEYS
            assert row["replies"] > 0
            assert 0.0 <= row["strict"] <= row["bfcl"] <= 1.0, row
        gold = block["gold_in_answer_format"]
        assert gold["replies"] == gold["bfcl"] == gold["strict"] > 0
        assert gold["strict_failing"] == []


def test_a_slice(tmp_path):
    out = tmp_path / "hacking.json"
    assert arh.main(["--limit", "6", "--draws", "2", "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    _check_shape(data, {"memory": 6, "web_search": 6})
    assert data["command"] == "python -m experiments.tools.agentic_reward_hacking --limit 6 --draws 2"
    assert data["categories"]["memory"]["groups"] == ["customer"]
    assert all(r["replies"] in (6, 12) for r in data["categories"]["memory"]["rows"])


def test_the_pool_leaves_the_question_out():
    gold = arh.load_gold("memory")
    first = next(iter(gold))
    pool = arh.pool(gold, first)
    assert len(gold) == 155 and len(arh.load_gold("web_search")) == 100
    others = {a for i, answers in gold.items() if i != first and arh.group_of(i) == "customer" for a in answers}
    assert set(pool) == others


RESULT = ROOT / "benchmarks" / "results" / "agentic_reward_hacking.json"


@pytest.mark.skipif(not RESULT.exists(), reason="no committed result")
def test_the_committed_result():
    data = json.loads(Path(RESULT).read_text())
    _check_shape(data, {"memory": 155, "web_search": 100})
    assert data["command"] == "python -m experiments.tools.agentic_reward_hacking"
