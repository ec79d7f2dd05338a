"""Every study's tables and summaries, from its result file in ``benchmarks/results/`` (`gen_pages` fills them).

One renderer for the studies, reading each result's envelope (`experiments.framework.report`): the
time-to-accuracy studies (multi-turn v2, study B single-turn, study A against TRL) share one report
schema, so one `Study` entry each gives their headline rows and summaries; the cell studies (seed
stability, format grid) and protocol sensitivity have their tables here too; the superseded v1 study
keeps its table for the history page. The benchmarks' tables are in `benchmark_pages`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pages_common import DOCS, RESULTS, _load, _not_measured, _table

ARM_LABELS = {
    "paper": "the paper's recipe (all-correct filter k = 1, max-variance 4 of 8)",
    "selective": "selective (screen 4, two-sided filter, max-variance 4 of 8)",
    "trl": "TRL's GRPOTrainer",
}


@dataclass(frozen=True)
class Study:
    report: str  # the report's file name under benchmarks/results/
    title: str  # the headline rows' prefix
    command: str  # what writes the report
    summary: str  # "module:function" giving the report's markdown (report, json_path, plot_path)
    plot: str  # the figure's file name under docs/


V2 = Study(
    "grpo_efficiency_v2.json",
    "GRPO efficiency v2",
    "python -m experiments.efficiency_multi_turn report",
    "experiments.framework.figures:markdown",
    "grpo-efficiency-v2.png",
)
SINGLE_TURN = Study(
    "grpo_efficiency_single_turn.json",
    "GRPO efficiency on single-turn tasks, study B",
    "python -m experiments.efficiency_single_turn report",
    "experiments.efficiency_single_turn.report:markdown",
    "grpo-efficiency-single-turn.png",
)
TRL = Study(
    "trainer_vs_trl.json",
    "Our trainer against TRL's GRPOTrainer, study A",
    "python -m experiments.trainer_vs_trl report",
    "experiments.trainer_vs_trl.trl_report:markdown",
    "trainer-vs-trl.png",
)
STUDIES = (V2, SINGLE_TURN, TRL)


def _label(arm: str) -> str:
    return ARM_LABELS.get(arm, arm)


def study_rows(study: Study) -> list[list[str]]:
    """The headline rows: the reference arm learned or not, then each arm against the reference."""
    data = _load(study.report)
    if data is None:
        return [[f"{study.title} (pre-registered)", "not measured yet", "no verdict", f"`{study.report}`"]]
    seeds, verdicts = data["seeds"], data["verdicts"]
    ref = _reference(data)
    complete = seeds["complete"]
    done = f"{len(complete)} of {len(seeds['preregistered'])} seeds complete"
    done += f" (seed{'s' if len(complete) > 1 else ''} {', '.join(map(str, complete))})" if complete else ""
    by_arm = verdicts.get("learned_by_arm") or {ref: verdicts["learned"]}
    named = len(by_arm) > 1
    who = "every arm" if named else _label(ref)
    rows = [
        [
            f"{study.title} (pre-registered, {len(seeds['preregistered'])} seeds): {who} learns",
            f"{done}; held-out gain per seed " + "; ".join(_gains(arm, v, named) for arm, v in by_arm.items()),
            ", ".join((f"{arm}: " if named else "") + v["status"] for arm, v in by_arm.items()),
            f"`{study.report}`",
        ]
    ]
    for arm, v in verdicts["speedup"].items():
        per_seed = ", ".join(f"{x}" for x in v["per_seed"].values()) or "none yet"
        no_loss = verdicts["no_loss"][arm]
        delta = no_loss.get("mean_delta")
        rows.append(
            [
                f"{study.title}: {_label(arm)} against {_label(ref)}",
                f"{v['geometric_mean']} to {v['target']} (per seed {per_seed}); final minus {_label(ref)}'s "
                + ("n/a" if delta is None else f"{delta:+.3f}")
                + " (mean over seeds)",
                f"faster: {v['status']}; no loss: {no_loss['status']}",
                f"`{study.report}`",
            ]
        )
    return rows


def _gains(arm: str, learned: dict[str, Any], named: bool) -> str:
    gains = ", ".join(f"{v['gain']:+.3f} (p = {v['p']:.2g})" for v in learned["per_seed"].values()) or "none yet"
    return f"{arm} {gains}" if named else gains


def _reference(data: dict[str, Any]) -> str:
    """The arm the others are compared with: the one without a no-loss entry (`build_report` gives it none)."""
    return next(arm for arm, entry in data["arms"].items() if "no_loss" not in entry)


def study_summary(study: Study) -> str:
    """The report's own markdown summary, its headings demoted under the page's, and its figure."""
    data = _load(study.report)
    if data is None:
        return _not_measured(study.report, study.command)
    module, function = study.summary.split(":")
    markdown = getattr(importlib.import_module(module), function)
    plot = DOCS / study.plot
    text = markdown(data, RESULTS / study.report, plot)
    lines = [("##" + line) if line.startswith("#") else line for line in text.splitlines()[1:]]
    body = "\n".join(lines).strip("\n") + "\n"
    if plot.exists():
        body += f"\n![{study.title}]({study.plot})\n"
    return body


def headline_rows() -> list[list[str]]:
    """Every study's rows, in `STUDIES` order (the multi-turn study first)."""
    return [row for study in STUDIES for row in study_rows(study)]


