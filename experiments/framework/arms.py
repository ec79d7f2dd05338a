"""The runner of the time-to-accuracy studies: GRPO arms against a reference arm, one seed at a time.

A study (`experiments.efficiency_multi_turn`, `experiments.efficiency_single_turn`,
`experiments.trainer_vs_trl`) names its pre-registration (`experiments.framework.study`) and its
`StudyPaths`; this module runs what the file says. **run** trains each arm of one seed in its own
process (``python -m tooluse_agents.cli.train BASE_CONFIG OVERRIDES --no-progress``, run folder
``RUNS/seed{S}/{arm}``) with the pre-registration's ``common`` and the arm's overrides, then the
harness's own: the seed, the run folder, the start model, the budget, evaluations at every
``eval_every_train_s`` training seconds (greedy, one sample per held-out prompt; evaluation time is
not training time). As soon as an arm finishes, its result is written to
``RESULTS/seed{S}_{arm}.json`` (`experiments.framework.summary`, with the machine, ``runtime.json``,
the resolved config and the pre-registration's provenance) and, with ``--commit``, committed alone
(`experiments.framework.run.commit_file`). So a study can span sessions: a (seed, arm) whose result
exists is skipped, and a killed arm's run folder is resumed by the trainer from its last checkpoint.

**Arm order.** Seed s runs the arms in the pre-registration's order rotated by s (it starts at arm
index ``s mod len(arms)``), so no arm always meets the machine first.

**The start evaluation** (`experiments.framework.start_eval`) runs once: the first arm (of the
study, on this machine and code) runs it, and a later arm whose start-evaluation inputs hash the
same starts with ``eval.at_start=false`` and its result carries the recorded one (``shared_from``).
``--start-eval every`` runs it in every arm and records whether it matched.

**--short** runs the whole pipeline on a tiny setting in a few minutes (literal-category tasks, 4
train and 3 held-out, one call a turn, 48 tokens a message, 2 prompts a step, a 45 s budget,
SmolLM2-135M as the start), with everything under ``--out``: a smoke test, not a result. It
alone accepts ``--start-model``, ``--budget-s``, ``--eval-every-s`` and ``--set``, and it does not
require the pre-registration file to be committed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

import yaml

from experiments.framework import start_eval
from experiments.framework import summary as run_summary
from experiments.framework.provenance import ROOT, checkout, provenance, shown, uncommitted
from experiments.framework.run import commit_file, write_json
from experiments.framework.study import Prereg, PreregError, load


class ShortDefaults(TypedDict):
    """What ``--short`` runs with unless its flags say otherwise."""

    budget_s: float
    eval_every_s: float
    start_model: str


SHORT: ShortDefaults = {"budget_s": 45.0, "eval_every_s": 15.0, "start_model": "smollm2-135m"}
SHORT_OVERRIDES = (
    "tasks.category=literal",
    "heldout.category=literal",
    "tasks.limit=4",
    "heldout.limit=3",
    "protocol.max_steps_per_turn=1",
    "rollout.max_tokens=48",
    "grpo.prompts_per_step=2",
    "save_every=1000000",
    "export_final=false",
    "policy.threads=1",
)


@dataclass(frozen=True)
class StudyPaths:
    """Where a study keeps its runs, results, report and figure (relative to the checkout), the
    name of its smoke runs' default folder, and the overrides its smoke runs add."""

    runs: Path
    results: Path
    report: Path
    plot: Path
    short_name: str
    short_overrides: tuple[str, ...] = SHORT_OVERRIDES


TRAINER = "tooluse_agents.cli.train"
"""The module our arms train with (``python -m TRAINER CONFIG OVERRIDES``)."""
HARNESS_KEYS = (
    "seed",
    "run_dir",
    "policy.model",
    "budget_s",
    "max_steps",
    "eval.every_train_s",
    "eval.every_steps",
    "eval.at_start",
    "eval.temperature",
    "eval.samples",
)
"""Keys the harness sets itself; the pre-registration's overrides may set them only to the same values."""


