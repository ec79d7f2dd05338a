"""GRESO's rule (``filter.kind: zero_variance``) with hand-computed numbers: keep probabilities, the floor,
the adaptation of both rates, seeded decisions, re-probing, and the state a checkpoint keeps."""

from __future__ import annotations

import itertools
import json

import pytest

from tooluse_agents.train.grpo.advantages import ALL_CORRECT, ALL_WRONG, MIXED, group_outcome
from tooluse_agents.train.grpo.config import load_config
from tooluse_agents.train.grpo.filtering import FilterConfig, PromptFilter, make_filter
from tooluse_agents.train.grpo.greso import ZeroVarianceConfig, ZeroVarianceFilter, adapt, draw, keep_probability

CORRECT, WRONG, MIXED_GROUP = [1.0] * 4, [0.0] * 4, [1.0, 0.0, 0.0, 1.0]


def _filter(seed: int = 0, **settings) -> ZeroVarianceFilter:
    return ZeroVarianceFilter(ZeroVarianceConfig(**settings), seed=seed)


def test_defaults_are_gresos_code():
    c = ZeroVarianceConfig()
    assert (c.p_correct, c.p_wrong, c.floor_correct, c.floor_wrong) == (0.5, 0.5, 0.01, 0.01)
    assert (c.target, c.rate, c.p_min, c.p_max) == (0.25, 0.01, 0.05, 0.95)
    assert c.target_correct == pytest.approx(0.25 / 3) and c.target_wrong == pytest.approx(0.25 * 2 / 3)
    assert FilterConfig().kind == "all_correct"  # the paper's rule stays the default


def test_group_outcomes():
    assert [group_outcome(g) for g in (CORRECT, WRONG, MIXED_GROUP)] == [ALL_CORRECT, ALL_WRONG, MIXED]
    assert group_outcome([0.5, 0.5]) == ALL_WRONG  # zero variance below the top reward
    assert group_outcome([2.0, 1.0], max_reward=1.0) == ALL_CORRECT
    with pytest.raises(ValueError):
        group_outcome([])


def test_keep_probability_by_hand():
    assert keep_probability(0, 0.5, 0.01) == 1.0  # no run: never skipped
    assert keep_probability(1, 0.5, 0.01) == 0.5  # skipped with probability 0.5
    assert keep_probability(3, 0.5, 0.01) == 0.125  # 0.875
    assert keep_probability(6, 0.5, 0.01) == 0.015625
    assert keep_probability(7, 0.5, 0.01) == 0.01  # 0.5^7 = 0.0078125 is under the floor
    assert keep_probability(2, 0.9, 0.01) == pytest.approx(0.81)
    assert keep_probability(4, 0.5, 0.1) == 0.1  # 0.0625 under a floor of 0.1


def test_adapt_by_hand():
    c = ZeroVarianceConfig()
    assert adapt(0.5, 0.2, c.target_wrong, c) == pytest.approx(0.49)  # 0.2 >= 1/6: too many seen, skip more
    assert adapt(0.5, 0.1, c.target_wrong, c) == pytest.approx(0.51)  # 0.1 < 1/6: skip less
    assert adapt(0.5, 0.1, c.target_correct, c) == pytest.approx(0.49)  # 0.1 >= 1/12
    assert adapt(0.5, 0.25 / 3, 0.25 / 3, c) == pytest.approx(0.49)  # at the target: down (GRESO's >=)
    assert adapt(0.055, 1.0, 0.1, c) == 0.05 and adapt(0.05, 1.0, 0.1, c) == 0.05  # p_min
    assert adapt(0.945, 0.0, 0.1, c) == 0.95 and adapt(0.95, 0.0, 0.1, c) == 0.95  # p_max


def test_both_rates_adapt_once_a_step_from_the_second_epoch():
    f = _filter()
    quarter = [ALL_CORRECT, ALL_WRONG, MIXED, MIXED]  # shares 1/4 and 1/4
    f.end_step(quarter, epoch=1)
    assert (f.p_correct, f.p_wrong) == (0.5, 0.5)  # the first epoch never adapts
    f.end_step(quarter, epoch=2)  # 1/4 >= 1/12 and 1/4 >= 1/6: both down
    assert (f.p_correct, f.p_wrong) == pytest.approx((0.49, 0.49))
    f.end_step([MIXED] * 4, epoch=2)  # none seen: both up
    assert (f.p_correct, f.p_wrong) == pytest.approx((0.50, 0.50))
    f.end_step([ALL_WRONG] + [MIXED] * 6, epoch=3)  # wrong 1/7 = 0.143 < 1/6: up; correct 0: up
    assert (f.p_correct, f.p_wrong) == pytest.approx((0.51, 0.51))
    f.end_step([ALL_CORRECT] + [MIXED] * 9, epoch=3)  # correct 0.1 >= 1/12: down; wrong 0: up
    assert (f.p_correct, f.p_wrong) == pytest.approx((0.50, 0.52))
    assert f.rates() == {"filter/p_correct": f.p_correct, "filter/p_wrong": f.p_wrong}
    bounded = _filter(p_correct=0.06, p_wrong=0.94)
    for _ in range(3):
        bounded.end_step([ALL_CORRECT] * 2, epoch=2)  # correct share 1: down; wrong share 0: up
    assert (bounded.p_correct, bounded.p_wrong) == pytest.approx((0.05, 0.95))


