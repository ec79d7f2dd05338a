"""Vanilla GRPO vs GRPO + pre-rollout filtering + max-variance sub-sampling: held-out reward against training time.

A record, superseded: the first efficiency study (v1, one seed, no pre-registration), kept so the
committed ``benchmarks/results/grpo_efficiency*.json`` can be traced to the code that made them. Its
successor is the pre-registered `experiments.efficiency_multi_turn`; its statistics now live in
`tooluse_agents.eval.stats`.

One command runs the whole experiment from a fresh checkout, one step after the other on this machine:

1. the weak warm-start: ``python -m tooluse_agents.train.sft --scenarios scenarios/curriculum/warmup.yaml
   --limit N --out OUT/weakstart`` (N = ``--weakstart-limit``, 30 by default: 8 supervised steps,
   held-out 0.306 greedy on next-turn prompts, so the start is low but not zero); skipped when
   ``OUT/weakstart`` already holds its finished model (``model/config.json`` and ``summary.json``),
   and not run with ``--start-model`` (both arms then start from that model, e.g. on a GPU);
2. the vanilla arm (filter off, update on all n rollouts) from that model, in its own process
   (``tooluse train``), until its training time reaches ``--budget-s``;
3. the efficient arm (filter k=1 + max-variance m of n), the same way.

Both arms share everything else: the start model, the seed, the tasks (60 of the curriculum's 240 train
tasks, evenly spaced over its categories: 72 next-turn prompts; ``--train-limit 0`` is the whole split),
the training-time budget, the learning rate (1e-5), the exact zero-advantage skip
(``update.skip_zero_advantage=true``) and the held-out evaluation: greedy on ALL held-out next-turn
prompts (144), at the start, at the first step boundary past each multiple of ``--eval-every-s``
training seconds, and at the end. Training time = rollout + update + weight sync as the trainer counts
it (``time/train_s``); evaluations are not in it.

Why 60 tasks and lr 1e-5 (each decided before the run it set up). The first full run (60 tasks, lr
5e-5) lost held-out reward (0.306 -> 0.236) while its train reward rose: it fitted its 72 prompts. Hence
lr 1e-5, and the third run took the whole split (288 prompts): held-out rose 0.306 -> 0.389 in both
arms, but at 46-57 s a step and 4 prompts a step a 1,800 s budget is 32-40 steps, fewer than the 72 of
one epoch, and the filter decides at each epoch's start from the previous epoch's groups, so it never
acted and the claim went unmeasured (that run's report and plot: ``benchmarks/results/
grpo_efficiency_whole_split.json``, ``docs/grpo-efficiency-whole-split.png``; ``--train-limit 0``). The
headline setting is therefore 60 tasks at lr 1e-5: 18 steps an epoch, so the filter acts from the
second epoch (step ~19) inside the budget; the risk, fitting 72 prompts, is what lr 1e-5 is for.

The report (JSON, ``--json``; ``benchmarks/results/grpo_efficiency.json`` by default, the run folder's
``grpo_efficiency.json`` with ``--short``) gives each arm's held-out curve against training time, the
target (vanilla's final held-out reward), each arm's training time to FIRST reach it (the first
evaluation at or above it), the speed-up, both final rewards with binomial standard errors, the share
of update tokens with zero advantage, the rollout/update/sync split, prompts skipped per epoch and
rollouts generated vs used. A speed-up is reported only when vanilla's held-out gain (final minus start)
exceeds twice its standard error: a target that evaluation noise alone could reach measures nothing.

    python -m experiments.history.grpo_efficiency --out runs/grpo-efficiency --plot     # ~2.1 h on 2 cores
    python -m experiments.history.grpo_efficiency --short --out /tmp/grpo-eff-short     # a few minutes: proves it works

The plot (held-out reward vs training time, both arms, the target line; the time split) is written
only with ``--plot [PATH]`` (default path ``docs/grpo-efficiency.png``), so a smoke run never
replaces the committed one. Started again with the same arguments, a killed benchmark skips the
finished warm-start and resumes each arm from its last checkpoint (``--save-every`` steps); the
budget counts training time across the resume.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tooluse_agents.eval.stats import binomial_se, gain_standard_error, paired_gain
from tooluse_agents.runs.jsonl import read_jsonl
from tooluse_agents.runs.records import MetricsRecord, read_episodes, read_metrics

ROOT = Path(__file__).resolve().parents[2]  # the checkout: experiments/history/ -> .

BASE_CONFIG = ROOT / "agents" / "train" / "grpo" / "configs" / "cpu_curriculum.yaml"
DEFAULT_JSON = ROOT / "benchmarks" / "results" / "grpo_efficiency.json"
DEFAULT_PLOT = ROOT / "docs" / "grpo-efficiency.png"
WARMUP = "scenarios/curriculum/warmup.yaml"
ARMS = ("vanilla", "efficient")
# 0 for a limit means the whole split
FULL = {
    "weakstart_limit": 30,
    "train_limit": 60,
    "heldout_limit": 0,
    "group_size": 8,
    "update_size": 4,
    "prompts_per_step": 4,
    "budget_s": 1800.0,
    "eval_every_s": 300.0,
    "save_every": 10,
}
SHORT = {
    "weakstart_limit": 2,
    "train_limit": 4,
    "heldout_limit": 3,
    "group_size": 4,
    "update_size": 2,
    "prompts_per_step": 2,
    "budget_s": 45.0,
    "eval_every_s": 15.0,
    "save_every": 0,
}
SHORT_SET = (
    "tasks.category=literal",
    "heldout.category=literal",
    "protocol.max_steps_per_turn=1",
    "rollout.max_tokens=48",
)


def weakstart_dir(args: argparse.Namespace) -> Path:
    return args.out / "weakstart"


def start_model(args: argparse.Namespace) -> str:
    return args.start_model or str(weakstart_dir(args) / "model")


def weakstart_done(folder: Path) -> bool:
    """The warm-start finished: `tooluse_agents.train.sft` writes summary.json after the model."""
    return (folder / "model" / "config.json").is_file() and (folder / "summary.json").is_file()


def weakstart_command(args: argparse.Namespace) -> list[str]:
    return [
        sys.executable,
        "-m",
        "tooluse_agents.train.sft",
        "--scenarios",
        WARMUP,
        "--limit",
        str(args.weakstart_limit),
        "--out",
        str(weakstart_dir(args)),
        "--seed",
        str(args.seed),
        *(["--threads", str(args.threads)] if args.threads else []),
    ]


def variant_overrides(name: str, args: argparse.Namespace) -> list[str]:
    """The config overrides of one arm: everything shared, then the arm's two switches."""
    shared = [
        f"run_dir={args.out / name}",
        f"policy.model={start_model(args)}",
        f"seed={args.seed}",
        f"epochs={args.epochs}",
        "max_steps=null",
        f"budget_s={args.budget_s}",
        f"tasks.limit={args.train_limit or 'null'}",
        f"heldout.limit={args.heldout_limit or 'null'}",
        f"grpo.group_size={args.group_size}",
        f"grpo.prompts_per_step={args.prompts_per_step}",
        f"rollout.engine={args.engine}",
        *([f"policy.threads={args.threads}"] if args.threads else []),
        *([f"rollout.max_tokens={args.max_tokens}"] if args.max_tokens else []),
        f"update.lr={args.lr}",
        "update.skip_zero_advantage=true",
        "eval.every_steps=null",
        f"eval.every_train_s={args.eval_every_s}",
        "eval.at_start=true",
        "eval.temperature=0.0",
        "eval.samples=1",
        "export_final=true",
        f"save_every={args.save_every or 10**6}",
    ]
    shared += [*(SHORT_SET if args.short else ()), *args.set]
    if name == "vanilla":
        return [*shared, "filter.enabled=false", "grpo.update_size=null"]
    return [*shared, "filter.enabled=true", f"filter.k={args.k}", f"grpo.update_size={args.update_size}"]


