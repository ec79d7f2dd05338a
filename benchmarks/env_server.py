"""`tooluse serve-env` under load and faults, on loopback, against the in-process env in the same run.

    python -m benchmarks.env_server --write                                  # the full run (timed: the CPU to itself)
    python -m benchmarks.env_server --sessions 1 4 --episodes 8 --disconnects 20   # seconds: does it work

A real server runs as a subprocess on 127.0.0.1 (`benchmarks.env_server_process`), serving BFCL
multi-turn; the episodes are the oracle agent's, over tasks spread across all 800
(`benchmarks.env_server_episodes`). For each number of concurrent sessions (1, 8, 64, 256), on a
fresh server:

* memory per session: the server's RSS with that many sessions open, each mid-episode, less its RSS
  idle (after a warm-up episode), divided by the sessions;
* load: the sessions play the level's episodes (each takes the next until none is left); episodes/s
  over the wire against the same episodes played in-process just before (the ratio), the step
  latency a client sees (send to reply, p50 / p99), and every verdict compared with in-process (none
  lost, none crossed between sessions, none different).

Then the faults, on one more server (`benchmarks.env_server_faults`): bad input of every kind, a reset
flood past ``--max-sessions``, clients that disconnect mid-episode (1,000), the server killed and
restarted. Without ``--write`` it prints only; with it, it writes ``benchmarks/results/env_server.json``
and ``docs/env-server.png`` (the results page's table reads the JSON: ``make docs``). Exit status 1
when a verdict differs or a fault check fails.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any

from websockets.asyncio.client import connect

from benchmarks.env_server_episodes import Episode, in_process, oracle_episodes, play_sessions, quantile, request
from benchmarks.env_server_episodes import compare as compare_verdicts
from benchmarks.env_server_faults import judge, run_faults
from benchmarks.env_server_process import ServedEnv, server_args
from tooluse_agents.backends.dtypes import machine

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "env_server.json"
PLOT = ROOT / "docs" / "env-server.png"
LEVELS = (1, 8, 64, 256)
MAX_REQUEST_BYTES = 1024 * 1024


async def _hold(server: ServedEnv, episodes: list[Episode], sessions: int) -> int:
    """Open `sessions` sessions, each reset and one step in; the server's RSS with all of them open."""
    held = []
    try:
        for i in range(sessions):
            e = episodes[i % len(episodes)]
            ws = await connect(server.ws_url, max_size=None, open_timeout=60)
            held.append(ws)
            await request(ws, {"type": "reset", "data": {"seed": e.seed, "task_id": e.task_id}})
            await request(ws, {"type": "step", "data": {"content": e.messages[0]}})
        return server.rss_bytes()
    finally:
        for ws in held:
            await ws.close()


def level(sessions: int, episodes: list[Episode], expected: dict[int, Any]) -> dict[str, Any]:
    """One load level on a fresh server (module docstring)."""
    _, inproc_s = in_process(episodes)  # the reference, just before, on the same machine state
    with ServedEnv(server_args(max_sessions=sessions, max_request_bytes=MAX_REQUEST_BYTES)) as server:
        asyncio.run(play_sessions(server.ws_url, episodes[:1], 1))  # warm-up: the server's lazy imports
        server.wait_sessions(0)
        idle = server.rss_bytes()
        holding = asyncio.run(_hold(server, episodes, sessions))
        freed = server.wait_sessions(0)
        load = asyncio.run(play_sessions(server.ws_url, episodes, sessions))
        after = server.wait_sessions(0)
        tracebacks = server.log_errors
    wire_eps, inproc_eps = len(episodes) / load.seconds, len(episodes) / inproc_s
    ms = [1000 * t for t in load.latencies]
    return {
        "sessions": sessions,
        "episodes": len(episodes),
        "steps": len(ms),
        "wire_episodes_per_s": round(wire_eps, 2),
        "in_process_episodes_per_s": round(inproc_eps, 2),
        "ratio_wire_over_in_process": round(wire_eps / inproc_eps, 4),
        "step_latency_ms": {"p50": round(quantile(ms, 0.5), 3), "p99": round(quantile(ms, 0.99), 3)},
        "memory": {
            "idle_rss_mib": round(idle / 2**20, 1),
            "held_rss_mib": round(holding / 2**20, 1),
            "per_session_kib": round((holding - idle) / sessions / 1024, 1),
        },
        "open_sessions_after": {"held_and_closed": freed, "load": after},
        "verdicts": compare_verdicts(expected, load.verdicts),
        "session_errors": load.errors[:3],
        "server_log_tracebacks": tracebacks,
    }