# --- the first efficiency study (v1, superseded: the history page) ---------------------------------


def _min(seconds: float) -> str:
    return f"{seconds / 60:.1f}"


def _curve(arm: dict[str, Any]) -> str:
    return ", ".join(f"{p['train_s']:.0f}: {p['reward']:.3f}".replace("0.", ".", 1) for p in arm["curve"])


def efficiency_table(name: str) -> str:
    data = _load(name)
    if data is None:
        return _not_measured(name, "python -m experiments.history.grpo_efficiency --plot")
    arms = ("vanilla", "efficient")
    v, e = (data[a] for a in arms)

    def skipped(arm: dict[str, Any]) -> str:
        per = arm.get("prompts_per_epoch") or {}
        if not per:
            return str(arm["prompts_skipped"])
        return (
            " / ".join(str(per[k]["skipped"]) for k in sorted(per, key=int))
            + f" of {next(iter(per.values()))['active'] + next(iter(per.values()))['skipped']}"
        )

    def row(label: str, fn: Callable[[dict[str, Any]], str]) -> list[str]:
        return [label, fn(v), fn(e)]

    target = data["target"]
    rows = [
        row("steps (epochs started)", lambda a: f"{a['steps']} ({a['epochs']})"),
        row(
            "training time: rollout / update / sync (min)",
            lambda a: " / ".join(_min(a["time_split_s"][k]) for k in ("rollout", "update", "sync")),
        ),
        row("rollouts generated / used in updates", lambda a: f"{a['rollouts_generated']:,} / {a['rollouts_used']:,}"),
        row("prompts skipped by the filter, per epoch", skipped),
        row("update tokens with zero advantage", lambda a: f"{a['zero_advantage_update_frac']:.0%}"),
        row("train reward (mean over steps)", lambda a: f"{a['train_reward_mean']:.3f}"),
        row(
            "held-out reward, start -> final (binomial SE)",
            lambda a: f"{a['heldout_start']:.3f} -> **{a['heldout_final']:.3f}** ({a['heldout_se']:.3f})",
        ),
        row(
            "held-out prompts gained / lost",
            lambda a: f"{a['heldout_paired']['gained']} / {a['heldout_paired']['lost']}",
        ),
        row("held-out curve (training s: reward)", _curve),
        row(
            f"training time to the target ({target:.3f})",
            lambda a: "not reached" if a.get("time_to_target_s") is None else f"{a['time_to_target_s']:,.0f} s",
        ),
    ]
    checks = ", ".join(f"`{k}`: {'met' if ok else 'not met'}" for k, ok in data["checks"].items())
    speedup = data["speedup_to_target"]
    return (
        _table(["", data["labels"]["vanilla"], data["labels"]["efficient"]], rows)
        + f"\nFrom `benchmarks/results/{name}`: {data['heldout_prompts']} held-out prompts, "
        + f"budget {data['budget_s']:,.0f} s of training per arm, evaluations every {data['eval_every_s']:.0f} s. "
        + f"Vanilla's gain {data['vanilla_gain']:+.3f} (unpaired SE {data['vanilla_gain_se']:.3f}, "
        + f"paired SE {data['vanilla_gain_paired_se']:.3f}); "
        + f"speed-up to target: {'null (the gate was not passed)' if speedup is None else f'{speedup:.2f}x'}. "
        + f"Checks: {checks}.\n"
    )