def _run(label: str, cmd: list[str]) -> float:
    print(f"[{label}] {' '.join(cmd[1:])}", file=sys.stderr, flush=True)
    start = time.perf_counter()
    subprocess.run(cmd, cwd=ROOT, check=True)
    return time.perf_counter() - start


def run_arm(name: str, args: argparse.Namespace) -> float:
    cmd = [
        sys.executable,
        "-m",
        "tooluse_agents.cli.train",
        str(args.config),
        *variant_overrides(name, args),
        "--no-progress",
    ]
    return _run(name, cmd)


# --- the report's arithmetic ------------------------------------------------------------------


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return read_jsonl(path)[0] if path.exists() else []


def _train_s(record: MetricsRecord | Mapping[str, Any]) -> float:
    return record.get("time/train_s", record.get("time/elapsed_s", 0.0))


def eval_outcomes(path: Path) -> dict[int, dict[str, float]]:
    """Per-prompt held-out rewards of each evaluation (``eval_episodes.jsonl``): eval step -> task id -> reward."""
    out: dict[int, dict[str, float]] = {}
    for row in _jsonl(path):
        out.setdefault(int(row.get("eval_step", 0)), {})[str(row["task_id"])] = float(row["reward"])
    return out


def time_to(curve: list[dict[str, Any]], target: float) -> float | None:
    """Training seconds at the FIRST evaluation whose reward reaches `target` (None: never).

    Evaluations are points: a curve that crosses the target between two of them reaches it at the
    later one (no interpolation)."""
    return next((p["train_s"] for p in curve if p["reward"] >= target - 1e-9), None)


