"""The training-time budget and the evaluation points by training time, on hand-made step durations."""

from __future__ import annotations

import pytest

from tooluse_agents.train.grpo.config import load_config
from tooluse_agents.train.grpo.schedule import budget_spent, crosses_eval_point, simulate


def test_the_budget_is_spent_once_training_time_reaches_it():
    assert not budget_spent(199.9, 200)
    assert budget_spent(200.0, 200)  # reaching it is enough
    assert budget_spent(250.0, 200)
    assert not budget_spent(1e9, None)  # no budget


def test_an_evaluation_point_is_the_first_boundary_at_or_after_a_multiple():
    assert crosses_eval_point(90, 100, 100)  # exactly at the multiple
    assert crosses_eval_point(90, 130, 100)  # past it
    assert not crosses_eval_point(100, 190, 100)  # 100 was taken at the previous boundary
    assert crosses_eval_point(190, 310, 100)  # 200 and 300 in one step: one evaluation
    assert not crosses_eval_point(0, 99.99, 100)
    assert not crosses_eval_point(50, 50, 100)
    assert not crosses_eval_point(0, 500, None)


def test_a_run_stops_at_the_step_that_reaches_the_budget_and_evaluates_there():
    # steps of 40, 70, 100, ... s; budget 200 s; evaluate every 100 s of training time.
    # boundaries 40, 110, 210: 110 is the first past 100, 210 the first past 200, and the budget is
    # spent there (210 >= 200), so the run ends after three steps, 10 s over its budget.
    boundaries, evals = simulate([40, 70, 100, 30, 50], budget_s=200, every_s=100)
    assert boundaries == [40, 110, 210]
    assert evals == [0, 110, 210]


def test_evaluations_without_a_budget_and_the_end_point():
    # 60 s steps, every 100 s: 120 is past 100, 240 past 200; the run ends at 240 (already evaluated)
    assert simulate([60, 60, 60, 60], budget_s=None, every_s=100) == ([60, 120, 180, 240], [0, 120, 240])
    # ... ending at 180, which is no multiple's first boundary: the end is evaluated anyway
    assert simulate([60, 60, 60], budget_s=None, every_s=100) == ([60, 120, 180], [0, 120, 180])
    # the budget reached exactly at a boundary: 100 + 100 = 200 >= 200, two steps
    assert simulate([100, 100, 100], budget_s=200, every_s=None) == ([100, 200], [0, 200])
    # one step longer than the budget crosses 50, 100 and 150 at once: one evaluation, then the end
    assert simulate([150, 30], budget_s=150, every_s=50) == ([150], [0, 150])


def test_config_keys():
    config = load_config(None, ["budget_s=2400", "eval.every_train_s=300"])
    assert config.budget_s == 2400.0 and isinstance(config.budget_s, float)
    assert config.eval.every_train_s == 300.0 and config.eval.every_steps is None
    defaults = load_config(None)
    assert defaults.budget_s is None and defaults.eval.every_train_s is None
    with pytest.raises(ValueError, match="budget_s"):
        load_config(None, ["budget_s=0"])
    with pytest.raises(ValueError, match="every_train_s"):
        load_config(None, ["eval.every_train_s=-5"])
