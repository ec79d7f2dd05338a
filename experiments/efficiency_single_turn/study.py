"""Study B of issue 40: GRPO efficiency on single-turn tasks, vanilla against the paper's recipe, pre-registered.

Every choice is in ``benchmarks/preregistered/grpo_efficiency_single_turn_v1.yaml``
(`experiments.framework.study`), committed before the pilot and before any timed run; the targets are fixed
by a pilot run by the rule the file states (`experiments.efficiency_single_turn.pilot`).

    python -m experiments.efficiency_single_turn pilot --commit         # the pilot (1,800 training s): fixes T50/T75
    python -m experiments.efficiency_single_turn run --seed 0 --commit  # both arms of seed 0 (2 x 1,800 training s)
    python -m experiments.efficiency_single_turn report                 # the report from whatever results exist
    python -m experiments.efficiency_single_turn pilot --short --out /tmp/st; \\
        python -m experiments.efficiency_single_turn run --short --out /tmp/st && \\
        python -m experiments.efficiency_single_turn report --short --out /tmp/st   # the smoke run

**pilot** trains the pre-registered pilot (``pilot:``: vanilla, seed 100, not a study seed) with the
study's budget and evaluation schedule, as `experiments.framework.arms` trains an arm (its own start
evaluation), in ``runs/grpo-efficiency-single-turn/pilot``; its result (the same schema as a seed's)
goes to ``benchmarks/results/grpo_efficiency_single_turn/pilot.json``, labelled a pilot: no report
counts it. From it the pre-registered rule gives the targets and the gate (start in [0.10, 0.80],
the pilot learned). If the gate passes the pilot writes
``benchmarks/preregistered/grpo_efficiency_single_turn_v1_targets.yaml`` (the targets, the pilot's
result path and numbers, the gate); if not it writes nothing there, says why and exits 1: the study
then needs a v2 pre-registration. ``--commit`` commits the pilot's result and the targets file. A
pilot whose result exists is not run again (its rule is applied again); once the targets file
exists, the pilot refuses to run.

**run** refuses until the targets file exists and is committed; then it trains the two arms of one
seed exactly as the v2 study does (`experiments.framework.arms.run`: the arm order rotated by seed, the shared
start evaluation, one result per (seed, arm) in ``benchmarks/results/grpo_efficiency_single_turn/
seed{S}_{arm}.json``, committed alone with ``--commit``), each result recording the targets file
(path, commit, sha256).

**report** (`experiments.efficiency_single_turn.report`) writes ``benchmarks/results/
grpo_efficiency_single_turn.json``, ``.md`` and ``docs/grpo-efficiency-single-turn.png``: the v2
rules against the pilot's targets, the pilot (not counted), the rollout / update / sync split
beside the multi-turn v2 study's (``benchmarks/results/grpo_efficiency_v2.json``) and the speed-up
beside the paper's 1.7x, as a number.

**--short** runs the pipeline on a tiny setting (the single-turn curriculum files of the
pre-registration, 4 train and 4 held-out requests, 2 prompts a step, 48 tokens a message, a 45 s
budget, evaluations every 15 s, SmolLM2-135M as the start), everything under ``--out``: a smoke test,
not a result. Its pilot's gate may fail (45 s teach little); ``run --short`` then writes fixed smoke
targets under ``--out`` (`pilot_targets.SMOKE_TARGETS`) and says so.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from experiments.efficiency_single_turn import pilot as pilot_targets
from experiments.framework import arms
from experiments.framework.provenance import ROOT, shown, uncommitted
from experiments.framework.run import commit_file, dispatch, write_json
from experiments.framework.study import PilotRule, Prereg, PreregError, load

SHORT_OVERRIDES = (
    "tasks.limit=4",
    "heldout.limit=4",
    "rollout.max_tokens=48",
    "grpo.prompts_per_step=2",
    "save_every=1000000",
    "export_final=false",
    "policy.threads=1",
)
"""The smoke setting's overrides: the pre-registration's files and protocol, less of everything."""
PATHS = arms.StudyPaths(
    Path("runs/grpo-efficiency-single-turn"),
    Path("benchmarks/results/grpo_efficiency_single_turn"),
    Path("benchmarks/results/grpo_efficiency_single_turn.json"),
    Path("docs/grpo-efficiency-single-turn.png"),
    "grpo-efficiency-single-turn",
    SHORT_OVERRIDES,
)
PREREG = ROOT / "benchmarks" / "preregistered" / "grpo_efficiency_single_turn_v1.yaml"
MULTI_TURN = ROOT / "benchmarks" / "results" / "grpo_efficiency_v2.json"
"""The multi-turn study's report, whose time split the report sets beside this study's."""
PILOT_LABEL = "pilot: fixes the targets by the pre-registered rule; reported as a pilot, never counted"


def pilot_settings(settings: arms.Settings) -> arms.Settings:
    """The pilot's folders: ``RUNS/pilot`` and ``RESULTS/pilot.json``."""
    return dataclasses.replace(settings, run_name="pilot", result_name=pilot_targets.PILOT)


def targets_path(prereg: Prereg, settings: arms.Settings) -> Path:
    """The targets file: beside the pre-registration, or a smoke run's under ``--out``."""
    name = pilot_targets.targets_name(prereg)
    return settings.report.parent / name if settings.short else prereg.path.with_name(name)