def status_lines() -> str:
    """The docs home page's "where things stand": the pre-registered study's verdicts, one line each."""
    name = "grpo_efficiency_v2.json"
    data = _load(name)
    if data is None:
        command = "python -m experiments.efficiency_multi_turn report"
        return "- GRPO efficiency v2 (pre-registered): " + _not_measured(name, command)
    seeds, verdicts, targets = data["seeds"], data["verdicts"], data["targets"]
    learned = verdicts["learned"]
    gains = ", ".join(f"{v['gain']:+.3f} (p = {v['p']:.2g})" for v in learned["per_seed"].values())
    lines = [
        f"- GRPO from the weak warm-start learns (pre-registered study v2, {len(seeds['preregistered'])} seeds, "
        f"{data['budget_s'] / 60:.0f} min of training per run): vanilla GRPO's held-out reward from "
        f"{targets['start']:.3f}, gain per seed {gains} (seeds {', '.join(map(str, seeds['complete'])) or 'none'} "
        f"complete); verdict: {learned['status']} (`{name}`)."
    ]
    for arm, v in verdicts["speedup"].items():
        target, label = v["target"], ARM_LABELS.get(arm, arm)
        no_loss = verdicts["no_loss"][arm]
        per_seed = ", ".join(v["per_seed"].values())
        lines.append(
            f"- {label[0].upper()}{label[1:]}: reached {target} "
            f"(held-out {targets[target]:.3f}) {v['geometric_mean']} as fast as vanilla (geometric mean; per seed "
            f"{per_seed}), final minus vanilla's {no_loss['mean_delta']:+.3f} (mean over seeds); "
            f"faster: {v['status']}, no loss: {no_loss['status']}."
        )
    lines.append(
        "- T50: the held-out reward the study fixed in advance as its primary target; *met* / *not met*: the "
        "verdict's pre-registered rule held / did not (faster: sooner to the target in every seed; no loss and "
        "learned: exact McNemar tests on the same held-out prompts)."
    )
    return "\n".join(lines) + "\n"


HEADLINE_TERMS = (
    "T50 and T75: held-out rewards a study fixed before its first run as its targets, the starting model's "
    "reward plus 50% and 75% of a reference gain (T50 the primary); *x to T50* is how many times sooner, in "
    "training seconds, an arm first reached it than the arm it is compared with. Study A: our trainer against "
    "TRL's GRPOTrainer; study B: GRPO efficiency on single-turn tasks. *met* / *not met*: the verdict's "
    "pre-registered rule held / did not (faster: sooner to the target in every seed; learned and no loss: exact "
    "McNemar tests on the same held-out prompts); *undefined*: the rule cannot be applied (an arm never reached "
    "the target)."
)
"""What the at-a-glance table's terms mean, printed under it (they are used there before the sections define them)."""


def headline_table() -> str:
    """The results at a glance, with its terms defined; superseded studies are on the history page, not here."""
    rows = headline_rows() + seed_stability_rows() + format_grid_rows()
    return _table(["what", "result", "verdict", "file"], rows) + "\n" + HEADLINE_TERMS + "\n"


# --- the cell studies ------------------------------------------------------------------------------


def seed_stability_table() -> str:
    """Per cell: each seed's accuracy, spread and std with intervals; the pre-registered verdict."""
    name = "single_turn_seed_stability.json"
    data = _load(name)
    if data is None:
        return _not_measured(name, "python -m experiments.seed_stability --commit")

    def pts(x: float) -> str:
        return f"{100 * x:.1f}"

    rows = []
    for cell_name, c in data["cells"].items():
        rows.append(
            [
                f"`{cell_name}`",
                c["model"],
                c["turns"],
                str(c["tasks"]),
                " / ".join(pts(v) for v in c["per_seed"].values()),
                pts(c["mean"]),
                f"{pts(c['spread'])} [{pts(c['spread_ci95'][0])}, {pts(c['spread_ci95'][1])}]",
                f"{pts(c['std'])} [{pts(c['std_ci95'][0])}, {pts(c['std_ci95'][1])}]",
            ]
        )
    header = ["cell", "model", "turns", "tasks", "accuracy per seed", "mean", "spread [95% CI]", "std [95% CI]"]
    f = data["finding"]
    verdict = f"**{f['verdict']}**"
    if "ci95" in f:
        verdict += (
            f": multi std - single std = {pts(f['std_difference'])} points, 95% CI "
            f"[{pts(f['ci95'][0])}, {pts(f['ci95'][1])}]"
        )
    return (
        _table(header, rows)
        + f"\nPre-registered verdict ({data['prereg']['path']}): {verdict}. Points; seeds "
        + f"{', '.join(map(str, data['seeds']))}; task-bootstrap intervals (`benchmarks/results/{name}`).\n"
    )


