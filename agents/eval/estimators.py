"""Named estimators of a run's score: pass@1, pass@k, pass^k and avg@k, with intervals over tasks.

Each seed of a run is one sample of each task: a task played under n seeds, c of them solved
(reward 1), gives per task

- ``pass@1``: the mean reward over the seeds; per category and overall exactly the number
  `tooluse eval run` prints as the mean (the mean over seeds of each seed's accuracy), the default;
- ``pass@k``: the chance that at least one of k samples drawn from the n solves it, unbiased
  (Chen et al. 2021): ``1 - C(n-c, k) / C(n, k)``;
- ``pass^k``: the chance that all k samples solve it (tau-bench): ``C(c, k) / C(n, k)``;
- ``avg@k``: the mean accuracy of k samples. Its unbiased estimate from n >= k samples is ``c / n``
  whatever k: the same expectation as pass@1, named with the number of samples it stands for. It
  is not best-of-k (that is pass@k).

A category's value is the mean over its tasks, the overall the unweighted mean of the categories
(as the run's overall). The 95% interval is a seeded percentile bootstrap over tasks (each
category's tasks resampled on their own: `stats.bootstrap`, `stats.interval`). k larger than a
task's n is refused: no estimate of k samples exists from fewer.
"""

from __future__ import annotations

import json
import math
import statistics
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from tooluse_agents.eval.stats import BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED, bootstrap, interval
from tooluse_agents.runs.records import EpisodeRecord, as_records, read_episodes
from tooluse_agents.runs.results import Episodes, summarize

__all__ = [
    "DEFAULT_ESTIMATOR",
    "ESTIMATORS",
    "Estimate",
    "EstimateConfig",
    "avg_at_k",
    "estimate",
    "estimate_table",
    "pass_at_k",
    "pass_hat_k",
    "run_episodes",
    "task_samples",
]

ESTIMATORS = ("pass@1", "pass@k", "pass^k", "avg@k")
"""The estimators by name; ``pass@1`` (the mean over seeds) is the default."""

DEFAULT_ESTIMATOR = "pass@1"


@dataclass(frozen=True, kw_only=True)
class EstimateConfig:
    """`tooluse eval estimate`: a run's score under a named estimator.

    Attributes:
        run: A run folder (`tooluse eval run --out`).
        estimator: What to report: pass@1 = the mean over seeds (the run table's number) | pass@k = the unbiased
            chance that one of k samples solves a task, 1 - C(n-c,k)/C(n,k) | pass^k = the chance that all k do,
            C(c,k)/C(n,k) | avg@k = the mean accuracy of k samples, c/n (n samples per task, one per seed, c of
            them solved).
        k: The k of pass@k, pass^k and avg@k: at most the seeds each task was played with (left out: that number).
    """

    run: Path
    estimator: str = DEFAULT_ESTIMATOR
    k: int | None = None


def _check(n: int, c: int, k: int) -> None:
    if n < 1 or not 0 <= c <= n:
        raise ValueError(f"a task needs n >= 1 samples and 0 <= c <= n solved ones, not n={n}, c={c}")
    if k < 1:
        raise ValueError(f"k must be at least 1, not {k}")
    if k > n:
        raise ValueError(f"k={k} is more than the n={n} samples of a task: no estimate of {k} samples from {n}")


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k of one task from n samples, c solved: ``1 - C(n-c, k) / C(n, k)`` (0 when c = 0)."""
    _check(n, c, k)
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """Pass^k of one task (all k samples succeed) from n samples, c solved: ``C(c, k) / C(n, k)``."""
    _check(n, c, k)
    return math.comb(c, k) / math.comb(n, k)


def avg_at_k(n: int, c: int, k: int) -> float:
    """Avg@k of one task: the expected mean accuracy of k of its n samples, ``c / n`` (needs k <= n)."""
    _check(n, c, k)
    return c / n


_PER_TASK: dict[str, Callable[[int, int, int], float]] = {"pass@k": pass_at_k, "pass^k": pass_hat_k, "avg@k": avg_at_k}


def run_episodes(run: Path) -> list[EpisodeRecord]:
    """A run folder's episodes as its results count them: each (task, seed) once, of the seeds its summary lists."""
    run = Path(run)
    if not (run / "episodes.jsonl").exists():
        raise FileNotFoundError(
            f"{run} is no run folder: it has no episodes.jsonl (`tooluse eval run --out` writes one)"
        )
    records, _ = read_episodes(run / "episodes.jsonl", unique=True)
    results = run / "results.json"
    if results.exists():
        seeds = set(json.loads(results.read_text()).get("summary", {}).get("seeds") or {r.seed for r in records})
        records = [r for r in records if r.seed in seeds]
    return records


def task_samples(episodes: Episodes) -> dict[str, dict[str, list[float]]]:
    """Per category, per task: its rewards, one per seed (an episode's scored questions count one by one)."""
    out: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for ep in as_records(episodes):
        for task_id, reward in ep.scored():
            out[ep.category][task_id].append(reward)
    return {c: dict(tasks) for c, tasks in sorted(out.items())}


