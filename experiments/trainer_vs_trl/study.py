"""Study A of issue 40: our GRPO trainer (vanilla, the paper's recipe) against TRL's GRPOTrainer, pre-registered.

Every choice is in ``benchmarks/preregistered/trainer_vs_trl_v1.yaml`` (`experiments.framework.study`),
committed before the first timed run; this harness runs what it says and reports against it.

    python -m experiments.trainer_vs_trl pilot                    # TRL's generation backend (seed 0, 3 steps)
    python -m experiments.trainer_vs_trl run --seed 0 --commit    # every arm of seed 0 (~2.5 h on 2 cores)
    python -m experiments.trainer_vs_trl report                   # the report from whatever results exist
    python -m experiments.trainer_vs_trl run --short --out /tmp/tvt && \\
        python -m experiments.trainer_vs_trl report --short --out /tmp/tvt   # the smoke run: proves it works

**Our arms** (``vanilla``, ``paper``) run exactly as the v2 efficiency study runs an arm
(`experiments.framework.arms`: its overrides, arm order, shared start evaluation, run summary,
one result file per (seed, arm) committed alone with ``--commit``), with this pre-registration's
``common`` and ``arms``.

**The TRL arm** (``trl``) gets the same overrides (no arm overrides of its own) and runs
`experiments.trainer_vs_trl.trl_arm`: TRL's GRPOTrainer through `tooluse_agents.integrations.trl` on our
trainer's training pool, with the pre-registered GRPOConfig, a training clock that stops for
evaluations, and our held-out evaluator (our trainer itself) on the saved weights. It writes a run
folder in our trainer's format, so its result has the same schema (`experiments.framework.summary`),
plus ``trl``: TRL's settings, versions, backend, per-step logs and the pilot that chose the backend.

**pilot** runs the pre-registered backend pilot (``pilot:`` in the file: seed 0, 3 optimizer steps,
``vllm_colocate`` then ``hf_generate``, no evaluation) and writes ``pilot.json`` beside the results:
each attempt's step seconds or its error, and the backend chosen (the lowest median step seconds
among those that completed). It is reported as a pilot and never counted. ``run`` refuses the TRL
arm until a pilot has chosen a backend (``--short`` uses ``hf_generate`` when its folder has no
pilot). The pilot is timed: run it on a quiet CPU, like the study.

**report** (`experiments.trainer_vs_trl.trl_report`) writes ``benchmarks/results/trainer_vs_trl.json``, ``.md`` and
``docs/trainer-vs-trl.png``: per seed and arm the step seconds (median, IQR), generated tokens per
second, time to T50 and T75, the final held-out reward, our arms' ratios to TRL's, and the
pre-registered rules with TRL as the reference.

**--short** is the v2 smoke setting (`experiments.framework.arms.SHORT`: literal tasks, 4 train and 3 held-out,
2 prompts a step, 48 tokens a message, a 45 s budget, evaluations every 15 s, SmolLM2-135M as the
start), for all three arms, everything under ``--out``: a smoke test, not a result.
"""

from __future__ import annotations

import argparse
import functools
import json
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from experiments.framework import arms
from experiments.framework.provenance import ROOT, checkout, provenance, shown
from experiments.framework.run import dispatch, write_json
from experiments.framework.study import Prereg, PreregError, load

PATHS = arms.StudyPaths(
    Path("runs/trainer-vs-trl"),
    Path("benchmarks/results/trainer_vs_trl"),
    Path("benchmarks/results/trainer_vs_trl.json"),
    Path("docs/trainer-vs-trl.png"),
    "trainer-vs-trl",
)
PREREG = ROOT / "benchmarks" / "preregistered" / "trainer_vs_trl_v1.yaml"
TRL_ARM = "experiments.trainer_vs_trl.trl_arm"
PILOT = "pilot.json"
SHORT_BACKEND = "hf_generate"
"""The TRL arm's backend in a smoke run whose folder has no pilot."""
TRL_LOG_KEYS = (
    "step_time",
    "loss",
    "grad_norm",
    "entropy",
    "completions/mean_length",
    "frac_reward_zero_std",
    "reward",
    "num_tokens",
    "tooluse/error_frac",
    "tooluse/untrained_messages",
    "clip_ratio/region_mean",
)
"""TRL's own per-step logs kept in a result (`trl_log.jsonl` has them all)."""


# --- the pilot ---------------------------------------------------------------------------------


