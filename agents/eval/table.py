"""One table over several one-factor sweeps: model x benchmark x configuration.

Each `tooluse eval sweep --vary` run measures one model on one benchmark: a base protocol and
changes from it, each change paired with the base by task and seed (`tooluse_agents.eval.sweep`).
`tooluse eval table DIR` gathers every such sweep under DIR into one table (the main job's:
two models x two benchmarks, native against context template) and writes it as ``results.json``
and ``table.md`` in DIR. Nothing is recomputed but the table: the numbers are the sweeps' own.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tooluse_agents.eval.sweep import slug
from tooluse_agents.runs.records import read_episodes

__all__ = ["benchmark_label", "collect", "table_markdown", "write_table"]


def benchmark_label(config: Mapping[str, Any]) -> str:
    """A sweep's task source in a few words: ``curriculum/heldout`` or ``BFCL simple_python, multiple``."""
    if config.get("scenarios"):
        return ", ".join(f"{Path(p).parent.name}/{Path(p).stem}" for p in config["scenarios"])
    if config.get("task_ids"):
        return f"BFCL {len(config['task_ids'])} task ids"
    return "BFCL " + ", ".join(config.get("categories") or ["all multi-turn"])


def _tasks(folder: Path) -> int:
    records, _ = read_episodes(folder / "episodes.jsonl", unique=True)
    return len({r.task_id for r in records})


def _configuration(knobs: Mapping[str, Any]) -> str:
    return slug(knobs) if knobs else "base"


def collect(root: Path) -> dict[str, Any]:
    """Every one-factor sweep under `root` (its ``sweep.json``), one row per configuration.

    Rows are ordered by model, then benchmark, as the folders sort; a base row carries its seed
    spread, a change row also the paired difference from its base (points are fractions here).
    """
    root = Path(root)
    files = sorted(root.rglob("sweep.json"))
    sweeps = [(f, json.loads(f.read_text())) for f in files]
    sweeps = [(f, data) for f, data in sweeps if data.get("design") == "one_factor"]
    if not sweeps:
        raise FileNotFoundError(f"no one-factor sweep (sweep.json from `tooluse eval sweep --vary`) under {root}")
    rows = []
    for file, data in sweeps:
        config = data["config"]
        common = {
            "model": config.get("model") or config["agent"],
            "benchmark": benchmark_label(config),
            "tasks": _tasks(file.parent / data["base"]["folder"]),
            "sweep": str(file.parent.relative_to(root)),
        }
        base = data["base"]
        varied = dict.fromkeys(change["knob"] for change in data["changes"])
        rows.append(
            {
                **common,
                "configuration": _configuration({k: base["knobs"][k] for k in varied}),
                "role": "base",
                "score": base["overall"],
                "per_seed": base["per_seed"],
                "seed_spread": base["seed_spread"]["max_minus_min"],
                "paired": None,
                "fingerprint": base["fingerprint"],
            }
        )
        for change in data["changes"]:
            rows.append(
                {
                    **common,
                    "configuration": _configuration({change["knob"]: change["value"]}),
                    "role": "change",
                    "score": change["overall"],
                    "per_seed": change["per_seed"],
                    "seed_spread": change["seed_spread"]["max_minus_min"],
                    "paired": change["paired"],
                    "fingerprint": change["fingerprint"],
                }
            )
    return {"root": str(root), "rows": rows}


def _pct(value: float | None, signed: bool = False) -> str:
    if value is None:
        return "n/a"
    return f"{100 * value:+.1f}" if signed else f"{100 * value:.1f}"


def table_markdown(data: Mapping[str, Any]) -> str:
    """The table as markdown: per row the score, per seed, seed spread, and a change's paired difference."""
    lines = [
        "| model | benchmark (tasks) | configuration | score (%) | per seed | seed spread (points) | "
        "change - base (points, paired) | 95% CI (bootstrap over tasks) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in data["rows"]:
        paired = row["paired"]
        diff = _pct(paired["diff"], True) if paired else ""
        ci = ""
        if paired and paired["ci95"]:
            ci = f"[{_pct(paired['ci95'][0], True)}, {_pct(paired['ci95'][1], True)}]"
        per_seed = ", ".join(_pct(v) for v in row["per_seed"].values())
        lines.append(
            f"| {row['model']} | {row['benchmark']} ({row['tasks']}) | {row['configuration']} | "
            f"{_pct(row['score'])} | {per_seed} | {_pct(row['seed_spread'])} | {diff} | {ci} |"
        )
    return "\n".join(lines) + "\n"


def write_table(root: Path) -> tuple[str, dict[str, Any]]:
    """Collect the sweeps under `root`, write ``results.json`` and ``table.md`` there; returns (markdown, data)."""
    data = collect(root)
    text = table_markdown(data)
    (Path(root) / "results.json").write_text(json.dumps(data, indent=2) + "\n")
    (Path(root) / "table.md").write_text(text)
    return text, data
