"""Replay all 800 BFCL ground-truth episodes two ways in one process and compare speed.

* ours: a full Gym episode through ``gym.make("ToolUse-MultiTurn-v0", decoder=...)`` (decode the
  assistant text, execute, check every turn, build observations with the system prompt), under
  each decoder: ``bfcl`` (the default) and ``lenient`` (which also validates arguments). The
  messages are the oracle agent's (each turn's ground-truth calls in one message, then a message
  without calls), written once before timing: the agent is not what is measured;
* official: bfcl_eval's executor (one step per turn, as its inference loop runs it) followed
  by its ``multi_turn_checker`` on the decoded trajectory, with a fresh model name per
  entry and its global instances freed afterwards.

Both paths replay the same trajectories and must agree that all 800 are valid, in every pass.
Ours is timed twice per decoder: *first play* (a new env: each task's simulators are loaded and
its ground truth is replayed alongside the episode) and *repeat play* (the env has played each
task before: it starts the simulators from snapshots and reuses its cached ground-truth replay,
as in multi-seed evaluation or GRPO groups). The paths take turns every 50 tasks within a pass
(in an order that rotates), so drift in the machine's speed hits all of them alike; the data
loaded before timing is frozen out of the garbage collector's reach (`gc.freeze`), so each
path's collections cost what its own garbage costs. Each figure is the median over passes of
the time per episode, and the ratios are official / ours. Writes
``benchmarks/results/env_throughput.json`` and ``docs/env-throughput.png``; the README's speed
table is checked against the JSON (``tests/test_readme_numbers.py``). Run: ``make bench``.
"""

from __future__ import annotations

import argparse
import gc
import json
import platform
import statistics
import subprocess
import time
import uuid
from collections.abc import Callable
from importlib import metadata
from pathlib import Path

import gymnasium as gym

import tooluse_gym  # noqa: F401
from tooluse_agents.backends.base import SamplingConfig
from tooluse_agents.backends.factory import BackendSpec, make_agent
from tooluse_agents.rollout.loop import RolloutJob, run_rollouts
from tooluse_gym.envs import MULTI_TURN_ID
from tooluse_gym.envs.tool_env import play_messages
from tooluse_gym.tasks import bfcl

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "env_throughput.json"
PLOT = ROOT / "docs" / "env-throughput.png"
DECODERS = ("bfcl", "lenient")
_FLAGS = ("avx2", "avx512f", "avx512_bf16", "amx_bf16", "sse4_2")
"""CPU flags worth recording (this benchmark is pure Python; they identify the machine class)."""


def _official_runner() -> Callable[[str], bool]:
    from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_utils
    from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker import multi_turn_checker
    from bfcl_eval.utils import load_dataset_entry, load_ground_truth_entry

    entries, truths = {}, {}
    for category in bfcl.CATEGORIES:
        name = f"multi_turn_{category}"
        for e in load_dataset_entry(name, include_language_specific_hint=False):
            entries[e["id"]] = (e, name)
        for g in load_ground_truth_entry(name):
            truths[g["id"]] = g["ground_truth"]

    def run(task_id: str) -> bool:
        entry, category = entries[task_id]
        truth = truths[task_id]
        model = "bench_" + uuid.uuid4().hex
        long_context = "long_context" in task_id
        decoded = []
        for turn in truth:  # inference-style execution: one step per turn with all its calls
            if turn:
                multi_turn_utils.execute_multi_turn_func_call(
                    turn, entry["initial_config"], entry["involved_classes"], model, task_id, long_context=long_context
                )
            decoded.append([turn] if turn else [])
        valid = multi_turn_checker(decoded, truth, entry, category, model)["valid"]
        g = vars(multi_turn_utils)
        for key in [k for k in g if k.startswith(model)]:
            del g[key]
        return valid

    return run


def _category(task_id: str) -> str:
    return task_id.removeprefix("multi_turn_").rsplit("_", 1)[0]


def _make_envs(decoder: str) -> dict[str, gym.Env]:
    return {c: gym.make(MULTI_TURN_ID, category=c, decoder=decoder) for c in bfcl.CATEGORIES}


