"""BFCL's summary scores (the columns of its score tables) from per-category accuracies.

The formulas are those of bfcl-eval 2026.3.23, ``bfcl_eval/eval_checker/eval_runner_helper.py``,
``generate_leaderboard_csv``, with its three ways of combining scores:

- *mean*: the unweighted mean of the inputs (``calculate_unweighted_accuracy``);
- *entries*: the mean weighted by each input's entry count (``calculate_weighted_accuracy``);
- *weights*: fixed weights, normalised to sum to 1 (``calculate_percentage_weighted_accuracy``).

========================  ===========================  =========================================================
score                     BFCL's column                formula
========================  ===========================  =========================================================
``non_live_simple``       Non-Live Simple AST          mean of simple_python, simple_java, simple_javascript
``non_live``              Non-Live AST Acc             mean of non_live_simple, multiple, parallel,
                                                       parallel_multiple (irrelevance is not in it)
``live``                  Live Acc                     entry-weighted mean of live_simple, live_multiple,
                                                       live_parallel, live_parallel_multiple
``multi_turn``            Multi Turn Acc               mean of the four multi_turn_* categories
``web_search``            Web Search Acc               mean of web_search_base, web_search_no_snippet
``memory``                Memory Acc                   mean of memory_kv, memory_vector, memory_rec_sum
``agentic``               Agentic Overall Acc          mean of web_search, memory
``irrelevance_detection`` Irrelevance Detection        mean of irrelevance, live_irrelevance
``relevance_detection``   Relevance Detection          live_relevance
``overall``               Overall Acc                  weights 10, 10, 10, 30, 40 on non_live, live,
                                                       irrelevance_detection, multi_turn, agentic
========================  ===========================  =========================================================

Where BFCL lacks a category it scores it 0 in its overall columns (``live``, ``multi_turn``,
``agentic``, ``overall`` of its leaderboard tables: `Formula.zero_if_missing`, with the category's full entry
count `ENTRIES` where entries weigh) and prints N/A in the others. Here ``value`` is given only when
every category a score needs is present, else it is None and names the missing categories; ``as_bfcl``
is the number BFCL prints (missing categories counted as 0), or None where BFCL prints N/A. Counts are
the entries scored, so a run of part of a category (``--limit``) is weighted as BFCL weights a partial
evaluation.

Standard library only (the TUI imports ``tooluse_agents.runs``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

BFCL_EVAL_VERSION = "2026.3.23"
"""The bfcl-eval release whose formulas these are (tested against its code)."""

MULTI_TURN_ENV_ID = "ToolUse-MultiTurn-v0"
SINGLE_TURN_ENV_ID = "ToolUse-SingleTurn-v0"
MEMORY_ENV_ID = "ToolUse-Memory-v0"
WEB_SEARCH_ENV_ID = "ToolUse-WebSearch-v0"
"""The env ids whose runs are BFCL runs (`tooluse_gym.envs.ids`; a test checks they agree)."""

Combine = Literal["mean", "entries", "weights"]


@dataclass(frozen=True)
class Formula:
    """One BFCL summary score: its name here, BFCL's column header, its inputs and how they combine."""

    name: str
    column: str
    inputs: tuple[str, ...]
    combine: Combine = "mean"
    weights: tuple[float, ...] = ()
    zero_if_missing: bool = False

    def describe(self) -> str:
        """The formula in words."""
        if self.combine == "weights":
            return "weighted " + ", ".join(f"{w:g} x {i}" for w, i in zip(self.weights, self.inputs, strict=True))
        if len(self.inputs) == 1:
            return self.inputs[0]
        how = "entry-weighted mean" if self.combine == "entries" else "unweighted mean"
        return f"{how} of {', '.join(self.inputs)}"


MULTI_TURN = ("multi_turn_base", "multi_turn_miss_func", "multi_turn_miss_param", "multi_turn_long_context")

