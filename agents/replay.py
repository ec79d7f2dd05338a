"""Replay the BFCL ground truth through `ToolUse-MultiTurn-v0` and print the score table.

    python -m agents.replay [--categories base miss_func ...] [--tool-format python|json]

This is the reference run: every category should score 100%.
"""

from __future__ import annotations

import argparse
import sys
import time

import gymnasium as gym

import tooluse_gym  # noqa: F401  (registers the env ids)
from agents.oracle import OracleAgent, run_episode
from tooluse_gym.tasks.bfcl import CATEGORIES


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--categories", nargs="+", default=list(CATEGORIES), choices=CATEGORIES)
    parser.add_argument("--tool-format", default="python", choices=("python", "json"))
    args = parser.parse_args(argv)

    agent = OracleAgent()
    rows = []
    for category in args.categories:
        env = gym.make("ToolUse-MultiTurn-v0", category=category, tool_format=args.tool_format)
        task_ids = [t.task_id for t in env.unwrapped.tasks]
        start = time.perf_counter()
        failures = []
        for i, task_id in enumerate(task_ids, 1):
            reward, info = run_episode(env, agent, task_id)
            if reward != 1.0:
                failures.append((task_id, info.get("checker", {}).get("error_type")))
            print(f"\r{category:<13} {i:>3}/{len(task_ids)}", end="", file=sys.stderr, flush=True)
        seconds = time.perf_counter() - start
        print("\r", end="", file=sys.stderr)
        rows.append((category, len(task_ids), len(task_ids) - len(failures), seconds, failures))
        env.close()

    print(f"{'category':<14}{'tasks':>6}{'passed':>8}{'accuracy':>10}{'ms/episode':>12}")
    for category, n, passed, seconds, _ in rows:
        print(f"{category:<14}{n:>6}{passed:>8}{100 * passed / n:>9.1f}%{1000 * seconds / n:>12.2f}")
    total = sum(r[1] for r in rows)
    passed = sum(r[2] for r in rows)
    overall = sum(r[2] / r[1] for r in rows) / len(rows)
    print(f"{'overall':<14}{total:>6}{passed:>8}{100 * overall:>9.1f}%   (unweighted mean of categories)")
    for *_, failures in rows:
        for task_id, error in failures[:10]:
            print(f"  FAILED {task_id}: {error}")
    return 0 if passed == total else 1


if __name__ == "__main__":
    sys.exit(main())
