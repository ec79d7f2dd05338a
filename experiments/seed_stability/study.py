"""Seed stability, single-turn against multi-turn: the driver of the pre-registered study (issue 39).

    python -m experiments.seed_stability [--prereg benchmarks/preregistered/single_turn_seed_stability_v1.yaml]
                                         [--runs runs/seed-stability] [--cells NAME ...] [--commit]

Each cell of the pre-registration is one `tooluse eval run` (one vLLM engine, every seed), resumable in
``runs/seed-stability/<cell>``. After each cell the result file (benchmarks/results/single_turn_seed_stability.json)
is rewritten from every finished cell, with ``--commit`` committed, so an interrupted study keeps what it
finished. The statistics are the pre-registration's: per cell each seed's accuracy, the seed spread and the
seed std with task-bootstrap intervals, and the finding (multi std - single std on the warm-start's curriculum).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from experiments.framework.provenance import ROOT, shown
from experiments.framework.report import head
from experiments.framework.run import cell_args, run_cells
from experiments.framework.study import Schema, load
from tooluse_agents.eval.stats import bootstrap, interval, spread_and_std
from tooluse_agents.runs.portable import portable
from tooluse_agents.runs.records import read_episodes

PREREG = ROOT / "benchmarks" / "preregistered" / "single_turn_seed_stability_v1.yaml"
RESULT = ROOT / "benchmarks" / "results" / "single_turn_seed_stability.json"
TOOLUSE = Path(sys.executable).with_name("tooluse")
SCHEMA = Schema("single_turn_seed_stability", 1, ("seeds", "run", "cells", "stats"))


def command(prereg: Mapping[str, Any], cell: Mapping[str, Any], out: Path) -> list[str]:
    """The cell's `tooluse eval run` command line."""
    run = prereg["run"]
    return [
        str(TOOLUSE), "eval", "run", "--agent", run["agent"], "--model", cell["model"], "--dtype", run["dtype"],
        "--schedule", run["schedule"], "--num-envs", str(run["num_envs"]), *run["flags"], *cell["args"],
        "--seeds", *[str(s) for s in prereg["seeds"]], "--out", str(out), "--no-progress",
    ]  # fmt: skip


def rewards(folder: Path, seeds: Sequence[int]) -> tuple[list[str], np.ndarray] | None:
    """Tasks and their task x seed reward matrix, or None while a seed of a task is missing."""
    path = folder / "episodes.jsonl"
    if not path.exists():
        return None
    records, _ = read_episodes(path)
    by = {(r.task_id, r.seed): float(r.reward) for r in records}
    tasks = sorted({t for t, _ in by})
    if not tasks or any((t, s) not in by for t in tasks for s in seeds):
        return None
    return tasks, np.array([[by[(t, s)] for s in seeds] for t in tasks])


def cell_stats(matrix: np.ndarray, seeds: Sequence[int], stats: Mapping[str, Any]) -> dict[str, Any]:
    """Per-seed accuracies, spread and std with their bootstrap intervals, and whether the cell is informative."""
    boot = stats["bootstrap"]
    acc = matrix.mean(axis=0)
    spread, std = spread_and_std(matrix)
    spreads = bootstrap([matrix], lambda m: spread_and_std(m)[0], boot["replicates"], boot["rng_seed"])
    stds = bootstrap([matrix], lambda m: spread_and_std(m)[1], boot["replicates"], boot["rng_seed"])
    low, high = stats["informative_range"]
    mean = float(acc.mean())
    return {
        "tasks": int(matrix.shape[0]),
        "per_seed": {str(s): float(a) for s, a in zip(seeds, acc, strict=True)},
        "mean": mean,
        "spread": spread,
        "spread_ci95": interval(spreads),
        "std": std,
        "std_ci95": interval(stds),
        "informative": low <= mean <= high,
    }


def finding(matrices: Mapping[str, np.ndarray], cells: Mapping[str, Any], stats: Mapping[str, Any]) -> dict[str, Any]:
    """The pre-registered verdict: multi std - single std with its bootstrap interval."""
    multi, single = stats["finding"]["cells"]
    missing = [c for c in (multi, single) if c not in matrices]
    if missing:
        return {"verdict": "pending", "why": f"cells not finished: {', '.join(missing)}"}
    flat = [c for c in (multi, single) if not cells[c]["informative"]]
    if flat:
        return {"verdict": "not testable", "why": f"near a bound (mean outside the informative range): {flat}"}
    boot = stats["bootstrap"]

    def diff(m: np.ndarray, s: np.ndarray) -> float:
        return spread_and_std(m)[1] - spread_and_std(s)[1]

    value = diff(matrices[multi], matrices[single])
    ci = interval(bootstrap([matrices[multi], matrices[single]], diff, boot["replicates"], boot["rng_seed"]))
    verdict = "supported" if ci[0] > 0 else "contradicted" if ci[1] < 0 else "unresolved"
    return {"verdict": verdict, "std_difference": value, "ci95": ci, "multi": multi, "single": single}


def write(prereg: dict[str, Any], path: Path, done: Mapping[str, np.ndarray], runs: Path) -> dict[str, Any]:
    seeds, stats = prereg["seeds"], prereg["stats"]
    cells = {name: cell_stats(m, seeds, stats) for name, m in done.items()}
    for name in cells:
        cells[name]["model"] = prereg["cells"][name]["model"]
        cells[name]["turns"] = prereg["cells"][name]["turns"]
        cells[name]["run"] = shown(runs / name)
        cells[name]["command"] = " ".join(command(prereg, prereg["cells"][name], runs / name)[1:])
    result = {
        **head(prereg["study"], path),
        "seeds": seeds,
        "complete": set(done) == set(prereg["cells"]),
        "cells": cells,
        "finding": finding(done, cells, stats),
    }
    RESULT.write_text(json.dumps(portable(result, ROOT), indent=2) + "\n")
    return result


def main(argv: Sequence[str] | None = None) -> int:
    args = cell_args(argv, (__doc__ or "").splitlines()[0], PREREG, ROOT / "runs" / "seed-stability")
    prereg = load(args.prereg, SCHEMA, committed=True)
    done = run_cells(
        args,
        prereg,
        collect=lambda folder: found[1] if (found := rewards(folder, prereg["seeds"])) else None,
        command=command,
        write=lambda cells: write(prereg, args.prereg, cells, args.runs),
        line=lambda c: f"mean {c['mean']:.3f}  spread {c['spread']:.3f}  std {c['std']:.3f}",
        result=RESULT,
        label="seed stability",
    )
    print(json.dumps(write(prereg, args.prereg, done, args.runs)["finding"]) if done else "no cell finished")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