FORMULAS: tuple[Formula, ...] = (
    Formula("non_live_simple", "Non-Live Simple AST", ("simple_python", "simple_java", "simple_javascript")),
    Formula(
        "non_live",
        "Non-Live AST Acc",
        ("non_live_simple", "multiple", "parallel", "parallel_multiple"),
    ),
    Formula(
        "live",
        "Live Acc",
        ("live_simple", "live_multiple", "live_parallel", "live_parallel_multiple"),
        "entries",
        zero_if_missing=True,
    ),
    Formula("multi_turn", "Multi Turn Acc", MULTI_TURN, zero_if_missing=True),
    Formula("web_search", "Web Search Acc", ("web_search_base", "web_search_no_snippet")),
    Formula("memory", "Memory Acc", ("memory_kv", "memory_vector", "memory_rec_sum")),
    Formula("agentic", "Agentic Overall Acc", ("web_search", "memory"), zero_if_missing=True),
    Formula("irrelevance_detection", "Irrelevance Detection", ("irrelevance", "live_irrelevance")),
    Formula("relevance_detection", "Relevance Detection", ("live_relevance",)),
    Formula(
        "overall",
        "Overall Acc",
        ("non_live", "live", "irrelevance_detection", "multi_turn", "agentic"),
        "weights",
        (10, 10, 10, 30, 40),
        zero_if_missing=True,
    ),
)
"""In dependency order: a formula's inputs are categories or scores defined above it (no score is named
like a category)."""

BY_NAME: Mapping[str, Formula] = {f.name: f for f in FORMULAS}


def leaf_categories(name: str) -> tuple[str, ...]:
    """The BFCL categories a score (or a category: itself) is computed from, in formula order."""
    formula = BY_NAME.get(name)
    if formula is None:
        return (name,)
    return tuple(c for i in formula.inputs for c in leaf_categories(i))


CATEGORIES: tuple[str, ...] = tuple(dict.fromkeys(c for f in FORMULAS for c in leaf_categories(f.name)))
"""Every BFCL category a summary score needs (``overall``'s, and live_relevance)."""


ENTRIES: Mapping[str, int] = {
    "simple_python": 400,
    "simple_java": 100,
    "simple_javascript": 50,
    "multiple": 200,
    "parallel": 200,
    "parallel_multiple": 200,
    "live_simple": 258,
    "live_multiple": 1053,
    "live_parallel": 16,
    "live_parallel_multiple": 24,
    "multi_turn_base": 200,
    "multi_turn_miss_func": 200,
    "multi_turn_miss_param": 200,
    "multi_turn_long_context": 200,
    "web_search_base": 100,
    "web_search_no_snippet": 100,
    "memory_kv": 155,
    "memory_vector": 155,
    "memory_rec_sum": 155,
    "irrelevance": 240,
    "live_irrelevance": 884,
    "live_relevance": 16,
}
"""Each category's entry count in bfcl-eval 2026.3.23 (what BFCL weighs a category it lacks by; a test checks)."""


@dataclass(frozen=True)
class Score:
    """A summary score: its value (a fraction), the entries it covers, and the categories it lacks.

    ``value`` is None exactly when ``missing`` is not empty. ``as_bfcl`` is what BFCL prints: the
    value, or with categories missing the number it computes counting them as 0 (its overall
    columns), or None (N/A, its other columns).
    """

    value: float | None
    entries: int
    missing: tuple[str, ...] = ()
    as_bfcl: float | None = None
    bfcl_parts: tuple[float, int] = (0.0, 0)
    """(accuracy, entry count) as BFCL carries them into the scores built on this one."""


def bfcl_scores(accuracies: Mapping[str, tuple[float, int]]) -> dict[str, Score]:
    """Every BFCL summary score from per-category (accuracy, entry count), by BFCL's category names.

    Categories BFCL does not score (and any other key) are ignored; an entry count must be positive.
    """
    known: dict[str, Score] = {}
    for category in CATEGORIES:
        if category in accuracies:
            accuracy, entries = accuracies[category]
            if entries <= 0:
                raise ValueError(f"{category}: entry count must be positive, got {entries}")
            value = float(accuracy)
            known[category] = Score(value, int(entries), as_bfcl=value, bfcl_parts=(value, int(entries)))
        else:
            known[category] = Score(None, 0, (category,), bfcl_parts=(0.0, ENTRIES[category]))
    out: dict[str, Score] = {}
    for formula in FORMULAS:
        parts = [known[i] for i in formula.inputs]
        score = _combine(formula, parts)
        known[formula.name] = out[formula.name] = score
    return out


def _combine(formula: Formula, parts: Sequence[Score]) -> Score:
    missing = tuple(c for p in parts for c in p.missing)
    entries = sum(p.entries for p in parts)
    bfcl = _as_bfcl(formula, [p.bfcl_parts for p in parts])
    shown = bfcl[0] if not missing or formula.zero_if_missing else None
    if missing:
        return Score(None, entries, missing, shown, bfcl)
    return Score(bfcl[0], entries, as_bfcl=shown, bfcl_parts=bfcl)


