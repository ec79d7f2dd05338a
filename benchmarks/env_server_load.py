"""`tooluse serve-env` as users load it: up to 2,048 sessions open at once, each thinking between steps.

    python -m benchmarks.env_server_load --write                             # the full run (timed: the CPU to itself)
    python -m benchmarks.env_server_load --sessions 8 --window 5 --think 0.2 --workers 1 --episodes 16  # seconds

`benchmarks.env_server` measures the closed loop (each session sends its next step as soon as the
last reply lands). A model takes seconds to write each message, so a server that trains or
evaluates one holds many sessions that are mostly silent. Here each session waits a *think time*
before every step (``--think 5``: 5 s each; ``--think 1 5``: drawn uniformly from 1 to 5 s per
step, from a generator seeded by ``--seed`` and the session's number), on a real server subprocess
on 127.0.0.1 (`benchmarks.env_server_process`), playing the oracle's episodes over BFCL multi-turn
(`benchmarks.env_server_episodes`) back to back: reset, think, step, think, step ..., next episode.

For each number of sessions and of server workers (``--workers``; passed to the server only when
above 1), on a fresh server:

* ramp-up: the sessions open one after another, ``--ramp-rate`` a second (2,048 connects never hit
  at once), each starting its first episode as soon as it is open;
* the window: once every session is open (or refused), ``--window`` seconds are measured: the step
  latency a client sees (send to reply) p50 / p99 / max over the steps sent in the window, steps/s,
  episodes completed, the CPU the server's processes and this client used (in cores: CPU seconds
  per second; the machine's cores are shared by both), and how late this client's event loop ran
  (its lag adds to the latencies it sees: a loaded client reports a slower server than there is; the
  client freezes its long-lived objects out of Python's collector, whose full collections would pause it);
* at the window's end: the sessions held (opened and still alive), refused and dropped, the open
  sessions the server reports, and its RSS summed over its process tree, against its RSS idle (after
  a warm-up episode) -> memory per session (and the tree's PSS, which counts pages the workers share
  once);
* the drain: no new episode starts, and those in flight finish without think time, so that every
  episode started has a verdict. Each is compared with the same episode played in-process (reward,
  steps, the checker's verdict; every observation must name the episode's own task): none lost,
  none crossed between sessions, none different. Then the sessions close and the server must report
  none open.

The goal this reports against (not asserts): 2,048 sessions held at p99 under 100 ms with a fixed
5 s think time, verdicts equal to in-process. Without ``--write`` it prints only; with it, it writes
``benchmarks/results/env_server_load.json`` and ``docs/env-server-load.png`` (the results page's
table reads the JSON: ``make docs``). Exit status 1 when a verdict differs, an episode is lost or a
session is dropped or refused.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import platform
import random
import resource
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from websockets.asyncio.client import connect

from benchmarks.env_server import MAX_REQUEST_BYTES
from benchmarks.env_server_episodes import (
    Episode,
    Verdict,
    in_process,
    oracle_episodes,
    play_sessions,
    play_wire,
    quantile,
)
from benchmarks.env_server_episodes import compare as compare_verdicts
from benchmarks.env_server_process import ServedEnv, server_args
from tooluse_agents.backends.dtypes import machine
from tooluse_gym.server.heap import FULL_EVERY_S

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "env_server_load.json"
PLOT = ROOT / "docs" / "env-server-load.png"
LEVELS = (256, 1024, 2048)
WORKERS = (1, 2)
GOAL = {"sessions": 2048, "think_s": 5.0, "p99_ms": 100.0}
"""2,048 sessions held at p99 step latency under 100 ms, with a fixed 5 s think time (issue 58)."""
IDLE_TIMEOUT_S = 300.0
"""The server's default ``--idle-timeout``, as users run it (the think time must stay below it)."""
CLIENT_BUSY_CORES = 0.8
"""A client using this much of a core or more may itself be what limits the level: the output says so."""
LAG_TICK_S = 0.05
OPEN_TIMEOUT_S = 60.0
DRAIN_TIMEOUT_S = 300.0
"""The drain's limit past the think time: a session still playing then is cancelled, its episode counted lost."""