def seed_stability_rows() -> list[list[str]]:
    """The README's results-at-a-glance row of the seed-stability study."""
    data = _load("single_turn_seed_stability.json")
    if data is None or not data.get("complete"):
        return []
    c, f = data["cells"], data["finding"]
    multi, single = c[f["multi"]], c[f["single"]]
    result = (
        f"warm-start, 60 curriculum tasks each, {len(data['seeds'])} seeds: multi-turn spread "
        f"{100 * multi['spread']:.1f} points (std {100 * multi['std']:.1f}), single-turn spread "
        f"{100 * single['spread']:.1f} (std {100 * single['std']:.1f}); difference of stds "
        f"{100 * f['std_difference']:+.1f}, 95% CI [{100 * f['ci95'][0]:+.1f}, {100 * f['ci95'][1]:+.1f}]"
    )
    what = "Seed stability (pre-registered): does single-turn move less with the seed than multi-turn?"
    return [[what, result, f["verdict"], "`single_turn_seed_stability.json`"]]


def format_grid_table() -> str:
    """Per cell: BFCL's summary over the prompt formats, the best and worst configuration, the verdict."""
    name = "single_turn_format_grid.json"
    data = _load(name)
    if data is None:
        return _not_measured(name, "python -m experiments.format_grid --commit")

    def pts(x: float) -> str:
        return f"{100 * x:.1f}"

    def short(config: str) -> str:
        return "`" + config.replace("&prompt_fmt=plaintext", "").replace("&style=classic", "") + "`"

    rows = []
    for cell_name, c in data["cells"].items():
        acc = c["accuracy"]
        best, worst = max(acc, key=acc.__getitem__), min(acc, key=acc.__getitem__)
        rows.append(
            [
                f"`{cell_name}`",
                c["model"],
                c["turns"],
                f"{c['configurations']} x {c['tasks']}",
                pts(acc[c["base"]]),
                f"{pts(acc[best])} {short(best)}",
                f"{pts(acc[worst])} {short(worst)}",
                f"{pts(c['std'])} [{pts(c['std_ci95'][0])}, {pts(c['std_ci95'][1])}]",
                f"{pts(c['max_minus_min'])} [{pts(c['max_minus_min_ci95'][0])}, {pts(c['max_minus_min_ci95'][1])}]",
                f"{len(c['differing'])} / {c['configurations'] - 1}",
                f"**{c['verdict']}**",
            ]
        )
    header = [
        "cell",
        "model",
        "turns",
        "configurations x tasks",
        "BFCL default (%)",
        "best (%)",
        "worst (%)",
        "std [95% CI]",
        "max - min [95% CI]",
        "differ from default (Holm)",
        "verdict",
    ]
    state = "" if data["complete"] else " Not every pre-registered cell has finished."
    return (
        _table(header, rows)
        + f"\nPre-registered in {data['prereg']['path']}: greedy, one episode per task and configuration; std "
        + "(sample, as bfcl_eval's format_sensitivity_runner) and max - min over configurations in points, "
        + "task-bootstrap intervals; exact McNemar against BFCL's default configuration, Holm-adjusted. "
        + f"Every configuration's accuracy is in `benchmarks/results/{name}`.{state}\n"
    )


def format_grid_rows() -> list[list[str]]:
    """The README's results-at-a-glance row of the format-grid study."""
    data = _load("single_turn_format_grid.json")
    if data is None or not data.get("complete"):
        return []
    parts = [
        f"{name} {100 * c['max_minus_min']:.0f} points max - min ({c['verdict']})" for name, c in data["cells"].items()
    ]
    verdicts = sorted({c["verdict"] for c in data["cells"].values()})
    what = "BFCL's format grid (pre-registered): how far do its 26 prompt formats move our models?"
    return [[what, "; ".join(parts), ", ".join(verdicts), "`single_turn_format_grid.json`"]]


# --- protocol sensitivity ----------------------------------------------------------------------------


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


def _change_label(row: Mapping[str, Any]) -> str:
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
                _change_label(row),
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
