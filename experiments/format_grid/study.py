"""BFCL's format-sensitivity grid on our models: the driver of the pre-registered study (issue 39).

    python -m experiments.format_grid [--prereg benchmarks/preregistered/format_grid_v1.yaml]
                                      [--runs runs/format-grid] [--cells NAME ...] [--commit]

Each cell of the pre-registration is one `tooluse eval sweep --vary --prompt-format BASE ...` (one
vLLM engine, every configuration a resumable run folder under ``runs/format-grid/<cell>``). After
each cell the result file (benchmarks/results/single_turn_format_grid.json) is rewritten from every
finished cell and, with ``--commit``, committed, so an interrupted study keeps what it finished. A
checkout without the run folders (a fresh clone) keeps the cells the committed file holds under the
same pre-registration: run the missing ones with ``--cells``.
The statistics are the pre-registration's: each configuration's accuracy, BFCL's sample std and
max - min over configurations with task-bootstrap intervals, and each configuration against the
base by an exact McNemar test, Holm-adjusted.
"""

from __future__ import annotations

import json
import statistics
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from experiments.framework.provenance import ROOT, shown
from experiments.framework.report import head
from experiments.framework.run import cell_args, run_cells
from experiments.framework.study import Schema, load
from tooluse_agents.eval.stats import bootstrap, interval, mcnemar_exact_p
from tooluse_agents.runs.portable import portable
from tooluse_agents.runs.records import read_episodes
from tooluse_gym.prompt_formats import grid_task_ids

PREREG = ROOT / "benchmarks" / "preregistered" / "format_grid_v1.yaml"
RESULT = ROOT / "benchmarks" / "results" / "single_turn_format_grid.json"
TOOLUSE = Path(sys.executable).with_name("tooluse")
SCHEMA = Schema("format_grid", 1, ("seed", "run", "base", "cells", "stats"))
TASK_SETS = {"bfcl_grid_every_10th": lambda: list(grid_task_ids()[::10])}
"""Named task selections a cell may use instead of `args` (the pre-registration says what each is)."""


def formats(prereg: Mapping[str, Any], cell: Mapping[str, Any]) -> list[str]:
    """The cell's configurations, base first: all 26 for single-turn, the pre-registered few for multi-turn."""
    if cell["turns"] == "single":
        return [prereg["base"], "all"]
    return [prereg["base"], *prereg["multi_turn_formats"]]


def command(prereg: Mapping[str, Any], cell: Mapping[str, Any], out: Path) -> list[str]:
    """The cell's `tooluse eval sweep --vary` command line."""
    run = prereg["run"]
    tasks = ["--categories", "single_turn", "--task-ids", *TASK_SETS[cell["tasks"]]()] if "tasks" in cell else []
    return [
        str(TOOLUSE), "eval", "sweep", "--vary", "--agent", run["agent"], "--model", cell["model"],
        "--dtype", run["dtype"], "--schedule", run["schedule"], "--num-envs", str(run["num_envs"]), *run["flags"],
        *cell.get("args", []), *tasks, "--seeds", str(prereg["seed"]),
        "--prompt-format", *formats(prereg, cell), "--out", str(out), "--no-progress",
    ]  # fmt: skip


def outcomes(folder: Path) -> tuple[list[str], list[str], np.ndarray] | None:
    """(configurations, tasks, configuration x task rewards) of a finished sweep, or None before it finished."""
    path = folder / "sweep.json"
    if not path.exists():
        return None
    sweep = json.loads(path.read_text())
    folders = {sweep["base"]["knobs"]["prompt_format"]: "base"}
    folders.update({row["value"]: row["folder"] for row in sweep["changes"] if row["knob"] == "prompt_format"})
    by_config = {}
    for config, name in folders.items():
        records, _ = read_episodes(folder / name / "episodes.jsonl")
        by_config[config] = {r.task_id: float(r.reward) for r in records}
    tasks = sorted(by_config[next(iter(by_config))])
    if any(sorted(rewards) != tasks for rewards in by_config.values()):
        raise SystemExit(f"{shown(folder)}: the configurations played different tasks")
    configs = list(by_config)
    return configs, tasks, np.array([[by_config[c][t] for t in tasks] for c in configs])


def summary(matrix: np.ndarray) -> tuple[float, float]:
    """BFCL's statistics over configurations (rows): sample std and max - min of their accuracies."""
    acc = matrix.mean(axis=1)
    return float(statistics.stdev(acc.tolist())), float(acc.max() - acc.min())


