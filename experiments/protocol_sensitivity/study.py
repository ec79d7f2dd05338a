"""Protocol sensitivity, measured (issue 26): the paper's first finding on a model that calls tools.

Every choice is in the pre-registration file (default
``benchmarks/preregistered/protocol_sensitivity_v1.yaml``), committed before the first run; this
driver only runs what it says and reports it beside the paper's figures.

    make warmstart                                                   # the model (~25 min on 2 cores)
    python -m experiments.protocol_sensitivity run                    # every configuration (resumes)
    python -m experiments.protocol_sensitivity run --grpo-model runs/X/final_model   # + a trained model's base row
    python -m experiments.protocol_sensitivity report                 # JSON + figure from the run folders

**run** plays, under ``--out`` (default ``runs/protocol-sensitivity``): the one-factor-at-a-time sweep
on the curriculum's held-out split (`tooluse_agents.eval.sweep.run_vary`: the base protocol with the base
seeds, each change with the change seeds; folder ``curriculum/``), the BFCL slice (``bfcl/``) and,
with ``--grpo-model``, that model's base row (``grpo-base/``). Each configuration is a normal
``tooluse eval run`` folder written as its episodes finish, so a stopped study resumes.

**report** writes ``benchmarks/results/protocol_sensitivity.json`` (every configuration with its
protocol card fingerprint, the paired differences, the base's seed spread, the BFCL slice, the
paper's figures, the pre-registration's path and commit) and ``docs/protocol-sensitivity.png``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from experiments.framework.provenance import ROOT, shown, uncommitted
from experiments.framework.report import head
from experiments.framework.run import dispatch
from experiments.framework.study import PreregError, Schema, load
from tooluse_agents.runs.portable import portable

DEFAULT_PREREG = ROOT / "benchmarks" / "preregistered" / "protocol_sensitivity_v1.yaml"
RESULT = ROOT / "benchmarks" / "results" / "protocol_sensitivity.json"
FIGURE = ROOT / "docs" / "protocol-sensitivity.png"
KEYS = (
    "version",
    "study",
    "model",
    "scenarios",
    "agent",
    "dtype",
    "schedule",
    "num_envs",
    "sampling",
    "base",
    "base_seeds",
    "change_seeds",
    "changes",
    "bfcl_slice",
    "statistics",
    "paper",
)


def one_knob_per_change(path: Path, data: Mapping[str, Any]) -> dict[str, Any]:
    """The pre-registration's own rule: each change sets one knob of the base."""
    for change in data["changes"]:
        if not isinstance(change, dict) or len(change) != 1 or next(iter(change)) not in data["base"]:
            raise PreregError(f"{shown(path)}: each change sets one knob of the base, got {change!r}")
    return dict(data)


SCHEMA = Schema("protocol_sensitivity", 1, KEYS, exact=True, check=one_knob_per_change)


def grid(prereg: Mapping[str, Any]) -> dict[str, list[Any]]:
    """The sweep's grid: each knob's base value first, then its changes (what `run_vary` expects)."""
    out = {knob: [value] for knob, value in prereg["base"].items()}
    for change in prereg["changes"]:
        [(knob, value)] = change.items()
        out[knob].append(value)
    return out


def _eval_config(prereg: Mapping[str, Any], model: str, **fields: Any) -> Any:
    from tooluse_agents.backends.base import SamplingConfig
    from tooluse_agents.eval.run import EvalConfig

    return EvalConfig(
        agent=prereg["agent"],
        model=model,
        sampling=SamplingConfig(**prereg["sampling"]),
        num_envs=prereg["num_envs"],
        schedule=prereg["schedule"],
        dtype=prereg["dtype"],
        **fields,
    )


def run(args: argparse.Namespace) -> int:
    """Play every configuration the pre-registration names (skipping what is already done)."""
    from tooluse_agents.eval.run import run_eval
    from tooluse_agents.eval.sweep import run_vary
    from tooluse_gym.envs.knobs import Knobs

    prereg = load(args.prereg, SCHEMA)
    if uncommitted(args.prereg):
        raise SystemExit(f"{shown(args.prereg)} has uncommitted changes: commit the pre-registration first")
    os.chdir(ROOT)  # the pre-registration's paths are relative to the checkout, and so are the records'
    model = str(args.model or prereg["model"])
    if not Path(model).is_dir() and model != "smollm2-135m":
        raise SystemExit(f"no model at {model}: make it first (make warmstart)")
    scenarios = tuple(prereg["scenarios"])
    base = _eval_config(prereg, model, scenarios=scenarios, seeds=tuple(prereg["base_seeds"]))
    print(f"[protocol-sensitivity] curriculum sweep -> {shown(args.out / 'curriculum')}", file=sys.stderr)
    run_vary(base, grid(prereg), args.out / "curriculum", change_seeds=prereg["change_seeds"], progress=args.progress)
    bfcl = prereg["bfcl_slice"]
    knobs = {k: prereg["base"][k] for k in bfcl["keep_base_knobs"]}
    config = _eval_config(
        prereg,
        model,
        categories=tuple(bfcl["categories"]),
        limit=bfcl["limit"],
        seeds=tuple(bfcl["seeds"]),
        protocol=Knobs(**knobs),  # the BFCL env's defaults are Knobs'
    )
    print(f"[protocol-sensitivity] BFCL slice -> {shown(args.out / 'bfcl')}", file=sys.stderr)
    run_eval(config, args.out / "bfcl", progress=args.progress)
    if args.grpo_model:
        config = dataclasses.replace(
            base, model=str(args.grpo_model), protocol=base.protocol.with_defaults(**prereg["base"])
        )
        print(f"[protocol-sensitivity] trained model's base row -> {shown(args.out / 'grpo-base')}", file=sys.stderr)
        run_eval(config, args.out / "grpo-base", progress=args.progress)
    return 0


