"""Vanilla GRPO vs GRPO + pre-rollout filtering + max-variance sub-sampling, same everything else.

Both runs train the same model (SmolLM2-135M) on the same prompts (the curriculum train split)
with the same seed and the same budget (epochs), one after the other on this machine, each
in its own process (`tooluse-train`). The report compares:

- wall-clock training time (rollout + update + weight sync, evaluations excluded) for each run
  to first reach the target held-out reward: the vanilla run's final held-out reward;
- the final held-out reward of both;
- the fraction of update compute (generated tokens run forward and backward) spent on zero-advantage
  rollouts (0 with `--skip-zero-advantage`, which applies the exact skip to both arms);
- the rollout / update / sync time split.

It writes ``grpo_efficiency.json`` and ``grpo_efficiency.png`` to --out.

    python benchmarks/grpo_efficiency.py --out runs/grpo-efficiency            # full run (hours)
    python benchmarks/grpo_efficiency.py --short --out /tmp/grpo-eff-short     # a few minutes: proves it works

`--train-limit 0` trains on the whole train split and `--heldout-limit 0` evaluates on the whole
held-out split. With `--save-every N` a killed benchmark, started again with the same arguments,
resumes each arm from its last checkpoint (training time is counted by the trainer, so the pause
does not enter the comparison).

A speed-up to the target is only reported when vanilla's held-out gain (final minus initial) is
larger than twice its standard error (binomial, over the evaluation's episodes): a target that
evaluation noise alone could reach measures nothing.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
BASE_CONFIG = ROOT / "agents" / "grpo" / "configs" / "cpu_curriculum.yaml"
FULL = {"train_limit": 64, "heldout_limit": 40, "epochs": 4, "group_size": 8, "update_size": 4, "prompts_per_step": 16}
SHORT = {"train_limit": 3, "heldout_limit": 3, "epochs": 2, "group_size": 4, "update_size": 2, "prompts_per_step": 2}
SHORT_SET = ("tasks.category=literal", "heldout.category=literal", "protocol.max_steps_per_turn=1")


def variant_overrides(name: str, args: argparse.Namespace) -> list[str]:
    """The config overrides of one arm: everything shared, then the arm's two switches."""
    shared = [
        f"run_dir={args.out / name}",
        f"seed={args.seed}",
        f"epochs={args.epochs}",
        "max_steps=null",
        f"tasks.limit={args.train_limit or 'null'}",
        f"heldout.limit={args.heldout_limit or 'null'}",
        f"grpo.group_size={args.group_size}",
        f"grpo.prompts_per_step={args.prompts_per_step}",
        f"rollout.engine={args.engine}",
        *([f"rollout.max_tokens={args.max_tokens}"] if args.max_tokens else []),
        f"eval.every_steps={args.eval_every}",
        "eval.at_start=true",
        "export_final=false",
        f"save_every={args.save_every or 10**6}",
        f"update.skip_zero_advantage={str(args.skip_zero_advantage).lower()}",
    ]
    shared += [*(SHORT_SET if args.short else ()), *args.set]
    if name == "vanilla":
        return [*shared, "filter.enabled=false", "grpo.update_size=null"]
    return [*shared, "filter.enabled=true", f"filter.k={args.k}", f"grpo.update_size={args.update_size}"]