def oracle_scripts(task_ids: list[str]) -> dict[str, list[str]]:
    """The oracle's messages for every task (the same under both decoders): played once on the loop, before timing."""
    jobs = [RolloutJob(task_id, 0) for task_id in task_ids]

    def make_env() -> gym.Env:
        return gym.make(MULTI_TURN_ID, category="all", decoder="bfcl")

    oracle = make_agent(BackendSpec(backend="oracle"))
    episodes = run_rollouts(make_env, oracle, jobs, sampling=SamplingConfig(), num_envs=1, schedule="lockstep")
    return {e.record.task_id: [step.assistant for step in e.record.steps] for e in episodes}


def _ours(decoder: str, fresh_envs: bool, scripts: dict[str, list[str]]) -> Callable[[str], bool]:
    envs = _make_envs(decoder)

    def run(task_id: str) -> bool:
        if fresh_envs and task_id == _FIRST_TASK:  # new envs for each pass: every task is a first play
            envs.update(_make_envs(decoder))
        played = play_messages(envs[_category(task_id)], task_id, scripts[task_id])
        return played.terminated and not played.truncated and played.reward == 1.0

    return run


_FIRST_TASK = "multi_turn_base_0"
CHUNK = 50
"""Tasks a path plays before the next path takes its turn (so drift in the machine's speed hits all paths)."""


def _machine() -> dict[str, object]:
    fields: dict[str, str] = {}
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
        fields = {k.strip(): v.strip() for k, _, v in (line.partition(":") for line in out.splitlines())}
    except (OSError, subprocess.CalledProcessError):
        pass
    flags = set(fields.get("Flags", "").split())
    return {
        "cpu_model": fields.get("Model name", platform.processor() or "unknown"),
        "cpu_family": fields.get("CPU family"),
        "cpu_model_number": fields.get("Model"),
        "cpus": fields.get("CPU(s)"),
        "hypervisor": fields.get("Hypervisor vendor"),
        "flags": {f: f in flags for f in _FLAGS},
        "arch": platform.machine(),
        "python": platform.python_version(),
        "python_implementation": platform.python_implementation(),
        "bfcl_eval": metadata.version("bfcl-eval"),
        "gymnasium": metadata.version("gymnasium"),
    }


def _git() -> dict[str, object]:
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()

    try:
        tracked_changes = git("status", "--porcelain", "--untracked-files=no", "--", "tooluse_gym", "benchmarks")
        return {"commit": git("rev-parse", "HEAD"), "dirty": bool(tracked_changes)}
    except (OSError, subprocess.CalledProcessError):
        return {"commit": None, "dirty": None}


def measure(task_ids: list[str], repeats: int) -> dict[str, object]:
    scripts = oracle_scripts(task_ids)
    runners: dict[str, Callable[[str], bool]] = {"official": _official_runner()}
    for decoder in DECODERS:
        runners[f"{decoder}/first"] = _ours(decoder, fresh_envs=True, scripts=scripts)
        runners[f"{decoder}/repeat"] = _ours(decoder, fresh_envs=False, scripts=scripts)
    valid: dict[str, list[int]] = {name: [] for name in runners}
    times: dict[str, list[float]] = {name: [] for name in runners}
    cpu_times: dict[str, list[float]] = {name: [] for name in runners}
    for name, run in runners.items():  # warm-up: imports, compiled validators; a repeat env caches its
        for _ in range(2 if name.endswith("/repeat") else 1):  # ground-truth replays on a task's second play
            valid[name].append(sum(run(t) for t in task_ids))
    names = list(runners)
    chunks = [task_ids[i : i + CHUNK] for i in range(0, len(task_ids), CHUNK)]
    gc.collect()
    gc.freeze()  # the data loaded so far (tasks, entries, messages) is not the garbage collector's work in a pass
    for r in range(repeats):  # a pass: every path plays all tasks, taking turns chunk by chunk
        wall_s, cpu_s, count = dict.fromkeys(names, 0.0), dict.fromkeys(names, 0.0), dict.fromkeys(names, 0)
        for c, chunk in enumerate(chunks):
            shift = (r + c) % len(names)
            for name in names[shift:] + names[:shift]:
                run = runners[name]
                start, cpu_start = time.perf_counter(), time.process_time()
                count[name] += sum(run(t) for t in chunk)
                wall_s[name] += time.perf_counter() - start
                cpu_s[name] += time.process_time() - cpu_start
        for name in names:
            times[name].append(wall_s[name] / len(task_ids))
            cpu_times[name].append(cpu_s[name] / len(task_ids))
            valid[name].append(count[name])
    for name, counts in valid.items():
        if any(c != len(task_ids) for c in counts):
            raise SystemExit(f"{name}: not every ground-truth replay is valid ({counts})")
    wall = _figures(times)
    cpu = _figures(cpu_times)
    decoders = {}
    for decoder in DECODERS:
        decoders[decoder] = {
            **wall[decoder],
            "cpu": cpu[decoder],
            "valid": {
                "official": min(valid["official"]),
                "first_play": min(valid[f"{decoder}/first"]),
                "repeat_play": min(valid[f"{decoder}/repeat"]),
            },
        }
    return {
        "episodes": len(task_ids),
        "passes": repeats,
        "statistic": (
            f"median over passes of the mean wall-clock time per episode in a pass (perf_counter); in a pass "
            f"the paths take turns every {CHUNK} tasks; objects loaded before timing are gc-frozen; "
            "'cpu' holds the same for the process's CPU time"
        ),
        "decoders": decoders,
        "pass_ms": {name: [round(1000 * t, 4) for t in ts] for name, ts in times.items()},
        "pass_cpu_ms": {name: [round(1000 * t, 4) for t in ts] for name, ts in cpu_times.items()},
        "machine": _machine(),
        "git": _git(),
    }