@dataclass(frozen=True)
class Think:
    """A session's think time before each step: fixed (`low` == `high`) or uniform in [low, high] seconds."""

    low: float
    high: float

    def draw(self, rng: random.Random) -> float:
        return self.low if self.low == self.high else rng.uniform(self.low, self.high)

    def describe(self) -> str:
        return f"fixed {self.low:g} s" if self.low == self.high else f"uniform {self.low:g}-{self.high:g} s"


@dataclass(frozen=True)
class Plan:
    """One level: how many sessions on how many workers, and how they behave."""

    sessions: int
    workers: int
    think: Think
    window_s: float
    ramp_rate: float
    seed: int
    observation: str = "full"
    full_gc_every: float | None = None
    """The server's --full-gc-every (None: the server's default)."""


@dataclass
class _Run:
    """What the sessions of one level saw, filled in as they go (one event loop: no locks)."""

    sessions: int
    started: dict[int, int] = field(default_factory=dict)  # play id -> episode index
    results: dict[int, Verdict | str] = field(default_factory=dict)
    finished_at: dict[int, float] = field(default_factory=dict)
    latencies: list[float] = field(default_factory=list)
    sent: list[float] = field(default_factory=list)
    opened: int = 0
    refused: list[str] = field(default_factory=list)
    dropped: list[tuple[float, str]] = field(default_factory=list)  # (when, why)
    all_in: asyncio.Event = field(default_factory=asyncio.Event)
    stop: asyncio.Event = field(default_factory=asyncio.Event)

    def settle(self) -> None:
        if self.opened + len(self.refused) == self.sessions:
            self.all_in.set()


async def _session(number: int, url: str, episodes: list[Episode], plan: Plan, run: _Run) -> None:
    """Open after its place in the ramp, then play episodes back to back until the window ends."""
    rng = random.Random(plan.seed * 1_000_003 + number)
    await asyncio.sleep(number / plan.ramp_rate)
    opened = False

    async def think() -> None:  # awaited after each observation that asks for a message
        nonlocal opened
        if not opened:  # the first reset was answered: the session is open
            opened = True
            run.opened += 1
            run.settle()
        if not run.stop.is_set():  # the drain plays on without thinking
            await asyncio.sleep(plan.think.draw(rng))

    play = -1
    try:
        async with connect(url, max_size=None, open_timeout=OPEN_TIMEOUT_S) as ws:
            for k in range(sys.maxsize):
                if run.stop.is_set():
                    return
                episode = episodes[(number + k * plan.sessions) % len(episodes)]
                play = len(run.started)
                run.started[play] = episode.index
                result = await play_wire(
                    ws, episode, run.latencies, think=think, sent=run.sent, observation=plan.observation
                )
                if not opened:
                    raise ConnectionError(str(result))  # its first reset was refused (e.g. CAPACITY_REACHED)
                run.results[play], run.finished_at[play] = result, time.perf_counter()
                if isinstance(result, str):
                    raise ConnectionError(f"episode ended with {result}")
    except Exception as e:  # a session that fails: refused before it opened, dropped after
        why = f"{type(e).__name__}: {e}"[:300]
        if opened:
            run.dropped.append((time.perf_counter(), why))
        else:
            run.started.pop(play, None)
            run.refused.append(why)
            run.settle()


async def _lag(lags: list[float], stop: asyncio.Event) -> None:
    """How late this process's event loop wakes a sleeper: the delay its own load adds to every reply it sees."""
    while not stop.is_set():
        before = time.perf_counter()
        await asyncio.sleep(LAG_TICK_S)
        lags.append(time.perf_counter() - before - LAG_TICK_S)


