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

from tooluse_agents.backends.dtypes import machine
from tooluse_agents.eval.sweep import slug
from tooluse_agents.runs.records import read_episodes

__all__ = ["benchmark_label", "collect", "table_findings", "table_markdown", "write_table"]


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
    ``machine`` is the CPU the table was gathered on (`tooluse_agents.backends.dtypes.machine`):
    sampled scores depend on its kernels, so a table from another CPU can differ.
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
    return {"root": str(root), "rows": rows, "machine": machine()}


def _pct(value: float | None, signed: bool = False) -> str:
    if value is None:
        return "n/a"
    return f"{100 * value:+.1f}" if signed else f"{100 * value:.1f}"


def table_markdown(data: Mapping[str, Any]) -> str:
    """The table as markdown: per row the score, per seed, seed spread, and a change's paired difference."""
    lines = [
        "| model | benchmark (tasks) | configuration | pass@1 (%, mean over seeds) | per seed | seed spread (points) | "
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


def _includes_zero(ci: Any) -> bool:
    return bool(ci) and ci[0] <= 1e-9 and ci[1] >= -1e-9


def table_findings(data: Mapping[str, Any]) -> str:
    """What the table's rows say, in sentences (the prose under `make run`'s table is this, generated).

    Who scores 0, each change's paired difference, whether its interval includes 0, and the CPU the table
    was sampled on (results sampled on another CPU can differ).
    """
    rows = data["rows"]
    models = list(dict.fromkeys(r["model"] for r in rows))
    sentences = []
    changes = []
    for model in models:
        own = [r for r in rows if r["model"] == model]
        if all(r["score"] == 0 for r in own):
            sentences.append(f"{model} scores 0 in every row.")
            continue
        moved = [r for r in own if r["role"] == "change" and r["paired"]]
        changes += moved
        if moved:
            parts = [
                f"{_pct(r['paired']['diff'], True)} points with {r['configuration']} on {r['benchmark']}" for r in moved
            ]
            signs = {(r["paired"]["diff"] > 0) - (r["paired"]["diff"] < 0) for r in moved}
            same = " (the same sign on every slice)" if len(signs) == 1 and 0 not in signs and len(moved) > 1 else ""
            sentences.append(f"{model}: {', '.join(parts)}{same}.")
    with_ci = [r for r in changes if r["paired"].get("ci95")]
    if with_ci:
        zero = [r for r in with_ci if _includes_zero(r["paired"]["ci95"])]
        if len(zero) == len(with_ci):
            sentences.append(
                "Every paired 95% interval includes 0: slices this small show an effect's sign, not its size."
            )
        elif not zero:
            sentences.append("No paired 95% interval includes 0.")
        else:
            apart = ", ".join(
                f"{r['model']} {r['configuration']} on {r['benchmark']}" for r in with_ci if r not in zero
            )
            sentences.append(f"{len(zero)} of {len(with_ci)} paired 95% intervals include 0; the others: {apart}.")
    cpu = data.get("machine") or (data.get("recorded") or {}).get("machine") or {}
    where = f"Recorded on {cpu['cpu_model']}. " if cpu.get("cpu_model") else ""
    sentences.append(
        f"{where}Sampled results depend on the CPU's numeric kernels: on a different CPU, rows can differ by "
        "a few tasks with the same protocol fingerprints."
    )
    return " ".join(sentences) + "\n"


def write_table(root: Path) -> tuple[str, dict[str, Any]]:
    """Collect the sweeps under `root`, write ``results.json`` and ``table.md`` there; returns (markdown, data)."""
    data = collect(root)
    text = table_markdown(data) + "\n" + table_findings(data)
    (Path(root) / "results.json").write_text(json.dumps(data, indent=2) + "\n")
    (Path(root) / "table.md").write_text(text)
    return text, data
