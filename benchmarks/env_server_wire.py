"""Bytes on the wire per step, whole observations against deltas (`tooluse_gym.server.wire`), with the rebuild checked.

    python -m benchmarks.env_server_wire --write          # writes benchmarks/results/env_server_wire.json
    python -m benchmarks.env_server_wire --tasks 4        # a quick look: 4 tasks per case, print only

A real uvicorn server runs the app in a thread on 127.0.0.1. For each case (an env id, the knobs of
its resets, the server's knobs) the oracle plays every chosen task on two WebSocket sessions at once:
one asks for whole observations (the default, what a generic OpenEnv client gets), the other for
deltas. Each message comes from the whole session's observation (the task's ground truth for that
turn, `Task.reference_message`), and both sessions get it. Counted: the JSON bytes (UTF-8) of every
frame the server sends back, reset and steps apart. Checked at every step: the delta session's
observation rebuilt by `DeltaDecoder` (what `ToolUseEnvClient` does) equals the whole one, field for
field, reward and done included; and both sessions end with the same verdict.

Byte counts do not depend on the machine or its load: the run can share its CPU. Exit status 1 when
a rebuilt observation or a verdict differs.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym
import uvicorn
from websockets.sync.client import connect

from tooluse_gym.envs import MULTI_TURN_ID, SINGLE_TURN_ID
from tooluse_gym.envs.tool_env import task_env, task_ids
from tooluse_gym.server.models import ToolUseObservation
from tooluse_gym.server.server import ServeEnvConfig, make_app
from tooluse_gym.server.wire import DeltaDecoder

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "env_server_wire.json"
CATEGORY = {MULTI_TURN_ID: "all", SINGLE_TURN_ID: "single_turn"}
TOKENIZER = "smollm2-135m"


@dataclass(frozen=True)
class Case:
    """One row: which env id, the knobs its resets set, and the server's own knobs (start flags)."""

    name: str
    env_id: str
    knobs: Mapping[str, Any] = field(default_factory=dict)
    server_knobs: Mapping[str, Any] = field(default_factory=dict)
    think: bool = False
    """Each message starts with a ``<think>`` block (as a reasoning model's do)."""


CASES = (
    Case("multi-turn, default knobs (tools in the system prompt)", MULTI_TURN_ID),
    Case(
        "multi-turn, tools as schemas (system_prompt none, json)",
        MULTI_TURN_ID,
        {"system_prompt": "none", "tool_format": "json"},
    ),
    Case("multi-turn, template context (history in one user message)", MULTI_TURN_ID, {"template": "context"}),
    Case("multi-turn, tool results as one user message", MULTI_TURN_ID, {"tool_results": "user_message"}),
    Case("multi-turn, reasoning strip, messages with think blocks", MULTI_TURN_ID, {"reasoning": "strip"}, think=True),
    Case("multi-turn, rendered prompt (server tokenizer)", MULTI_TURN_ID, server_knobs={"tokenizer": TOKENIZER}),
    Case(
        "multi-turn, rendered prompt, reasoning strip, messages with think blocks",
        MULTI_TURN_ID,
        {"reasoning": "strip"},
        server_knobs={"tokenizer": TOKENIZER},
        think=True,
    ),
    Case("single-turn, default knobs", SINGLE_TURN_ID),
)


@contextlib.contextmanager
def serving(config: ServeEnvConfig) -> Iterator[str]:
    """The app of `config` under uvicorn on 127.0.0.1 (any free port), in a daemon thread: its WebSocket URL."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    server = uvicorn.Server(uvicorn.Config(make_app(config), log_level="warning", ws_max_size=config.max_request_bytes))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 120
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the server did not start")
        time.sleep(0.02)
    try:
        yield f"ws://127.0.0.1:{sock.getsockname()[1]}/ws"
    finally:
        server.should_exit = True
        thread.join(30)
        sock.close()


def observation(frame: dict[str, Any]) -> ToolUseObservation:
    """A reply frame's observation, as `ToolUseEnvClient` parses it (reward and done from the frame)."""
    if frame.get("type") != "observation":
        raise RuntimeError(f"the server answered {str(frame)[:300]}")
    data = frame["data"]
    return ToolUseObservation(**data["observation"], reward=data.get("reward"), done=bool(data.get("done")))