def _as_bfcl(formula: Formula, parts: Sequence[tuple[float, int]]) -> tuple[float, int]:
    """(accuracy, entry count) as bfcl-eval's three helpers compute them, in their order of operations."""
    count = 0
    total = 0.0
    if formula.combine == "mean":  # calculate_unweighted_accuracy
        for accuracy, n in parts:
            count += n
            total += accuracy
        return total / len(parts), count
    if formula.combine == "entries":  # calculate_weighted_accuracy
        for accuracy, n in parts:
            count += n
            total += accuracy * n
        return total / count, count
    weight_sum = sum(formula.weights)  # calculate_percentage_weighted_accuracy
    for (accuracy, n), w in zip(parts, formula.weights, strict=True):
        count += n
        total += accuracy * (w / weight_sum)
    return total, count


def bfcl_category(env_id: str | None, category: str) -> str | None:
    """BFCL's name for an episode's category in a run of `env_id`; None outside BFCL's envs."""
    if env_id == MULTI_TURN_ENV_ID:
        return category if category.startswith("multi_turn_") else f"multi_turn_{category}"
    if env_id in (SINGLE_TURN_ENV_ID, MEMORY_ENV_ID, WEB_SEARCH_ENV_ID):
        return category
    return None


def shown_scores(categories: Sequence[str]) -> tuple[str, ...]:
    """The scores a run of these BFCL categories reports: those it has an input of, and ``overall``."""
    have = set(categories)
    return tuple(f.name for f in FORMULAS if f.name == "overall" or have & set(leaf_categories(f.name)))


def _mean(seeds: Sequence[Any]) -> str:
    return f"mean over {len(seeds)} seed{'' if len(seeds) == 1 else 's'}"


def format_bfcl_table(summary: Mapping[str, Any]) -> str:
    """A Markdown table of a summary's ``bfcl_scores`` (in %, per seed, mean, std, 95% CI), and what is not given."""
    block = summary["bfcl_scores"]
    seeds = summary["seeds"]
    head = (
        "| BFCL score | BFCL column | " + " | ".join(f"seed {s}" for s in seeds) + f" | {_mean(seeds)} | std | 95% CI |"
    )
    lines = [head, "|" + "---|" * (5 + len(seeds))]
    absent = []
    zeroed = []
    for name, row in block.items():
        label = f"**{name}**" if name == "overall" else name
        printed = (row.get("as_bfcl") or {}).get("per_seed") or {}
        if row["missing"] and printed:  # BFCL's number, the categories not run counted as 0
            per_seed = " | ".join(_pct(printed.get(str(s))) + "*" for s in seeds)
            mean = _pct(row["as_bfcl"]["mean"]) + "*"
            lines.append(f"| {label} | {row['column']} | {per_seed} | {mean} | - | n/a |")
            zeroed.append(name)
        else:
            per_seed = " | ".join(_pct(row["per_seed"].get(str(s))) for s in seeds)
            ci = f"±{_pct(row['ci95'])}" if row["ci95"] is not None else "n/a"
            lines.append(
                f"| {label} | {row['column']} | {per_seed} | {_pct(row['mean'])} | {_pct(row['std'])} | {ci} |"
            )
        if row["missing"]:
            absent.append(f"{name} lacks {', '.join(row['missing'])}")
    if zeroed:
        lines += [
            "",
            f"\\* as bfcl-eval prints it ({', '.join(zeroed)}): the categories this run lacks count as 0, "
            "so the number is a floor, not the model's score.",
        ]
    if absent:
        lines += ["", "Categories not run: " + "; ".join(absent) + "."]
    return "\n".join(lines)


def web_search_note(cards: Sequence[Mapping[str, Any]]) -> str | None:
    """What every printed web-search score must say: which search backend answered, and what that allows.

    `cards` are a run's protocol cards (as dicts); None when none of them plays web search.
    """
    notes = []
    for card in cards:
        if card.get("env_id") != WEB_SEARCH_ENV_ID:
            continue
        extra = card.get("extra") or {}
        backend, digest, dates = extra.get("search_backend"), extra.get("recording"), extra.get("recorded")
        what = f"search backend {backend}" + (f", recording {digest}" if digest else "")
        what += f", recorded {dates}" if dates else ""
        synthetic = " (synthetic pages built from BFCL's gold hops: not a BFCL score)" if backend == "gold-hops" else ""
        notes.append(what + synthetic)
    if not notes:
        return None
    return (
        "Web search answered by " + "; ".join(notes) + ". Web-search scores compare only within one search "
        "backend and recording (a live backend: one day)."
    )


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}"
