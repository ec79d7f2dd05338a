"""Generated blocks for BFCL's single-turn half: its speed against bfcl_eval and the seed-stability study."""

from __future__ import annotations

from pages_common import _load, _not_measured, _table


def single_turn_speed_table() -> str:
    """Time per entry: ours (a whole episode, and decode + check alone) against bfcl_eval's functions."""
    name = "single_turn_throughput.json"
    data = _load(name)
    if data is None:
        return _not_measured(name, "python benchmarks/single_turn_throughput.py --write")
    rows = [
        [
            f"`{fmt}`",
            f"{r['entries']:,}",
            f"{r['official_ms']:.3f}",
            f"{r['core_ms']:.3f}",
            f"**{r['core_ratio']:.2f}×**",
            f"{r['ours_ms']:.3f}",
            f"**{r['ratio']:.2f}×**",
        ]
        for fmt, r in data["formats"].items()
    ]
    header = [
        "decoder",
        "entries",
        "bfcl_eval decode + check (ms)",
        "ours, decode + check (ms)",
        "ratio",
        "ours, whole episode (ms)",
        "ratio",
    ]
    m, git = data["machine"], data["git"]
    return (
        _table(header, rows)
        + f"\nRatio: bfcl_eval's time / ours, median of {data['passes']} passes; every entry valid on both sides "
        + f"in every pass. {m['cpu_model']}, Python {m['python']}, bfcl-eval {m['bfcl_eval']}, at "
        + f"`{(git['commit'] or '?')[:7]}` (`benchmarks/results/{name}`).\n"
    )


def seed_stability_table() -> str:
    """Per cell: each seed's accuracy, spread and std with intervals; the pre-registered verdict."""
    name = "single_turn_seed_stability.json"
    data = _load(name)
    if data is None:
        return _not_measured(name, "python -m experiments.seed_stability --commit")

    def pts(x: float) -> str:
        return f"{100 * x:.1f}"

    rows = []
    for cell_name, c in data["cells"].items():
        rows.append(
            [
                f"`{cell_name}`",
                c["model"],
                c["turns"],
                str(c["tasks"]),
                " / ".join(pts(v) for v in c["per_seed"].values()),
                pts(c["mean"]),
                f"{pts(c['spread'])} [{pts(c['spread_ci95'][0])}, {pts(c['spread_ci95'][1])}]",
                f"{pts(c['std'])} [{pts(c['std_ci95'][0])}, {pts(c['std_ci95'][1])}]",
            ]
        )
    header = ["cell", "model", "turns", "tasks", "accuracy per seed", "mean", "spread [95% CI]", "std [95% CI]"]
    f = data["finding"]
    verdict = f"**{f['verdict']}**"
    if "ci95" in f:
        verdict += (
            f": multi std - single std = {pts(f['std_difference'])} points, 95% CI "
            f"[{pts(f['ci95'][0])}, {pts(f['ci95'][1])}]"
        )
    return (
        _table(header, rows)
        + f"\nPre-registered verdict ({data['prereg']['path']}): {verdict}. Points; seeds "
        + f"{', '.join(map(str, data['seeds']))}; task-bootstrap intervals (`benchmarks/results/{name}`).\n"
    )


def single_turn_speed_line() -> str:
    """The README's speed line for single-turn scoring."""
    data = _load("single_turn_throughput.json")
    if data is None:
        return ""
    parts = [
        f"`{fmt}` decoder {r['core_ratio']:.2f}× decode + check, {r['ratio']:.2f}× a whole episode"
        for fmt, r in data["formats"].items()
    ]
    entries = max(r["entries"] for r in data["formats"].values())
    return (
        f"- Single-turn scoring against bfcl_eval's `decode_ast` + `ast_checker` (all {entries:,} entries): "
        f"{', '.join(parts)} (`single_turn_throughput.json`).\n"
    )


def seed_stability_rows() -> list[list[str]]:
    """The README's results-at-a-glance row of the seed-stability study."""
    data = _load("single_turn_seed_stability.json")
    if data is None or not data.get("complete"):
        return []
    c, f = data["cells"], data["finding"]
    multi, single = c[f["multi"]], c[f["single"]]
    result = (
        f"warm-start, 60 curriculum tasks each, {len(data['seeds'])} seeds: multi-turn spread "
        f"{100 * multi['spread']:.1f} points (std {100 * multi['std']:.1f}), single-turn spread "
        f"{100 * single['spread']:.1f} (std {100 * single['std']:.1f}); difference of stds "
        f"{100 * f['std_difference']:+.1f}, 95% CI [{100 * f['ci95'][0]:+.1f}, {100 * f['ci95'][1]:+.1f}]"
    )
    what = "Seed stability (pre-registered): does single-turn move less with the seed than multi-turn?"
    return [[what, result, f["verdict"], "`single_turn_seed_stability.json`"]]


def format_grid_table() -> str:
    """Per cell: BFCL's summary over the prompt formats, the best and worst configuration, the verdict."""
    name = "single_turn_format_grid.json"
    data = _load(name)
    if data is None:
        return _not_measured(name, "python -m experiments.format_grid --commit")

    def pts(x: float) -> str:
        return f"{100 * x:.1f}"

    def short(config: str) -> str:
        return "`" + config.replace("&prompt_fmt=plaintext", "").replace("&style=classic", "") + "`"

    rows = []
    for cell_name, c in data["cells"].items():
        acc = c["accuracy"]
        best, worst = max(acc, key=acc.__getitem__), min(acc, key=acc.__getitem__)
        rows.append(
            [
                f"`{cell_name}`",
                c["model"],
                c["turns"],
                f"{c['configurations']} x {c['tasks']}",
                pts(acc[c["base"]]),
                f"{pts(acc[best])} {short(best)}",
                f"{pts(acc[worst])} {short(worst)}",
                f"{pts(c['std'])} [{pts(c['std_ci95'][0])}, {pts(c['std_ci95'][1])}]",
                f"{pts(c['max_minus_min'])} [{pts(c['max_minus_min_ci95'][0])}, {pts(c['max_minus_min_ci95'][1])}]",
                f"{len(c['differing'])} / {c['configurations'] - 1}",
                f"**{c['verdict']}**",
            ]
        )
    header = [
        "cell",
        "model",
        "turns",
        "configurations x tasks",
        "BFCL default (%)",
        "best (%)",
        "worst (%)",
        "std [95% CI]",
        "max - min [95% CI]",
        "differ from default (Holm)",
        "verdict",
    ]
    state = "" if data["complete"] else " Not every pre-registered cell has finished."
    return (
        _table(header, rows)
        + f"\nPre-registered in {data['prereg']['path']}: greedy, one episode per task and configuration; std "
        + "(sample, as bfcl_eval's format_sensitivity_runner) and max - min over configurations in points, "
        + "task-bootstrap intervals; exact McNemar against BFCL's default configuration, Holm-adjusted. "
        + f"Every configuration's accuracy is in `benchmarks/results/{name}`.{state}\n"
    )


def format_grid_rows() -> list[list[str]]:
    """The README's results-at-a-glance row of the format-grid study."""
    data = _load("single_turn_format_grid.json")
    if data is None or not data.get("complete"):
        return []
    parts = [
        f"{name} {100 * c['max_minus_min']:.0f} points max - min ({c['verdict']})" for name, c in data["cells"].items()
    ]
    verdicts = sorted({c["verdict"] for c in data["cells"].values()})
    what = "BFCL's format grid (pre-registered): how far do its 26 prompt formats move our models?"
    return [[what, "; ".join(parts), ", ".join(verdicts), "`single_turn_format_grid.json`"]]
