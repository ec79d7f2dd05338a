"""The statistics of evaluations and studies (`tooluse_agents.eval.stats`) on hand-computed numbers."""

from __future__ import annotations

import math

import pytest

from tooluse_agents.eval.stats import (
    AT_LEAST,
    AT_MOST,
    EXACT,
    UNKNOWN,
    Bounded,
    Counts,
    Crossing,
    auc,
    binom_cdf_half,
    faster_in_every_seed,
    geometric_mean,
    mcnemar_exact_p,
    no_loss,
    paired,
    relative_cost,
    speedup,
    time_to_target,
)


def outcomes(gained: int, lost: int, same_right: int, same_wrong: int) -> tuple[dict, dict]:
    """Two evaluations of gained + lost + same_right + same_wrong prompts with those discordant counts."""
    before, after, i = {}, {}, 0
    for count, b, a in ((gained, 0.0, 1.0), (lost, 1.0, 0.0), (same_right, 1.0, 1.0), (same_wrong, 0.0, 0.0)):
        for _ in range(count):
            before[f"p{i}"], after[f"p{i}"] = b, a
            i += 1
    return before, after


def test_exact_mcnemar():
    # BinomCDF(1; 18, 1/2) = (1 + 18) / 2^18 = 19 / 262144; two-sided: 38 / 262144 = 1.4496e-4
    assert binom_cdf_half(1, 18) == 19 / 262144
    assert mcnemar_exact_p(17, 1) == pytest.approx(1.44958e-4, rel=1e-5)
    assert mcnemar_exact_p(1, 17) == mcnemar_exact_p(17, 1)
    assert mcnemar_exact_p(3, 0) == 0.25  # 2 * 1/8
    assert mcnemar_exact_p(5, 1) == 0.21875  # 2 * (1 + 6) / 64
    assert mcnemar_exact_p(1, 1) == 1.0  # 2 * 3/4, capped at 1
    assert mcnemar_exact_p(0, 0) == 1.0


def test_paired_gain_the_research_notes_worked_example():
    # vanilla start -> final over 144 prompts: 17 gained, 1 lost (40 right in both, 86 wrong in both)
    before, after = outcomes(17, 1, 40, 86)
    before["only_before"] = 1.0  # a prompt in one evaluation only is left out
    p = paired(before, after)
    assert (p.n, p.gained, p.lost) == (144, 17, 1)
    assert p.delta == pytest.approx(16 / 144)
    # sqrt(18 - 16^2 / 144) / 144 = sqrt(16.222222) / 144 = 4.027682 / 144
    assert p.se == pytest.approx(0.0279700, abs=1e-7)
    assert p.p == pytest.approx(1.44958e-4, rel=1e-5)
    with pytest.raises(ValueError, match="0/1"):
        paired({"a": 0.5}, {"a": 1.0})
    with pytest.raises(ValueError, match="no prompt"):
        paired({"a": 0.0}, {"b": 1.0})


def test_time_to_target_interpolates_the_first_crossing():
    c = [(0, 0.30), (300, 0.35), (600, 0.40), (900, 0.38), (1200, 0.42)]
    # 0.375 between (300, 0.35) and (600, 0.40): 300 + 0.025 * 300 / 0.05 = 450
    assert time_to_target(c, 0.375).time == pytest.approx(450)
    # 0.361: 300 + 0.011 * 300 / 0.05 = 366
    assert time_to_target(c, 0.361).time == pytest.approx(366)
    assert time_to_target(c, 0.40).time == 600  # reached exactly at a point, and again later: the first counts
    assert time_to_target(c, 0.30) == Crossing(0.0)  # the start already reaches it
    assert time_to_target(c, 0.25).time == 0.0
    assert time_to_target([(0, 0.0), (100, 54 / 144)], 0.375).time == pytest.approx(100)  # rounding tolerated
    # never: censored at the budget, or at the last evaluation when the run stopped before it
    assert time_to_target(c, 0.45, budget=1150) == Crossing(None, 1150)
    assert time_to_target(c, 0.45, budget=1800) == Crossing(None, 1200)
    assert time_to_target(c, 0.45) == Crossing(None, 1200)
    assert time_to_target(c, 0.45, budget=1150).label() == ">1150"


def test_area_under_the_curve_over_the_budget():
    c = [(0, 0.2), (100, 0.4), (200, 0.4)]
    assert auc(c, 200) == pytest.approx((100 * 0.3 + 100 * 0.4) / 200)  # 0.35
    assert auc(c, 300) == pytest.approx(110 / 300)  # held flat at 0.4 from 200 to 300
    assert auc(c, 150) == pytest.approx(50 / 150)  # cut at the budget
    # cut between two points: 0.5 at 150, area 30 + 50 * 0.45 = 52.5
    assert auc([(0, 0.2), (100, 0.4), (200, 0.6)], 150) == pytest.approx(52.5 / 150)
    # a curve whose first evaluation comes after 0 is held at its first value before it
    assert auc([(50, 0.2), (100, 0.4)], 100) == pytest.approx((50 * 0.2 + 50 * 0.3) / 100)