@dataclass(frozen=True)
class Settings:
    """Where a study (or a smoke run) lives and what it runs with."""

    runs: Path
    results: Path
    report: Path
    plot: Path
    budget_s: float
    eval_every_s: float
    start_model: str
    short: bool = False
    extra: tuple[str, ...] = ()
    run_name: str = "seed{seed}/{arm}"
    result_name: str = "seed{seed}_{arm}.json"
    """Where under `runs` and `results` a (seed, arm) goes (``str.format`` templates; a pilot names its own)."""

    @property
    def markdown(self) -> Path:
        return self.report.with_suffix(".md")

    def run_dir(self, seed: int, arm: str) -> Path:
        return self.runs / self.run_name.format(seed=seed, arm=arm)

    def result_path(self, seed: int, arm: str) -> Path:
        return self.results / self.result_name.format(seed=seed, arm=arm)


def settings_for(args: argparse.Namespace, prereg: Prereg, paths: StudyPaths) -> Settings:
    """The study's paths and numbers (the pre-registration's), or a smoke run's under ``--out``."""
    if not args.short:
        for flag in ("start_model", "budget_s", "eval_every_s", "set", "out"):
            if getattr(args, flag, None):
                raise SystemExit(
                    f"--{flag.replace('_', '-')} is for --short only: the study runs what was pre-registered"
                )
        return Settings(
            ROOT / paths.runs,
            ROOT / paths.results,
            ROOT / paths.report,
            ROOT / paths.plot,
            prereg.budget_s,
            prereg.eval_every_train_s,
            prereg.start_model,
        )
    out = args.out or Path(tempfile.gettempdir()) / f"{paths.short_name}-short"
    return Settings(
        out / "runs",
        out / "results",
        out / paths.report.name,
        out / paths.plot.name,
        getattr(args, "budget_s", None) or SHORT["budget_s"],
        getattr(args, "eval_every_s", None) or SHORT["eval_every_s"],
        getattr(args, "start_model", None) or SHORT["start_model"],
        short=True,
        extra=(*paths.short_overrides, *(getattr(args, "set", None) or ())),
    )


def arm_order(arms: Sequence[str], seed: int) -> list[str]:
    """The arms in the order seed `seed` runs them: the pre-registered order rotated to start at ``seed mod len``."""
    k = seed % len(arms)
    return [*arms[k:], *arms[:k]]


def overrides(prereg: Prereg, settings: Settings, arm: str, seed: int, at_start: bool) -> list[str]:
    """The trainer's overrides for one (seed, arm): common, the arm's, the smoke settings, the harness's."""
    own = [*prereg.common, *prereg.arms[arm]]
    harness = [
        f"seed={seed}",
        f"run_dir={settings.run_dir(seed, arm)}",
        f"policy.model={settings.start_model}",
        f"budget_s={settings.budget_s}",
        "max_steps=null",
        f"eval.every_train_s={settings.eval_every_s}",
        "eval.every_steps=null",
        f"eval.at_start={'true' if at_start else 'false'}",
        "eval.temperature=0.0",
        "eval.samples=1",
    ]
    mine = dict(_split(o) for o in harness)
    clash = sorted({k for k, v in map(_split, own) if k in mine and v != mine[k]})
    if clash:
        raise PreregError(f"the pre-registration sets {clash} to other values than the harness's {harness}")
    return [*own, *settings.extra, *harness]


def _split(override: str) -> tuple[str, Any]:
    """An override's key and its value as the trainer reads it (YAML)."""
    key, raw = override.split("=", 1)
    return key.strip(), yaml.safe_load(raw)


def _config(prereg: Prereg, settings: Settings, arm: str, seed: int, at_start: bool):
    from tooluse_agents.train.grpo.config import load_config

    return load_config(ROOT / prereg.base_config, overrides(prereg, settings, arm, seed, at_start))


def plan_start_eval(prereg: Prereg, settings: Settings, arm: str, seed: int, mode: str) -> dict[str, Any]:
    """Whether this arm runs its start evaluation, and the shared one it may reuse (module docstring).

    A run folder that already holds a run keeps the choice it started with (the trainer resumes only
    an unchanged config)."""
    key = start_eval.start_key(_config(prereg, settings, arm, seed, True))
    sha = start_eval.key_sha256(key)
    shared = start_eval.find_shared(settings.results, sha)
    existing = settings.run_dir(seed, arm) / "config.yaml"
    if existing.is_file():
        at_start = bool((yaml.safe_load(existing.read_text(encoding="utf-8")) or {}).get("eval", {}).get("at_start"))
    else:
        at_start = mode == "every" or shared is None
    if not at_start and shared is None:
        raise RuntimeError(f"{existing.parent} was started without a start evaluation, and none is recorded to share")
    return {"key": key, "key_sha256": sha, "at_start": at_start, "shared": shared}


