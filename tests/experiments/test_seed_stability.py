"""The seed-stability study's statistics and driver, on hand-made reward matrices and a scripted run folder."""

from __future__ import annotations

import json

import numpy as np
import pytest

from experiments.seed_stability import study

STATS = {"bootstrap": {"replicates": 400, "rng_seed": 0}, "informative_range": [0.1, 0.9],
         "finding": {"cells": ["multi", "single"]}}  # fmt: skip
SEEDS = [0, 1, 2, 3, 4]


def matrix(per_seed_correct: list[int], tasks: int = 20) -> np.ndarray:
    """Tasks x seeds rewards where seed s solves the first per_seed_correct[s] tasks."""
    return np.array([[1.0 if t < k else 0.0 for k in per_seed_correct] for t in range(tasks)])


def test_cell_statistics_by_hand():
    m = matrix([10, 12, 8, 10, 10])  # accuracies 0.5, 0.6, 0.4, 0.5, 0.5
    cell = study.cell_stats(m, SEEDS, STATS)
    assert cell["per_seed"] == {"0": 0.5, "1": 0.6, "2": 0.4, "3": 0.5, "4": 0.5}
    assert cell["spread"] == pytest.approx(0.2) and cell["std"] == pytest.approx(np.sqrt(0.004))
    assert cell["mean"] == pytest.approx(0.5) and cell["informative"]
    assert cell["spread_ci95"][0] <= cell["spread"] <= cell["spread_ci95"][1]
    assert not study.cell_stats(matrix([1, 1, 2, 1, 1]), SEEDS, STATS)["informative"]  # mean 0.06: near 0


def test_finding_follows_the_interval():
    steady = matrix([10, 10, 10, 10, 10])  # the same tasks every seed: std 0
    moving = matrix([4, 16, 6, 14, 10])  # 0.2 .. 0.8
    cells = {n: study.cell_stats(m, SEEDS, STATS) for n, m in (("multi", moving), ("single", steady))}
    found = study.finding({"multi": moving, "single": steady}, cells, STATS)
    assert found["verdict"] == "supported" and found["ci95"][0] > 0
    swapped = {"multi": cells["single"], "single": cells["multi"]}
    assert study.finding({"multi": steady, "single": moving}, swapped, STATS)["verdict"] == "contradicted"
    both = {"multi": cells["multi"], "single": cells["multi"]}
    same = study.finding({"multi": moving, "single": moving}, both, STATS)
    assert same["verdict"] == "unresolved"
    assert study.finding({"multi": moving}, cells, STATS)["verdict"] == "pending"
    flat = {"multi": cells["multi"], "single": study.cell_stats(matrix([0, 0, 1, 0, 0]), SEEDS, STATS)}
    assert study.finding({"multi": moving, "single": matrix([0, 0, 1, 0, 0])}, flat, STATS)["verdict"] == "not testable"


def test_rewards_wait_for_every_seed_of_every_task(tmp_path):
    rows = [{"task_id": f"t{t}", "seed": s, "reward": float(t == s), "turns": []} for t in range(3) for s in (0, 1)]
    (tmp_path / "episodes.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    tasks, m = study.rewards(tmp_path, [0, 1])
    assert tasks == ["t0", "t1", "t2"] and m.tolist() == [[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]]
    assert study.rewards(tmp_path, [0, 1, 2]) is None  # seed 2 not played yet
    assert study.rewards(tmp_path / "missing", [0]) is None
