"""Replay all 800 BFCL ground-truth episodes two ways in one process and compare speed.

* ours: a full Gym episode through ``gym.make("ToolUse-MultiTurn-v0")`` (parse the
  assistant text, validate arguments, execute, check every turn, build observations);
* official: bfcl_eval's executor (one step per turn, as its inference loop runs it) followed
  by its ``multi_turn_checker`` on the decoded trajectory, with a fresh model name per
  entry and its global instances freed afterwards.

Both paths replay the same trajectories and must agree that all 800 are valid. Ours is
timed twice: *first play* (a new env, so each task's ground truth is replayed alongside
the episode) and *repeat play* (the env has played each task before and reuses its cached
ground-truth replay, as in multi-seed evaluation or GRPO groups). Prints the median time
per episode and the ratios official / ours. Run: ``make bench``.
"""

from __future__ import annotations

import argparse
import statistics
import time
import uuid

import gymnasium as gym

import tooluse_gym  # noqa: F401
from agents.oracle import OracleAgent, run_episode
from tooluse_gym.tasks import bfcl


def _official_runner():
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


def _ours(fresh_envs: bool):
    envs = {c: gym.make("ToolUse-MultiTurn-v0", category=c) for c in bfcl.CATEGORIES}
    agent = OracleAgent()

    def run(task_id: str) -> bool:
        if fresh_envs and task_id == _FIRST_TASK:
            envs.update({c: gym.make("ToolUse-MultiTurn-v0", category=c) for c in bfcl.CATEGORIES})
        category = task_id.removeprefix("multi_turn_").rsplit("_", 1)[0]
        reward, _ = run_episode(envs[category], agent, task_id)
        return reward == 1.0

    return run


_FIRST_TASK = "multi_turn_base_0"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    task_ids = [t.task_id for t in bfcl.load_bfcl_tasks("all")]
    runners = {"official": _official_runner(), "first": _ours(fresh_envs=True), "repeat": _ours(fresh_envs=False)}
    times: dict[str, list[float]] = {name: [] for name in runners}
    for name, run in runners.items():  # warm-up: imports, caches, compiled validators
        assert all(run(t) for t in task_ids), f"{name}: not every ground-truth replay is valid"
    for _ in range(args.repeats):
        for name, run in runners.items():
            start = time.perf_counter()
            for t in task_ids:
                run(t)
            times[name].append((time.perf_counter() - start) / len(task_ids))
    official, first, repeat = (statistics.median(times[k]) for k in ("official", "first", "repeat"))
    print(f"episodes: {len(task_ids)} (all valid on both paths), repeats: {args.repeats}, median per episode")
    print(f"  official bfcl_eval execute + multi_turn_checker:   {1000 * official:.3f} ms")
    print(
        f"  tooluse-gym Gym episode, first play of each task: {1000 * first:.3f} ms  "
        f"(official/ours {official / first:.2f}x)"
    )
    print(
        f"  tooluse-gym Gym episode, repeat play:             {1000 * repeat:.3f} ms  "
        f"(official/ours {official / repeat:.2f}x)"
    )


if __name__ == "__main__":
    main()