def run_arm(name: str, args: argparse.Namespace) -> float:
    cmd = [sys.executable, "-m", "agents.grpo.cli", str(args.config), *variant_overrides(name, args), "--no-progress"]
    print(f"[{name}] {' '.join(cmd[2:])}", file=sys.stderr, flush=True)
    start = time.perf_counter()
    subprocess.run(cmd, cwd=ROOT, check=True)
    return time.perf_counter() - start


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def summarize(run_dir: Path) -> dict[str, Any]:
    """Curves and totals of one finished run folder."""
    metrics, evals = _jsonl(run_dir / "metrics.jsonl"), _jsonl(run_dir / "eval.jsonl")
    update_tokens = sum(m["update/tokens"] for m in metrics)
    zero_tokens = sum(m["update/tokens"] * m["update/zero_adv_token_frac"] for m in metrics)
    # tokens that ran forward/backward (fewer than update_tokens with update.skip_zero_advantage)
    computed = sum(m.get("update/computed_tokens", m["update/tokens"]) for m in metrics)
    computed_zero = max(0.0, computed - (update_tokens - zero_tokens))
    episodes = _jsonl(run_dir / "episodes.jsonl")
    used = [e for e in episodes if e["train"]["used"]]
    return {
        "steps": len(metrics),
        "curve": [
            {"elapsed_s": e["time/elapsed_s"], "step": e["step"], "reward": e["eval/heldout_reward"]} for e in evals
        ],
        "heldout_episodes": evals[-1].get("episodes", 0),
        "initial_heldout_reward": evals[0]["eval/heldout_reward"],
        "final_heldout_reward": evals[-1]["eval/heldout_reward"],
        "train_time_s": metrics[-1]["time/elapsed_s"] if metrics else 0.0,
        "time_split_s": {k: sum(m[f"time/{k}_s"] for m in metrics) for k in ("rollout", "update", "sync")},
        "rollouts_generated": sum(m["subsample/generated"] for m in metrics),
        "rollouts_used": sum(m["subsample/used"] for m in metrics),
        "prompts_skipped": sum(m["filter/skipped_prompts"] for m in metrics if _first_step_of_epoch(m, metrics)),
        "update_tokens": update_tokens,
        "zero_advantage_update_frac": zero_tokens / update_tokens if update_tokens else 0.0,
        "computed_update_tokens": computed,
        "zero_advantage_compute_frac": computed_zero / computed if computed else 0.0,
        "zero_advantage_rollouts_frac": sum(e["train"]["advantage"] == 0.0 for e in used) / len(used) if used else 0.0,
        "train_reward_mean": sum(m["rollout/reward_mean"] for m in metrics) / len(metrics) if metrics else 0.0,
    }


def _first_step_of_epoch(m: dict[str, Any], metrics: list[dict[str, Any]]) -> bool:
    return m is next(x for x in metrics if x["epoch"] == m["epoch"])


def time_to(curve: list[dict[str, Any]], target: float) -> float | None:
    """Training seconds at the first evaluation whose reward reaches `target` (None: never)."""
    return next((p["elapsed_s"] for p in curve if p["reward"] >= target - 1e-9), None)


def gain_standard_error(initial: float, final: float, episodes: int) -> float:
    """Standard error of the difference of two held-out rewards, each a mean over `episodes` 0/1 outcomes."""
    if episodes <= 0:
        return math.inf
    return math.sqrt((initial * (1 - initial) + final * (1 - final)) / episodes)


def compare(vanilla: dict[str, Any], efficient: dict[str, Any]) -> dict[str, Any]:
    target = vanilla["final_heldout_reward"]
    t_vanilla, t_efficient = time_to(vanilla["curve"], target), time_to(efficient["curve"], target)
    gain = target - vanilla["initial_heldout_reward"]
    se = gain_standard_error(vanilla["initial_heldout_reward"], target, vanilla["heldout_episodes"])
    learned = gain > 0 and gain > 2 * se
    speedup = t_vanilla / t_efficient if learned and t_vanilla and t_efficient else None
    notes = []
    if gain <= 0:
        notes.append("vanilla did not improve on its initial held-out reward: time-to-target is not meaningful")
    elif not learned:
        notes.append(
            f"vanilla's held-out gain {gain:+.3f} is within two standard errors ({2 * se:.3f}) of evaluation "
            "noise: time-to-target is not meaningful"
        )
    if t_efficient is None:
        notes.append("the efficient run never reached the vanilla run's final held-out reward")
    return {
        "target_heldout_reward": target,
        "target_rule": "the vanilla run's final held-out reward",
        "vanilla_gain": gain,
        "vanilla_gain_se": se,
        "time_to_target_s": {"vanilla": t_vanilla, "efficient": t_efficient},
        "speedup_to_target": speedup,
        "total_train_time_ratio": vanilla["train_time_s"] / efficient["train_time_s"]
        if efficient["train_time_s"]
        else None,
        "final_heldout_delta": efficient["final_heldout_reward"] - vanilla["final_heldout_reward"],
        "meets_target": bool(speedup and speedup >= 1.7 and efficient["final_heldout_reward"] >= target),
        "notes": notes,
    }