@dataclass
class Tally:
    """What one case's episodes sent and whether every rebuild matched."""

    episodes: int = 0
    steps: int = 0
    reset_bytes: dict[str, int] = field(default_factory=lambda: {"full": 0, "delta": 0})
    step_bytes: dict[str, int] = field(default_factory=lambda: {"full": 0, "delta": 0})
    client_bytes: dict[str, int] = field(default_factory=lambda: {"full": 0, "delta": 0})
    largest_step: dict[str, int] = field(default_factory=lambda: {"full": 0, "delta": 0})
    prompt_bytes: dict[str, int] = field(default_factory=lambda: {"sent": 0, "if_whole": 0})
    prompt_modes: dict[str, int] = field(default_factory=dict)
    prompt_keeps_all: int = 0
    keep_moved_back: int = 0
    content_spliced: int = 0
    tools_resent: int = 0
    rebuilt_equal: int = 0
    verdicts_equal: int = 0
    differences: list[str] = field(default_factory=list)


def play_pair(ws_url: str, case: Case, tasks: Mapping[str, Any], chosen: list[str], seed: int = 0) -> Tally:
    """Play each task of `chosen` on a whole and a delta session side by side; count bytes, check every rebuild."""
    tally = Tally()
    with connect(ws_url, max_size=None) as full_ws, connect(ws_url, max_size=None) as delta_ws:

        def exchange(message: dict[str, Any], kind: str) -> dict[str, Any]:
            ws = full_ws if kind == "full" else delta_ws
            if kind == "delta" and message["type"] == "reset":
                message = {**message, "data": {**message["data"], "observation": "delta"}}
            text = json.dumps(message)
            tally.client_bytes[kind] += len(text.encode("utf-8"))
            ws.send(text)
            raw = ws.recv(timeout=120)
            size = len(raw.encode("utf-8") if isinstance(raw, str) else raw)
            counts = tally.reset_bytes if message["type"] == "reset" else tally.step_bytes
            counts[kind] += size
            if message["type"] == "step":
                tally.largest_step[kind] = max(tally.largest_step[kind], size)
            return dict(json.loads(raw))

        for task_id in chosen:
            decoder = DeltaDecoder()
            reset = {"type": "reset", "data": {"seed": seed, "task_id": task_id, **case.knobs}}
            whole = observation(exchange(reset, "full"))
            sent = observation(exchange(reset, "delta"))
            tally.episodes += 1
            tool_format, before = str((whole.protocol or {}).get("tool_format", "python")), whole
            while True:
                _account(tally, sent, whole, before)
                before = whole
                rebuilt = decoder.decode(sent)
                if rebuilt.model_dump() == whole.model_dump():
                    tally.rebuilt_equal += 1
                elif len(tally.differences) < 5:
                    diff = [k for k, v in whole.model_dump().items() if rebuilt.model_dump()[k] != v]
                    tally.differences.append(f"{task_id} step {(sent.delta or {}).get('step')}: {diff}")
                if whole.done:
                    break
                task = tasks[task_id]
                message = task.reference_message(whole.turn, whole.steps_in_turn, tool_format)
                if case.think:
                    message = (
                        f"<think>Turn {whole.turn}, step {whole.steps_in_turn}: what the user asked.</think>{message}"
                    )
                step = {"type": "step", "data": {"content": message}}
                whole, sent = observation(exchange(step, "full")), observation(exchange(step, "delta"))
                tally.steps += 1
            same = (whole.reward, whole.checker) == (rebuilt.reward, rebuilt.checker) and sent.done
            tally.verdicts_equal += int(same)
    return tally


def _account(tally: Tally, sent: ToolUseObservation, whole: ToolUseObservation, before: ToolUseObservation) -> None:
    """Count a step's delta: did it resend earlier messages (keep below what was held), the tools, the prompt?"""
    header = sent.delta or {}
    if header.get("step", 0) == 0:
        return
    tally.keep_moved_back += int(header["keep"] < len(before.messages))
    tally.content_spliced += int(header.get("content_keep") is not None)
    tally.prompt_keeps_all += int(before.prompt is not None and header.get("prompt_keep") == len(before.prompt))
    tally.tools_resent += int(bool(header.get("tools")))
    mode = str(header.get("prompt"))
    tally.prompt_modes[mode] = tally.prompt_modes.get(mode, 0) + 1
    if whole.prompt is not None:
        tally.prompt_bytes["sent"] += len(json.dumps(sent.prompt, ensure_ascii=False).encode("utf-8"))
        changed = mode != "same"
        tally.prompt_bytes["if_whole"] += len(json.dumps(whole.prompt if changed else None).encode("utf-8"))