@dataclass(frozen=True)
class Estimate:
    """One estimator over a run: per category and overall, with a 95% bootstrap interval over tasks.

    Attributes:
        estimator: One of `ESTIMATORS`.
        k: The samples it stands for (1 for pass@1).
        label: The table heading, e.g. ``pass@2 (unbiased, from n = 3 samples per task)``.
        seeds: The run's seeds (each a sample of every task).
        categories: Per category: ``tasks``, ``value`` and ``ci95`` ([low, high]).
        overall: The unweighted mean of the categories, with its ``ci95``.
    """

    estimator: str
    k: int
    label: str
    seeds: tuple[int, ...]
    categories: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    overall: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The estimate as JSON-able data."""
        return {
            "estimator": self.estimator,
            "k": self.k,
            "label": self.label,
            "seeds": list(self.seeds),
            "categories": {c: dict(v) for c, v in self.categories.items()},
            "overall": dict(self.overall),
        }


def _samples(n: tuple[int, int]) -> str:
    return f"n = {n[0]}" if n[0] == n[1] else f"n = {n[0]} to {n[1]}"


def _label(estimator: str, k: int, n: tuple[int, int], seeds: int) -> str:
    samples = _samples(n)
    if estimator == "pass@1":
        return f"pass@1 (mean over {seeds} seed{'s' if seeds != 1 else ''})"
    if estimator == "pass@k":
        return f"pass@{k} (unbiased, 1 - C(n-c,{k})/C(n,{k}), {samples} samples per task)"
    if estimator == "pass^k":
        return f"pass^{k} (all {k} succeed, C(c,{k})/C(n,{k}), {samples} samples per task)"
    return f"avg@{k} (mean accuracy of {k} samples, c/n, {samples} samples per task)"


def estimate(
    episodes: Episodes,
    estimator: str = DEFAULT_ESTIMATOR,
    k: int | None = None,
    *,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> Estimate:
    """`estimator` over a run's episodes; k defaults to the fewest samples any task has (1 for pass@1).

    A reward counts as solved when it is 1 (pass@k, pass^k, avg@k); pass@1 averages the rewards
    as the run's table does, and its values are that table's means.

    Raises:
        ValueError: An unknown estimator, no episodes, k with pass@1 other than 1, or k larger
            than some task's number of samples (the message says how many tasks have fewer).
    """
    if estimator not in ESTIMATORS:
        raise ValueError(f"unknown estimator {estimator!r}: one of {', '.join(ESTIMATORS)}")
    records: list[EpisodeRecord] = as_records(episodes)
    samples = task_samples(records)
    if not samples:
        raise ValueError("the run holds no scored episode")
    counts = [len(v) for tasks in samples.values() for v in tasks.values()]
    n_range = (min(counts), max(counts))
    if estimator == "pass@1":
        if k not in (None, 1):
            raise ValueError(f"pass@1 is one sample: --k {k} goes with pass@k, pass^k or avg@k")
        k = 1
    elif k is None:
        k = n_range[0]
    else:
        short = sum(c < k for c in counts)
        if short:
            raise ValueError(
                f"{estimator} with k={k} needs at least {k} samples (seeds) of every task, but {short} of "
                f"{len(counts)} tasks have fewer ({_samples(n_range)}): choose k <= {n_range[0]}, "
                "or play more seeds"
            )
    per_task = _per_task_values(samples, estimator, k)
    arrays = [np.asarray(values) for values in per_task.values()]
    categories: dict[str, dict[str, Any]] = {}
    for (name, values), array in zip(per_task.items(), arrays, strict=True):
        draws = bootstrap([array], np.mean, resamples, seed)
        categories[name] = {"tasks": len(values), "value": statistics.fmean(values), "ci95": interval(draws)}
    overall_draws = bootstrap(arrays, _mean_of_means, resamples, seed)
    overall = {"value": statistics.fmean(v["value"] for v in categories.values()), "ci95": interval(overall_draws)}
    if estimator == "pass@1":  # the run table's own numbers (mean over seeds of each seed's accuracy)
        summary = summarize(records)
        for name, row in categories.items():
            row["value"] = summary["categories"][name]["mean"]
        overall["value"] = summary["overall"]["mean"]
    seeds = tuple(sorted({ep.seed for ep in records}))
    label = _label(estimator, k, n_range, len(seeds))
    return Estimate(estimator, k, label, seeds, categories, overall)


def _per_task_values(samples: Mapping[str, Mapping[str, Sequence[float]]], estimator: str, k: int) -> dict[str, list]:
    if estimator == "pass@1":
        return {c: [statistics.fmean(v) for v in tasks.values()] for c, tasks in samples.items()}
    per_task = _PER_TASK[estimator]
    return {c: [per_task(len(v), sum(r >= 1.0 for r in v), k) for v in tasks.values()] for c, tasks in samples.items()}


def _mean_of_means(*arrays: np.ndarray) -> float:
    return float(np.mean([a.mean() for a in arrays]))


def _pct(value: float) -> str:
    return f"{100 * value:.1f}"


def estimate_table(result: Estimate) -> str:
    """A Markdown table headed by the estimator's name: per category and overall, the value and its interval."""
    lines = [
        f"| category | tasks | {result.label}, % | 95% CI (bootstrap over tasks) |",
        "|---|---|---|---|",
    ]
    rows = [*result.categories.items(), ("**overall**", {**result.overall, "tasks": None})]
    for name, row in rows:
        tasks = sum(r["tasks"] for r in result.categories.values()) if row["tasks"] is None else row["tasks"]
        low, high = row["ci95"]
        lines.append(f"| {name} | {tasks} | {_pct(row['value'])} | [{_pct(low)}, {_pct(high)}] |")
    return "\n".join(lines)