def train(cmd: list[str]) -> None:
    """Run the trainer (its own process; its output goes to this one's)."""
    subprocess.run(cmd, cwd=ROOT, check=True)


def run_arm(
    prereg: Prereg,
    settings: Settings,
    seed: int,
    arm: str,
    order: list[str],
    mode: str,
    module: str = TRAINER,
    flags: Sequence[str] = (),
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Train one (seed, arm) to its budget and return its result (not yet written).

    The arm trains with ``python -m MODULE CONFIG OVERRIDES --no-progress FLAGS``: our trainer, or
    another trainer's driver that takes the same config and writes the same run folder
    (`experiments.trainer_vs_trl.trl_arm`). `extra` holds what a study adds to every result (a label, the file
    its targets came from)."""
    from tooluse_agents.backends.dtypes import machine

    plan = plan_start_eval(prereg, settings, arm, seed, mode)
    args = overrides(prereg, settings, arm, seed, plan["at_start"])
    cmd = [sys.executable, "-m", module, str(ROOT / prereg.base_config), *args, "--no-progress", *flags]
    print(f"[seed {seed} {arm}] {' '.join(cmd[1:])}", file=sys.stderr, flush=True)
    load_before = os.getloadavg()
    started = time.perf_counter()
    train(cmd)
    wall = time.perf_counter() - started
    run_dir = settings.run_dir(seed, arm)
    shared = plan["shared"]
    summary = run_summary.summarize(run_dir, None if plan["at_start"] else shared)
    start: dict[str, Any] = {
        "key": plan["key"],
        "key_sha256": plan["key_sha256"],
        "source": "run" if plan["at_start"] else "shared",
        "from": None if plan["at_start"] else shared["from"],
    }
    if plan["at_start"] and shared is not None:  # --start-eval every: did it come out the same?
        theirs = run_summary.decode_outcomes(shared["prompts"], shared["outcomes"])
        mine = run_summary.decode_outcomes(summary["heldout_prompts"], summary["evaluations"][0]["outcomes"])
        start["agrees_with"] = {"from": shared["from"], "same_outcomes": mine == theirs}
    result = {
        "schema": f"{prereg.data['study']}.result/1",
        "study": prereg.data["study"],
        "seed": seed,
        "arm": arm,
        "run_order": order,
        "short": settings.short,
        "prereg": provenance(prereg.path),
        "checkout": checkout(),
        "arm_overrides": list(prereg.arms[arm]),
        "command": ["python", "-m", module, shown(ROOT / prereg.base_config), *args, "--no-progress", *flags],
        "run_dir": shown(run_dir),
        "budget_s": settings.budget_s,
        "eval_every_train_s": settings.eval_every_s,
        "config": yaml.safe_load((run_dir / "config.yaml").read_text(encoding="utf-8")),
        "machine": machine(),
        "load_avg": {"before": list(load_before), "after": list(os.getloadavg())},
        "wall_s": wall,
        "start_eval": start,
        **summary,
        **(extra or {}),
    }
    result["stats"] = run_summary.seed_arm_stats(result, settings.budget_s, prereg.targets)
    return result


RunOne = Callable[[Prereg, Settings, int, str, list[str], str], dict[str, Any]]
"""Trains one (seed, arm) and returns its result: `run_arm`'s signature."""


def run_settings(args: argparse.Namespace, prereg: Prereg, paths: StudyPaths) -> Settings:
    """A ``run``'s settings, after the checks every timed run passes (module docstring)."""
    if not args.short and uncommitted(prereg.path):
        raise SystemExit(
            f"{shown(prereg.path)} has uncommitted changes (or is not committed): commit the pre-registration "
            "before any timed run (--short skips this check)"
        )
    if getattr(args, "commit", False) and args.short:
        raise SystemExit("--commit is for the study's results, not a smoke run's")
    settings = settings_for(args, prereg, paths)
    model = Path(settings.start_model)
    if not settings.short and not (model if model.is_absolute() else ROOT / model).is_dir():
        raise SystemExit(f"no start model at {settings.start_model}: make it first (make weakstart)")
    return settings


def run(
    args: argparse.Namespace, paths: StudyPaths, run_one: RunOne | None = None, prereg: Prereg | None = None
) -> int:
    """Train the arms of one seed that have no result yet, in the seed's order; write (and commit) each result.

    `prereg` is the pre-registration as the study reads it (default: ``--prereg``, loaded)."""
    prereg = prereg or load(args.prereg)
    settings = run_settings(args, prereg, paths)
    unknown = sorted(set(args.arms or ()) - set(prereg.arms))
    if unknown:
        raise SystemExit(f"unknown arms {unknown}; the pre-registration has {list(prereg.arms)}")
    order = arm_order(list(prereg.arms), args.seed)
    for arm in [a for a in order if not args.arms or a in args.arms]:
        path = settings.result_path(args.seed, arm)
        if path.exists():
            print(f"[seed {args.seed} {arm}] done: {shown(path)}", file=sys.stderr)
            continue
        result = (run_one or run_arm)(prereg, settings, args.seed, arm, order, args.start_eval)
        write_json(path, result)
        s = result["stats"]
        times = ", ".join(f"{t} {run_summary.crossing(s, t).label()} s" for t in prereg.targets)
        print(
            f"[seed {args.seed} {arm}] held-out {s['start']:.3f} -> {s['final']:.3f}; time to {times}; "
            f"result {shown(path)}",
            file=sys.stderr,
        )
        if args.commit:
            commit_file(path, f"{prereg.data['study']}: seed {args.seed} {arm} result")
    return 0


def announce(report: Mapping[str, Any], settings: Settings) -> int:
    """Print a written report's verdicts (stdout) and where it went (stderr); 0, the exit status."""
    print(json.dumps(report["verdicts"], indent=1))
    print(f"report: {shown(settings.report)}, {shown(settings.markdown)}, {shown(settings.plot)}", file=sys.stderr)
    return 0


COMMANDS = {"run": "train the arms of one seed", "report": "the report from the results so far"}


def build_parser(
    description: str, prereg: Path, commands: Mapping[str, str] = COMMANDS
) -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    """A study driver's parser: one subcommand per `commands` entry, each with ``--prereg``,
    ``--short`` and ``--out``, and ``run`` with its own flags; returns it and its subcommands."""
    parser = argparse.ArgumentParser(description=description)
    sub = parser.add_subparsers(dest="command", required=True)
    for name, helptext in commands.items():
        p = sub.add_parser(name, help=helptext)
        p.add_argument("--prereg", type=Path, default=prereg, help="the pre-registration file")
        p.add_argument("--short", action="store_true", help="the few-minute smoke setting, everything under --out")
        p.add_argument("--out", type=Path, default=None, help="with --short: the folder for runs, results, report")
    r = sub.choices["run"]
    r.add_argument("--seed", type=int, default=None, help="the seed to run (required unless --short: then 0)")
    r.add_argument("--arms", nargs="+", default=None, help="only these arms (default: all, in the seed's order)")
    r.add_argument("--commit", action="store_true", help="git-commit each result file as soon as it is written")
    r.add_argument("--start-eval", choices=("share", "every"), default="share", help="share the start evaluation")
    short_flags(r)
    return parser, dict(sub.choices)


def short_flags(p: argparse.ArgumentParser) -> None:
    """The flags only ``--short`` takes (`settings_for`): start model, budget, evaluation period, overrides."""
    p.add_argument("--start-model", default=None, help="with --short: the start model (default smollm2-135m)")
    p.add_argument("--budget-s", type=float, default=None, help="with --short: training seconds per arm (45)")
    p.add_argument("--eval-every-s", type=float, default=None, help="with --short: evaluation period (15)")
    p.add_argument("--set", nargs="*", default=None, help="with --short: extra key=value overrides")


def parsed(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> argparse.Namespace:
    """The arguments; ``run`` without ``--seed`` is seed 0 in a smoke run and an error otherwise."""
    args = parser.parse_args(argv)
    if args.command == "run" and args.seed is None:
        if not args.short:
            parser.error("run needs --seed")
        args.seed = 0
    return args