def _rule(prereg: Prereg) -> PilotRule:
    if prereg.pilot_rule is None:
        raise PreregError(f"{shown(prereg.path)} fixes its targets itself: this driver runs a from-pilot study")
    return prereg.pilot_rule


def pilot(args: argparse.Namespace) -> int:
    """Train the pilot (or take its result), apply the rule, write (and commit) the targets if the gate passed."""
    prereg = load(args.prereg)
    rule = _rule(prereg)
    settings = pilot_settings(arms.run_settings(args, prereg, PATHS))
    targets = targets_path(prereg, settings)
    if targets.exists():
        raise SystemExit(f"the targets are fixed ({shown(targets)}); another pilot needs a new pre-registration")
    path = settings.result_path(rule.seed, rule.arm)
    if path.is_file():
        result = json.loads(path.read_text(encoding="utf-8"))
        if result["prereg"]["sha256"] != prereg.sha256:
            raise SystemExit(f"{shown(path)} was made under another pre-registration: move it away first")
        print(f"[pilot] done: {shown(path)} (its result is read again, not rerun)", file=sys.stderr)
    else:
        extra = {"label": PILOT_LABEL, "counted": False}
        result = arms.run_arm(prereg, settings, rule.seed, rule.arm, [rule.arm], "every", extra=extra)
        write_json(path, result)
    decision = pilot_targets.write_targets(targets, prereg, path, result, settings.short)
    p = decision.vs_start
    print(
        f"[pilot] held-out {decision.start:.3f} -> {decision.final:.3f} (gained {p.gained}, lost {p.lost}, "
        f"exact McNemar p = {p.p:.3g}); result {shown(path)}",
        file=sys.stderr,
    )
    if decision.passed:
        levels = ", ".join(f"{k} = {v}" for k, v in decision.targets.items() if k in rule.fractions)
        print(f"[pilot] gate passed: {levels} (primary {rule.primary}); written to {shown(targets)}", file=sys.stderr)
    else:
        for why in decision.reasons(rule):
            print(f"[pilot] gate failed: {why}", file=sys.stderr)
        print(
            f"[pilot] no targets written: no counted run may start; a v2 of {shown(prereg.path)} must say what "
            "changes (start model, learning rate or prompt count) and why",
            file=sys.stderr,
        )
    if args.commit:
        files = [f for f in (path, targets) if f.is_file() and uncommitted(f)]
        if files:
            what = "result and targets" if decision.passed else "result (gate failed: no targets)"
            commit_file(files[0], f"{prereg.data['study']}: the pilot's {what}", also=files[1:])
    return 0 if decision.passed else 1


def study_prereg(prereg: Prereg, settings: arms.Settings) -> tuple[Prereg, dict[str, Any]]:
    """The pre-registration with the pilot's targets, and the targets file's record (refuses without one).

    The study needs the file committed; a smoke run without one (no pilot, or its gate failed)
    writes fixed smoke targets there and says so."""
    path = targets_path(prereg, settings)
    if settings.short and not path.is_file():
        why = "the smoke run's pilot fixed no targets (no pilot under --out, or its gate failed)"
        pilot_targets.write_smoke_targets(path, prereg, why)
        print(f"[short] {why}: fixed smoke targets {pilot_targets.SMOKE_TARGETS} in {shown(path)}", file=sys.stderr)
    if not path.is_file():
        raise SystemExit(
            f"no targets at {shown(path)}: run `python -m experiments.efficiency_single_turn pilot --commit` first "
            "(its gate must pass)"
        )
    if not settings.short and uncommitted(path):
        raise SystemExit(f"{shown(path)} is not committed: commit the pilot's targets before any counted run")
    return pilot_targets.read_targets(prereg, path, smoke_ok=settings.short)


def run(args: argparse.Namespace) -> int:
    prereg = load(args.prereg)
    study, record = study_prereg(prereg, arms.settings_for(args, prereg, PATHS))  # then arms.run's checks
    return arms.run(args, PATHS, functools.partial(arms.run_arm, extra={"targets": record}), prereg=study)


def report(args: argparse.Namespace) -> int:
    from experiments.efficiency_single_turn import report as single_turn_report
    from experiments.framework import report as efficiency_report

    prereg = load(args.prereg)
    settings = arms.settings_for(args, prereg, PATHS)
    study, record = study_prereg(prereg, settings)
    build = functools.partial(single_turn_report.build, targets=record, multi_turn_path=MULTI_TURN)
    paths = (settings.results, settings.report, settings.markdown, settings.plot)
    rep = efficiency_report.write_report(study, *paths, build=build, summary=single_turn_report.markdown)
    return arms.announce(rep, settings)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    commands = {"pilot": "the pilot that fixes the targets (vanilla, seed 100, the full budget; timed)"}
    parser, sub = arms.build_parser((__doc__ or "").split("\n")[0], PREREG, {**commands, **arms.COMMANDS})
    p = sub["pilot"]
    p.add_argument("--commit", action="store_true", help="git-commit the pilot's result and the targets file")
    arms.short_flags(p)
    return arms.parsed(parser, argv)


def main(argv: Sequence[str] | None = None) -> int:
    return dispatch("grpo_efficiency_single_turn", {"run": run, "report": report, "pilot": pilot}, parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
