"""The statistics of evaluations, sweeps and the pre-registered studies: one module, pure functions.

- Paired outcomes: `paired` (the same prompts scored twice, 0/1: gained, lost, the paired
  difference and its SE, the exact two-sided McNemar p, `mcnemar_exact_p`), `paired_gain` and
  `binomial_se` (the first efficiency study's), `paired_difference` (a sweep's change against its
  base over (task, seed) pairs, with a seeded percentile bootstrap over tasks).
- Seeds: `seed_spread` (max - min and sample std of a score over seeds), `spread` (mean, std and a
  t interval; from `tooluse_agents.runs.results`, which stays standard-library only), and
  `spread_and_std` with `bootstrap` and `interval` (a task x seed matrix resampled by task, numpy).
- Time to accuracy: `time_to_target` (the first crossing of a target, linearly interpolated; a
  curve that never reaches it is *censored*: a bound, never an imputed time), `auc`, `speedup`,
  `geometric_mean`, `faster_in_every_seed`, `no_loss` and the GPU-scale projection `relative_cost`.

Every rule the studies use is their pre-registered one (``benchmarks/preregistered/*.yaml``).
numpy is the only dependency beyond the standard library; no torch.
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

import numpy as np

from tooluse_agents.runs.results import spread

__all__ = ["spread"]  # re-exported: the one seed spread with a t interval (runs/ stays stdlib-only)

EXACT, AT_LEAST, AT_MOST, UNKNOWN = "exact", "at_least", "at_most", "unknown"
"""How a `Bounded` value relates to the quantity it stands for."""

TOLERANCE = 1e-9
"""A reward this close below a target reaches it (54/144 is 0.375 up to rounding)."""

Point = tuple[float, float]
"""(x, y): training seconds (or steps) and held-out reward."""


# --- paired outcomes ---------------------------------------------------------------------------


def binom_cdf_half(k: int, n: int) -> float:
    """P(X <= k) for X ~ Binomial(n, 1/2), exactly (integer arithmetic, one rounding at the end)."""
    if k < 0:
        return 0.0
    if k >= n:
        return 1.0
    return sum(math.comb(n, i) for i in range(k + 1)) / 2**n


def mcnemar_exact_p(gained: int, lost: int) -> float:
    """Exact two-sided McNemar p from the discordant counts: ``min(1, 2 * BinomCDF(min(b, c); b + c, 1/2))``."""
    return min(1.0, 2 * binom_cdf_half(min(gained, lost), gained + lost))


@dataclass(frozen=True)
class Paired:
    """Two evaluations of the same prompts (``before`` -> ``after``), each prompt right (1) or wrong (0).

    Attributes:
        n: Prompts in both evaluations.
        gained: b, prompts wrong before and right after.
        lost: c, prompts right before and wrong after.
        delta: (b - c) / n, the paired difference of the two mean rewards.
        se: sqrt(b + c - (b - c)^2 / n) / n, its paired standard error.
        p: The exact two-sided McNemar p.
    """

    n: int
    gained: int
    lost: int
    delta: float
    se: float
    p: float

    def to_dict(self) -> dict[str, Any]:
        return {"n": self.n, "gained": self.gained, "lost": self.lost, "delta": self.delta, "se": self.se, "p": self.p}


def _binary(value: float, prompt_id: str) -> int:
    if value not in (0.0, 1.0):
        raise ValueError(f"prompt {prompt_id!r} has reward {value}: McNemar needs 0/1 outcomes (greedy, one sample)")
    return int(value)


def paired(before: Mapping[str, float], after: Mapping[str, float]) -> Paired:
    """The paired comparison over the prompts both evaluations scored (the others are left out)."""
    common = sorted(set(before) & set(after))
    if not common:
        raise ValueError("the two evaluations share no prompt")
    gained = lost = 0
    for pid in common:
        a, b = _binary(before[pid], pid), _binary(after[pid], pid)
        gained += b > a
        lost += a > b
    n = len(common)
    se = math.sqrt(max(0.0, gained + lost - (gained - lost) ** 2 / n)) / n
    return Paired(n, gained, lost, (gained - lost) / n, se, mcnemar_exact_p(gained, lost))


# --- crossing times and area -------------------------------------------------------------------


@dataclass(frozen=True)
class Crossing:
    """When a curve first reaches a target.

    Attributes:
        time: The interpolated crossing time, or None when the curve never reaches the target.
        censored_at: For a curve that never reaches it: a time before which it surely did not
            (the budget, or the last evaluation when the run ended earlier), so the true time is
            above it. None when `time` is known.
    """

    time: float | None
    censored_at: float | None = None

    @property
    def censored(self) -> bool:
        return self.time is None

    def label(self) -> str:
        return f"{self.time:.0f}" if self.time is not None else f">{self.censored_at:.0f}"

    def to_dict(self) -> dict[str, Any]:
        return {"time": self.time, "censored_at": self.censored_at}


def time_to_target(curve: Sequence[Point], target: float, budget: float | None = None) -> Crossing:
    """The first crossing of `target` by `curve` (points in order of time), linearly interpolated.

    With k the first evaluation at or above the target: ``t* = t[k-1] + (T - A[k-1]) (t[k] - t[k-1])
    / (A[k] - A[k-1])``. A curve whose first point already reaches it crosses at that point's time (0
    for a start evaluation). A curve that never reaches it is censored at ``min(budget, last time)``:
    the run did not reach the target within its budget (or within the time it ran, if it stopped
    earlier). A crossing is reported wherever it falls on the recorded curve, also past the budget
    by the last step's overshoot (the run's final evaluation is at the first step boundary past it).
    """
    if not curve:
        raise ValueError("an empty curve")
    t0, a0 = curve[0]
    if a0 >= target - TOLERANCE:
        return Crossing(float(t0))
    for (t_prev, a_prev), (t, a) in pairwise(curve):
        if a >= target - TOLERANCE:  # a_prev is below the target, so a > a_prev
            return Crossing(min(float(t), t_prev + (target - a_prev) * (t - t_prev) / (a - a_prev)))
    last = float(curve[-1][0])
    return Crossing(None, last if budget is None else min(float(budget), last))


def auc(curve: Sequence[Point], budget: float) -> float:
    """Area under the held-out curve over [0, budget] (trapezoids), divided by the budget.

    The curve is held at its first value before its first point, cut at the budget (linear
    interpolation) when it runs past it, and held flat after its last point when that comes earlier.
    """
    if not curve or budget <= 0:
        raise ValueError("auc needs a curve and a positive budget")
    points = [(0.0, curve[0][1])] if curve[0][0] > 0 else []
    for t, a in curve:
        if t >= budget:
            if points and points[-1][0] < budget:
                points.append((budget, interpolate(curve, budget)))
            break
        points.append((float(t), float(a)))
    if points[-1][0] < budget:
        points.append((budget, points[-1][1]))
    area = sum((t1 - t0) * (a0 + a1) / 2 for (t0, a0), (t1, a1) in pairwise(points))
    return area / budget


def interpolate(points: Sequence[Point], x: float) -> float:
    """Y at `x` on the piecewise-linear curve through `points` (held flat outside them)."""
    if x <= points[0][0]:
        return float(points[0][1])
    for (x0, y0), (x1, y1) in pairwise(points):
        if x <= x1:
            return float(y0 + (y1 - y0) * (x - x0) / (x1 - x0)) if x1 > x0 else float(y1)
    return float(points[-1][1])


# --- speed-ups ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Bounded:
    """A ratio that may be known only as a bound (a censored crossing on one side).

    Attributes:
        value: The ratio, or the bound; None when nothing is known.
        kind: ``exact``, ``at_least`` (the ratio is above `value`), ``at_most`` (below it) or ``unknown``.
    """

    value: float | None
    kind: str

    def label(self, unit: str = "x") -> str:
        if self.value is None:
            return "n/a"
        sign = {EXACT: "", AT_LEAST: ">= ", AT_MOST: "<= "}[self.kind]
        return f"{sign}{self.value:.2f}{unit}"

    def to_dict(self) -> dict[str, Any]:
        return {"value": self.value, "kind": self.kind, "label": self.label()}


def _ratio(num: float, den: float) -> float:
    if den == 0:
        return math.inf if num > 0 else math.nan
    return num / den


def bounded_ratio(num: float, num_lower: bool, den: float, den_lower: bool) -> Bounded:
    """Num / den where either may be only a lower bound of the true value (a censored quantity).

    A lower bound in the numerator makes the ratio a lower bound (``at_least``), one in the
    denominator an upper bound (``at_most``); both: nothing is known.
    """
    if num_lower and den_lower:
        return Bounded(None, UNKNOWN)
    value = _ratio(num, den)
    if math.isnan(value):
        return Bounded(None, UNKNOWN)
    return Bounded(value, AT_LEAST if num_lower else AT_MOST if den_lower else EXACT)


def _time(c: Crossing) -> float:
    return c.time if c.time is not None else float(c.censored_at or 0.0)


def speedup(vanilla: Crossing, arm: Crossing) -> Bounded:
    """t_vanilla / t_arm; vanilla censored: ``>= c_vanilla / t_arm``; the arm censored: ``<= t_vanilla / c_arm``.

    Both at 0 (the start already reaches the target) or both censored: unknown.
    """
    return bounded_ratio(_time(vanilla), vanilla.censored, _time(arm), arm.censored)


def geometric_mean(ratios: Sequence[Bounded]) -> Bounded:
    """exp(mean log) of the seeds' ratios: exact when all are; a bound when the others bound the same way.

    Exact values with lower bounds give a lower bound, with upper bounds an upper bound; bounds of
    both directions, or an unknown seed, give unknown.
    """
    if not ratios or any(r.kind == UNKNOWN or r.value is None for r in ratios):
        return Bounded(None, UNKNOWN)
    kinds = {r.kind for r in ratios} - {EXACT}
    if len(kinds) > 1:
        return Bounded(None, UNKNOWN)
    values = [float(r.value) for r in ratios if r.value is not None]
    if any(v == 0 for v in values) and any(math.isinf(v) for v in values):
        return Bounded(None, UNKNOWN)
    if any(v == 0 for v in values):
        mean = 0.0
    elif any(math.isinf(v) for v in values):
        mean = math.inf
    else:
        mean = math.exp(sum(math.log(v) for v in values) / len(values))
    return Bounded(mean, kinds.pop() if kinds else EXACT)


def faster(ratio: Bounded) -> bool | None:
    """Whether the arm was faster (ratio > 1): True, False, or None when its bound cannot tell."""
    if ratio.value is None:
        return None
    if ratio.kind == EXACT:
        return ratio.value > 1
    if ratio.kind == AT_LEAST:
        return True if ratio.value >= 1 else None
    return False if ratio.value <= 1 else None


def faster_in_every_seed(ratios: Sequence[Bounded]) -> bool | None:
    """True when faster in every seed, False when slower or equal in some seed, else None (a bound cannot tell)."""
    verdicts = [faster(r) for r in ratios]
    if False in verdicts:
        return False
    if verdicts and all(verdicts):
        return True
    return None


# --- no loss -----------------------------------------------------------------------------------


def no_loss(per_seed: Sequence[Paired], alpha: float = 0.05) -> dict[str, Any]:
    """The no-loss rule on each seed's (vanilla final -> arm final) paired comparison.

    Per seed the arm is *significantly worse* when it lost more prompts than it gained and the
    McNemar p is below `alpha`. The rule holds when no seed is significantly worse and the mean over
    seeds of the paired difference is not below minus the mean of the per-seed paired SEs.
    """
    if not per_seed:
        raise ValueError("no seeds")
    worse = [s.lost > s.gained and s.p < alpha for s in per_seed]
    mean_delta = sum(s.delta for s in per_seed) / len(per_seed)
    mean_se = sum(s.se for s in per_seed) / len(per_seed)
    margin_ok = mean_delta >= -mean_se - TOLERANCE
    return {
        "per_seed": [{**s.to_dict(), "significantly_worse": w} for s, w in zip(per_seed, worse, strict=True)],
        "none_significantly_worse": not any(worse),
        "mean_delta": mean_delta,
        "mean_paired_se": mean_se,
        "mean_within_one_se": margin_ok,
        "met": not any(worse) and margin_ok,
    }


# --- the GPU-scale projection ------------------------------------------------------------------


@dataclass(frozen=True)
class Counts:
    """Cumulative counts of a run at the end of each training step.

    Attributes:
        train_s: Training seconds at each step's end (rising).
        generated: Generated (rollout) tokens so far.
        update: Update tokens computed so far (forward + backward).
    """

    train_s: tuple[float, ...]
    generated: tuple[float, ...]
    update: tuple[float, ...]

    def at(self, t: float) -> tuple[float, float]:
        """(generated, update) at training time `t`, linear between step ends from (0, 0) at time 0."""
        xs = (0.0, *self.train_s)
        gen = interpolate(list(zip(xs, (0.0, *self.generated), strict=True)), t)
        upd = interpolate(list(zip(xs, (0.0, *self.update), strict=True)), t)
        return gen, upd


def relative_cost(arm: Counts, vanilla: Counts, t_arm: Crossing, t_vanilla: Crossing, r: float) -> Bounded:
    """PROJECTION: (G_arm + r U_arm) / (G_van + r U_van), each at its own crossing of the target.

    Assumptions (a projection, not a measurement): a step's cost is proportional to its tokens, a
    generated token costing 1 and an update token (completion token through forward and backward)
    costing r; prompt tokens (prefill, the update's detached prompt pass), weight sync, evaluation
    and fixed per-step overheads cost nothing; the same number of tokens would be needed to reach
    the target at that scale as here. Counts are interpolated linearly in training time between step
    ends. A censored arm is counted at its censoring time (its cost is then a lower bound, the ratio
    ``at_least``); a censored vanilla the same way (``at_most``). Below 1: cheaper than vanilla.
    """
    g_a, u_a = arm.at(_time(t_arm))
    g_v, u_v = vanilla.at(_time(t_vanilla))
    return bounded_ratio(g_a + r * u_a, t_arm.censored, g_v + r * u_v, t_vanilla.censored)


# --- binomial outcomes ----------------------------------------------------------------------------


def binomial_se(p: float, n: int) -> float:
    """Standard error of a mean of `n` 0/1 outcomes with mean `p`."""
    return math.sqrt(p * (1 - p) / n) if n > 0 else math.inf


def gain_standard_error(initial: float, final: float, episodes: int) -> float:
    """Standard error of the difference of two held-out rewards, each a mean over `episodes` 0/1 outcomes."""
    if episodes <= 0:
        return math.inf
    return math.sqrt((initial * (1 - initial) + final * (1 - final)) / episodes)


def paired_gain(start: Mapping[str, float], final: Mapping[str, float]) -> dict[str, Any]:
    """The gain of the same prompts evaluated twice (greedy): prompts gained and lost, and the paired SE.

    The paired standard error is that of the mean per-prompt difference (sample variance, n - 1), over
    the prompts in both evaluations.
    """
    common = sorted(set(start) & set(final))
    diffs = [final[k] - start[k] for k in common]
    n = len(diffs)
    mean = sum(diffs) / n if n else 0.0
    var = sum((d - mean) ** 2 for d in diffs) / (n - 1) if n > 1 else math.inf
    return {
        "prompts": n,
        "gained": sum(d > 0 for d in diffs),
        "lost": sum(d < 0 for d in diffs),
        "gain": mean,
        "paired_se": math.sqrt(var / n) if n > 1 else math.inf,
    }


# --- paired bootstrap over tasks (sweeps) ---------------------------------------------------------

BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 0


def paired_difference(
    base: Mapping[tuple[str, int], float],
    change: Mapping[tuple[str, int], float],
    *,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> dict[str, Any]:
    """The difference change - base over the (task, seed) pairs both played.

    Per task the mean over its shared seeds. Returns the mean difference over tasks, its paired
    standard error (sample std of the per-task differences / sqrt(tasks)), and a 95% percentile
    interval from `resamples` bootstrap draws of the tasks with replacement (seeded: the same
    inputs give the same interval).
    """
    shared = sorted(set(base) & set(change))
    by_task: dict[str, list[float]] = {}
    for key in shared:
        by_task.setdefault(key[0], []).append(change[key] - base[key])
    diffs = [statistics.fmean(v) for _, v in sorted(by_task.items())]
    n = len(diffs)
    if n == 0:
        return {"tasks": 0, "pairs": 0, "diff": None, "se": None, "ci95": None}
    mean = statistics.fmean(diffs)
    se = statistics.stdev(diffs) / math.sqrt(n) if n > 1 else None
    rng = random.Random(seed)
    means = sorted(statistics.fmean(rng.choices(diffs, k=n)) for _ in range(resamples))
    low, high = percentile(means, 0.025), percentile(means, 0.975)
    return {"tasks": n, "pairs": len(shared), "diff": mean, "se": se, "ci95": [low, high]}


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """The q-quantile of sorted values, linearly interpolated (numpy's default rule)."""
    position = q * (len(sorted_values) - 1)
    lower = math.floor(position)
    upper = min(lower + 1, len(sorted_values) - 1)
    return sorted_values[lower] + (sorted_values[upper] - sorted_values[lower]) * (position - lower)


# --- seed spread ------------------------------------------------------------------------------------


def seed_spread(per_seed: Mapping[Any, float]) -> dict[str, Any]:
    """Max - min and sample std over seeds of the overall score (std None with one seed)."""
    values = list(per_seed.values())
    return {
        "seeds": len(values),
        "max_minus_min": max(values) - min(values) if values else None,
        "std": statistics.stdev(values) if len(values) > 1 else None,
    }


def spread_and_std(matrix: np.ndarray) -> tuple[float, float]:
    """Max - min and population std of the per-seed accuracies (the columns of a task x seed matrix)."""
    acc = matrix.mean(axis=0)
    return float(acc.max() - acc.min()), float(acc.std())


def bootstrap(
    matrices: Sequence[np.ndarray], statistic: Callable[..., float], replicates: int, rng_seed: int
) -> list[float]:
    """The statistic on `replicates` task resamples (each matrix's rows resampled independently)."""
    rng = np.random.default_rng(rng_seed)
    values = []
    for _ in range(replicates):
        resampled = [m[rng.integers(0, len(m), len(m))] for m in matrices]
        values.append(float(statistic(*resampled)))
    return values


def interval(values: Sequence[float]) -> list[float]:
    """The 95% percentile interval."""
    return [float(np.percentile(values, 2.5)), float(np.percentile(values, 97.5))]
