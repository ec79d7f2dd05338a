"""`report.md` and its figures for an evaluation run or a sweep (matplotlib, imported lazily)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tooluse_agents.runs.bfcl_scores import format_bfcl_table
from tooluse_agents.runs.failures import failure_banner
from tooluse_agents.runs.results import clean_caption, format_clean_table, format_table


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def accuracy_figure(summary: Mapping[str, Any], path: Path, title: str) -> None:
    """Bars of mean accuracy per category (and overall) with 95% CI whiskers and per-seed dots."""
    plt = _pyplot()
    rows = [*summary["categories"].items(), ("overall", summary["overall"])]
    fig, ax = plt.subplots(figsize=(1.4 * len(rows) + 2, 3.6))
    for x, (name, row) in enumerate(rows):
        mean = 100 * (row["mean"] or 0.0)
        err = 100 * row["ci95"] if row["ci95"] is not None else 0.0
        ax.bar(x, mean, color="#4C72B0" if name != "overall" else "#DD8452", yerr=err, capsize=4)
        seeds = [100 * v for v in row["per_seed"].values()]
        ax.scatter([x] * len(seeds), seeds, color="black", s=12, zorder=3)
    ax.set_xticks(range(len(rows)), [name for name, _ in rows])
    ax.set_ylabel("accuracy (%)")
    ax.set_ylim(0, 105)
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def write_run_report(
    out: Path,
    summary: Mapping[str, Any],
    protocol: Mapping[str, Any],
    agent: Mapping[str, Any],
    sampling: Mapping[str, Any],
    notes: Sequence[str] = (),
) -> Path:
    """Write ``report.md`` and ``accuracy.png`` into a run folder (`notes`: paragraphs shown under the table)."""
    accuracy_figure(summary, out / "accuracy.png", f"{agent.get('name')} {agent.get('model', '')}".strip())
    card = {k: v for k, v in protocol.items() if k != "seed"}
    errors = {**summary["agent_errors"]}
    banner = failure_banner(summary)
    lines = [
        f"# Evaluation: {agent.get('name')} {agent.get('model', '')}".rstrip(),
        "",
        *([f"**{banner}**", ""] if banner else []),
        f"{summary['episodes']} episodes, seeds {summary['seeds']}. Accuracy in %, overall = unweighted mean of the "
        "categories; 95% CI is Student's t across seeds.",
        "",
        format_table(summary),
        "",
        *(line for note in notes for line in (note, "")),
        "![accuracy](accuracy.png)",
        "",
        *bfcl_scores_section(summary),
        *known_issues_section(summary),
        "## Failures",
        "",
        f"- checker verdicts: {json.dumps(summary['checker_errors'])}",
        f"- agent errors (episode cut short): {json.dumps(errors) if errors else 'none'}",
        f"- tokens: {json.dumps(summary['tokens'])}",
        "",
        "## Protocol card",
        "",
        "```json",
        json.dumps(card, indent=2),
        "```",
        "",
        "## Agent and sampling",
        "",
        "```json",
        json.dumps({"agent": agent, "sampling": sampling}, indent=2),
        "```",
        "",
    ]
    path = out / "report.md"
    path.write_text("\n".join(lines))
    return path


def bfcl_scores_section(summary: Mapping[str, Any]) -> list[str]:
    """Report lines for a BFCL run: BFCL's summary scores, computed by its score tables' formulas."""
    if not summary.get("bfcl_scores"):
        return []
    return [
        "## BFCL summary scores",
        "",
        "As BFCL's score tables compute them (bfcl-eval's `eval_runner_helper.py`), over the categories this run "
        "played; a score whose formula needs a category the run lacks is not given.",
        "",
        format_bfcl_table(summary),
        "",
    ]


def known_issues_section(summary: Mapping[str, Any]) -> list[str]:
    """Report lines for a BFCL run: official vs clean-subset accuracy, and the run's known-issue tasks."""
    clean = summary.get("clean")
    if not clean:
        return []
    from tooluse_gym.tasks.known_issues import load_known_issues

    registry = load_known_issues()
    lines = ["## Official score and clean subset", "", clean_caption(summary), "", format_clean_table(summary), ""]
    if clean["excluded_tasks"]:
        lines += ["| task | issue | source |", "|---|---|---|"]
        for task_id in clean["excluded_tasks"]:
            entry = registry.get(task_id)
            kind, source = (entry.kind, entry.source) if entry else ("(not in the current registry)", "-")
            lines.append(f"| {task_id} | {kind} | {source} |")
        lines.append("")
    return lines


def sensitivity_figure(rows: Sequence[Mapping[str, Any]], path: Path) -> None:
    """Horizontal bars: the spread of overall accuracy each knob causes."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6, 0.5 * len(rows) + 1.2))
    names = [r["knob"] for r in rows]
    ax.barh(range(len(rows)), [100 * r["spread"] for r in rows], color="#55A868")
    ax.set_yticks(range(len(rows)), names)
    ax.set_xlabel("spread of overall accuracy (points)")
    ax.invert_yaxis()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
