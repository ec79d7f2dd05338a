"""`tooluse serve-env --workers 2` on loopback: sessions on both workers, one cap, a worker SIGKILLed mid-episode.

A real `tooluse serve-env` subprocess (its parent process and uvicorn's two worker processes); raw
WebSocket sessions and our `ToolUseEnvClient` play the oracle's episodes, whose verdicts must equal
the in-process env's. The ``X-Tooluse-Worker`` header of a session's handshake names its worker, and
``GET /sessions`` gives each worker's pid.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
from typing import Any

import pytest

pytest.importorskip("openenv.core")

import httpx
from websockets.asyncio.client import connect

from benchmarks.env_server_episodes import Episode, in_process, oracle_episodes, play_wire, request
from benchmarks.env_server_process import ServedEnv
from tooluse_gym.server.app import build_parser
from tooluse_gym.server.client import SessionLost, ToolUseEnvClient
from tooluse_gym.server.server import WORKER_HEADER

MAX_SESSIONS = 4
CATEGORY = "base"


@pytest.fixture(scope="module")
def episodes():
    played = oracle_episodes(6, CATEGORY)
    expected, _ = in_process(played, CATEGORY)
    assert all(reward == 1.0 for reward, _, _ in expected.values())
    return played, expected


@pytest.fixture(scope="module")
def server():
    args = ["--workers", "2", "--env", "ToolUse-MultiTurn-v0", "--category", CATEGORY]
    with ServedEnv([*args, "--max-sessions", str(MAX_SESSIONS), "--idle-timeout", "0"]) as running:
        yield running
    assert running.log_errors == 0, "".join(running.log)


def status(server: ServedEnv, route: str = "/sessions") -> tuple[int, dict[str, Any]]:
    reply = httpx.get(server.url + route, timeout=30)
    return reply.status_code, reply.json()


def pids(server: ServedEnv) -> dict[int, int]:
    """Each live worker's index -> pid."""
    return {w["index"]: w["pid"] for w in status(server)[1]["per_worker"]}


async def on_each_worker(server: ServedEnv, count: int = 2, tries: int = 60) -> dict[int, Any]:
    """One open session per worker: connect until each of `count` workers accepted one (the kernel picks)."""
    held: dict[int, Any] = {}
    for _ in range(tries):
        ws = await connect(server.ws_url, max_size=None)
        worker = int(ws.response.headers[WORKER_HEADER])
        if worker in held:
            await ws.close()
        else:
            held[worker] = ws
        if len(held) == count:
            return held
    raise AssertionError(f"{tries} connections all went to workers {sorted(held)}")


def test_bad_worker_counts_are_refused_by_the_parser(capsys):
    for bad in ("0", "-2", "two"):
        with pytest.raises(SystemExit) as stopped:
            build_parser().parse_args(["--workers", bad])
        assert stopped.value.code == 2
        assert "argument --workers: must be" in capsys.readouterr().err
    assert build_parser().parse_args([]).workers == 1


def test_the_start_line_names_the_workers_and_every_worker_is_ready(server):
    line = next(line for line in server.log if "serving" in line)
    assert "2 workers, 4 sessions in all" in line
    code, body = status(server, "/ready")
    assert code == 200 and body["ready"] and body["workers"] == {"count": 2, "up": 2, "ready": 2}
    assert body["max_sessions"] == MAX_SESSIONS and len({w["pid"] for w in body["per_worker"]}) == 2
    assert httpx.get(server.url + "/health").json() == {"status": "healthy"}


def test_sessions_on_both_workers_give_the_in_process_verdicts(server, episodes):
    played, expected = episodes

    async def run() -> dict[int, Any]:
        held = await on_each_worker(server)
        code, body = status(server)
        assert code == 200 and [w["sessions"] for w in body["per_worker"]] == [1, 1] and body["sessions"] == 2
        got: dict[int, Any] = {}

        async def play(ws: Any, mine: list[Episode]) -> None:
            for episode in mine:
                got[episode.index] = await play_wire(ws, episode, [])

        sessions = list(held.values())
        await asyncio.gather(*(play(ws, played[i :: len(sessions)]) for i, ws in enumerate(sessions)))
        for ws in sessions:
            await ws.close()
        return got

    assert asyncio.run(run()) == expected