def epoch_counts(metrics: Sequence[MetricsRecord | Mapping[str, Any]]) -> dict[str, dict[str, int]]:
    """Prompts skipped and rolled out per epoch (the filter decides at each epoch's first step)."""
    out: dict[str, dict[str, int]] = {}
    for m in metrics:
        key = str(m["epoch"])
        if key not in out:
            out[key] = {"skipped": m["filter/skipped_prompts"], "active": m["filter/active_prompts"]}
    return out


def summarize(run_dir: Path) -> dict[str, Any]:
    """Curve and totals of one finished arm's run folder."""
    metrics, evals = read_metrics(run_dir / "metrics.jsonl")[0], _jsonl(run_dir / "eval.jsonl")
    if not evals:
        raise ValueError(f"{run_dir} has no held-out evaluation")
    update_tokens = sum(m["update/tokens"] for m in metrics)
    zero_tokens = sum(m["update/tokens"] * m["update/zero_adv_token_frac"] for m in metrics)
    # tokens that ran forward/backward (fewer than update_tokens with update.skip_zero_advantage)
    computed = sum(m.get("update/computed_tokens", m["update/tokens"]) for m in metrics)
    computed_zero = max(0.0, computed - (update_tokens - zero_tokens))
    used = [e for e in read_episodes(run_dir / "episodes.jsonl")[0] if e.extra["train"]["used"]]
    zero_rollouts = sum(e.extra["train"]["advantage"] == 0.0 for e in used)
    episodes = evals[-1].get("episodes", 0)
    start, final = evals[0]["eval/heldout_reward"], evals[-1]["eval/heldout_reward"]
    per_epoch = epoch_counts(metrics)
    outcomes = eval_outcomes(run_dir / "eval_episodes.jsonl")
    first, last = evals[0].get("step", 0), evals[-1].get("step", 0)
    paired = paired_gain(outcomes[first], outcomes[last]) if first in outcomes and last in outcomes else None
    return {
        "heldout_start": start,
        "heldout_final": final,
        "heldout_se": binomial_se(final, episodes),
        "heldout_episodes": episodes,
        "heldout_paired": paired,
        "curve": [{"train_s": _train_s(e), "step": e["step"], "reward": e["eval/heldout_reward"]} for e in evals],
        "steps": len(metrics),
        "epochs": len(per_epoch),
        "train_s": _train_s(metrics[-1]) if metrics else 0.0,
        "eval_s": sum(e.get("time/eval_s", 0.0) for e in evals),
        "time_split_s": {k: sum(m[f"time/{k}_s"] for m in metrics) for k in ("rollout", "update", "sync")},
        "rollouts_generated": sum(m["subsample/generated"] for m in metrics),
        "rollouts_used": sum(m["subsample/used"] for m in metrics),
        "prompts_per_epoch": per_epoch,
        "prompts_skipped": sum(c["skipped"] for c in per_epoch.values()),
        "update_tokens": update_tokens,
        "zero_advantage_update_frac": zero_tokens / update_tokens if update_tokens else 0.0,
        "computed_update_tokens": computed,
        "zero_advantage_compute_frac": computed_zero / computed if computed else 0.0,
        "zero_advantage_rollouts_frac": zero_rollouts / len(used) if used else 0.0,
        "train_reward_mean": sum(m["rollout/reward_mean"] for m in metrics) / len(metrics) if metrics else 0.0,
    }