def measure(args: argparse.Namespace) -> dict[str, Any]:
    print(f"oracle episodes: {args.episodes} (played once in-process to record the oracle's messages)", flush=True)
    episodes = oracle_episodes(args.episodes)
    expected, _ = in_process(episodes)
    levels = []
    for sessions in args.sessions:
        row = level(sessions, episodes, expected)
        levels.append(row)
        v = row["verdicts"]
        print(
            f"{sessions:>4} sessions: {row['wire_episodes_per_s']:8.1f} episodes/s over the wire, "
            f"{row['in_process_episodes_per_s']:8.1f} in-process ({row['ratio_wire_over_in_process']:.3f}x); "
            f"step p50 {row['step_latency_ms']['p50']:.2f} ms, p99 {row['step_latency_ms']['p99']:.2f} ms; "
            f"{row['memory']['per_session_kib']:.0f} KiB/session; verdicts equal {v['equal']}/{v['episodes']} "
            f"(lost {v['lost']}, crossed {v['crossed']}, different {v['different']})",
            flush=True,
        )
    max_sessions = args.fault_max_sessions
    with ServedEnv(server_args(max_sessions=max_sessions, max_request_bytes=MAX_REQUEST_BYTES)) as server:
        faults = asyncio.run(
            run_faults(
                server,
                episodes,
                expected,
                max_sessions=max_sessions,
                max_bytes=MAX_REQUEST_BYTES,
                disconnects=args.disconnects,
                flood_extra=args.flood_extra,
            )
        )
    checks = judge(faults, max_sessions=max_sessions, flood_extra=args.flood_extra)
    for name, ok in checks.items():
        print(f"  fault {name}: {'ok' if ok else 'FAILED'}", flush=True)
    return {
        "command": "python -m benchmarks.env_server " + " ".join(sys.argv[1:]),
        "settings": {
            "episodes_per_level": len(episodes),
            "tasks": "BFCL multi-turn, spread over all 800, seeds 0..n-1; the oracle agent's messages",
            "max_request_bytes": MAX_REQUEST_BYTES,
            "fault_max_sessions": max_sessions,
            "disconnects": args.disconnects,
            "flood_extra": args.flood_extra,
            "statistic": "one pass per level; in-process played just before each level; latency: send to reply",
        },
        "levels": levels,
        "faults": faults,
        "fault_checks": checks,
        "all_verdicts_equal": all(r["verdicts"]["all_equal"] for r in levels),
        "all_fault_checks_pass": all(checks.values()),
        "machine": {**machine(), "python": platform.python_version()},
        "commit": subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, cwd=ROOT).stdout.strip(),
    }


def plot(result: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    levels = result["levels"]
    x = [r["sessions"] for r in levels]
    fig, (left, right) = plt.subplots(1, 2, figsize=(8.4, 3.4), dpi=110)
    left.plot(x, [r["ratio_wire_over_in_process"] for r in levels], marker="o", color="#4c72b0")
    left.axhline(1.0, color="#999999", linewidth=0.8)
    left.set_ylabel("episodes/s: wire / in-process")
    right.plot(x, [r["step_latency_ms"]["p50"] for r in levels], marker="o", color="#4c72b0", label="p50")
    right.plot(x, [r["step_latency_ms"]["p99"] for r in levels], marker="s", color="#dd8452", label="p99")
    right.set_ylabel("step latency (ms)")
    right.legend(frameon=False, fontsize=8)
    for ax in (left, right):
        ax.set_xscale("log", base=2)
        ax.set_xticks(x, [str(s) for s in x])
        ax.set_xlabel("concurrent sessions")
        ax.spines[["top", "right"]].set_visible(False)
    right.set_ylim(bottom=0)
    left.set_ylim(bottom=0)
    equal, m = all(r["verdicts"]["all_equal"] for r in levels), result["machine"]
    fig.suptitle(
        f"tooluse serve-env on loopback, {result['settings']['episodes_per_level']} oracle episodes a level "
        f"(verdicts {'all equal to' if equal else 'NOT all equal to'} in-process)\n"
        f"{m['cpu_model']}, {m['cpu_count']} CPUs, Python {m['python']}",
        fontsize=9,
    )
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, nargs="+", default=list(LEVELS), help="concurrent sessions per level")
    parser.add_argument("--episodes", type=int, default=512, help="oracle episodes per level (at least the sessions)")
    parser.add_argument("--disconnects", type=int, default=1000, help="clients that leave mid-episode")
    parser.add_argument("--fault-max-sessions", type=int, default=64, help="--max-sessions of the fault server")
    parser.add_argument("--flood-extra", type=int, default=16, help="resets past --max-sessions in the flood")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--plot", type=Path, default=PLOT)
    parser.add_argument("--write", action="store_true", help="write the JSON and the plot; without it: print only")
    args = parser.parse_args(argv)
    if args.episodes < max(args.sessions):
        parser.error(f"--episodes ({args.episodes}) must be at least the most sessions ({max(args.sessions)})")
    if args.fault_max_sessions < 2:
        parser.error("--fault-max-sessions must be at least 2 (a bystander and one more)")
    result = measure(args)
    if args.write:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
        plot(result, args.plot)
        print(f"wrote {args.out} and {args.plot}")
    ok = result["all_verdicts_equal"] and result["all_fault_checks_pass"]
    print("all verdicts equal to in-process; every fault check passes" if ok else "FAILED (see above)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
