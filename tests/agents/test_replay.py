from __future__ import annotations

from agents.replay import main


def test_ground_truth_replay_scores_800_of_800(capsys):
    assert main([]) == 0
    out = capsys.readouterr().out
    for category in ("base", "miss_func", "miss_param", "long_context"):
        assert f"{category}" in out
    assert out.count("100.0%") == 5 and "800     800" in out