async def _drive(server: ServedEnv, episodes: list[Episode], plan: Plan) -> dict[str, Any]:
    """Ramp up, measure the window, drain: the level's raw figures."""
    run = _Run(plan.sessions)
    start = time.perf_counter()
    tasks = [asyncio.create_task(_session(i, server.ws_url, episodes, plan, run)) for i in range(plan.sessions)]
    with contextlib.suppress(asyncio.TimeoutError):  # a session neither open nor refused by then: not held
        await asyncio.wait_for(run.all_in.wait(), plan.sessions / plan.ramp_rate + OPEN_TIMEOUT_S + 60)
    pending = plan.sessions - run.opened - len(run.refused)
    gc.freeze()  # the open sessions' objects too (below)
    full_collections = gc.get_stats()[2]["collections"]
    lags: list[float] = []
    window_start = time.perf_counter()
    # the server's figures are /proc reads: off the loop, so that no session's reply waits for them
    client_cpu, server_cpu = time.process_time(), await asyncio.to_thread(server.tree_cpu_seconds)
    lagging = asyncio.create_task(_lag(lags, run.stop))
    await asyncio.sleep(plan.window_s)
    window_end = time.perf_counter()
    opened, dropped = run.opened, len(run.dropped)
    client_cpu, full_collections = time.process_time() - client_cpu, gc.get_stats()[2]["collections"] - full_collections
    server_cpu = await asyncio.to_thread(server.tree_cpu_seconds) - server_cpu
    held_rss = await asyncio.to_thread(server.tree_rss_bytes)
    held_pss = await asyncio.to_thread(server.tree_rss_bytes, proportional=True)
    server_open = await asyncio.to_thread(server.open_sessions)
    run.stop.set()
    _, stuck = await asyncio.wait(tasks, timeout=plan.think.high + DRAIN_TIMEOUT_S)
    for task in stuck:  # their episodes in flight count as lost
        task.cancel()
    await asyncio.gather(*tasks, lagging, return_exceptions=True)
    in_window = [lat for lat, t in zip(run.latencies, run.sent, strict=True) if window_start <= t < window_end]
    seconds = window_end - window_start
    return {
        "run": run,
        "ramp_s": window_start - start,
        "drain_s": time.perf_counter() - window_end,
        "window_s": seconds,
        "steps": in_window,
        "episodes_completed": sum(
            1
            for p, t in run.finished_at.items()
            if window_start <= t < window_end and isinstance(run.results[p], tuple)
        ),
        "held": opened - dropped,
        "never_answered": pending,
        "dropped_in_window": dropped,
        "server_open": server_open,
        "held_rss": held_rss,
        "held_pss": held_pss,
        "client_cores": client_cpu / seconds,
        "server_cores": server_cpu / seconds,
        "lags_ms": [1000 * x for x in lags],
        "full_collections": full_collections,
    }