def _summary(folder: Path) -> dict[str, Any] | None:
    path = folder / "results.json"
    if not path.exists():
        return None
    results = json.loads(path.read_text(encoding="utf-8"))
    overall = results["summary"]["overall"]
    return {
        "folder": shown(folder),
        "overall": overall["mean"],
        "per_seed": overall["per_seed"],
        "fingerprint": results["fingerprint"],
        "episodes": results["summary"].get("episodes"),
    }


def build(prereg_path: Path, out: Path) -> dict[str, Any]:
    """The report's JSON from the run folders under `out` (what exists so far)."""
    prereg = load(prereg_path, SCHEMA)
    sweep_path = out / "curriculum" / "sweep.json"
    sweep = json.loads(sweep_path.read_text(encoding="utf-8")) if sweep_path.exists() else None
    return {
        **head(prereg["study"], prereg_path, contents=prereg, with_machine=False),
        "curriculum": sweep,
        "bfcl_slice": _summary(out / "bfcl"),
        "grpo_base": _summary(out / "grpo-base"),
        "reasoning": "not testable: the model writes no <think>, so keep / strip / last render the same prompts",
        "paper": prereg["paper"],
    }


def figure(report: Mapping[str, Any], path: Path) -> None:
    """Per change, the paired difference from the base with its 95% interval; the base's seed spread."""
    from tooluse_agents.runs.report import _pyplot

    sweep = report["curriculum"]
    if not sweep:
        return
    rows = sweep["changes"]
    labels = [f"{r['knob']} = {r['folder'].split('=', 1)[1]}" for r in rows]
    diffs = [100 * (r["paired"]["diff"] or 0.0) for r in rows]
    lows = [d - 100 * r["paired"]["ci95"][0] if r["paired"]["ci95"] else 0 for d, r in zip(diffs, rows, strict=True)]
    highs = [100 * r["paired"]["ci95"][1] - d if r["paired"]["ci95"] else 0 for d, r in zip(diffs, rows, strict=True)]
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8, 0.5 * len(rows) + 1.8))
    ax.errorbar(diffs, range(len(rows)), xerr=[lows, highs], fmt="o", color="#4C72B0", capsize=3)
    spread = sweep["base"]["seed_spread"]["max_minus_min"]
    if spread is not None:
        ax.axvspan(-50 * spread, 50 * spread, color="#DDDDDD", label="± half the base's seed spread")
        ax.legend(loc="upper left", fontsize=8)
    ax.axvline(0, color="black", linewidth=0.8)
    ax.set_yticks(range(len(rows)), labels)
    ax.invert_yaxis()
    ax.set_xlabel("change - base, paired by task and seed\n(points; 95% bootstrap interval over tasks)")
    base = sweep["base"]
    ax.set_title(f"base {100 * base['overall']:.1f}% ({base['seed_spread']['seeds']} seeds)", fontsize=10)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)


def report(args: argparse.Namespace) -> int:
    """Write the report's JSON and figure."""
    data = build(args.prereg, args.out)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(portable(data, ROOT), indent=1) + "\n", encoding="utf-8")
    figure(data, args.figure)
    print(f"wrote {shown(args.json)}" + (f" and {shown(args.figure)}" if data["curriculum"] else ""), file=sys.stderr)
    return 0


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m experiments.protocol_sensitivity", description=__doc__.splitlines()[0]
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("run", "report"):
        p = sub.add_parser(name)
        p.add_argument("--prereg", type=Path, default=DEFAULT_PREREG)
        p.add_argument("--out", type=Path, default=ROOT / "runs" / "protocol-sensitivity")
    r = sub.choices["run"]
    r.add_argument("--model", help="instead of the pre-registered model (a smoke run)")
    r.add_argument("--grpo-model", type=Path, help="a GRPO-trained model: add its base-protocol row")
    r.add_argument("--no-progress", dest="progress", action="store_false")
    rep = sub.choices["report"]
    rep.add_argument("--json", type=Path, default=RESULT)
    rep.add_argument("--figure", type=Path, default=FIGURE)
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    return dispatch("protocol_sensitivity", {"run": run, "report": report}, parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
