"""Study B's report (issue 40): the v2 rules against the pilot's targets, the time split beside the
multi-turn study's, and the speed-up beside the paper's 1.7x.

`build` is `experiments.framework.report.build_report` on the pre-registration with the targets
its pilot fixed (`experiments.efficiency_single_turn.pilot`): time to T50 and T75, the speed-up t_vanilla /
t_paper per seed with its geometric mean, no loss, learned (vanilla) and the GPU-scale projection,
by the v2 rules. To that it adds:

- ``targets_file``: the file that fixed the targets (path, commit, sha256; a smoke run's says so);
- ``pilot``: the pilot (``pilot.json`` beside the results), labelled a pilot and never counted: its
  start and final, the paired test, the gate, its curve, its time split and its times to the targets;
- ``time_split``: for this study and for the multi-turn v2 study (read from its report,
  ``benchmarks/results/grpo_efficiency_v2.json``), per arm of this study and seed: rollout, update
  and sync seconds, their shares of training time, seconds per step, and each arm's means over
  seeds (the pre-registration's question: does the update's larger share on short single-turn
  prompts let sub-sampling save more?);
- ``paper``: per arm and target, the geometric-mean speed-up, its ratio to the paper's 1.7x, and the
  multi-turn study's speed-up beside it: numbers, no test.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from experiments.efficiency_single_turn.pilot import PILOT, decide
from experiments.framework.figures import markdown as v2_markdown
from experiments.framework.figures import num, target_names
from experiments.framework.provenance import shown
from experiments.framework.report import build_report
from experiments.framework.study import Prereg
from experiments.framework.summary import seed_arm_stats
from tooluse_agents.eval import stats as st

PAPER_SPEEDUP = 1.7
"""The paper's speed-up to the same accuracy on single-turn data."""
SPLIT = ("rollout", "update", "sync")
TITLE = "GRPO efficiency on single-turn tasks (study B of issue 40, pre-registered)"


def _mean(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.fmean(present) if present else None


def split_row(entry: Mapping[str, Any]) -> dict[str, Any]:
    """One run's training time split (a report's per-seed entry): seconds, shares, seconds per step."""
    split = entry.get("time_split_s") or {}
    seconds = {k: float(split.get(k) or 0.0) for k in SPLIT}
    total = sum(seconds.values())
    return {
        **{f"{k}_s": seconds[k] for k in SPLIT},
        **{f"{k}_share": seconds[k] / total if total > 0 else None for k in SPLIT},
        "sec_per_step": entry.get("sec_per_step"),
    }


def time_split(arms: Mapping[str, Any], names: list[str]) -> dict[str, Any]:
    """Per arm of `names` and seed of a report's ``arms``: `split_row`, and the arm's means over seeds."""
    out: dict[str, Any] = {}
    for arm in names:
        if arm not in arms:
            continue
        rows = {str(seed): split_row(e) for seed, e in arms[arm]["per_seed"].items()}
        keys = [*(f"{k}_share" for k in SPLIT), "sec_per_step"]
        out[arm] = {"per_seed": rows, "mean": {k: _mean([r[k] for r in rows.values()]) for k in keys}}
    return out


def multi_turn(path: Path) -> dict[str, Any] | None:
    """The multi-turn v2 study's report (None when it does not exist)."""
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def against_paper(report: Mapping[str, Any], other: Mapping[str, Any] | None, ref: str) -> dict[str, Any]:
    """Per compared arm and target: the geometric-mean speed-up over the paper's 1.7x, and the multi-turn one."""
    out: dict[str, Any] = {}
    for arm, data in report["arms"].items():
        if arm == ref:
            continue
        out[arm] = {}
        for target in target_names(report):
            gm = data[f"speedup_{target}"]["geometric_mean"]
            over = st.Bounded(gm["value"] / PAPER_SPEEDUP if gm["value"] is not None else None, gm["kind"])
            theirs = ((other or {}).get("arms", {}).get(arm) or {}).get(f"speedup_{target}", {})
            out[arm][target] = {
                "speedup": gm,
                "paper": PAPER_SPEEDUP,
                "over_paper": {**over.to_dict(), "label": over.label("")},
                "multi_turn_v2": theirs.get("geometric_mean"),
            }
    return out


def pilot(prereg: Prereg, folder: Path) -> dict[str, Any] | None:
    """The pilot's numbers (module docstring), or None without a pilot result beside the results."""
    path, rule = folder / PILOT, prereg.pilot_rule
    if not path.is_file() or rule is None:
        return None
    result = json.loads(path.read_text(encoding="utf-8"))
    budget = float(result.get("budget_s") or prereg.budget_s)
    return {
        "label": result.get("label"),
        "counted": False,
        "result": shown(path),
        "arm": result["arm"],
        "seed": result["seed"],
        "short": result.get("short"),
        "same_prereg": result["prereg"]["sha256"] == prereg.sha256,
        **decide(rule, result).to_dict(rule),
        "curve": result["curve"],
        "stats_vs_study_targets": seed_arm_stats(result, budget, prereg.targets),
        "time_split": split_row(result["totals"]),
    }


def build(prereg: Prereg, folder: Path, targets: Mapping[str, Any], multi_turn_path: Path) -> dict[str, Any]:
    """The report's JSON (module docstring) from the result files in `folder`."""
    report = build_report(prereg, folder)
    other = multi_turn(multi_turn_path)
    arms = list(prereg.arms)
    report["targets_file"] = dict(targets)
    report["pilot"] = pilot(prereg, folder)
    report["time_split"] = {
        "single_turn": time_split(report["arms"], arms),
        "multi_turn_v2": time_split(other["arms"], arms) if other else None,
        "multi_turn_source": shown(multi_turn_path) if other else f"{shown(multi_turn_path)} (missing)",
    }
    report["paper"] = against_paper(report, other, prereg.reference)
    if targets.get("smoke"):
        report["notes"].append(f"smoke targets, not a pilot's: {targets['smoke']}")
    return report


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.0f}%"