def compare(vanilla: dict[str, Any], efficient: dict[str, Any]) -> dict[str, Any]:
    """The target, both arms' times to it, the speed-up under the 2-SE rule, and the issue's three checks.

    Fills in each arm's ``time_to_target_s``; returns the top-level report keys."""
    target = vanilla["heldout_final"]
    for arm in (vanilla, efficient):
        arm["time_to_target_s"] = time_to(arm["curve"], target)
    t_vanilla, t_efficient = vanilla["time_to_target_s"], efficient["time_to_target_s"]
    gain = target - vanilla["heldout_start"]
    se = gain_standard_error(vanilla["heldout_start"], target, vanilla["heldout_episodes"])
    learned = gain > 0 and gain > 2 * se
    speedup = t_vanilla / t_efficient if learned and t_vanilla and t_efficient else None
    delta = efficient["heldout_final"] - target
    delta_se = math.sqrt(vanilla["heldout_se"] ** 2 + efficient["heldout_se"] ** 2)
    notes = []
    if gain <= 0:
        notes.append("vanilla did not improve on its start held-out reward: time-to-target is not meaningful")
    elif not learned:
        notes.append(
            f"vanilla's held-out gain {gain:+.3f} is within two standard errors ({2 * se:.3f}) of evaluation "
            "noise: no speed-up is reported"
        )
    if t_efficient is None:
        notes.append("the efficient arm never reached vanilla's final held-out reward")
    paired = vanilla.get("heldout_paired")
    if paired and learned != (gain > 2 * paired["paired_se"]):
        notes.append(
            f"the paired SE of the gain ({paired['paired_se']:.3f}: {paired['gained']} prompts gained, "
            f"{paired['lost']} lost) gives the other verdict; the gate uses the unpaired SE, decided before the run"
        )
    checks = {
        "vanilla_gain_over_2se": learned,
        "speedup_at_least_1_7x": speedup is not None and speedup >= 1.7,
        "speedup_at_least_2_6x": speedup is not None and speedup >= 2.6,  # the goal: the paper's multi-turn figure
        "efficient_final_within_1se": delta >= -delta_se - 1e-12,
    }
    return {
        "target": target,
        "target_rule": "vanilla's final held-out reward; time to target = the first evaluation at or above it",
        "vanilla_gain": gain,
        "vanilla_gain_se": se,
        "vanilla_gain_paired_se": paired["paired_se"] if paired else None,
        "speedup_to_target": speedup,
        "speedup_rule": "t_vanilla / t_efficient, reported only when vanilla_gain > 2 * vanilla_gain_se",
        "final_heldout_delta": delta,
        "final_heldout_delta_se": delta_se,
        "train_time_ratio": vanilla["train_s"] / efficient["train_s"] if efficient["train_s"] else None,
        "checks": checks,
        "meets_target": checks["vanilla_gain_over_2se"]
        and checks["speedup_at_least_1_7x"]
        and checks["efficient_final_within_1se"],
        "notes": notes,
    }


def _shown(path: Path) -> str:
    """A path as the report records it: relative to the checkout when inside it (no machine's folders)."""
    return str(path.relative_to(ROOT)) if path.is_absolute() and path.is_relative_to(ROOT) else str(path)