def test_skips_follow_the_seeded_draw():
    f = _filter(seed=7)
    f.observe("a", CORRECT)  # an all-correct run of 1: kept with 0.5
    f.observe("b", WRONG)
    f.observe("b", WRONG)  # an all-wrong run of 2: kept with 0.25
    f.observe("c", MIXED_GROUP)  # no run
    assert [f.keep_probability(p) for p in "abc"] == [0.5, 0.25, 1.0]
    assert [f.run_kind(p) for p in "abc"] == [ALL_CORRECT, ALL_WRONG, None]
    for epoch in range(1, 40):
        assert f.admit("a", epoch) == (draw(7, epoch, "a") >= 0.5)
        assert f.admit("b", epoch) == (draw(7, epoch, "b") >= 0.75)
        assert f.admit("c", epoch) and f.admit("never seen", epoch)
    assert (f.run("a"), f.run("b")) == (1, 2)  # deciding observes nothing: the run is frozen
    many = _filter()
    for i in range(2000):
        many.observe(f"p{i}", WRONG)
    skipped = sum(not many.admit(f"p{i}", 2) for i in range(2000))
    assert 900 < skipped < 1100  # about half, as P(skip) = 1 - 0.5
    other = _filter(seed=1)
    other.observe("a", CORRECT)
    assert [other.admit("a", e) for e in range(1, 40)] != [f.admit("a", e) for e in range(1, 40)]
    # pinned: a change of the draw would change every run's decisions
    assert draw(0, 1, "a") == pytest.approx(0.9434, abs=1e-4) and draw(0, 2, "b") == pytest.approx(0.0700, abs=1e-4)


def test_the_floor_keeps_a_long_run_in_play():
    f = _filter(floor_wrong=0.1)
    for _ in range(10):
        f.observe("x", WRONG)
        f.observe("y", CORRECT)
    assert f.keep_probability("x") == 0.1  # 0.5^10 ~ 0.001, floored at 0.1
    assert f.keep_probability("y") == 0.01  # the all-correct floor stays GRESO's
    probes = [e for e in range(1, 201) if f.admit("x", e)]
    assert probes == [e for e in range(1, 201) if draw(0, e, "x") >= 0.9]
    assert 10 <= len(probes) <= 30  # about 1 epoch in 10


def test_a_reprobe_extends_or_ends_the_run():
    f = _filter()
    f.observe("a", CORRECT)
    first = next(e for e in itertools.count(1) if f.admit("a", e))  # the epoch it is rolled out again
    assert not any(f.admit("a", e) for e in range(1, first))
    f.observe("a", CORRECT)  # the probe is all-correct again: a run of 2, kept with 0.25
    assert f.run("a") == 2 and f.keep_probability("a") == 0.25
    f.observe("a", MIXED_GROUP)  # anything else ends it: rolled out every epoch again
    assert f.run("a") == 0 and all(f.admit("a", e) for e in range(1, 50))
    f.observe("a", WRONG)  # a new run, of the other kind, with its own rate
    f.p_wrong = 0.3
    assert f.run_kind("a") == ALL_WRONG and f.keep_probability("a") == 0.3


def test_disabled_and_state_round_trip():
    off = ZeroVarianceFilter(ZeroVarianceConfig(), enabled=False)
    for _ in range(5):
        off.observe("a", WRONG)
    assert all(off.admit("a", e) for e in range(1, 30))
    f = _filter(seed=3)
    for pid, group in (("a", CORRECT), ("b", WRONG), ("c", MIXED_GROUP), ("b", WRONG)):
        f.observe(pid, group)
    f.end_step([ALL_CORRECT, ALL_WRONG], epoch=2)
    g = _filter(seed=3)
    g.load_state_dict(json.loads(json.dumps(f.state_dict())))
    assert g.state_dict() == f.state_dict() and (g.p_correct, g.p_wrong) == pytest.approx((0.49, 0.49))
    assert [g.admit(p, e) for p in "abc" for e in range(2, 20)] == [f.admit(p, e) for p in "abc" for e in range(2, 20)]


def test_config_selects_the_kind():
    config = load_config(None, ["filter.kind=zero_variance", "filter.zero_variance.floor_wrong=0.1", "seed=4"])
    built = make_filter(config.filter, config.seed)
    assert isinstance(built, ZeroVarianceFilter) and built.config.floor_wrong == 0.1 and built.seed == 4
    assert isinstance(make_filter(load_config(None, []).filter), PromptFilter)
    for bad in ("filter.kind=greso", "filter.zero_variance.p_min=0", "filter.zero_variance.floor_wrong=2"):
        with pytest.raises(ValueError):
            load_config(None, [bad])
