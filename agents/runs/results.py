"""Turn episode records into results: accuracy per category per seed, spread across seeds.

Overall accuracy is the unweighted mean of the categories (BFCL's multi-turn overall; BFCL
runs also get BFCL's own summary scores, `bfcl_scores`). The 95% confidence interval is
Student's t over the per-seed values (none with a single seed).
"""

from __future__ import annotations

import math
import statistics
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tooluse_agents.runs.bfcl_scores import BY_NAME, bfcl_category, bfcl_scores, shown_scores
from tooluse_agents.runs.records import EpisodeRecord, as_records

if TYPE_CHECKING:
    from tooluse_gym.tasks.known_issues import KnownIssues

# two-sided 95% Student-t critical values by degrees of freedom (1..30); 1.96 beyond
_T95 = [
    12.706,
    4.303,
    3.182,
    2.776,
    2.571,
    2.447,
    2.365,
    2.306,
    2.262,
    2.228,
    2.201,
    2.179,
    2.160,
    2.145,
    2.131,
    2.120,
    2.110,
    2.101,
    2.093,
    2.086,
    2.080,
    2.074,
    2.069,
    2.064,
    2.060,
    2.056,
    2.052,
    2.048,
    2.045,
    2.042,
]


def spread(values: Sequence[float]) -> dict[str, Any]:
    """Mean, sample standard deviation and 95% CI half-width of per-seed values."""
    n = len(values)
    if n == 0:
        return {"n": 0, "mean": None, "std": None, "ci95": None, "min": None, "max": None}
    mean = statistics.fmean(values)
    std = statistics.stdev(values) if n > 1 else 0.0
    ci = (_T95[n - 2] if n - 1 <= len(_T95) else 1.96) * std / math.sqrt(n) if n > 1 else None
    return {"n": n, "mean": mean, "std": std, "ci95": ci, "min": min(values), "max": max(values)}


def _accuracy(
    rewards: Mapping[tuple[str, int], Sequence[float]],
) -> tuple[list[int], dict[str, dict[str, Any]], dict[str, Any]]:
    """(seeds, per-category accuracy, overall accuracy) from rewards by (category, seed)."""
    categories = sorted({c for c, _ in rewards})
    seeds = sorted({s for _, s in rewards})
    per_category = {}
    for c in categories:
        per_seed = {s: statistics.fmean(rewards[(c, s)]) for s in seeds if (c, s) in rewards}
        per_category[c] = {
            "episodes": sum(len(rewards[(c, s)]) for s in per_seed),
            "per_seed": {str(s): v for s, v in per_seed.items()},
            **spread(list(per_seed.values())),
        }
    overall_per_seed = {
        s: statistics.fmean(statistics.fmean(rewards[(c, s)]) for c in categories if (c, s) in rewards)
        for s in seeds
        if any((c, s) in rewards for c in categories)
    }
    overall = {"per_seed": {str(s): v for s, v in overall_per_seed.items()}, **spread(list(overall_per_seed.values()))}
    return seeds, per_category, overall


Episodes = Iterable[EpisodeRecord | Mapping[str, Any]]
"""Episode records, or the JSON objects they are read from."""