def test_the_session_cap_counts_both_workers(server):
    async def run() -> None:
        held = list((await on_each_worker(server)).values())
        while len(held) < MAX_SESSIONS:
            held.append(await connect(server.ws_url, max_size=None))
        for ws in held:
            assert (await request(ws, {"type": "reset", "data": {"task_id": "multi_turn_base_0"}}))["type"] == (
                "observation"
            )
        per_worker = {w["index"]: w["sessions"] for w in status(server)[1]["per_worker"]}
        assert sum(per_worker.values()) == MAX_SESSIONS and all(n < MAX_SESSIONS for n in per_worker.values())
        refused_by: set[int] = set()
        for _ in range(40):  # each worker holds fewer than the cap, and still refuses: the cap is the server's
            async with connect(server.ws_url) as extra:
                refusal = json.loads(await asyncio.wait_for(extra.recv(), 30))  # accepted: no message comes
                refused_by.add(int(extra.response.headers[WORKER_HEADER]))
            assert refusal["type"] == "error" and refusal["data"]["code"] == "CAPACITY_REACHED", refusal
            assert refusal["data"]["max_sessions"] == MAX_SESSIONS
            assert refusal["data"]["active_sessions"] == MAX_SESSIONS
            if len(refused_by) == 2:
                break
        assert refused_by == {0, 1}
        await held.pop().close()
        deadline = time.monotonic() + 10
        while True:  # the slot frees once the worker sees the close
            async with connect(server.ws_url) as again:
                reply = await request(again, {"type": "reset", "data": {"task_id": "multi_turn_base_1"}})
            if reply["type"] == "observation" or time.monotonic() > deadline:
                break
            await asyncio.sleep(0.05)
        assert reply["type"] == "observation", reply
        for ws in held:
            await ws.close()

    asyncio.run(run())


def test_a_killed_worker_ends_only_its_own_sessions_and_comes_back(server, episodes):
    played, expected = episodes
    a, b = played[0], played[1]

    async def run() -> int:
        victim: ToolUseEnvClient | None = None
        for _ in range(60):  # our client, on worker 0
            client = ToolUseEnvClient(base_url=server.url)
            result = await client.reset(seed=a.seed, task_id=a.task_id)
            if int(client._ws.response.headers[WORKER_HEADER]) == 0:  # type: ignore[union-attr]
                victim = client
                break
            await client.close()
        assert victim is not None, "no session landed on worker 0"
        result = await victim.step(a.messages[0])
        assert not result.done
        both = await on_each_worker(server)
        await both[0].close()
        bystander = both[1]
        await request(bystander, {"type": "reset", "data": {"seed": b.seed, "task_id": b.task_id}})
        before = pids(server)

        os.kill(before[0], signal.SIGKILL)
        with pytest.raises(SessionLost) as lost:
            await victim.step(a.messages[1])
        assert "no close frame" in str(lost.value) and "its episode is lost" in str(lost.value)
        code, body = status(server, "/ready")  # the dead worker is not up, and not counted: not ready
        assert code == 503 and not body["ready"] and body["workers"]["up"] == 1, body
        assert [w["pid"] for w in body["per_worker"]] == [before[1]]

        assert await play_wire(bystander, b, []) == expected[b.index]  # the other worker's session plays on
        await bystander.close()

        deadline = time.monotonic() + 120
        while status(server, "/ready")[0] != 200:  # uvicorn starts another worker; it loads its tasks
            assert time.monotonic() < deadline, status(server, "/ready")
            await asyncio.sleep(0.25)
        after = pids(server)
        assert after[1] == before[1] and after[0] != before[0]
        assert status(server)[1]["sessions"] == 0  # the dead worker's session no longer counts

        both = await on_each_worker(server)
        await both[1].close()
        replaced = both[0]  # the new worker serves, with the in-process verdict
        assert await play_wire(replaced, a, []) == expected[a.index]
        await replaced.close()
        result = await victim.reset(seed=a.seed, task_id=a.task_id)  # the same client starts a new session
        assert result.observation.task_id == a.task_id
        await victim.close()
        return before[0]

    killed = asyncio.run(run())
    deadline = time.monotonic() + 10
    while not any(f"worker {killed} died with" in line for line in server.log):  # the parent says so
        assert time.monotonic() < deadline, "".join(server.log)
        time.sleep(0.1)