def level(plan: Plan, episodes: list[Episode], expected: dict[int, Verdict]) -> dict[str, Any]:
    """One level on a fresh server (module docstring)."""
    args = server_args(max_sessions=plan.sessions, max_request_bytes=MAX_REQUEST_BYTES, idle_timeout=IDLE_TIMEOUT_S)
    args += ["--workers", str(plan.workers)] if plan.workers > 1 else []
    args += ["--full-gc-every", f"{plan.full_gc_every:g}"] if plan.full_gc_every is not None else []
    with ServedEnv(args) as server:
        warm = 2 * plan.workers  # a few sessions, so that each worker most likely serves one
        asyncio.run(play_sessions(server.ws_url, episodes[: 2 * warm], warm))  # the server's lazy imports
        server.wait_sessions(0)
        processes, idle, idle_pss = (
            len(server.tree_pids()),
            server.tree_rss_bytes(),
            server.tree_rss_bytes(proportional=True),
        )
        d = asyncio.run(_drive(server, episodes, plan))
        after = server.wait_sessions(0, timeout_s=60)
        tracebacks = server.log_errors
    run: _Run = d["run"]
    ms = [1000 * x for x in d["steps"]]
    lags = d["lags_ms"]
    verdicts = compare_verdicts({p: expected[i] for p, i in run.started.items()}, run.results)
    p99 = quantile(ms, 0.99)
    return {
        "workers": plan.workers,
        "sessions": plan.sessions,
        "held": {
            "held_at_window_end": d["held"],
            "refused": len(run.refused),
            "never_answered": d["never_answered"],
            "dropped_in_window": d["dropped_in_window"],
            "dropped_in_drain": len(run.dropped) - d["dropped_in_window"],
            "server_open_at_window_end": d["server_open"],
        },
        "step_latency_ms": {k: round(quantile(ms, q), 3) for k, q in (("p50", 0.5), ("p99", 0.99))}
        | {"max": round(max(ms, default=float("nan")), 3)},
        "steps_at_or_over_goal_ms": sum(1 for x in ms if x >= GOAL["p99_ms"]),
        "window_s": round(d["window_s"], 2),
        "ramp_s": round(d["ramp_s"], 2),
        "drain_s": round(d["drain_s"], 2),
        "steps_in_window": len(ms),
        "steps_per_s": round(len(ms) / d["window_s"], 2),
        "episodes_completed_in_window": d["episodes_completed"],
        "episodes_played": len(run.started),
        "verdicts": verdicts,
        "memory": {
            "server_processes": processes,
            "idle_rss_mib": round(idle / 2**20, 1),
            "held_rss_mib": round(d["held_rss"] / 2**20, 1),
            "per_session_kib": round((d["held_rss"] - idle) / max(1, d["held"]) / 1024, 1),
            "idle_pss_mib": round(idle_pss / 2**20, 1),
            "held_pss_mib": round(d["held_pss"] / 2**20, 1),
        },
        "cpu_cores": {"server": round(d["server_cores"], 3), "client": round(d["client_cores"], 3)},
        "client_loop_lag_ms": {"p99": round(quantile(lags, 0.99), 3), "max": round(max(lags, default=0.0), 3)},
        "client_full_collections_in_window": d["full_collections"],
        "client_busy": d["client_cores"] >= CLIENT_BUSY_CORES,
        "open_sessions_after": after,
        "session_errors": [why for _, why in run.dropped[:3]] + run.refused[:3],
        "server_log_tracebacks": tracebacks,
        "meets_goal": _meets_goal(plan, d["held"], len(run.refused) + len(run.dropped), p99, verdicts["all_equal"]),
    }


def _meets_goal(plan: Plan, held: int, failed: int, p99: float, equal: bool) -> bool | None:
    """Whether this level meets the goal; None when it does not test it (fewer sessions, another think time)."""
    if plan.sessions < GOAL["sessions"] or plan.think != Think(GOAL["think_s"], GOAL["think_s"]):
        return None
    return held == plan.sessions and failed == 0 and p99 < GOAL["p99_ms"] and equal


def _print(row: dict[str, Any]) -> None:
    h, lat, v, cpu = row["held"], row["step_latency_ms"], row["verdicts"], row["cpu_cores"]
    print(
        f"{row['workers']} worker(s), {row['sessions']:>4} sessions: held {h['held_at_window_end']} "
        f"(refused {h['refused']}, dropped {h['dropped_in_window']}+{h['dropped_in_drain']} in the drain); "
        f"step p50 {lat['p50']:.1f} ms, p99 {lat['p99']:.1f}, max {lat['max']:.1f}; {row['steps_per_s']:.0f} steps/s, "
        f"{row['episodes_completed_in_window']} episodes in the window; "
        f"{row['memory']['per_session_kib']:.0f} KiB/session; CPU cores: server {cpu['server']:.2f}, "
        f"client {cpu['client']:.2f} (its loop late by p99 {row['client_loop_lag_ms']['p99']:.1f} ms, max "
        f"{row['client_loop_lag_ms']['max']:.1f}; {row['client_full_collections_in_window']} full collections); "
        f"verdicts equal {v['equal']}/{v['episodes']} (lost {v['lost']}, crossed {v['crossed']}, "
        f"different {v['different']}); ramp {row['ramp_s']:.0f} s, drain {row['drain_s']:.0f} s",
        flush=True,
    )
    if row["client_busy"]:
        print(
            f"  note: this client used {cpu['client']:.2f} of a core: it may be what limits this level "
            "(its loop lag adds to the latencies it reports)",
            flush=True,
        )


