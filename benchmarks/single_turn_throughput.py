"""Score every BFCL single-turn entry two ways in one process and compare speed (`make bench`, part 2).

* ours: a Gym episode through ``gym.make("ToolUse-SingleTurn-v0")``: ``reset`` on the entry (the request,
  the tool schemas, the system prompt) and one ``step`` with the assistant's message (decode, then BFCL's
  AST checker or its relevance rule, the verdict in ``info``);
* ours, decode + check: the env's decoder and checker called directly, without the episode (the
  like-for-like figure beside the official path);
* official: what ``bfcl evaluate`` does for one entry of a result file, with bfcl_eval's own functions: the
  eval runner's ``_evaluate_single_ast_entry`` / ``_evaluate_single_relevance_entry``, which call the
  handler's ``decode_ast`` and BFCL's ``ast_checker``. Reading and writing files is left out (ours has none).

Each side is timed under both of BFCL's prompting decoders: ``python`` (the ``[f(a=1)]`` text BFCL's
prompting handlers decode) and ``json`` (``<tool_call>`` blocks, Qwen's function-calling handler). The
messages are the oracle's (each entry's first possible answer; no call on irrelevance entries), written
once through the episode loop before timing, and the handler's stored form of each is made before timing
too. Entries no answer can pass (`UNSATISFIABLE`) and Java entries the Python-text writer cannot write are
left out. Every timed pass must find every message valid on both sides. The paths take turns every
`CHUNK` entries in a rotating order, with everything loaded before timing frozen out of the garbage
collector's reach; each figure is the median over passes of the time per entry, and the ratio is
official / ours. Writes ``benchmarks/results/single_turn_throughput.json`` and
``docs/single-turn-throughput.png``.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium as gym

from benchmarks.env_throughput import _git, _machine
from tests._reference.bfcl_reference import handler, model_response
from tests._reference.bfcl_single_turn_reference import MODEL_NAMES, _entries, _language, _runner, category_of
from tooluse_agents.backends.base import SamplingConfig
from tooluse_agents.backends.factory import BackendSpec, make_agent
from tooluse_agents.rollout.loop import RolloutJob, run_rollouts
from tooluse_gym.checking.languages import language_of
from tooluse_gym.checking.single_turn import verdict
from tooluse_gym.decoding.bfcl_ast import decode_ast_action
from tooluse_gym.envs import SINGLE_TURN_ID
from tooluse_gym.envs.tool_env import play_messages
from tooluse_gym.tasks.bfcl_single_turn import UNSATISFIABLE, check_of, load_single_turn_tasks

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "single_turn_throughput.json"
PLOT = ROOT / "docs" / "single-turn-throughput.png"
FORMATS = ("python", "json")
CHUNK = 200
"""Entries a path scores before the next path takes its turn."""


def _env(tool_format: str) -> gym.Env:
    return gym.make(SINGLE_TURN_ID, category="single_turn", tool_format=tool_format)


def oracle_messages(tool_format: str) -> dict[str, str]:
    """The oracle's message for every entry, played through the episode loop once (not timed)."""
    ids = [t.task_id for t in load_single_turn_tasks("single_turn") if t.task_id not in UNSATISFIABLE]
    oracle = make_agent(BackendSpec(backend="oracle"))
    episodes = run_rollouts(
        lambda: _env(tool_format), oracle, [RolloutJob(t, 0) for t in ids], sampling=SamplingConfig(), num_envs=1
    )
    return {e.record.task_id: e.record.steps[0].assistant for e in episodes if e.record.reward == 1.0}


def _ours(tool_format: str, messages: dict[str, str]) -> Callable[[str], bool]:
    env = _env(tool_format)

    def run(task_id: str) -> bool:
        return play_messages(env, task_id, [messages[task_id]]).reward == 1.0

    return run


def _core(tool_format: str, messages: dict[str, str]) -> Callable[[str], bool]:
    """Ours without the episode: the env's decoder and checker called directly, as the official path is."""
    tasks = {t.task_id: t for t in load_single_turn_tasks("single_turn", list(messages))}

    def run(task_id: str) -> bool:
        task = tasks[task_id]
        decoded = decode_ast_action(messages[task_id], tool_format, language_of(task.test_category))
        return verdict(
            decoded, check=task.check, functions=task.checker_docs, answer=task.answer,
            test_category=task.test_category, underscore_to_dot=task.underscore_to_dot,
        ).valid  # fmt: skip

    return run


def _official(tool_format: str, messages: dict[str, str]) -> Callable[[str], bool]:
    runner = _runner()
    h = handler(tool_format)
    model = MODEL_NAMES[False]  # dotted names, as the env shows them under a prompt that carries the functions
    stored = {t: model_response(m, tool_format) for t, m in messages.items()}
    cases = {}
    for task_id in messages:
        category = category_of(task_id)
        entry, answer = _entries(category)[task_id]
        cases[task_id] = (category, entry, answer, *_language(category))

    def run(task_id: str) -> bool:
        category, entry, answer, language, return_format = cases[task_id]
        if check_of(category) != "ast":
            result = runner._evaluate_single_relevance_entry(h, task_id, stored[task_id], entry, model, category)
        else:
            result = runner._evaluate_single_ast_entry(
                h, task_id, stored[task_id], answer, entry, model, category,
                language=language, return_format=return_format, has_tool_call_tag=False,
            )  # fmt: skip
        return bool(result["valid"])

    return run


