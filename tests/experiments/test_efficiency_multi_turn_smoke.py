"""The v2 efficiency study end to end in its --short setting: real trainer processes, then the report.

It trains the tiny random model with the in-process hf engine (three trainer processes: under a
minute on 2 idle cores, minutes when they are busy), so it checks the pipeline, not learning; the
documented smoke run (SmolLM2-135M, vLLM rollouts, a 45 s budget per arm) is the same code with
other settings. The harness's logic is tested fast, with a fake trainer, in `test_efficiency_multi_turn.py`.
It reads the test copy of the pre-registration (`prereg_v2.yaml`), whose arms use the
selective-rollout knobs (``filter.kind``, ``rollout.screen``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from experiments.efficiency_multi_turn import study as v2
from experiments.framework import start_eval

FIXTURE = Path(__file__).with_name("prereg_v2.yaml")
ARMS = ("vanilla", "paper", "selective")


def _check_study(out: Path) -> dict:
    results = {arm: json.loads((out / "results" / f"seed0_{arm}.json").read_text()) for arm in ARMS}
    first = results["vanilla"]
    assert first["start_eval"]["source"] == "run" and first["evaluations"][0]["step"] == 0
    for arm in ("paper", "selective"):
        r = results[arm]
        # the held-out evaluation at step 0 ran once; the later arms carry it
        assert r["start_eval"]["source"] == "shared" and r["start_eval"]["from"] == "seed0_vanilla"
        assert r["config"]["eval"]["at_start"] is False
        assert r["evaluations"][0] == {**first["evaluations"][0], "eval_s": 0.0, "shared_from": "seed0_vanilla"}
    for arm, r in results.items():
        assert r["curve"][0]["step"] == 0 and r["curve"][-1]["step"] == r["totals"]["steps"] >= 1
        assert len(r["heldout_prompts"]) == 3 and r["runtime"]["machine"] == r["machine"]
        assert r["totals"]["train_s"] >= r["budget_s"] and r["per_step"]["generated_tokens"][0] > 0
        assert r["missing_metrics"] == [], arm
        assert r["stats"]["final"] == r["curve"][-1]["reward"]
    assert results["selective"]["config"]["rollout"]["screen"] == {"members": 4}
    assert results["selective"]["config"]["filter"]["kind"] == "zero_variance"
    assert v2.main(["report", "--short", "--prereg", str(FIXTURE), "--out", str(out)]) == 0
    report = json.loads((out / "grpo_efficiency_v2.json").read_text())
    assert report["seeds"]["complete"] == [0] and report["prereg"]["path"] == "tests/experiments/prereg_v2.yaml"
    for arm in ("paper", "selective"):
        entry = report["arms"][arm]
        assert {"per_seed", "speedup_T50", "speedup_T75", "no_loss", "projection"} <= set(entry)
        assert report["verdicts"]["speedup"][arm]["status"] in ("met", "not met", "not yet decidable")
    assert (out / "grpo_efficiency_v2.md").is_file() and (out / "grpo-efficiency-v2.png").stat().st_size > 0
    return report


@pytest.fixture
def fixed_code_hash(monkeypatch):
    """Other sessions may edit the checkout's code while this runs; the start-eval key would then change."""
    monkeypatch.setattr(start_eval, "code_sha256", lambda: "fixed")


def test_short_study_with_the_tiny_model(tmp_path, fixed_code_hash):
    out = tmp_path / "study"
    argv = ["run", "--short", "--prereg", str(FIXTURE), "--out", str(out), "--start-model", "tiny-random"]
    argv += ["--budget-s", "2", "--eval-every-s", "1"]
    argv += ["--set", "rollout.engine=hf", "policy.gradient_checkpointing=false", "rollout.num_envs=16"]
    argv += ["rollout.max_tokens=8"]  # after the smoke settings: it wins over their 48
    assert v2.main(argv) == 0
    _check_study(out)
