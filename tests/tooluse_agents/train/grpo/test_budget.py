"""The trainer on the tiny model under a training-time budget and time-based evaluation points."""

from __future__ import annotations

import pytest

from tests.tooluse_agents.train.grpo.test_trainer import _read, tiny_trainer
from tooluse_agents.runs.runlog import EVAL_KEY


def test_the_budget_stops_training_and_counts_across_a_resume(tiny_model, tmp_path):
    run = tmp_path / "run"
    # a budget any step exceeds: the first step is the last; epochs alone would allow 6 steps
    trainer = tiny_trainer(tiny_model, run, "epochs=3", "budget_s=1e-6")
    assert trainer.train()["stopped_by"] == "budget_s"
    (first,) = _read(run / "metrics.jsonl")
    spent = first["time/rollout_s"] + first["time/update_s"] + first["time/sync_s"]
    assert first["time/train_s"] == pytest.approx(spent) and spent > 1e-6
    assert EVAL_KEY in first  # the last step is evaluated, on its own metrics line
    evals = _read(run / "eval.jsonl")
    assert [(e["step"], e["time/train_s"]) for e in evals] == [(0, 0.0), (1, first["time/train_s"])]
    assert evals[1][EVAL_KEY] == first[EVAL_KEY]

    # resumed with a budget a hair above the time already spent: exactly one more step, and its
    # training time continues from the checkpoint's (not from zero)
    budget = first["time/train_s"] + 1e-6
    resumed = tiny_trainer(tiny_model, run, "epochs=3", f"budget_s={budget!r}")
    assert resumed.step == 1 and resumed.elapsed == first["time/train_s"]
    assert resumed.train()["stopped_by"] == "budget_s"
    metrics = _read(run / "metrics.jsonl")
    assert [m["step"] for m in metrics] == [1, 2]
    second = metrics[1]
    own = second["time/rollout_s"] + second["time/update_s"] + second["time/sync_s"]
    assert second["time/train_s"] == pytest.approx(first["time/train_s"] + own)
    assert second["time/train_s"] >= budget
    assert [e["step"] for e in _read(run / "eval.jsonl")] == [0, 1, 2]

    # started again with the spent budget: no step, no evaluation
    again = tiny_trainer(tiny_model, run, "epochs=3", f"budget_s={budget!r}")
    assert again.train() == {"stopped_by": "budget_s"}
    assert len(_read(run / "metrics.jsonl")) == 2 and len(_read(run / "eval.jsonl")) == 3


def test_evaluations_at_points_of_training_time(tiny_model, tmp_path):
    # every step is longer than 1 microsecond, so each crosses a multiple: evaluations after steps 1, 2, 3
    often = tiny_trainer(tiny_model, tmp_path / "often", "max_steps=3", "eval.every_train_s=1e-6")
    assert often.train()["stopped_by"] == "max_steps"
    metrics = _read(tmp_path / "often" / "metrics.jsonl")
    evals = _read(tmp_path / "often" / "eval.jsonl")
    assert [e["step"] for e in evals] == [0, 1, 2, 3]
    assert [e["time/train_s"] for e in evals[1:]] == [m["time/train_s"] for m in metrics]
    assert all(EVAL_KEY in m for m in metrics)
    # a period no step reaches: only the start and the end
    rare = tiny_trainer(tiny_model, tmp_path / "rare", "max_steps=3", "eval.every_train_s=1e9")
    rare.train()
    assert [e["step"] for e in _read(tmp_path / "rare" / "eval.jsonl")] == [0, 3]
    assert [EVAL_KEY in m for m in _read(tmp_path / "rare" / "metrics.jsonl")] == [False, False, True]


def test_a_run_killed_before_its_first_checkpoint_starts_over_without_duplicate_lines(tiny_model, tmp_path):
    """The first step's lines (and the evaluation before it) reached the files, its checkpoint did not: the
    resumed run starts over and the files read as one uninterrupted run."""
    import shutil

    run = tmp_path / "run"
    tiny_trainer(tiny_model, run, "max_steps=1").train()
    straight = {name: _read(run / name) for name in ("metrics.jsonl", "eval.jsonl")}
    shutil.rmtree(run / "checkpoints")  # the kill landed before the checkpoint was published
    resumed = tiny_trainer(tiny_model, run, "max_steps=1")
    assert resumed.step == 0
    resumed.train()
    assert [m["step"] for m in _read(run / "metrics.jsonl")] == [m["step"] for m in straight["metrics.jsonl"]] == [1]
    assert [e["step"] for e in _read(run / "eval.jsonl")] == [e["step"] for e in straight["eval.jsonl"]] == [0, 1]
    assert {e["train"]["step"] for e in _read(run / "episodes.jsonl")} == {1}


def test_a_resume_drops_lines_written_after_its_checkpoint(tiny_model, tmp_path):
    """Step 2's lines reached the files, its checkpoint did not (save_every=2 is past the run's end): one line each."""
    run = tmp_path / "run"
    tiny_trainer(tiny_model, run, "max_steps=2", "save_every=1").train()
    import shutil

    shutil.rmtree(run / "checkpoints" / "step_000002")
    resumed = tiny_trainer(tiny_model, run, "max_steps=2", "save_every=1")
    assert resumed.step == 1
    resumed.train()
    assert [m["step"] for m in _read(run / "metrics.jsonl")] == [1, 2]
    assert [e["step"] for e in _read(run / "eval.jsonl")] == [0, 2]