def measure(repeats: int) -> dict[str, Any]:
    runners: dict[str, Callable[[str], bool]] = {}
    ids: dict[str, list[str]] = {}
    total = len(load_single_turn_tasks("single_turn"))
    for tool_format in FORMATS:
        messages = oracle_messages(tool_format)
        ids[tool_format] = list(messages)
        runners[f"{tool_format}/official"] = _official(tool_format, messages)
        runners[f"{tool_format}/ours"] = _ours(tool_format, messages)
        runners[f"{tool_format}/core"] = _core(tool_format, messages)
    valid = {name: [sum(run(t) for t in ids[name.split("/")[0]])] for name, run in runners.items()}
    times: dict[str, list[float]] = {name: [] for name in runners}
    names = list(runners)
    gc.collect()
    gc.freeze()
    for r in range(repeats):
        wall, count = dict.fromkeys(names, 0.0), dict.fromkeys(names, 0)
        longest = max(len(v) for v in ids.values())
        for c, start in enumerate(range(0, longest, CHUNK)):
            shift = (r + c) % len(names)
            for name in names[shift:] + names[:shift]:
                chunk = ids[name.split("/")[0]][start : start + CHUNK]
                run = runners[name]
                t0 = time.perf_counter()
                count[name] += sum(run(t) for t in chunk)
                wall[name] += time.perf_counter() - t0
        for name in names:
            times[name].append(wall[name] / len(ids[name.split("/")[0]]))
            valid[name].append(count[name])
    for name, counts in valid.items():
        expected = len(ids[name.split("/")[0]])
        if any(c != expected for c in counts):
            raise SystemExit(f"{name}: not every oracle message is valid ({counts} of {expected})")
    formats = {}
    for tool_format in FORMATS:
        official = 1000 * statistics.median(times[f"{tool_format}/official"])
        ours = 1000 * statistics.median(times[f"{tool_format}/ours"])
        core = 1000 * statistics.median(times[f"{tool_format}/core"])
        formats[tool_format] = {
            "entries": len(ids[tool_format]),
            "left_out": total - len(ids[tool_format]),
            "official_ms": round(official, 4),
            "ours_ms": round(ours, 4),
            "ratio": round(official / ours, 4),
            "core_ms": round(core, 4),
            "core_ratio": round(official / core, 4),
        }
    return {
        "passes": repeats,
        "statistic": (
            f"median over passes of the mean wall-clock time per entry in a pass (perf_counter); the paths take "
            f"turns every {CHUNK} entries; objects loaded before timing are gc-frozen"
        ),
        "formats": formats,
        "pass_ms": {name: [round(1000 * t, 4) for t in ts] for name, ts in times.items()},
        "machine": _machine(),
        "git": _git(),
    }


def plot(result: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = result["formats"]
    labels, values = [], []
    for f, row in rows.items():
        labels += [f"{f}\nwhole episode", f"{f}\ndecode + check"]
        values += [row["ratio"], row["core_ratio"]]
    fig, ax = plt.subplots(figsize=(6.4, 3.6), dpi=110)
    bars = ax.bar(labels, values, color=["#4c72b0", "#8fb0e0", "#dd8452", "#f0b890"])
    ax.bar_label(bars, labels=[f"{v:.2f}×" for v in values], padding=2)
    ax.axhline(1.0, color="#999999", linewidth=0.8)
    ax.set_ylabel("official / ours (time per entry)")
    ax.set_title(
        "Single-turn Gym episode vs bfcl_eval decode + checker\n"
        f"{result['machine']['cpu_model']}, Python {result['machine']['python']}",
        fontsize=9,
    )
    ax.set_ylim(0, max([*values, 1.0]) * 1.25)
    ax.spines[["top", "right"]].set_visible(False)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=7, help="timed passes per path")
    parser.add_argument("--write", action="store_true", help="write the JSON and the plot; without it: print only")
    args = parser.parse_args()
    result = measure(args.repeats)
    for tool_format, row in result["formats"].items():
        print(
            f"{tool_format:<6} {row['entries']} entries (all valid on both sides, every pass): official "
            f"{row['official_ms']:.3f} ms | ours, whole episode {row['ours_ms']:.3f} ms ({row['ratio']:.2f}x) | "
            f"ours, decode + check {row['core_ms']:.3f} ms ({row['core_ratio']:.2f}x)"
        )
    if args.write:
        RESULTS.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
        plot(result, PLOT)
        print(f"wrote {RESULTS.relative_to(ROOT)} and {PLOT.name}")


if __name__ == "__main__":
    main()
