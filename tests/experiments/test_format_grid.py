"""The format-grid study's statistics and driver, on hand-made reward matrices."""

from __future__ import annotations

import numpy as np
import pytest
import yaml

from experiments.format_grid import study

STATS = {"bootstrap": {"replicates": 400, "rng_seed": 0}, "informative_range": [0.1, 0.9],
         "pairwise": {"alpha": 0.05}}  # fmt: skip
CONFIGS = ["base", "same", "better"]


def rows(*correct: int, tasks: int = 20) -> np.ndarray:
    """Configurations x tasks rewards where configuration i solves the first correct[i] tasks."""
    return np.array([[1.0 if t < k else 0.0 for t in range(tasks)] for k in correct])


def test_holm_by_hand():
    adjusted = study.holm({"a": 0.01, "b": 0.04, "c": 0.03})
    assert adjusted == pytest.approx({"a": 0.03, "c": 0.06, "b": 0.06})  # 3 x 0.01; 2 x 0.03; max(0.06, 1 x 0.04)
    assert study.holm({"a": 0.6, "b": 0.7}) == {"a": 1.0, "b": 1.0}


def test_cell_statistics_by_hand():
    cell = study.cell_stats(CONFIGS, rows(4, 4, 16), STATS)  # accuracies 0.2, 0.2, 0.8
    assert cell["accuracy"] == {"base": 0.2, "same": 0.2, "better": 0.8}
    assert cell["std"] == pytest.approx(np.std([0.2, 0.2, 0.8], ddof=1)) and cell["max_minus_min"] == pytest.approx(0.6)
    assert cell["std_ci95"][0] <= cell["std"] <= cell["std_ci95"][1]
    better = cell["against_base"]["better"]
    assert (better["gained"], better["lost"]) == (12, 0) and better["p"] == pytest.approx(2 / 2**12)
    assert cell["against_base"]["same"]["p"] == 1.0 and cell["differing"] == ["better"]
    assert cell["verdict"] == "format-sensitive"
    assert study.cell_stats(CONFIGS, rows(4, 5, 6), STATS)["verdict"] == "not shown"  # 2 tasks gained: p 0.5
    assert study.cell_stats(CONFIGS, rows(0, 0, 1), STATS)["verdict"] == "near a bound"  # every accuracy < 0.1


def test_a_checkout_without_the_run_folders_keeps_the_committed_cells(tmp_path, monkeypatch):
    prereg = yaml.safe_load(study.PREREG.read_text())
    first, second, *_ = prereg["cells"]
    monkeypatch.setattr(study, "RESULT", tmp_path / "result.json")
    matrix = rows(4, 4, 16)
    study.write(prereg, study.PREREG, {first: (CONFIGS, [], matrix)}, tmp_path / "runs")
    # a fresh clone: no run folder of the first cell, the second one just finished
    result = study.write(prereg, study.PREREG, {second: (CONFIGS, [], rows(1, 2, 3))}, tmp_path / "runs")
    assert list(result["cells"]) == [first, second] and not result["complete"]
    assert result["cells"][first]["accuracy"] == {"base": 0.2, "same": 0.2, "better": 0.8}
    assert result["cells"][first]["checkout"] == result["cells"][second]["checkout"]
    # a result written under another pre-registration is not carried over
    old = study.json.loads(study.RESULT.read_text())
    study.RESULT.write_text(study.json.dumps({**old, "prereg": {**old["prereg"], "sha256": "other"}}))
    result = study.write(prereg, study.PREREG, {second: (CONFIGS, [], rows(1, 2, 3))}, tmp_path / "runs")
    assert list(result["cells"]) == [second]