def _figures(times: dict[str, list[float]]) -> dict[str, dict[str, float]]:
    ms = {name: 1000 * statistics.median(t) for name, t in times.items()}
    official = ms["official"]
    out = {}
    for decoder in DECODERS:
        first, repeat = ms[f"{decoder}/first"], ms[f"{decoder}/repeat"]
        out[decoder] = {
            "official_ms": round(official, 4),
            "first_play_ms": round(first, 4),
            "repeat_play_ms": round(repeat, 4),
            "first_play_ratio": round(official / first, 4),
            "repeat_play_ratio": round(official / repeat, 4),
        }
    return out


def plot(result: dict[str, object], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    decoders = result["decoders"]
    labels, values = [], []
    for decoder, row in decoders.items():
        for play in ("first", "repeat"):
            labels.append(f"{decoder}\n{play} play")
            values.append(row[f"{play}_play_ratio"])
    fig, ax = plt.subplots(figsize=(6.4, 3.6), dpi=110)
    bars = ax.bar(labels, values, color=["#4c72b0", "#8fb0e0", "#dd8452", "#f0b890"])
    ax.bar_label(bars, labels=[f"{v:.2f}×" for v in values], padding=2)
    ax.axhline(2.0, color="#555555", linestyle="--", linewidth=1)
    ax.text(len(values) - 0.5, 2.0, "target 2×", ha="right", va="bottom", fontsize=8, color="#555555")
    ax.axhline(1.0, color="#999999", linewidth=0.8)
    ax.set_ylabel("official / ours (time per episode)")
    official = next(iter(decoders.values()))["official_ms"]
    ax.set_title(
        f"Gym episode vs bfcl_eval execute + checker ({official:.2f} ms), "
        f"{result['episodes']} episodes\n{result['machine']['cpu_model']}, Python {result['machine']['python']}",
        fontsize=9,
    )
    ax.set_ylim(0, max([*values, 2.0]) * 1.2)
    ax.spines[["top", "right"]].set_visible(False)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=7, help="timed passes per path")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--plot", type=Path, default=PLOT)
    parser.add_argument(
        "--write", action="store_true", help="write the JSON and the plot (`make bench`); without it: print only"
    )
    args = parser.parse_args()
    task_ids = [t.task_id for t in bfcl.load_bfcl_tasks("all")]
    result = measure(task_ids, args.repeats)
    print(f"episodes: {result['episodes']} (all valid on every path), passes: {args.repeats}, median per episode")
    for decoder, row in result["decoders"].items():
        for label, figures in (("wall", row), ("cpu", row["cpu"])):
            print(
                f"decoder={decoder:<8} {label:<4} official {figures['official_ms']:.3f} ms | "
                f"first play {figures['first_play_ms']:.3f} ms ({figures['first_play_ratio']:.2f}x) | "
                f"repeat play {figures['repeat_play_ms']:.3f} ms ({figures['repeat_play_ratio']:.2f}x)"
            )
    if args.write:  # a casual run (a hook, a check) must not replace the committed measurement
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
        plot(result, args.plot)
        print(f"wrote {args.out.relative_to(ROOT) if args.out.is_relative_to(ROOT) else args.out} and {args.plot.name}")


if __name__ == "__main__":
    main()