def summarize(episodes: Episodes, known_issues: KnownIssues | None = None) -> dict[str, Any]:
    """Accuracy per category per seed, their spread, overall accuracy, errors and tokens.

    With `known_issues` (BFCL runs) the summary also has ``clean``: the same accuracies over
    the tasks the registry does not list (`clean_subset`). Runs of BFCL's envs (by the episodes'
    protocol cards) also have ``bfcl_scores``: BFCL's summary scores (`summary_scores`).
    """
    episodes = as_records(episodes)
    rewards: dict[tuple[str, int], list[float]] = defaultdict(list)
    errors: Counter[str] = Counter()
    checker_errors: Counter[str] = Counter()
    unscored: Counter[str] = Counter()
    tokens: Counter[str] = Counter()
    per_task: dict[tuple[str, str], list[float]] = defaultdict(list)
    for ep in episodes:
        for task_id, reward in ep.scored():
            rewards[(ep.category, ep.seed)].append(reward)
            per_task[(ep.category, task_id)].append(reward)
        if ep.error:
            errors[ep.error["type"]] += 1
            unscored[ep.error["type"]] += ep.unscored
        elif ep.checker and ep.checker.get("error_type"):
            checker_errors[ep.checker["error_type"]] += 1
        tokens.update(prompt=ep.prompt_tokens, completion=ep.completion_tokens)
    seeds, per_category, overall = _accuracy(rewards)
    summary = {
        "episodes": len(episodes),
        "seeds": seeds,
        "categories": per_category,
        "overall": overall,
        "pass_at_k": pass_at_k(per_task),
        "agent_errors": dict(errors),
        "unscored": {k: n for k, n in unscored.items() if n},
        "checker_errors": dict(checker_errors),
        "tokens": dict(tokens),
    }
    scores = summary_scores(episodes)
    if scores is not None:
        summary["bfcl_scores"] = scores
    if known_issues is not None:
        summary["clean"] = clean_subset(episodes, known_issues)
    return summary


