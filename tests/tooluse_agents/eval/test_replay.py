"""`make replay`: the ground truth played by the oracle agent through `tooluse-eval run` scores 800/800."""

from __future__ import annotations

import json

from tooluse_agents.cli.eval import main
from tooluse_gym.tasks.bfcl import CATEGORIES


def test_ground_truth_replay_scores_800_of_800(tmp_path, capsys):
    out = tmp_path / "oracle"
    assert main(["run", "--agent", "oracle", "--out", str(out), "--no-progress"]) == 0
    printed = capsys.readouterr().out
    for category in CATEGORIES:
        assert f"| {category} | 200 | 100.0 |" in printed
    summary = json.loads((out / "results.json").read_text())["summary"]
    assert summary["episodes"] == 800 and summary["overall"]["mean"] == 1.0
    assert all(summary["categories"][c]["mean"] == 1.0 for c in CATEGORIES)