def test_speedup_with_censoring():
    assert speedup(Crossing(944), Crossing(493)) == Bounded(pytest.approx(1.914807), EXACT)
    # vanilla never reached it within 1800 s, the arm at 600 s: at least 3x
    assert speedup(Crossing(None, 1800), Crossing(600)) == Bounded(3.0, AT_LEAST)
    assert speedup(Crossing(None, 1800), Crossing(600)).label() == ">= 3.00x"
    # the arm never reached it, vanilla at 900 s: at most 0.5x
    assert speedup(Crossing(900), Crossing(None, 1800)) == Bounded(0.5, AT_MOST)
    assert speedup(Crossing(None, 1800), Crossing(None, 1800)) == Bounded(None, UNKNOWN)
    assert speedup(Crossing(0.0), Crossing(0.0)) == Bounded(None, UNKNOWN)  # the start is at the target
    assert speedup(Crossing(300), Crossing(0.0)).value == math.inf


def test_geometric_mean_and_every_seed():
    assert geometric_mean([Bounded(2.0, EXACT), Bounded(8.0, EXACT)]) == Bounded(pytest.approx(4.0), EXACT)
    assert geometric_mean([Bounded(2.0, EXACT), Bounded(8.0, AT_LEAST)]) == Bounded(pytest.approx(4.0), AT_LEAST)
    assert geometric_mean([Bounded(2.0, AT_MOST), Bounded(0.5, EXACT)]) == Bounded(pytest.approx(1.0), AT_MOST)
    assert geometric_mean([Bounded(2.0, AT_LEAST), Bounded(0.5, AT_MOST)]).kind == UNKNOWN
    assert geometric_mean([Bounded(2.0, EXACT), Bounded(None, UNKNOWN)]).kind == UNKNOWN
    assert faster_in_every_seed([Bounded(2.0, EXACT), Bounded(1.5, EXACT)]) is True
    assert faster_in_every_seed([Bounded(2.0, EXACT), Bounded(0.9, EXACT)]) is False
    assert faster_in_every_seed([Bounded(2.0, EXACT), Bounded(1.0, EXACT)]) is False  # equal is not faster
    assert faster_in_every_seed([Bounded(2.0, EXACT), Bounded(1.2, AT_LEAST)]) is True  # above 1.2
    assert faster_in_every_seed([Bounded(2.0, EXACT), Bounded(0.8, AT_LEAST)]) is None  # above 0.8: cannot tell
    assert faster_in_every_seed([Bounded(2.0, EXACT), Bounded(0.9, AT_MOST)]) is False
    assert faster_in_every_seed([Bounded(1.2, AT_MOST)]) is None
    assert faster_in_every_seed([Bounded(None, UNKNOWN), Bounded(0.5, EXACT)]) is False
    assert faster_in_every_seed([]) is None


def test_no_loss_rule():
    # seed A: 5 gained, 10 lost: delta -5/144, se sqrt(15 - 25/144)/144 = 0.026740,
    # p = 2 (1 + 15 + 105 + 455 + 1365 + 3003) / 2^15 = 0.301758: not significantly worse
    a = paired(*outcomes(5, 10, 40, 89))
    assert a.se == pytest.approx(0.026740, abs=1e-6) and a.p == pytest.approx(0.301758, abs=1e-6)
    # seed B: 10 gained, 5 lost; the mean difference is 0, above minus one mean paired SE
    b = paired(*outcomes(10, 5, 40, 89))
    rule = no_loss([a, b])
    assert rule["met"] is True and rule["mean_delta"] == pytest.approx(0.0)
    assert rule["mean_paired_se"] == pytest.approx(0.026740, abs=1e-6)
    # a seed that lost 8 and gained none: p = 2 / 2^8 = 0.0078 < 0.05, significantly worse
    c = paired(*outcomes(0, 8, 40, 96))
    rule = no_loss([b, c])
    assert [s["significantly_worse"] for s in rule["per_seed"]] == [False, True]
    assert rule["none_significantly_worse"] is False and rule["met"] is False
    # no seed significantly worse, but the mean -5/144 = -0.034722 is below minus the mean SE
    # (0.026740 + sqrt(13 - 25/144)/144 = 0.024871) / 2 = 0.025806
    d = paired(*outcomes(4, 9, 40, 91))
    assert d.p == pytest.approx(2 * 1093 / 8192)
    rule = no_loss([a, d])
    assert rule["none_significantly_worse"] is True
    assert rule["mean_delta"] == pytest.approx(-5 / 144) and rule["mean_paired_se"] == pytest.approx(0.025806, abs=1e-6)
    assert rule["mean_within_one_se"] is False and rule["met"] is False


def test_projection_of_relative_cost():
    arm = Counts(train_s=(100, 200), generated=(1000, 2000), update=(400, 800))
    vanilla = Counts(train_s=(100, 200, 300), generated=(1000, 2000, 3000), update=(1000, 2000, 3000))
    assert arm.at(150) == (1500, 600) and arm.at(50) == (500, 200) and arm.at(900) == (2000, 800)
    # arm at 150 s: 1500 + r 600; vanilla at 250 s: 2500 + r 2500
    assert relative_cost(arm, vanilla, Crossing(150), Crossing(250), 1) == Bounded(pytest.approx(0.42), EXACT)
    assert relative_cost(arm, vanilla, Crossing(150), Crossing(250), 3) == Bounded(pytest.approx(0.33), EXACT)
    # vanilla censored at 300 s (6000 at r = 1): the arm's relative cost is at most 2100 / 6000
    censored = relative_cost(arm, vanilla, Crossing(150), Crossing(None, 300), 1)
    assert censored == Bounded(pytest.approx(0.35), AT_MOST)
    assert relative_cost(arm, vanilla, Crossing(None, 200), Crossing(250), 1).kind == AT_LEAST