def summary_scores(episodes: Episodes) -> dict[str, Any] | None:
    """BFCL's summary scores of a BFCL run per seed, with their spread; None for other runs.

    The scores the run has an input of, and ``overall`` (`bfcl_scores.shown_scores`), each with
    BFCL's ``column`` header, its ``formula``, the ``missing`` categories (then no value) and, like
    the categories, ``per_seed`` values and their spread. A seed counts for a score when it played
    every category the score needs.
    """
    episodes = as_records(episodes)
    env_ids = {ep.protocol.get("env_id") for ep in episodes}
    if not env_ids or any(bfcl_category(env_id, "") is None for env_id in env_ids):
        return None
    rewards: dict[int, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for ep in (ep for ep in episodes if not ep.unscored):
        category = bfcl_category(ep.protocol.get("env_id"), ep.category) or ep.category
        rewards[ep.seed][category].extend(r for _, r in ep.scored())
    per_seed = {
        seed: bfcl_scores({c: (statistics.fmean(v), len(v)) for c, v in by_category.items()})
        for seed, by_category in sorted(rewards.items())
    }
    categories = sorted({c for by_category in rewards.values() for c in by_category})
    missing = bfcl_scores({c: (0.0, 1) for c in categories})
    out = {}
    for name in shown_scores(categories):
        values: dict[str, float] = {}
        as_bfcl: dict[str, float] = {}
        for seed, scores in per_seed.items():
            value, printed = scores[name].value, scores[name].as_bfcl
            if value is not None:
                values[str(seed)] = value
            if printed is not None:
                as_bfcl[str(seed)] = printed
        out[name] = {
            "column": BY_NAME[name].column,
            "formula": BY_NAME[name].describe(),
            "missing": list(missing[name].missing),
            "per_seed": values,
            **spread(list(values.values())),
            "as_bfcl": {"per_seed": as_bfcl, "mean": statistics.fmean(as_bfcl.values()) if as_bfcl else None},
        }
    return out


def clean_subset(episodes: Episodes, known_issues: KnownIssues) -> dict[str, Any]:
    """Accuracy over the episodes of tasks the known-issues registry does not list.

    Same shape as `summarize`'s ``categories`` and ``overall`` (per seed, mean, std, 95% CI),
    plus each category's ``tasks`` and ``excluded_tasks`` counts, the run's tasks the registry
    lists (``excluded_tasks``) and the registry's version. A category whose tasks are all
    listed has no accuracy (mean None); the overall accuracy is the unweighted mean of the
    categories that keep tasks.
    """
    rewards: dict[tuple[str, int], list[float]] = defaultdict(list)
    tasks: dict[str, set[str]] = defaultdict(set)
    excluded: dict[str, set[str]] = defaultdict(set)
    excluded_episodes = 0
    kept = 0
    for ep in as_records(episodes):
        for task_id, reward in ep.scored():  # an episode's scored questions count one by one, as in `summarize`
            category = ep.category
            tasks[category].add(task_id)
            if task_id in known_issues:
                excluded[category].add(task_id)
                excluded_episodes += 1
                continue
            kept += 1
            rewards[(category, ep.seed)].append(reward)
    _, per_category, overall = _accuracy(rewards)
    categories = {}
    for c in sorted(tasks):
        row = per_category.get(c) or {"episodes": 0, "per_seed": {}, **spread([])}
        categories[c] = {**row, "tasks": len(tasks[c] - excluded[c]), "excluded_tasks": len(excluded[c])}
    return {
        "registry_version": known_issues.version,
        "registry_bfcl_version": known_issues.bfcl_version,
        "episodes": kept,
        "excluded_episodes": excluded_episodes,
        "excluded_tasks": sorted(t for ids in excluded.values() for t in ids),
        "categories": categories,
        "overall": overall,
    }


def pass_at_k(per_task: Mapping[tuple[str, str], Sequence[float]]) -> dict[str, dict[str, Any]]:
    """Per category, over tasks with k samples each (one per seed): pass@1, pass@k and the outcome shares.

    pass@1 is the mean success rate, pass@k the share solved by at least one sample; then the
    fractions of tasks solved by all, none, or some but not all samples (``mixed``: the tasks that
    give GRPO a learning signal).
    """
    out: dict[str, dict[str, Any]] = {}
    for category in sorted({c for c, _ in per_task}):
        samples = [[r >= 1.0 for r in v] for (c, _), v in per_task.items() if c == category]
        rates = [sum(s) / len(s) for s in samples]
        n = len(samples)
        out[category] = {
            "tasks": n,
            "k": min(len(s) for s in samples),
            "pass_at_1": statistics.fmean(rates),
            "pass_at_k": sum(r > 0 for r in rates) / n,
            "all_correct": sum(r == 1 for r in rates) / n,
            "all_wrong": sum(r == 0 for r in rates) / n,
            "mixed": sum(0 < r < 1 for r in rates) / n,
        }
    return out


def format_pass_table(summary: Mapping[str, Any]) -> str:
    """A Markdown table of pass@1, pass@k and the share of tasks with mixed outcomes, per category."""
    lines = [
        "| category | tasks | k (seeds) | pass@1 (mean over seeds) | pass@k (solved by any of the k seeds) | "
        "all correct | all wrong | mixed (0 < p < 1) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, row in summary["pass_at_k"].items():
        lines.append(
            f"| {name} | {row['tasks']} | {row['k']} | {_pct(row['pass_at_1'])} | {_pct(row['pass_at_k'])} | "
            f"{_pct(row['all_correct'])} | {_pct(row['all_wrong'])} | {_pct(row['mixed'])} |"
        )
    return "\n".join(lines)


def pass_at_1(seeds: Sequence[Any]) -> str:
    """The name of the number the tables report: ``pass@1 (mean over 3 seeds)``."""
    return f"pass@1 (mean over {len(seeds)} seed{'' if len(seeds) == 1 else 's'})"


def format_table(summary: Mapping[str, Any]) -> str:
    """A Markdown table: accuracy (%) per category with per-seed values, pass@1 (their mean), std and 95% CI."""
    seeds = summary["seeds"]
    head = (
        "| category | episodes | " + " | ".join(f"seed {s}" for s in seeds) + f" | {pass_at_1(seeds)} | std | 95% CI |"
    )
    lines = [head, "|" + "---|" * (5 + len(seeds))]
    rows = [*summary["categories"].items(), ("overall", summary["overall"])]
    for name, row in rows:
        per_seed = " | ".join(_pct(row["per_seed"].get(str(s))) for s in seeds)
        episodes = row.get("episodes", summary["episodes"])
        ci = f"±{_pct(row['ci95'])}" if row["ci95"] is not None else "n/a"
        label = f"**{name}**" if name == "overall" else name
        lines.append(f"| {label} | {episodes} | {per_seed} | {_pct(row['mean'])} | {_pct(row['std'])} | {ci} |")
    return "\n".join(lines)


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}"


def clean_caption(summary: Mapping[str, Any]) -> str:
    """One sentence on what the clean subset leaves out, with the registry's version."""
    clean = summary["clean"]
    total = sum(row["tasks"] + row["excluded_tasks"] for row in clean["categories"].values())
    return (
        f"Clean subset: the tasks not listed in the known-issues registry {clean['registry_version']} "
        f"(checked on bfcl-eval {clean['registry_bfcl_version']}); it leaves out {len(clean['excluded_tasks'])} "
        f"of this run's {total} tasks ({clean['excluded_episodes']} episodes). "
        "Official = all tasks, as BFCL scores them."
    )


def format_clean_table(summary: Mapping[str, Any]) -> str:
    """A Markdown table: the official accuracy (%) over all tasks beside the clean-subset accuracy, per category."""
    clean = summary["clean"]
    lines = [
        "| category | episodes | official pass@1 (%) | clean tasks | clean episodes | clean pass@1 (%) | clean 95% CI "
        "| known-issue tasks |",
        "|---|---|---|---|---|---|---|---|",
    ]
    rows = [(name, row, clean["categories"].get(name)) for name, row in summary["categories"].items()]
    for name, row, kept in rows:
        kept = kept or {"tasks": 0, "excluded_tasks": 0, "episodes": 0, "mean": None, "ci95": None}
        lines.append(
            f"| {name} | {row['episodes']} | {_pct(row['mean'])} | {kept['tasks']} | {kept['episodes']} | "
            f"{_pct(kept['mean'])} | {_ci(kept['ci95'])} | {kept['excluded_tasks']} |"
        )
    tasks = sum(r["tasks"] for r in clean["categories"].values())
    lines.append(
        f"| **overall** | {summary['episodes']} | {_pct(summary['overall']['mean'])} | {tasks} | {clean['episodes']} | "
        f"{_pct(clean['overall']['mean'])} | {_ci(clean['overall']['ci95'])} | {len(clean['excluded_tasks'])} |"
    )
    return "\n".join(lines)


def _ci(value: float | None) -> str:
    return f"±{_pct(value)}" if value is not None else "n/a"


# --- two runs side by side (`tooluse eval compare` and the TUI's compare view) ---------------
#
# Two runs are compared on the episodes both played: the (task id, seed) pairs both hold. Each
# pair is one task played under one seed by A and by B, so per seed the two accuracies are over
# the same tasks and their difference is paired; the 95% CI of B - A is Student's t over those
# per-seed differences (`spread`). What only one run holds is counted (`LeftOut`), never scored.

Pair = tuple[str, int]
"""(task id, seed): the unit two runs are paired on."""


@dataclass(frozen=True)
class CategoryDiff:
    """Accuracy of one category (or ``overall``) in runs A and B over the episodes both played.

    Fractions; ``a_ci``, ``b_ci`` and ``diff_ci`` are 95% CI half-widths over seeds (None with one seed).
    """

    category: str
    a: float | None
    a_ci: float | None
    b: float | None
    b_ci: float | None
    diff_ci: float | None = None
    """95% half-width of B - A, paired: Student's t over the seeds of each seed's difference on the same tasks."""
    episodes: int = 0
    """The (task, seed) pairs the row is computed over."""

    @property
    def diff(self) -> float | None:
        """The difference b - a, or None when either is missing."""
        return None if self.a is None or self.b is None else self.b - self.a


@dataclass(frozen=True)
class Disagreement:
    """A task solved (mean reward >= 0.5 across the seeds both runs played) in one run only."""

    task_id: str
    a: float
    b: float
    known_issue: str | None = None
    """The kind of known BFCL issue the task has, or None."""


@dataclass(frozen=True)
class LeftOut:
    """What one run holds that a comparison leaves out: its episodes whose (task, seed) the other run lacks.

    Attributes:
        episodes: Its episodes left out.
        tasks: Its task ids the other run did not play.
        seeds: Its seeds the other run did not play.
        categories: Its categories with no episode compared (no row in the comparison).
        unscored: Its episodes that are no score (the model server failed: `EpisodeRecord.unscored`).
    """

    episodes: int = 0
    tasks: tuple[str, ...] = ()
    seeds: tuple[int, ...] = ()
    categories: tuple[str, ...] = ()
    unscored: int = 0

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form (lists)."""
        return {
            "episodes": self.episodes,
            "tasks": list(self.tasks),
            "seeds": list(self.seeds),
            "categories": list(self.categories),
            "unscored": self.unscored,
        }

    def describe(self, other: str) -> str:
        """One phrase: what is left out, with `other` the other run's name ("none" when nothing)."""
        if not self.episodes:
            return "none"
        parts = [f"{self.unscored} not scored (the model server failed)"] if self.unscored else []
        if self.tasks or self.seeds:
            played = [_count(len(self.tasks), "task")] if self.tasks else []
            if self.seeds:
                played.append(f"{_count(len(self.seeds), 'seed')} ({', '.join(map(str, self.seeds))})")
            parts.append(f"{' and '.join(played)} that {other} did not play")
        if self.categories:
            categories = _count(len(self.categories), "category", "categories")
            parts.append(f"{categories} with no episode compared ({', '.join(self.categories)})")
        return f"{_count(self.episodes, 'episode')}" + (f": {'; '.join(parts)}" if parts else "")


def _count(n: int, word: str, plural: str | None = None) -> str:
    return f"{n} {word if n == 1 else plural or word + 's'}"


@dataclass(frozen=True)
class RunComparison:
    """What two runs' episodes say side by side, over the (task, seed) pairs both played.

    Attributes:
        categories: Per category with a pair, then ``overall`` (official score: all those tasks); empty
            when no pair is shared.
        disagreements: Shared tasks solved in one run only, in task-id order.
        shared_tasks: Tasks with a pair both runs played.
        clean: The same rows over the clean subset (empty without a registry).
        registry_version: The known-issues registry the clean subset leaves out (None: none given).
        excluded_tasks: The tasks of either run that the registry lists.
        pairs: The (task, seed) pairs compared (one episode of each run each).
        seeds: The seeds of those pairs.
        left_out: What runs A and B hold beyond them.
    """

    categories: tuple[CategoryDiff, ...]
    disagreements: tuple[Disagreement, ...]
    shared_tasks: int
    clean: tuple[CategoryDiff, ...] = ()
    registry_version: str | None = None
    excluded_tasks: tuple[str, ...] = ()
    pairs: int = 0
    seeds: tuple[int, ...] = ()
    left_out: tuple[LeftOut, LeftOut] = (LeftOut(), LeftOut())

    @property
    def same_episodes(self) -> bool:
        """Both runs hold the same (task, seed) pairs: nothing is left out."""
        return not (self.left_out[0].episodes or self.left_out[1].episodes)


def compare_results(episodes: tuple[Episodes, Episodes], known_issues: KnownIssues | None = None) -> RunComparison:
    """Runs A and B compared on the (task, seed) pairs both played, and what each holds beyond them.

    Per category and overall, both accuracies and the paired difference; the disagreeing tasks;
    with a registry, the same rows over the clean subset. `episodes` need ``task_id``, ``category``,
    ``seed`` and ``reward``; a pair a run played more than once counts with its mean reward.
    """
    runs = (as_records(episodes[0]), as_records(episodes[1]))
    a, b = _by_pair(runs[0]), _by_pair(runs[1])
    both = a.keys() & b.keys()
    shared = sorted(both)
    means = [task_means([e for e in run if (e.task_id, e.seed) in both]) for run in runs]
    tasks = sorted({t for t, _ in shared})

    def kind(task_id: str) -> str | None:
        entry = known_issues.get(task_id) if known_issues is not None else None
        return entry.kind if entry is not None else None

    excluded = {e.task_id for run in runs for e in run if known_issues is not None and e.task_id in known_issues}
    return RunComparison(
        categories=_paired_rows(a, b, shared),
        disagreements=tuple(
            Disagreement(t, means[0][t], means[1][t], kind(t))
            for t in tasks
            if (means[0][t] >= 0.5) != (means[1][t] >= 0.5)
        ),
        shared_tasks=len(tasks),
        clean=_paired_rows(a, b, [p for p in shared if p[0] not in excluded]) if known_issues is not None else (),
        registry_version=known_issues.version if known_issues is not None else None,
        excluded_tasks=tuple(sorted(excluded)),
        pairs=len(shared),
        seeds=tuple(sorted({s for _, s in shared})),
        left_out=(_left_out(runs[0], a, b), _left_out(runs[1], b, a)),
    )


def coverage_lines(c: RunComparison) -> list[str]:
    """What a comparison scores (the episodes both runs played) and what it leaves out of each run."""
    seeds = f"{'seed' if len(c.seeds) == 1 else 'seeds'} {', '.join(map(str, c.seeds))}"
    categories = _count(sum(r.category != "overall" for r in c.categories), "category", "categories")
    what = f"{c.pairs} (task, seed) pairs ({_count(c.shared_tasks, 'task')}; {seeds}; {categories})"
    if not c.pairs:
        head = "No episode of A has the task and seed of an episode of B: there is nothing to compare."
    elif c.same_episodes:
        return [f"Both runs played the same {what}."]
    else:
        head = (
            f"The runs played different tasks or seeds. Compared: the {what} both played; "
            "every score below is over these only."
        )
    return [
        head,
        f"Only in A, left out: {c.left_out[0].describe('B')}.",
        f"Only in B, left out: {c.left_out[1].describe('A')}.",
    ]


def _by_pair(episodes: Sequence[EpisodeRecord]) -> dict[Pair, tuple[str, float]]:
    """(category, mean reward) per (task, seed) a run played."""
    rewards: dict[Pair, list[float]] = defaultdict(list)
    categories: dict[Pair, str] = {}
    for e in (e for e in episodes if not e.unscored):  # a failed server's episode is no score of either run
        rewards[(e.task_id, e.seed)].append(e.reward)
        categories.setdefault((e.task_id, e.seed), e.category)
    return {p: (categories[p], statistics.fmean(v)) for p, v in rewards.items()}


def _left_out(
    run: Sequence[EpisodeRecord], mine: Mapping[Pair, tuple[str, float]], other: Mapping[Pair, Any]
) -> LeftOut:
    """What `run` (whose pairs are `mine`) holds beyond the pairs `other` also holds."""
    compared = {category for p, (category, _) in mine.items() if p in other}
    return LeftOut(
        episodes=sum((e.task_id, e.seed) not in other or e.unscored for e in run),
        unscored=sum(e.unscored for e in run),
        tasks=tuple(sorted({t for t, _ in mine} - {t for t, _ in other})),
        seeds=tuple(sorted({s for _, s in mine} - {s for _, s in other})),
        categories=tuple(sorted({c for c, _ in mine.values()} - compared)),
    )


def _paired_rows(
    a: Mapping[Pair, tuple[str, float]], b: Mapping[Pair, tuple[str, float]], pairs: Sequence[Pair]
) -> tuple[CategoryDiff, ...]:
    """A row per category of `pairs` (sorted), then ``overall``; none without pairs."""
    rewards: tuple[dict[tuple[str, int], list[float]], ...] = (defaultdict(list), defaultdict(list))
    for task_id, seed in pairs:
        category = a[(task_id, seed)][0]
        for side, run in zip(rewards, (a, b), strict=True):
            side[(category, seed)].append(run[(task_id, seed)][1])
    (_, cats_a, overall_a), (_, cats_b, overall_b) = _accuracy(rewards[0]), _accuracy(rewards[1])
    if not cats_a:
        return ()
    rows = []
    for name, x, y in [*((c, cats_a[c], cats_b[c]) for c in cats_a), ("overall", overall_a, overall_b)]:
        per_seed_diff = [y["per_seed"][s] - x["per_seed"][s] for s in x["per_seed"]]
        episodes = x.get("episodes", len(pairs))
        rows.append(
            CategoryDiff(name, x["mean"], x["ci95"], y["mean"], y["ci95"], spread(per_seed_diff)["ci95"], episodes)
        )
    return tuple(rows)


def task_means(episodes: Episodes) -> dict[str, float]:
    """Mean reward per task id across its episodes (seeds)."""
    rewards: dict[str, list[float]] = {}
    for e in as_records(episodes):
        if not e.unscored:
            rewards.setdefault(e.task_id, []).append(e.reward)
    return {t: sum(v) / len(v) for t, v in rewards.items()}
