"""The protocol studies' tables: protocol sensitivity beside the paper's figures, and `make run`'s first-run table."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pages_common import DOCS, _load, _not_measured, _table

NAME = "protocol_sensitivity.json"
COMMAND = "python -m experiments.protocol_sensitivity run && python -m experiments.protocol_sensitivity report"

# What the paper measured for a change of the base, as (low, high) points of (change - base) on BFCL
# multi-turn, or None where it has no figure for that change. The base is the stronger protocol in
# each of the paper's comparisons (native template, a hand-written system prompt), so its figures are
# drops.
PAPER_EFFECT: dict[tuple[str, str], tuple[float, float]] = {
    ("template", "context"): (-8.0, -6.0),
    ("system_prompt", "bfcl"): (-15.0, -15.0),
}


def _pts(value: float | None, signed: bool = False) -> str:
    if value is None:
        return "n/a"
    return f"{100 * value:+.1f}" if signed else f"{100 * value:.1f}"


def _is_literal(row: Mapping[str, Any]) -> bool:
    return row["knob"] == "system_prompt" and row["value"] not in ("bfcl", "strong", "none")


def _label(row: Mapping[str, Any]) -> str:
    return f"{row['knob']} = " + ("literal text (below)" if _is_literal(row) else str(row["value"]))


def reading(diff: float | None, ci: list[float] | None, paper: tuple[float, float] | None) -> str:
    """How one change reads against the paper: whether it moved the score, its direction and size."""
    if diff is None or ci is None:
        return "no paired episodes"
    moved = ci[0] > 0 or ci[1] < 0
    points = 100 * diff
    if paper is None:
        return ("moves the score" if moved else "interval includes 0") + "; no paper figure"
    if not moved:
        return "interval includes 0: no effect shown"
    if (points < 0) != (paper[0] < 0):
        return "opposite direction to the paper"
    low, high = sorted((abs(paper[0]), abs(paper[1])))
    if abs(points) < low:
        return "same direction, smaller than the paper's"
    if abs(points) > high:
        return "same direction, larger than the paper's"
    return "same direction, as large as the paper's"


def protocol_sensitivity_table() -> str:
    """The base's seed spread, each change's paired effect beside the paper's, the BFCL slice."""
    report = _load(NAME)
    if report is None or not report.get("curriculum"):
        return _not_measured(NAME, COMMAND)
    sweep = report["curriculum"]
    base, spread = sweep["base"], sweep["base"]["seed_spread"]
    paper_seed = report["paper"]["seed"]["points"]
    rows = [
        [
            f"base ({spread['seeds']} seeds)",
            _pts(base["overall"]),
            f"seed spread {_pts(spread['max_minus_min'])} (max - min), std {_pts(spread['std'])}",
            "",
            f"about {paper_seed} points",
            "",
        ]
    ]
    for row in sweep["changes"]:
        paired = row["paired"]
        ci = paired["ci95"]
        paper = PAPER_EFFECT.get((row["knob"], str(row["value"])))
        rows.append(
            [
                _label(row),
                _pts(row["overall"]),
                _pts(paired["diff"], signed=True),
                f"[{_pts(ci[0], True)}, {_pts(ci[1], True)}]" if ci else "n/a",
                "n/a" if paper is None else "/".join(dict.fromkeys(f"{p:+.0f}" for p in paper)),
                reading(paired["diff"], ci, paper),
            ]
        )
    paper_reasoning = report["paper"]["reasoning"]["points"]
    why_not = report["reasoning"].replace("<think>", "`<think>`")
    rows.append(["reasoning history", "", "", "", f"{paper_reasoning[0]} to {paper_reasoning[1]}", why_not])
    header = ["configuration", "score (%)", "change - base (points, paired)", "95% interval", "paper (points)"]
    lines = [_table([*header, "reading"], rows)]
    lines += [f'- The literal system prompt: "{row["value"]}"' for row in sweep["changes"] if _is_literal(row)]
    for key, label in (
        ("bfcl_slice", "BFCL slice (base protocol, BFCL's rules)"),
        ("grpo_base", "GRPO-trained, from the weak warm-start (not a change of the base)"),
    ):
        summary = report.get(key)
        if summary:
            seeds = ", ".join(f"{_pts(v)}" for v in summary["per_seed"].values())
            lines.append(f"- {label}: {_pts(summary['overall'])}% (per seed: {seeds}; `{summary['folder']}`).")
    prereg = report["prereg"]
    lines.append(
        f"- Pre-registration: `{prereg['path']}` (commit {str(prereg['commit'])[:7]}); every row's protocol card "
        f"fingerprint is in `benchmarks/results/{NAME}`."
    )
    return "\n".join(lines) + "\n"


def protocol_sensitivity_page() -> str:
    """The results page's block: the table, and the figure once the report has drawn it."""
    body = protocol_sensitivity_table()
    if (DOCS / "protocol-sensitivity.png").exists() and not body.startswith("*Not measured"):
        body += "\n![protocol sensitivity](protocol-sensitivity.png)\n"
    return body


def first_run_table() -> str:
    """`make run`'s table (model x benchmark x template), from first_run.json: the run's results.json as recorded."""
    from tooluse_agents.eval.table import table_markdown

    name = "first_run.json"
    data = _load(name)
    if data is None:
        return _not_measured(name, "python -m experiments.record_first_run")
    run = data["recorded"]
    return (
        table_markdown(data)
        + f"\n`make run` from a fresh clone: {run['wall_s'] / 60:.1f} min, setup included "
        + f"({run['setup_s'] / 60:.1f} min of it); {run['machine']['cpu_model']}, {run['machine']['cpu_count']} CPUs; "
        + f"commit `{run['commit'][:7]}` (`benchmarks/results/{name}`).\n"
    )