def plot(report: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2), gridspec_kw={"width_ratios": [3, 2]})
    colors = {"vanilla": "#888888", "efficient": "#1f77b4"}
    for name in ("vanilla", "efficient"):
        curve = report["runs"][name]["curve"]
        left.plot(
            [p["elapsed_s"] / 60 for p in curve],
            [p["reward"] for p in curve],
            "o-",
            color=colors[name],
            label=report["labels"][name],
        )
    left.axhline(report["comparison"]["target_heldout_reward"], ls=":", color="black", lw=1, label="target")
    left.set_xlabel("training time (min; rollout + update + sync)")
    left.set_ylabel("held-out reward")
    left.legend(frameon=False, fontsize=8)
    left.set_title(f"speed-up to target: {report['comparison']['speedup_to_target'] or 'n/a'}", fontsize=10)
    names = ["vanilla", "efficient"]
    bottom = [0.0, 0.0]
    for part, color in (("rollout", "#2ca02c"), ("update", "#d62728"), ("sync", "#9467bd")):
        values = [report["runs"][n]["time_split_s"][part] / 60 for n in names]
        right.bar(names, values, bottom=bottom, color=color, label=part)
        bottom = [b + v for b, v in zip(bottom, values, strict=True)]
    right.set_ylabel("minutes")
    right.legend(frameon=False, fontsize=8)
    right.set_title("time split", fontsize=10)
    for side in (left, right):
        side.spines[["top", "right"]].set_visible(False)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=Path("runs/grpo-efficiency"))
    parser.add_argument("--config", type=Path, default=BASE_CONFIG, help="base config shared by both arms")
    parser.add_argument("--short", action="store_true", help="a few-minute configuration that proves the script works")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--engine", default="vllm", choices=("vllm", "hf"))
    parser.add_argument("--max-tokens", type=int, default=None, help="tokens per turn (default: the config's)")
    parser.add_argument(
        "--eval-every", type=int, default=None, help="steps between evaluations (default: ~2 per epoch)"
    )
    parser.add_argument(
        "--save-every",
        type=int,
        default=None,
        help="checkpoint every N steps, so a killed benchmark resumes where it stopped (default: at the end only)",
    )
    parser.add_argument("--k", type=int, default=1, help="filter streak threshold")
    parser.add_argument(
        "--skip-zero-advantage",
        action="store_true",
        help="both arms skip the forward/backward of zero-advantage samples (exact; see UpdateConfig)",
    )
    parser.add_argument("--set", nargs="*", default=[], help="extra config overrides for both arms (key=value)")
    for key, value in FULL.items():
        parser.add_argument(
            "--" + key.replace("_", "-"), type=int, default=None, help=f"default {value} ({SHORT[key]} with --short)"
        )
    args = parser.parse_args(argv)
    preset = SHORT if args.short else FULL
    for key, value in preset.items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    if args.eval_every is None:
        if not args.train_limit:
            parser.error("--train-limit 0 (the whole train split) needs an explicit --eval-every")
        prompts = args.train_limit  # next-turn prompts per epoch are at least the task count
        args.eval_every = max(1, prompts // args.prompts_per_step // 2)
    args.out.mkdir(parents=True, exist_ok=True)
    wall = {name: run_arm(name, args) for name in ("vanilla", "efficient")}
    runs = {name: summarize(args.out / name) for name in ("vanilla", "efficient")}
    report = {
        "settings": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "labels": {
            "vanilla": f"vanilla GRPO (n={args.group_size}, update on all)",
            "efficient": f"filter k={args.k} + max-variance m={args.update_size} of n={args.group_size}",
        },
        "process_wall_s": wall,
        "runs": runs,
        "comparison": compare(runs["vanilla"], runs["efficient"]),
    }
    (args.out / "grpo_efficiency.json").write_text(json.dumps(report, indent=1), encoding="utf-8")
    plot(report, args.out / "grpo_efficiency.png")
    c = report["comparison"]
    print(
        json.dumps(
            {
                k: c[k]
                for k in (
                    "target_heldout_reward",
                    "time_to_target_s",
                    "speedup_to_target",
                    "final_heldout_delta",
                    "meets_target",
                    "notes",
                )
            },
            indent=1,
        )
    )
    for name, run in runs.items():
        print(
            f"{name}: final {run['final_heldout_reward']:.3f}, train {run['train_time_s']:.0f}s, "
            f"split {run['time_split_s']}, zero-adv share of update tokens {run['zero_advantage_update_frac']:.2f} "
            f"(of computed tokens {run['zero_advantage_compute_frac']:.2f})"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
