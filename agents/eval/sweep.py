"""Protocol sweeps: a full grid of knob values, or one factor at a time against a base protocol.

* **Grid** (`run_sweep`): every combination of the values given; per knob, the spread (max - min)
  of the mean overall accuracy across its values.
* **One factor at a time** (`run_vary`): the first value of every knob is the base protocol;
  every other value is one change from it, played with the same tasks and seeds (the base may
  have more seeds than the changes). Per change, the difference from the base is **paired by
  task and seed**: for each task, the mean over the seeds both runs played of (change - base),
  then the mean over tasks, with a 95% interval from a bootstrap over tasks (percentile, a fixed
  number of resamples, seeded) and the paired standard error beside it. The base's own seed
  spread (max - min and sample std over seeds of the overall score) says how big a difference
  one seed can fake.

Each configuration is a normal `tooluse eval run` folder, written as it finishes, so a sweep
that is stopped resumes where it was.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import statistics
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tooluse_agents.eval.run import EvalConfig, check_seeds, make_agent, run_eval
from tooluse_agents.eval.stats import BOOTSTRAP_RESAMPLES, BOOTSTRAP_SEED, paired_difference, seed_spread, spread
from tooluse_agents.runs.records import read_episodes
from tooluse_agents.runs.report import sensitivity_figure
from tooluse_gym.prompt_formats import PromptFormat


def slug(combo: Mapping[str, Any]) -> str:
    """A configuration's folder name (a literal system prompt shows as ``literal``, a prompt format by its values)."""
    parts = []
    for knob, value in combo.items():
        text = str(value) if knob != "system_prompt" or value in ("bfcl", "strong", "none") else "literal"
        if knob == "prompt_format" and value is not None:
            text = PromptFormat.parse(value).short
        parts.append(f"{knob}={text}")
    return ",".join(parts) or "default"


def _row(combo: Mapping[str, Any], folder: str, results: Mapping[str, Any]) -> dict[str, Any]:
    overall = results["summary"]["overall"]
    return {
        "knobs": dict(combo),
        "folder": folder,
        "overall": overall["mean"],
        "per_seed": overall["per_seed"],
        "fingerprint": results["fingerprint"],
    }


def run_sweep(
    base: EvalConfig, grid: Mapping[str, Sequence[Any]], out: Path, *, force: bool = False, progress: bool = True
) -> dict[str, Any]:
    """Evaluate every combination of the grid's knob values and measure the spread each knob causes."""
    out = Path(out)
    knobs = [k for k in grid if grid[k]]
    combos = [dict(zip(knobs, values, strict=True)) for values in itertools.product(*(grid[k] for k in knobs))]
    agent = make_agent(base, progress) if combos else None
    runs = []
    try:
        for combo in combos:
            config = dataclasses.replace(base, protocol=base.protocol.with_defaults(**combo))
            results = run_eval(config, out / slug(combo), agent=agent, force=force, progress=progress)
            runs.append(_row(combo, slug(combo), results))
    finally:
        if agent is not None:
            agent.close()
    sensitivity = []
    for knob in knobs:
        if len(grid[knob]) < 2:
            continue
        by_value = {str(v): spread([r["overall"] for r in runs if r["knobs"][knob] == v])["mean"] for v in grid[knob]}
        sensitivity.append(
            {"knob": knob, "by_value": by_value, "spread": max(by_value.values()) - min(by_value.values())}
        )
    if len(base.seeds) > 1:
        seed_spreads = [max(r["per_seed"].values()) - min(r["per_seed"].values()) for r in runs]
        sensitivity.append({"knob": "seed", "by_value": {}, "spread": spread(seed_spreads)["mean"]})
    data = {
        "design": "grid",
        "base": base.to_dict(),
        "grid": {k: list(map(str, v)) for k, v in grid.items()},
        "runs": runs,
        "sensitivity": sensitivity,
    }
    (out / "sweep.json").write_text(json.dumps(data, indent=2))
    if sensitivity:
        sensitivity_figure(sensitivity, out / "sensitivity.png")
    (out / "sweep.md").write_text(sweep_markdown(data))
    return data


# --- one factor at a time --------------------------------------------------------------------------