def _settle_collector() -> None:
    """Collect, then freeze what lives on (the episodes, the in-process env's tasks) out of the collector.

    A full collection walks every object this client tracks, and its pause adds to the latencies the
    client sees. Frozen objects are not walked: what the setup built is frozen before each level, and
    the open sessions' objects once all are open (`_drive`); they thaw and are collected here, between
    levels.
    """
    gc.unfreeze()
    gc.collect()
    gc.freeze()


def _raise_file_limit(sessions: int) -> None:
    """Each session is a socket here and one in the server (which inherits this limit): make room for them."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    need = sessions + 256
    if soft != resource.RLIM_INFINITY and soft < need:
        if hard != resource.RLIM_INFINITY and hard < need:
            raise SystemExit(f"the open-files limit ({hard}) is below {need}: raise `ulimit -n`")
        resource.setrlimit(resource.RLIMIT_NOFILE, (need, hard))


def _check_workers_flag(workers: list[int]) -> None:
    if max(workers) > 1:
        usage = subprocess.run(
            [sys.executable, "-m", "tooluse_gym.server.app", "--help"], capture_output=True, text=True
        ).stdout
        if "--workers" not in usage:
            raise SystemExit("this tooluse serve-env has no --workers flag yet: run with --workers 1")


def measure(args: argparse.Namespace) -> dict[str, Any]:
    _raise_file_limit(max(args.sessions))
    _check_workers_flag(args.workers)
    think = Think(args.think[0], args.think[-1])
    print(f"oracle episodes: {args.episodes} (played once in-process to record the oracle's messages)", flush=True)
    episodes = oracle_episodes(args.episodes)
    expected, _ = in_process(episodes)
    levels = []
    try:
        for workers in args.workers:
            for sessions in args.sessions:
                _settle_collector()
                plan = Plan(
                    sessions,
                    workers,
                    think,
                    args.window,
                    args.ramp_rate,
                    args.seed,
                    args.observation,
                    args.full_gc_every,
                )
                levels.append(level(plan, episodes, expected))
                _print(levels[-1])
    finally:
        gc.unfreeze()
    goal_rows = [r for r in levels if r["meets_goal"] is not None]
    return {
        "command": "python -m benchmarks.env_server_load " + " ".join(sys.argv[1:]),
        "settings": {
            "think": think.describe(),
            "think_s": [think.low, think.high],
            "window_s": args.window,
            "ramp_rate_per_s": args.ramp_rate,
            "seed": args.seed,
            "observation": args.observation,
            "full_gc_every_s": FULL_EVERY_S if args.full_gc_every is None else args.full_gc_every,
            "episodes": len(episodes),
            "tasks": "BFCL multi-turn, spread over all 800, seeds 0..n-1; the oracle agent's messages",
            "idle_timeout_s": IDLE_TIMEOUT_S,
            "max_request_bytes": MAX_REQUEST_BYTES,
            "statistic": "one pass per level on a fresh server; latency: send to reply, steps sent in the window",
        },
        "goal": {
            **GOAL,
            "statement": "2,048 sessions held at p99 step latency under 100 ms with a fixed 5 s think time, "
            "verdicts equal to in-process",
            "met": any(r["meets_goal"] for r in goal_rows) if goal_rows else None,
        },
        "levels": levels,
        "all_verdicts_equal": all(r["verdicts"]["all_equal"] for r in levels),
        "no_session_failed": all(
            r["held"]["held_at_window_end"] == r["sessions"] and r["held"]["dropped_in_drain"] == 0 for r in levels
        ),
        "machine": {**machine(), "python": platform.python_version()},
        "commit": subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, cwd=ROOT).stdout.strip(),
    }


def plot(result: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(8.4, 3.4), dpi=110)
    colors = {1: "#4c72b0", 2: "#dd8452"}
    for workers in sorted({r["workers"] for r in result["levels"]}):
        rows = [r for r in result["levels"] if r["workers"] == workers]
        x, color = [r["sessions"] for r in rows], colors.get(workers, "#55a868")
        label = f"{workers} worker{'s' if workers > 1 else ''}"
        left.plot(x, [r["step_latency_ms"]["p99"] for r in rows], marker="s", color=color, label=f"p99, {label}")
        left.plot(
            x, [r["step_latency_ms"]["p50"] for r in rows], marker="o", color=color, ls="--", label=f"p50, {label}"
        )
        right.plot(x, [r["memory"]["per_session_kib"] for r in rows], marker="o", color=color, label=label)
    left.axhline(GOAL["p99_ms"], color="#999999", linewidth=0.8)
    left.set_yscale("log")
    left.set_ylabel("step latency (ms; goal: p99 < 100)")
    right.set_ylabel("server memory per session (KiB)")
    right.set_ylim(bottom=0)
    for ax in (left, right):
        ax.set_xscale("log", base=2)
        xs = sorted({r["sessions"] for r in result["levels"]})
        ax.set_xticks(xs, [str(s) for s in xs])
        ax.set_xlabel("concurrent sessions")
        ax.spines[["top", "right"]].set_visible(False)
        ax.legend(frameon=False, fontsize=7)
    s, m = result["settings"], result["machine"]
    equal = "all equal to" if result["all_verdicts_equal"] else "NOT all equal to"
    fig.suptitle(
        f"tooluse serve-env on loopback, think time {s['think']}, {s['window_s']:g} s window (verdicts {equal} "
        f"in-process)\n{m['cpu_model']}, {m['cpu_count']} CPUs shared by server and client, Python {m['python']}",
        fontsize=9,
    )
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, nargs="+", default=list(LEVELS), help="concurrent sessions per level")
    parser.add_argument(
        "--workers", type=int, nargs="+", default=list(WORKERS), help="server worker processes (--workers N if N > 1)"
    )
    parser.add_argument(
        "--think", type=float, nargs="+", default=[5.0], metavar="S", help="think time: S (fixed) or MIN MAX (uniform)"
    )
    parser.add_argument("--window", type=float, default=60.0, help="seconds measured once every session is open")
    parser.add_argument("--ramp-rate", type=float, default=100.0, help="sessions opened a second in the ramp-up")
    parser.add_argument("--episodes", type=int, default=800, help="oracle episodes the sessions take in turn")
    parser.add_argument("--seed", type=int, default=0, help="seeds the think times")
    parser.add_argument(
        "--observation",
        choices=("full", "delta"),
        default="full",
        help="what each step sends: the whole observation (a generic OpenEnv client) or the new messages "
        "(ToolUseEnvClient's default; the reset asks for it) (default: full)",
    )
    parser.add_argument(
        "--full-gc-every",
        type=float,
        metavar="SECONDS",
        help=f"the server's --full-gc-every: its full garbage collections on this clock; 0: CPython's own "
        f"(default: the server's, {FULL_EVERY_S:g})",
    )
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--plot", type=Path, default=PLOT)
    parser.add_argument("--write", action="store_true", help="write the JSON and the plot; without it: print only")
    args = parser.parse_args(argv)
    if len(args.think) > 2 or min(args.think) < 0 or args.think[0] > args.think[-1]:
        parser.error("--think takes S or MIN MAX seconds, 0 <= MIN <= MAX")
    if args.think[-1] >= IDLE_TIMEOUT_S:
        parser.error(f"--think must stay below the server's idle timeout ({IDLE_TIMEOUT_S:g} s)")
    if min(args.sessions) < 1 or min(args.workers) < 1 or args.window <= 0 or args.ramp_rate <= 0:
        parser.error("--sessions, --workers, --window and --ramp-rate must be positive")
    result = measure(args)
    if args.write:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
        plot(result, args.plot)
        print(f"wrote {args.out} and {args.plot}")
    goal = result["goal"]["met"]
    print(f"goal ({result['goal']['statement']}): " + {True: "met", False: "not met", None: "not tested"}[goal])
    ok = result["all_verdicts_equal"] and result["no_session_failed"]
    print("all verdicts equal to in-process; no session refused or dropped" if ok else "FAILED (see above)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