def holm(pvalues: Mapping[str, float]) -> dict[str, float]:
    """Holm's step-down adjusted p values (monotone, capped at 1)."""
    ordered = sorted(pvalues.items(), key=lambda kv: kv[1])
    adjusted, running = {}, 0.0
    for rank, (name, p) in enumerate(ordered):
        running = max(running, min(1.0, (len(ordered) - rank) * p))
        adjusted[name] = running
    return adjusted


def cell_stats(configs: Sequence[str], matrix: np.ndarray, stats: Mapping[str, Any]) -> dict[str, Any]:
    """A cell's accuracies, BFCL's summary with intervals, the McNemar tests against the base and its verdict."""
    boot, rule = stats["bootstrap"], stats["pairwise"]
    acc = matrix.mean(axis=1)
    std, spread = summary(matrix)
    columns = matrix.T  # task x configuration: a task keeps all its configurations' rewards when resampled
    stds = bootstrap([columns], lambda m: summary(m.T)[0], boot["replicates"], boot["rng_seed"])
    spreads = bootstrap([columns], lambda m: summary(m.T)[1], boot["replicates"], boot["rng_seed"])
    base = matrix[0] >= 0.5
    tests = {}
    for config, row in zip(configs[1:], matrix[1:], strict=True):
        won, lost = int(np.sum((row >= 0.5) & ~base)), int(np.sum(~(row >= 0.5) & base))
        tests[config] = {"accuracy": float(row.mean()), "gained": won, "lost": lost, "p": mcnemar_exact_p(won, lost)}
    for config, p in holm({c: t["p"] for c, t in tests.items()}).items():
        tests[config]["p_holm"] = p
        tests[config]["differs"] = p < rule["alpha"]
    low, high = stats["informative_range"]
    informative = bool(np.any((acc >= low) & (acc <= high)))
    differing = [c for c, t in tests.items() if t["differs"]]
    verdict = ("format-sensitive" if differing else "not shown") if informative else "near a bound"
    return {
        "tasks": int(matrix.shape[1]),
        "configurations": len(configs),
        "base": configs[0],
        "accuracy": {c: float(a) for c, a in zip(configs, acc, strict=True)},
        "std": std,
        "std_ci95": interval(stds),
        "max_minus_min": spread,
        "max_minus_min_ci95": interval(spreads),
        "against_base": tests,
        "informative": informative,
        "differing": differing,
        "verdict": verdict,
    }


def committed_cells(head: Mapping[str, Any]) -> dict[str, Any]:
    """The finished cells of the result file already written under the same pre-registration.

    A checkout without the run folders (a fresh clone) so keeps the cells an earlier checkout
    finished; each such cell keeps the checkout it was run from.
    """
    if not RESULT.exists():
        return {}
    old = json.loads(RESULT.read_text())
    if old.get("prereg", {}).get("sha256") != head["prereg"]["sha256"]:
        return {}
    return {name: {**cell, "checkout": cell.get("checkout", old["checkout"])} for name, cell in old["cells"].items()}


def write(prereg: dict[str, Any], path: Path, done: Mapping[str, Any], runs: Path) -> dict[str, Any]:
    head_ = head(prereg["study"], path)
    found = committed_cells(head_)
    for name, (configs, _, matrix) in done.items():
        cell = prereg["cells"][name]
        found[name] = {
            **cell_stats(configs, matrix, prereg["stats"]),
            "model": cell["model"],
            "turns": cell["turns"],
            "run": shown(runs / name),
            "command": " ".join(command(prereg, cell, runs / name)[1:]),
            "checkout": head_["checkout"],
        }
    cells = {name: found[name] for name in prereg["cells"] if name in found}
    result = {**head_, "complete": set(cells) == set(prereg["cells"]), "cells": cells}
    RESULT.write_text(json.dumps(portable(result, ROOT), indent=2) + "\n")
    return result


def main(argv: Sequence[str] | None = None) -> int:
    args = cell_args(argv, (__doc__ or "").splitlines()[0], PREREG, ROOT / "runs" / "format-grid")
    prereg = load(args.prereg, SCHEMA, committed=True)
    done = run_cells(
        args,
        prereg,
        collect=outcomes,
        command=command,
        write=lambda cells: write(prereg, args.prereg, cells, args.runs),
        line=lambda c: f"std {c['std']:.3f}  max-min {c['max_minus_min']:.3f}  {c['verdict']}",
        result=RESULT,
        label="format grid",
    )
    print("cells finished:", ", ".join(done) or "none")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
