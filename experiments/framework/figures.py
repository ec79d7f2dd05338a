"""The v2 efficiency study's figure and markdown summary, drawn from its report (`efficiency_report`).

The figure has two panels: held-out reward against training time (rollout + update + sync;
evaluations not counted), and against the training step (matched steps). One colour per arm,
one line style per seed, the targets as horizontal lines.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from experiments.framework.provenance import shown

COLORS = ("#888888", "#1f77b4", "#d62728", "#2ca02c", "#9467bd")
STYLES = ("-", "--", ":", "-.")


def plot(report: Mapping[str, Any], path: Path) -> None:
    """Held-out reward per arm and seed, against training time and against step."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (by_time, by_step) = plt.subplots(1, 2, figsize=(12, 4.4))
    seeds = report["seeds"]["preregistered"]
    for i, (arm, data) in enumerate(report["arms"].items()):
        for seed, entry in data["per_seed"].items():
            curve = entry["curve"]
            style = STYLES[seeds.index(int(seed)) % len(STYLES)] if int(seed) in seeds else "-"
            label = f"{arm} seed {seed}"
            color = COLORS[i % len(COLORS)]
            by_time.plot(
                [p["train_s"] / 60 for p in curve],
                [p["reward"] for p in curve],
                marker="o",
                ms=3,
                ls=style,
                color=color,
                label=label,
            )
            by_step.plot(
                [p["step"] for p in curve], [p["reward"] for p in curve], marker="o", ms=3, ls=style, color=color
            )
    targets = report["targets"]
    for side in (by_time, by_step):
        side.axhline(targets["start"], color="black", lw=0.8, ls=":")
        for name, level in targets.items():
            if name not in ("start", "gain_ref", "primary"):
                side.axhline(level, color="black", lw=1.0 if name == targets["primary"] else 0.6, ls="--")
                side.annotate(
                    name, (1.0, level), xycoords=("axes fraction", "data"), fontsize=8, va="bottom", ha="right"
                )
        side.spines[["top", "right"]].set_visible(False)
        side.set_ylabel("held-out reward (greedy)")
    for budget in report["budgets_run_s"] or [report["budget_s"]]:
        by_time.axvline(budget / 60, color="black", lw=0.6, ls=":")
    by_time.set_xlabel("training time (min; rollout + update + sync)")
    by_step.set_xlabel("training step")
    if by_time.get_legend_handles_labels()[0]:
        by_time.legend(frameon=False, fontsize=7, ncol=2, handlelength=3.5)
    verdict = report["verdicts"]["speedup"]
    title = "; ".join(f"{arm}: {v['geometric_mean']} ({v['status']})" for arm, v in verdict.items())
    fig.suptitle(f"speed-up to {targets['primary']} (geometric mean over seeds): {title}", fontsize=10)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def num(value: Any, fmt: str = ".3f") -> str:
    """A number for a table ('n/a' for None)."""
    return "n/a" if value is None else format(value, fmt)


def time_label(entry: Mapping[str, Any], target: str) -> str:
    """The time to a target of a per-seed entry, or '>c' when censored at c."""
    t = entry[f"time_to_{target}_s"]
    return f"{t:.0f}" if t is not None else f">{entry[f'time_to_{target}_censored_at']:.0f}"


def target_names(report: Mapping[str, Any]) -> list[str]:
    """The report's targets to reach (T50, T75)."""
    return [k for k in report["targets"] if k not in ("start", "gain_ref", "primary")]


def heading(report: Mapping[str, Any], title: str, json_path: Path, plot_path: Path, note: str = "") -> list[str]:
    """A summary's title and its paragraph: the pre-registration, seeds, budget, targets (and `note`), files."""
    pr = report["prereg"]
    return [
        f"# {title}",
        "",
        f"Pre-registration: `{pr['path']}` (commit {pr['commit'] or 'none'}). Seeds with every arm: "
        f"{report['seeds']['complete']} of {report['seeds']['preregistered']}. Budget {report['budget_s']:.0f} "
        f"training seconds; targets "
        + ", ".join(f"{t} = {report['targets'][t]:.3f}" for t in target_names(report))
        + f" (primary {report['targets']['primary']}{note}). Full report: `{shown(json_path)}`; figure: "
        f"`{shown(plot_path)}`.",
    ]


def verdict_lines(report: Mapping[str, Any], versus: str = "") -> list[str]:
    """One line per compared arm: its speed-up verdict with the seeds' ratios, and its no-loss verdict."""
    lines = []
    for arm, v in report["verdicts"]["speedup"].items():
        nl = report["verdicts"]["no_loss"][arm]
        lines.append(
            f"- {arm}{versus}: speed-up to {v['target']} **{v['status']}** (geometric mean {v['geometric_mean']}; "
            + ", ".join(f"seed {s}: {label}" for s, label in v["per_seed"].items())
            + f"); no loss **{nl['status']}**"
        )
    return lines


def markdown(
    report: Mapping[str, Any],
    json_path: Path,
    plot_path: Path,
    title: str = "GRPO efficiency study v2 (pre-registered)",
    note: str = "",
    extra: Sequence[str] = (),
) -> str:
    """A short summary for the README to link: the criteria's verdicts, one row per arm and seed, the
    projection, then a study's `extra` lines, then the notes."""
    targets = target_names(report)
    lines = [
        *heading(report, title, json_path, plot_path, note),
        "",
        "## Verdicts",
        "",
        f"- learned (vanilla, every seed): **{report['verdicts']['learned']['status']}**",
    ]
    lines += verdict_lines(report)
    header = [
        "arm",
        "seed",
        "start",
        "final",
        "p vs start",
        "p vs vanilla",
        "AUC",
        *[f"t({t}) s" for t in targets],
        "train s",
        "steps",
    ]
    lines += ["", "## Per arm and seed", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for arm, data in report["arms"].items():
        for seed, e in data["per_seed"].items():
            row = [
                arm,
                str(seed),
                num(e["start"]),
                num(e["final"]),
                num(e["mcnemar_p_vs_start"], ".2g"),
                num(e["mcnemar_p_vs_vanilla"], ".2g"),
                num(e["auc"]),
                *[time_label(e, t) for t in targets],
                num(e["train_s"], ".0f"),
                str(e["steps"]),
            ]
            lines.append("| " + " | ".join(row) + " |")
    lines += ["", "## Projection to GPU-scale costs (a projection, not a measurement)", ""]
    for arm, data in report["arms"].items():
        proj = data.get("projection")
        if proj:
            parts = [f"r={k[2:]}: {v['geometric_mean']['label']}" for k, v in proj.items() if k.startswith("r=")]
            lines.append(f"- {arm}: relative cost to reach {proj['target']} vs vanilla, " + "; ".join(parts))
    lines += extra
    if report["notes"]:
        lines += ["", "## Notes", "", *[f"- {n}" for n in report["notes"]]]
    return "\n".join(lines) + "\n"