def build_report(runs: dict[str, dict[str, Any]], args: argparse.Namespace, **extra: Any) -> dict[str, Any]:
    """The JSON report: the comparison's keys, the experiment's size, both arms, the settings."""
    comparison = compare(runs["vanilla"], runs["efficient"])
    for arm in runs.values():
        arm["budget_spent"] = arm["train_s"] >= args.budget_s  # False: the arm ran out of epochs first
    return {
        **comparison,
        "heldout_prompts": runs["vanilla"]["heldout_episodes"],  # greedy, one sample per prompt
        "budget_s": args.budget_s,
        "eval_every_s": args.eval_every_s,
        "labels": {
            "vanilla": f"vanilla GRPO (n={args.group_size}, update on all)",
            "efficient": f"filter k={args.k} + max-variance m={args.update_size} of n={args.group_size}",
        },
        "vanilla": runs["vanilla"],
        "efficient": runs["efficient"],
        "settings": {k: (_shown(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        **extra,
    }


def plot(report: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2), gridspec_kw={"width_ratios": [3, 2]})
    colors = {"vanilla": "#888888", "efficient": "#1f77b4"}
    for name in ARMS:
        arm = report[name]
        xs, ys = [p["train_s"] / 60 for p in arm["curve"]], [p["reward"] for p in arm["curve"]]
        left.plot(xs, ys, "o-", color=colors[name], label=report["labels"][name])
        if arm["time_to_target_s"] is not None:
            left.axvline(arm["time_to_target_s"] / 60, color=colors[name], ls="--", lw=0.8)
    left.axhline(report["target"], ls=":", color="black", lw=1, label="target (vanilla's final)")
    left.set_xlabel("training time (min; rollout + update + sync)")
    left.set_ylabel(f"held-out reward (greedy, {report['heldout_prompts']} prompts)")
    left.legend(frameon=False, fontsize=8)
    speedup = report["speedup_to_target"]
    left.set_title(f"speed-up to target: {f'{speedup:.2f}x' if speedup else 'n/a'}", fontsize=10)
    bottom = [0.0, 0.0]
    for part, color in (("rollout", "#2ca02c"), ("update", "#d62728"), ("sync", "#9467bd")):
        values = [report[n]["time_split_s"][part] / 60 for n in ARMS]
        right.bar(list(ARMS), values, bottom=bottom, color=color, label=part)
        bottom = [b + v for b, v in zip(bottom, values, strict=True)]
    right.set_ylabel("minutes")
    right.legend(frameon=False, fontsize=8)
    right.set_title("training time split", fontsize=10)
    for side in (left, right):
        side.spines[["top", "right"]].set_visible(False)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=Path("runs/grpo-efficiency"), help="run folders")
    parser.add_argument(
        "--json", type=Path, default=None, help=f"report path (default {DEFAULT_JSON.relative_to(ROOT)}"
    )
    parser.add_argument(
        "--plot", type=Path, nargs="?", const=DEFAULT_PLOT, default=None, help="write the plot (default path: docs/)"
    )
    parser.add_argument("--config", type=Path, default=BASE_CONFIG, help="base config shared by both arms")
    parser.add_argument("--short", action="store_true", help="a few-minute configuration that proves the script works")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--engine", default="vllm", choices=("vllm", "hf"))
    parser.add_argument("--max-tokens", type=int, default=None, help="tokens per message (default: the config's)")
    parser.add_argument(
        "--start-model",
        default=None,
        help="train both arms from this model (a folder or hub id) instead of the weak warm-start, which is not run",
    )
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        help="torch threads of the warm-start and the updates (default: the config's, 2; 1 with --short, which "
        "keeps a smoke run usable next to another busy process)",
    )
    parser.add_argument("--lr", type=float, default=1e-5, help="learning rate (the weak-start probe's)")
    parser.add_argument("--epochs", type=int, default=100, help="an upper bound; the budget ends the arms")
    parser.add_argument("--k", type=int, default=1, help="filter streak threshold of the efficient arm")
    parser.add_argument("--set", nargs="*", default=[], help="extra config overrides for both arms (key=value)")
    for key, value in FULL.items():
        kind = float if isinstance(value, float) else int
        parser.add_argument(
            "--" + key.replace("_", "-"), type=kind, default=None, help=f"default {value} ({SHORT[key]} with --short)"
        )
    args = parser.parse_args(argv)
    for key, value in (SHORT if args.short else FULL).items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    if args.short and args.threads is None:
        args.threads = 1
    if args.json is None:
        args.json = args.out / "grpo_efficiency.json" if args.short else DEFAULT_JSON
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    wall: dict[str, float | None] = {"weakstart": None}
    if not args.start_model and not weakstart_done(weakstart_dir(args)):
        wall["weakstart"] = _run("weakstart", weakstart_command(args))
    for name in ARMS:
        wall[name] = run_arm(name, args)
    wall["total"] = time.perf_counter() - started
    runs = {name: summarize(args.out / name) for name in ARMS}
    summary = weakstart_dir(args) / "summary.json"
    weakstart = {"model": start_model(args), "limit": None if args.start_model else args.weakstart_limit}
    if not args.start_model and summary.is_file():
        weakstart["summary"] = json.loads(summary.read_text())
    report = build_report(runs, args, weakstart=weakstart, process_wall_s=wall)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    if args.plot:
        plot(report, args.plot)
    keys = (
        "target",
        "vanilla_gain",
        "vanilla_gain_se",
        "vanilla_gain_paired_se",
        "speedup_to_target",
        "final_heldout_delta",
        "checks",
        "notes",
    )
    print(json.dumps({k: report[k] for k in keys}, indent=1))
    for name in ARMS:
        arm = report[name]
        print(
            f"{name}: held-out {arm['heldout_start']:.3f} -> {arm['heldout_final']:.3f} (SE {arm['heldout_se']:.3f}), "
            f"time to target {arm['time_to_target_s']}, {arm['steps']} steps, train {arm['train_s']:.0f}s "
            f"(rollout/update/sync {'/'.join(f'{v:.0f}' for v in arm['time_split_s'].values())}), "
            f"evaluations {arm['eval_s']:.0f}s, rollouts {arm['rollouts_generated']} generated / "
            f"{arm['rollouts_used']} used, skipped per epoch "
            f"{[c['skipped'] for c in arm['prompts_per_epoch'].values()]}, zero-advantage share of update tokens "
            f"{arm['zero_advantage_update_frac']:.2f}"
        )
    print(f"report: {args.json}; wall {wall['total']:.0f}s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