def spread(ids: list[str], count: int) -> list[str]:
    """`count` ids spread evenly over `ids` (all of them when there are fewer)."""
    if count >= len(ids):
        return list(ids)
    return [ids[i * len(ids) // count] for i in range(count)]


def measure(tasks_per_case: int, cases: tuple[Case, ...] = CASES) -> dict[str, Any]:
    """Every case's byte counts and checks (one server for each distinct set of server knobs)."""
    rows, tasks, chosen = [], {}, {}
    for env_id in sorted({c.env_id for c in cases}):
        env = gym.make(env_id, category=CATEGORY[env_id])
        tasks[env_id] = {t.task_id: t for t in task_env(env).tasks}
        chosen[env_id] = spread(task_ids(env), tasks_per_case)
        env.close()
    with contextlib.ExitStack() as stack:
        servers: dict[str, str] = {}
        for case in cases:
            key = json.dumps(case.server_knobs, sort_keys=True)
            if key not in servers:
                config = ServeEnvConfig(
                    env_ids=tuple(sorted({c.env_id for c in cases})),
                    multi_turn_category=CATEGORY[MULTI_TURN_ID],
                    single_turn_category=CATEGORY[SINGLE_TURN_ID],
                    knobs=dict(case.server_knobs),
                    max_sessions=4,
                    idle_timeout=None,
                )
                servers[key] = stack.enter_context(serving(config))
            rows.append(_row(case, play_pair(servers[key], case, tasks[case.env_id], chosen[case.env_id])))
            print(_line(rows[-1]), flush=True)
    return {
        "command": "python -m benchmarks.env_server_wire --write",
        "settings": {
            "tasks_per_case": tasks_per_case,
            "tasks": "spread evenly over each env id's tasks (all 800 BFCL multi-turn, the single-turn group), seed 0",
            "messages": "the oracle's: each turn's ground-truth calls, then a message without calls",
            "bytes": "the UTF-8 JSON of the frames the server sends (its replies); the client's frames "
            "(client_bytes_total) are the same both ways but for the reset's observation option",
        },
        "cases": rows,
        "all_rebuilt_equal": all(r["rebuilt_equal"] == r["observations"] for r in rows),
        "all_verdicts_equal": all(r["verdicts_equal"] == r["episodes"] for r in rows),
        "commit": _commit(),
    }


def _row(case: Case, t: Tally) -> dict[str, Any]:
    per_step = {k: round(v / max(t.steps, 1)) for k, v in t.step_bytes.items()}
    return {
        "case": case.name,
        "env_id": case.env_id,
        "knobs": dict(case.knobs),
        "server_knobs": dict(case.server_knobs),
        "episodes": t.episodes,
        "steps": t.steps,
        "observations": t.episodes + t.steps,
        "reset_bytes_mean": {k: round(v / max(t.episodes, 1)) for k, v in t.reset_bytes.items()},
        "step_bytes_mean": per_step,
        "step_bytes_largest": dict(t.largest_step),
        "step_bytes_total": dict(t.step_bytes),
        "client_bytes_total": dict(t.client_bytes),
        "episode_bytes_mean": {
            k: round((t.reset_bytes[k] + t.step_bytes[k]) / max(t.episodes, 1)) for k in ("full", "delta")
        },
        "step_ratio_full_over_delta": round(per_step["full"] / max(per_step["delta"], 1), 1),
        "steps_keep_moved_back": t.keep_moved_back,
        "steps_content_spliced": t.content_spliced,
        "steps_tools_resent": t.tools_resent,
        "prompt_modes": dict(sorted(t.prompt_modes.items())) if t.prompt_bytes["if_whole"] else {},
        "prompt_bytes": dict(t.prompt_bytes) if t.prompt_bytes["if_whole"] else None,
        "prompt_keeps_all": t.prompt_keeps_all,
        "rebuilt_equal": t.rebuilt_equal,
        "verdicts_equal": t.verdicts_equal,
        "differences": t.differences,
    }


def _line(row: dict[str, Any]) -> str:
    full, delta = row["step_bytes_mean"]["full"], row["step_bytes_mean"]["delta"]
    ok = row["rebuilt_equal"] == row["observations"] and row["verdicts_equal"] == row["episodes"]
    return (
        f"{row['case']}: {row['episodes']} episodes, {row['steps']} steps; bytes per step {full:,} -> {delta:,} "
        f"({row['step_ratio_full_over_delta']}x); reset {row['reset_bytes_mean']['full']:,}; "
        f"{'every rebuild and verdict equal' if ok else 'DIFFERENT: ' + '; '.join(row['differences'])}"
    )


def _commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, cwd=ROOT).stdout.strip()
    except OSError:
        return "unknown"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tasks", type=int, default=40, help="tasks per case, spread over its env id's tasks")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--write", action="store_true", help="write the JSON; without it: print only")
    args = parser.parse_args(argv)
    result = measure(args.tasks)
    if args.write:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
        print(f"wrote {args.out}")
    ok = result["all_rebuilt_equal"] and result["all_verdicts_equal"]
    print("every rebuilt observation and verdict equal" if ok else "FAILED (see above)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