def one_factor_changes(grid: Mapping[str, Sequence[Any]]) -> tuple[dict[str, Any], list[tuple[str, Any]]]:
    """The base protocol (each knob's first value) and the changes (every other value, one knob at a time)."""
    base = {k: values[0] for k, values in grid.items() if values}
    changes = [(k, v) for k, values in grid.items() for v in values[1:] if v != values[0]]
    return base, changes


def _rewards(folder: Path) -> dict[tuple[str, int], float]:
    records, _ = read_episodes(folder / "episodes.jsonl", unique=True)
    return {(r.task_id, r.seed): float(r.reward) for r in records if not r.unscored}


def run_vary(
    base: EvalConfig,
    grid: Mapping[str, Sequence[Any]],
    out: Path,
    *,
    change_seeds: Sequence[int] | None = None,
    force: bool = False,
    progress: bool = True,
) -> dict[str, Any]:
    """The base protocol (each knob's first value, `base.seeds`) and one change at a time (`change_seeds`)."""
    out = Path(out)
    base_knobs, changes = one_factor_changes(grid)
    if not changes:
        raise ValueError("--vary needs at least one knob with a second value (the first value of each is the base)")
    change_seeds = tuple(change_seeds or base.seeds)
    check_seeds(change_seeds, "--change-seeds")
    missing = sorted(set(change_seeds) - set(base.seeds))
    if missing:
        raise ValueError(f"change seeds {missing} are not base seeds: a change is paired with the base by seed")
    base_config = dataclasses.replace(base, protocol=base.protocol.with_defaults(**base_knobs))
    agent = make_agent(base, progress)
    try:
        base_results = run_eval(base_config, out / "base", agent=agent, force=force, progress=progress)
        rows = []
        for knob, value in changes:
            protocol = base_config.protocol.with_defaults(**{knob: value})
            config = dataclasses.replace(base_config, protocol=protocol, seeds=change_seeds)
            folder = slug({knob: value})
            results = run_eval(config, out / folder, agent=agent, force=force, progress=progress)
            rows.append({"knob": knob, "value": str(value), **_row({knob: value}, folder, results)})
    finally:
        agent.close()
    base_rewards = _rewards(out / "base")
    for row in rows:
        row["paired"] = paired_difference(base_rewards, _rewards(out / row["folder"]))
        row["seed_spread"] = seed_spread(row["per_seed"])
    formats = format_rewards(base_knobs, base_rewards, rows, out)
    data = {
        "design": "one_factor",
        "base": {
            **_row(base_knobs, "base", base_results),
            "seed_spread": seed_spread(base_results["summary"]["overall"]["per_seed"]),
        },
        "config": base_config.to_dict(),
        "change_seeds": list(change_seeds),
        "bootstrap": {"resamples": BOOTSTRAP_RESAMPLES, "seed": BOOTSTRAP_SEED, "unit": "task"},
        "changes": rows,
    }
    if len(formats) > 1:
        data["format_sensitivity"] = format_sensitivity(formats, change_seeds)
    (out / "sweep.json").write_text(json.dumps(data, indent=2))
    (out / "sweep.md").write_text(vary_markdown(data))
    return data


def format_rewards(
    base_knobs: Mapping[str, Any],
    base_rewards: Mapping[tuple[str, int], float],
    rows: Sequence[Mapping[str, Any]],
    out: Path,
) -> dict[str, dict[tuple[str, int], float]]:
    """Each ``prompt_format`` configuration of a one-factor sweep (the base's and the changes'), its rewards."""
    if base_knobs.get("prompt_format") is None:
        return {}
    formats = {str(base_knobs["prompt_format"]): dict(base_rewards)}
    for row in rows:
        if row["knob"] == "prompt_format":
            formats[row["value"]] = _rewards(out / row["folder"])
    return formats