def _split_lines(report: Mapping[str, Any]) -> list[str]:
    split = report["time_split"]
    header = ["study", "arm", "seed", "s/step", "rollout s", "update s", "sync s", "rollout", "update", "sync"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for study, arms in (("single-turn", split["single_turn"]), ("multi-turn v2", split["multi_turn_v2"] or {})):
        for arm, data in arms.items():
            for seed, r in data["per_seed"].items():
                row = [study, arm, seed, num(r["sec_per_step"], ".1f"), *(num(r[f"{k}_s"], ".0f") for k in SPLIT)]
                lines.append("| " + " | ".join(row + [_pct(r[f"{k}_share"]) for k in SPLIT]) + " |")
            m = data["mean"]
            row = [study, arm, "mean", num(m["sec_per_step"], ".1f"), "", "", ""]
            lines.append("| " + " | ".join(row + [_pct(m[f"{k}_share"]) for k in SPLIT]) + " |")
    return lines


def extra_lines(report: Mapping[str, Any]) -> list[str]:
    """The markdown this study adds to v2's summary: the pilot, the time split, the paper's 1.7x."""
    lines = ["", "## The pilot (not counted)", ""]
    tf, p = report["targets_file"], report["pilot"]
    if p:
        vs, gate = p["vs_start"], p["gate"]
        lines.append(
            f"- {p['arm']}, seed {p['seed']}: held-out {p['start']:.3f} -> {p['final']:.3f} (gained {vs['gained']}, "
            f"lost {vs['lost']}, exact McNemar p = {vs['p']:.2g}); gate **{'passed' if gate['passed'] else 'failed'}**"
            + "".join(f"; {why}" for why in gate["why_not"])
        )
    else:
        lines.append("- no pilot result beside the results")
    levels = ", ".join(f"{t} = {report['targets'][t]:.3f}" for t in target_names(report))
    if tf.get("smoke"):
        lines.append(f"- targets {levels}: smoke targets, not the study's: {tf['smoke']}")
    else:
        lines.append(f"- targets {levels}: `{tf['path']}` (commit {tf.get('commit') or 'none'})")
    other = report["time_split"]["multi_turn_source"]
    lines += ["", f"## Training time split, beside the multi-turn v2 study ({other})"]
    lines += ["", *_split_lines(report), "", "## Against the paper's 1.7x (a number, no test)", ""]
    for arm, per_target in report["paper"].items():
        for target, v in per_target.items():
            theirs = (v["multi_turn_v2"] or {}).get("label", "n/a")
            ours, over = v["speedup"]["label"], v["over_paper"]["label"]
            lines.append(
                f"- {arm} to {target}: {ours} (geometric mean over seeds) = {over} of the paper's {v['paper']:g}x; "
                f"multi-turn v2: {theirs}"
            )
    return lines


def markdown(report: Mapping[str, Any], json_path: Path, plot_path: Path) -> str:
    """v2's summary with this study's title and its additions (`extra_lines`)."""
    note = "; fixed by the pilot, not counted" if not report["targets_file"].get("smoke") else "; smoke targets"
    return v2_markdown(report, json_path, plot_path, title=TITLE, note=note, extra=extra_lines(report))