def step_seconds(run_dir: Path) -> list[float]:
    """Each optimizer step's training seconds, from a run folder's ``metrics.jsonl`` (ours or the TRL arm's)."""
    from tooluse_agents.runs.jsonl import read_jsonl

    path = run_dir / "metrics.jsonl"
    ends = [float(r["time/train_s"]) for r in read_jsonl(path)[0]] if path.is_file() else []
    return [b - a for a, b in zip([0.0, *ends], ends, strict=False)]


def choose(attempts: Sequence[dict[str, Any]]) -> str | None:
    """The pre-registered pick: among the attempts that completed, the lowest median step seconds (None: none did)."""
    done = [a for a in attempts if a["completed"]]
    return min(done, key=lambda a: a["median_step_s"])["backend"] if done else None


def _tail(path: Path, lines: int = 40) -> str:
    return "\n".join(path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:]) if path.is_file() else ""


def pilot_attempt(prereg: Prereg, settings: arms.Settings, backend: str, seed: int, steps: int) -> dict[str, Any]:
    """One backend of the pilot: the TRL arm for `steps` optimizer steps without evaluation, its log kept."""
    run_dir = settings.runs / "pilot" / backend
    shutil.rmtree(run_dir, ignore_errors=True)
    run_dir.mkdir(parents=True)
    own = {"run_dir": str(run_dir), "max_steps": str(steps), "budget_s": "null", "heldout": "null"}
    sets = [
        o for o in arms.overrides(prereg, settings, _trl(prereg), seed, at_start=False) if o.split("=")[0] not in own
    ]
    sets += [f"{k}={v}" for k, v in own.items()]
    cmd = [sys.executable, "-m", TRL_ARM, str(ROOT / prereg.base_config), *sets, "--backend", backend, "--no-progress"]
    print(f"[pilot {backend}] {' '.join(cmd[1:])}", file=sys.stderr, flush=True)
    log = run_dir.parent / f"{backend}.log"
    started = time.perf_counter()
    with log.open("w", encoding="utf-8") as out:
        rc = subprocess.run(cmd, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, check=False).returncode
    wall = time.perf_counter() - started
    record = json.loads((run_dir / "trl.json").read_text()) if (run_dir / "trl.json").is_file() else {}
    seconds = step_seconds(run_dir)
    completed = rc == 0 and len(seconds) >= steps
    return {
        "backend": backend,
        "completed": completed,
        "returncode": rc,
        "steps_done": len(seconds),
        "step_s": seconds,
        "median_step_s": statistics.median(seconds) if completed else None,
        "trl_step_time_s": [r.get("step_time") for r in _trl_logs(run_dir)],
        "error": None if completed else record.get("error") or {"type": "exit", "message": f"exit status {rc}"},
        "log_tail": None if completed else _tail(log),
        "log": shown(log),
        "wall_s": wall,
        "command": ["python", "-m", TRL_ARM, shown(ROOT / prereg.base_config), *sets, "--backend", backend],
    }


def pilot(args: argparse.Namespace) -> int:
    from tooluse_agents.backends.dtypes import machine

    prereg = load(args.prereg)
    settings = arms.run_settings(args, prereg, PATHS)
    spec = dict(prereg.pilot or {})
    if spec.get("pick") != "lowest_median_step_s":
        raise PreregError(f"pilot.pick {spec.get('pick')!r}: this harness implements lowest_median_step_s")
    order = list(args.backends or spec["order"])
    from experiments.trainer_vs_trl.trl_arm import BACKENDS

    unknown = sorted(set(order) - set(BACKENDS))
    if unknown:
        raise SystemExit(f"unknown backends {unknown}; the TRL arm has {list(BACKENDS)}")
    seed, steps = int(spec["seed"]), int(spec["steps"])
    attempts = [pilot_attempt(prereg, settings, backend, seed, steps) for backend in order]
    result = {
        "schema": "trainer_vs_trl.pilot/1",
        "label": "pilot: fixes the TRL arm's backend; not a result of the study",
        "short": settings.short,
        "prereg": provenance(prereg.path),
        "checkout": checkout(),
        "machine": machine(),
        "spec": spec,
        "order": order,
        "attempts": attempts,
        "chosen": choose(attempts),
    }
    path = settings.results / PILOT
    write_json(path, result)
    for a in attempts:
        what = f"median {a['median_step_s']:.1f} s a step" if a["completed"] else f"failed: {a['error']}"
        print(f"[pilot {a['backend']}] {what}", file=sys.stderr)
    print(f"[pilot] chosen: {result['chosen']}; {shown(path)}", file=sys.stderr)
    return 0 if result["chosen"] else 1


