"""The pre-registered GRPO studies' headline rows and summaries, from their reports in ``benchmarks/results/``.

Three studies share one report schema (`experiments.efficiency_report.build_report`): the multi-turn
v2 efficiency study, study B (single-turn efficiency) and study A (our trainer against TRL's). Each
`Study` names its report, its title, its reference arm's label, its markdown summary (the report's
own, so the page and ``benchmarks/results/*.md`` say the same) and the command that writes it.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

from pages_common import DOCS, RESULTS, _load, _not_measured

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
    "python -m experiments.efficiency_v2 report",
    "experiments.efficiency_figures:markdown",
    "grpo-efficiency-v2.png",
)
SINGLE_TURN = Study(
    "grpo_efficiency_single_turn.json",
    "GRPO efficiency on single-turn tasks, study B",
    "python -m experiments.efficiency_single_turn report",
    "experiments.single_turn_report:markdown",
    "grpo-efficiency-single-turn.png",
)
TRL = Study(
    "trainer_vs_trl.json",
    "Our trainer against TRL's GRPOTrainer, study A",
    "python -m experiments.trainer_vs_trl report",
    "experiments.trl_report:markdown",
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
