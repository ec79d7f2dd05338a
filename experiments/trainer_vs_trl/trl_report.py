"""Study A's report (issue 40): every pre-registered figure and rule, with TRL's GRPOTrainer as the reference.

`build_report` is `experiments.framework.report.build_report` on this study's pre-registration,
whose reference arm is ``trl`` (`Prereg.reference`): time to T50 and T75 by the v2 rules, the
speed-up t_trl / t_arm per seed with its geometric mean, the no-loss rule (our arm's final
against TRL's, exact McNemar) and the GPU-scale projection, all against TRL; the learned rule
for every arm (``verdicts.learned_by_arm``). To that it adds what the pre-registration lists as
also reported, per seed and arm (``descriptive``):

- seconds per optimizer step: median, quartiles and IQR over the run's steps;
- generated tokens per second of rollout time (the rollout function's time for TRL), the
  rollout / update / sync split and the rollout's share;
- completions generated and used, training and evaluation seconds;

and, per seed, each of our arms over TRL (``ratios_to_trl``): median step seconds and generated
tokens per second (ours / TRL's), the final held-out reward's difference (ours - TRL's), beside the
speed-up to each target. Per the pre-registration, an arm that does not learn makes its speed-up
ratios undefined: the speed-up verdict of such a pair reads ``undefined`` whatever its ratios say.
The pre-registration's ``differences`` (what could not be made equal) and the pilot that fixed
TRL's backend (``pilot.json`` beside the results, if any) are carried into the report.
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from experiments.framework import report as efficiency_report
from experiments.framework.figures import heading, num, target_names, time_label, verdict_lines
from experiments.framework.report import NOT_MET, build_report
from experiments.framework.study import Prereg

UNDEFINED = "undefined (an arm did not learn)"
PILOT = "pilot.json"


def quartiles(values: Sequence[float]) -> dict[str, Any]:
    """Median, first and third quartiles (inclusive method) and IQR; None for an empty list."""
    if not values:
        return {"n": 0, "median": None, "q1": None, "q3": None, "iqr": None}
    if len(values) == 1:
        q1 = q3 = float(values[0])
    else:
        q1, _, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return {"n": len(values), "median": statistics.median(values), "q1": q1, "q3": q3, "iqr": q3 - q1}


def step_seconds(result: Mapping[str, Any]) -> list[float]:
    """Each step's training seconds from a result's cumulative ``per_step.train_s``."""
    ends = [float(t) for t in result["per_step"]["train_s"] if t is not None]
    return [b - a for a, b in zip([0.0, *ends], ends, strict=False)]


def descriptive(result: Mapping[str, Any]) -> dict[str, Any]:
    """The pre-registration's descriptive figures of one result (module docstring)."""
    totals = result["totals"]
    split = totals["time_split_s"]
    spent = sum(split.values())
    gen = totals["generated_tokens"]
    return {
        "sec_per_step": quartiles(step_seconds(result)),
        "generated_tokens_per_s": gen / split["rollout"] if gen and split["rollout"] > 0 else None,
        "time_split_s": split,
        "rollout_share": split["rollout"] / spent if spent > 0 else None,
        "completions_generated": totals["rollouts_generated"],
        "completions_used": totals["rollouts_used"],
        "steps": totals["steps"],
        "train_s": totals["train_s"],
        "eval_s": totals["eval_s"],
        "final": result["curve"][-1]["reward"],
    }


def _ratio(ours: float | None, theirs: float | None) -> float | None:
    return ours / theirs if ours is not None and theirs else None


def ratios_to_trl(ours: Mapping[int, dict], trl: Mapping[int, dict], arm_entry: Mapping[str, Any], targets) -> dict:
    """Per seed with both: our arm's figures over TRL's (module docstring)."""
    out = {}
    for seed in sorted(set(ours) & set(trl)):
        a, t = ours[seed], trl[seed]
        out[seed] = {
            "sec_per_step_median": _ratio(a["sec_per_step"]["median"], t["sec_per_step"]["median"]),
            "generated_tokens_per_s": _ratio(a["generated_tokens_per_s"], t["generated_tokens_per_s"]),
            "final_minus_trl": a["final"] - t["final"],
            **{
                f"speedup_{name}": arm_entry[f"speedup_{name}"]["per_seed"].get(seed, {}).get("label")
                for name in targets
            },
        }
    return out


def _undefined_speedups(report: dict[str, Any], ref: str) -> None:
    """An arm that did not learn (the learned rule not met) makes its speed-up ratios undefined."""
    learned = report["verdicts"].get("learned_by_arm", {})
    failed = {arm for arm, v in learned.items() if v["status"] == NOT_MET}
    for arm, v in report["verdicts"]["speedup"].items():
        if failed & {arm, ref}:
            v["status"] = UNDEFINED
            v["did_not_learn"] = sorted(failed & {arm, ref})