def chosen_backend(prereg: Prereg, settings: arms.Settings) -> tuple[str, dict[str, Any] | None]:
    """The TRL arm's backend from the pilot beside the results, and the pilot's record (module docstring).

    The study takes only a pilot of its own: not a smoke run's, and made under this pre-registration."""
    path = settings.results / PILOT
    if not path.is_file():
        if settings.short:
            return SHORT_BACKEND, None
        raise SystemExit(f"no pilot at {shown(path)}: run `python -m experiments.trainer_vs_trl pilot` first")
    data = json.loads(path.read_text(encoding="utf-8"))
    if not settings.short and (data.get("short") or data["prereg"]["sha256"] != prereg.sha256):
        raise SystemExit(f"the pilot at {shown(path)} is a smoke run's or was made under another pre-registration")
    if not data.get("chosen"):
        raise SystemExit(f"the pilot at {shown(path)} chose no backend (every attempt failed)")
    return str(data["chosen"]), data


# --- the run -----------------------------------------------------------------------------------


def _trl(prereg: Prereg) -> str:
    names = list(prereg.trainers)
    if len(names) != 1:
        raise PreregError(f"the study needs one TRL arm, the pre-registration has {names}")
    return names[0]


def _trl_logs(run_dir: Path) -> list[dict[str, Any]]:
    from tooluse_agents.runs.jsonl import read_jsonl

    path = run_dir / "trl_log.jsonl"
    return [r for r in read_jsonl(path)[0] if "loss" in r] if path.is_file() else []


def trl_record(run_dir: Path, pilot_record: dict[str, Any] | None, backend: str) -> dict[str, Any]:
    """The TRL arm's own part of its result: ``trl.json``, TRL's per-step logs, the pilot that chose the backend."""
    record = json.loads((run_dir / "trl.json").read_text(encoding="utf-8"))
    logs = _trl_logs(run_dir)
    record["per_step"] = {"step": [r["step"] for r in logs], **{k: [r.get(k) for r in logs] for k in TRL_LOG_KEYS}}
    record["pilot"] = (
        {"chosen": backend, "source": "none (--short)"}
        if pilot_record is None
        else {"chosen": backend, "prereg": pilot_record["prereg"], "attempts": pilot_record["attempts"]}
    )
    return record


def run_one(
    prereg: Prereg,
    settings: arms.Settings,
    seed: int,
    arm: str,
    order: list[str],
    mode: str,
    *,
    backend: tuple[str, dict[str, Any] | None],
) -> dict[str, Any]:
    """One (seed, arm): ours as `arms.run_arm` runs it, TRL's through `experiments.trainer_vs_trl.trl_arm`."""
    if arm not in prereg.trainers:
        return arms.run_arm(prereg, settings, seed, arm, order, mode)
    name, record = backend
    result = arms.run_arm(prereg, settings, seed, arm, order, mode, module=TRL_ARM, flags=("--backend", name))
    result["trl"] = trl_record(settings.run_dir(seed, arm), record, name)
    return result


def run(args: argparse.Namespace) -> int:
    prereg = load(args.prereg)
    arm = _trl(prereg)
    backend: tuple[str, dict[str, Any] | None] = ("", None)
    if not args.arms or arm in args.arms:  # before any arm runs: the TRL arm needs the pilot's choice
        backend = chosen_backend(prereg, arms.settings_for(args, prereg, PATHS))
    return arms.run(args, PATHS, functools.partial(run_one, backend=backend))


def report(args: argparse.Namespace) -> int:
    from experiments.trainer_vs_trl.trl_report import write_report

    prereg = load(args.prereg)
    settings = arms.settings_for(args, prereg, PATHS)
    rep = write_report(prereg, settings.results, settings.report, settings.markdown, settings.plot)
    return arms.announce(rep, settings)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    commands = {**arms.COMMANDS, "pilot": "the pre-registered TRL backend pilot (seed 0, 3 steps; timed)"}
    parser, sub = arms.build_parser((__doc__ or "").split("\n")[0], PREREG, commands)
    p = sub["pilot"]
    p.add_argument("--backends", nargs="+", default=None, help="only these backends (default: the pilot's order)")
    p.add_argument("--start-model", default=None, help="with --short: the start model (default smollm2-135m)")
    p.add_argument("--set", nargs="*", default=None, help="with --short: extra key=value overrides")
    return arms.parsed(parser, argv)


def main(argv: Sequence[str] | None = None) -> int:
    return dispatch("trainer_vs_trl", {"run": run, "report": report, "pilot": pilot}, parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