def format_sensitivity(formats: Mapping[str, Mapping[tuple[str, int], float]], seeds: Sequence[int]) -> dict[str, Any]:
    """BFCL's format-sensitivity summary over the configurations played (``format_sensitivity_runner``'s statistics).

    Per configuration the accuracy (mean reward) over the episodes of `seeds` (the seeds every
    configuration played); then, as bfcl_eval computes them across configurations, the sample
    standard deviation (``statistics.stdev``), the sample variance and max - min, all in
    fractions here (BFCL prints them in points, rounded to 2 decimals); 0 with one configuration.
    """
    wanted = set(seeds)
    accuracy = {}
    for config, rewards in formats.items():
        values = [r for (_, seed), r in rewards.items() if seed in wanted]
        accuracy[config] = statistics.fmean(values) if values else 0.0
    values = list(accuracy.values())
    several = len(values) > 1
    return {
        "configurations": len(values),
        "seeds": sorted(wanted),
        "accuracy": accuracy,
        "std": statistics.stdev(values) if several else 0.0,
        "variance": statistics.variance(values) if several else 0.0,
        "max_minus_min": max(values) - min(values) if several else 0.0,
        "rule": "bfcl_eval format_sensitivity_runner: sample std and variance over configurations",
    }


def _format_markdown(block: Mapping[str, Any]) -> list[str]:
    lines = [
        "",
        "## BFCL format sensitivity",
        "",
        f"{block['configurations']} prompt_format configurations, seeds {block['seeds']}: accuracy std "
        f"{100 * block['std']:.2f} points (sample std, as bfcl_eval's format_sensitivity_runner), max - min "
        f"{100 * block['max_minus_min']:.2f} points.",
        "",
        "| prompt_format | pass@1 (%, mean over seeds) |",
        "|---|---|",
    ]
    lines += [f"| {config} | {100 * acc:.2f} |" for config, acc in block["accuracy"].items()]
    return lines


def _pts(value: float | None, signed: bool = False) -> str:
    if value is None:
        return "n/a"
    return f"{100 * value:+.1f}" if signed else f"{100 * value:.1f}"


def vary_markdown(data: Mapping[str, Any]) -> str:
    """The one-factor-at-a-time sweep as markdown (`sweep.md`)."""
    base = data["base"]
    spread_b = base["seed_spread"]
    lines = [
        "# Protocol sensitivity, one factor at a time",
        "",
        f"Base ({base['folder']}, {spread_b['seeds']} seeds): overall {_pts(base['overall'])}%; seed spread "
        f"{_pts(spread_b['max_minus_min'])} points (max - min), std {_pts(spread_b['std'])}.",
        "",
        "| change | overall pass@1 (%, mean over seeds) | change - base, paired (points) | "
        "95% CI (bootstrap over tasks) | paired SE | "
        "seed spread of the change (max - min) |",
        "|---|---|---|---|---|---|",
    ]
    for row in data["changes"]:
        p = row["paired"]
        ci = f"[{_pts(p['ci95'][0], True)}, {_pts(p['ci95'][1], True)}]" if p["ci95"] else "n/a"
        lines.append(
            f"| {row['knob']} = {row['value'] if row['knob'] != 'system_prompt' else row['folder'].split('=')[1]} | "
            f"{_pts(row['overall'])} | {_pts(p['diff'], True)} | {ci} | {_pts(p['se'])} | "
            f"{_pts(row['seed_spread']['max_minus_min'])} |"
        )
    if "format_sensitivity" in data:
        lines += _format_markdown(data["format_sensitivity"])
    return "\n".join(lines) + "\n"


def sweep_markdown(data: Mapping[str, Any]) -> str:
    """The grid sweep as markdown (`sweep.md`)."""
    lines = [
        "# Protocol sensitivity",
        "",
        "| knob | spread of overall accuracy (points) | mean overall by value |",
        "|---|---|---|",
    ]
    for row in data["sensitivity"]:
        values = (
            ", ".join(f"{k}: {100 * v:.1f}" for k, v in row["by_value"].items())
            or "max-min across seeds, mean over configs"
        )
        lines.append(f"| {row['knob']} | {100 * row['spread']:.1f} | {values} |")
    lines += [
        "",
        "![sensitivity](sensitivity.png)" if data["sensitivity"] else "",
        "",
        "| configuration | overall pass@1 (%, mean over seeds) | per seed |",
        "|---|---|---|",
    ]
    for run in data["runs"]:
        per_seed = ", ".join(f"{100 * v:.1f}" for v in run["per_seed"].values())
        lines.append(f"| {run['folder']} | {100 * run['overall']:.1f} | {per_seed} |")
    return "\n".join(lines) + "\n"