def build(prereg: Prereg, folder: Path) -> dict[str, Any]:
    """The report's JSON (module docstring) from the result files in `folder`."""
    report = build_report(prereg, folder)
    ref = prereg.reference
    results = {
        key: json.loads((folder / f"{key}.json").read_text(encoding="utf-8")) for key in report["results"]
    }  # the results build_report counted, by name (seed{S}_{arm})
    desc: dict[str, dict[int, dict]] = {arm: {} for arm in prereg.arms}
    for result in results.values():
        desc[result["arm"]][result["seed"]] = descriptive(result)
    report["reference"] = ref
    report["descriptive"] = desc
    report["ratios_to_trl"] = {
        arm: ratios_to_trl(desc[arm], desc[ref], report["arms"][arm], prereg.targets)
        for arm in prereg.arms
        if arm != ref
    }
    report["trl"] = {
        f"seed{r['seed']}": {k: r["trl"].get(k) for k in ("backend", "versions", "stopped_by", "grpo_config")}
        for r in results.values()
        if r["arm"] == ref and "trl" in r
    }
    pilot = folder / PILOT
    report["pilot"] = json.loads(pilot.read_text(encoding="utf-8")) if pilot.is_file() else None
    report["differences"] = list(prereg.data.get("differences") or [])
    _undefined_speedups(report, ref)
    return report


def markdown(report: Mapping[str, Any], json_path: Path, plot_path: Path) -> str:
    """A short summary: the verdicts, one row per arm and seed, our arms over TRL, the differences, the pilot."""
    ref = report["reference"]
    targets = target_names(report)
    title = "Our GRPO trainer against TRL's GRPOTrainer (study A of issue 40, pre-registered)"
    lines = [
        *heading(report, title, json_path, plot_path, note=f"; reference arm {ref}"),
        "",
        "## Verdicts",
        "",
    ]
    for arm, v in (report["verdicts"].get("learned_by_arm") or {ref: report["verdicts"]["learned"]}).items():
        lines.append(f"- learned ({arm}, every seed): **{v['status']}**")
    lines += verdict_lines(report, versus=f" vs {ref}")
    header = ["arm", "seed", "start", "final", "p vs start", f"p vs {ref}", *[f"t({t}) s" for t in targets]]
    header += ["s/step median [IQR]", "gen tok/s", "rollout share", "steps", "train s", "eval s"]
    lines += ["", "## Per arm and seed", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for arm, data in report["arms"].items():
        for seed, e in data["per_seed"].items():
            d = report["descriptive"][arm][str(seed)]  # JSON keys, as written
            q = d["sec_per_step"]
            times = [time_label(e, t) for t in targets]
            row = [arm, str(seed), num(e["start"]), num(e["final"]), num(e["mcnemar_p_vs_start"], ".2g")]
            row += [num(e[f"mcnemar_p_vs_{ref}"], ".2g"), *times]
            row += [f"{num(q['median'], '.1f')} [{num(q['iqr'], '.1f')}]", num(d["generated_tokens_per_s"], ".1f")]
            row += [
                num(d["rollout_share"], ".2f"),
                str(d["steps"]),
                num(d["train_s"], ".0f"),
                num(d["eval_s"], ".0f"),
            ]
            lines.append("| " + " | ".join(row) + " |")
    header = ["arm", "seed", *[f"speed-up {t}" for t in targets], "s/step ours/TRL", "gen tok/s ours/TRL"]
    header += ["final ours - TRL"]
    lines += ["", f"## Our arms over {ref}", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for arm, per_seed in report["ratios_to_trl"].items():
        for seed, r in per_seed.items():
            row = [arm, str(seed), *[str(r[f"speedup_{t}"]) for t in targets]]
            row += [num(r["sec_per_step_median"], ".2f"), num(r["generated_tokens_per_s"], ".2f")]
            row += [num(r["final_minus_trl"], "+.3f")]
            lines.append("| " + " | ".join(row) + " |")
    pilot = report.get("pilot")
    if pilot:
        lines += ["", "## The backend pilot (not counted)", ""]
        for a in pilot["attempts"]:
            err = a["error"] or {}
            what = (
                f"median {a['median_step_s']:.1f} s a step over {a['steps_done']} steps"
                if a["completed"]
                else f"failed ({err.get('type')}: {str(err.get('message'))[:200]})"
            )
            lines.append(f"- {a['backend']}: {what}")
        lines.append(f"- chosen: **{pilot['chosen']}**{' (a --short pilot)' if pilot.get('short') else ''}")
    lines += ["", "## What could not be made equal (pre-registered)", "", *[f"- {d}" for d in report["differences"]]]
    if report["notes"]:
        lines += ["", "## Notes", "", *[f"- {n}" for n in report["notes"]]]
    return "\n".join(lines) + "\n"


def write_report(prereg: Prereg, folder: Path, json_path: Path, md_path: Path, plot_path: Path) -> dict[str, Any]:
    """Build the report and write its JSON, its markdown summary and its plot (`efficiency_figures.plot`)."""
    return efficiency_report.write_report(prereg, folder, json_path, md_path, plot_path, build=build, summary=markdown)
