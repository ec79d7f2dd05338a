"""Faults and bad input against a real `tooluse serve-env`: each gets a clear error, and everything else carries on.

A *bystander* session plays an oracle episode one step after each fault; it must end with the
in-process verdict. Each probe records the reply the client got (its type, code and message) and
whether the server still answers ``/health``:

* malformed JSON, an unknown action shape, a message over the content limit, an unknown task id, a
  step after the episode ended: an error reply, and the same session then plays on;
* a WebSocket frame over ``--max-request-bytes``: that connection is closed with code 1009 and a
  reason naming the limit (the server never reads the frame in full); nothing else is touched;
* a reset flood past ``--max-sessions``: every session past the cap is refused (``CAPACITY_REACHED``)
  while the sessions within it play;
* clients that disconnect mid-episode (half drop the connection, half close it), in waves: after
  each wave ``/sessions`` is back to the bystander alone, and the server's memory stops growing;
* the server killed (SIGKILL) mid-episode and restarted on the same port: the client's next step
  raises `SessionLost`, a connect while it is down raises ``ConnectionError``, and after the restart
  the same client object resets and plays an episode to the in-process verdict.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import statistics
from collections.abc import Sequence
from typing import Any

from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from benchmarks.env_server_episodes import Episode, Verdict, play_wire, request, verdict
from benchmarks.env_server_process import ServedEnv
from tooluse_gym.decoding.limits import MAX_MESSAGE_CHARS as MAX_CHARS
from tooluse_gym.server.client import SessionLost, ToolUseEnvClient


def _error(reply: dict[str, Any]) -> dict[str, Any]:
    data = reply.get("data") or {}
    message = str(data.get("message", ""))
    if data.get("errors"):  # pydantic's: which field, and what is wrong with it
        first = data["errors"][0]
        message += f": {'.'.join(map(str, first.get('loc', ())))}: {first.get('msg', '')}"
    return {"type": reply.get("type"), "code": data.get("code"), "message": message[:200]}


class _Bystander:
    """An oracle episode played one step at a time between the faults."""

    def __init__(self, ws: Any, episode: Episode):
        self.ws, self.episode, self.steps, self.reply = ws, episode, 0, {}

    async def start(self) -> None:
        data = {"seed": self.episode.seed, "task_id": self.episode.task_id}
        self.reply = await request(self.ws, {"type": "reset", "data": data})

    async def step(self) -> None:
        """One step, the last message kept back so that the episode stays in progress."""
        if self.steps < len(self.episode.messages) - 1:
            await self._send()

    async def finish(self) -> Verdict | str:
        """The rest of the episode: its verdict, or what went wrong."""
        while self.steps < len(self.episode.messages) and self.reply.get("type") == "observation":
            if self.reply["data"]["done"]:
                break
            await self._send()
        if self.reply.get("type") != "observation" or not self.reply["data"]["done"]:
            return f"bystander: {str(self.reply)[:300]}"
        return verdict(self.reply["data"]["reward"], self.steps, self.reply["data"]["observation"]["checker"])

    async def _send(self) -> None:
        message = self.episode.messages[self.steps]
        self.reply = await request(self.ws, {"type": "step", "data": {"content": message}})
        self.steps += 1


async def _bad_input(server: ServedEnv, episodes: Sequence[Episode], max_bytes: int) -> dict[str, Any]:
    """The bad messages, each on a session that then plays on."""
    out: dict[str, Any] = {}
    e = episodes[0]
    async with connect(server.ws_url, max_size=None) as ws:
        reset = {"type": "reset", "data": {"seed": e.seed, "task_id": e.task_id}}
        probes = {
            "malformed_json": '{"type": "step", "data": ',
            "unknown_action_shape": json.dumps({"type": "step", "data": {"text": e.messages[0]}}),
            "message_over_content_limit": json.dumps({"type": "step", "data": {"content": "x" * (MAX_CHARS + 1)}}),
            "unknown_task_id": json.dumps({"type": "reset", "data": {"task_id": "multi_turn_base_99999"}}),
        }
        await request(ws, reset)
        for name, raw in probes.items():
            await ws.send(raw)
            out[name] = _error(json.loads(await ws.recv()))
        # the same session plays its episode from the start after all that
        latencies: list[float] = []
        out["session_after_bad_input"] = str(await play_wire(ws, e, latencies))
        out["step_after_end"] = _error(await request(ws, {"type": "step", "data": {"content": e.messages[0]}}))
        out["reset_after_end"] = (await request(ws, reset)).get("type")
    async with connect(server.ws_url, max_size=None) as ws:
        await request(ws, {"type": "reset", "data": {"seed": e.seed, "task_id": e.task_id}})
        await ws.send(json.dumps({"type": "step", "data": {"content": "x" * (max_bytes + 1)}}))
        try:
            out["frame_over_size_cap"] = {"type": "reply", "reply": str(await ws.recv())[:200]}
        except ConnectionClosed as closed:
            frame = closed.rcvd
            out["frame_over_size_cap"] = {
                "type": "closed",
                "code": frame.code if frame else None,
                "message": frame.reason if frame else "",
            }
    return out


async def _flood(server: ServedEnv, episode: Episode, room: int, extra: int) -> dict[str, Any]:
    """`room` + `extra` clients reset at once while `room` slots are free: `extra` must be refused."""
    reset = {"type": "reset", "data": {"seed": episode.seed, "task_id": episode.task_id}}

    async def one() -> str:
        async with connect(server.ws_url, max_size=None, open_timeout=60) as ws:
            with contextlib.suppress(ConnectionClosed):  # refused at once: the server's error is already in
                await ws.send(json.dumps(reset))
            try:
                reply = json.loads(await ws.recv())
            except ConnectionClosed:
                return "closed without an error message"
            await asyncio.sleep(0.5)  # hold the slot while the others try
            return str(reply.get("type") if reply.get("type") != "error" else reply["data"]["code"])

    replies = await asyncio.gather(*(one() for _ in range(room + extra)))
    counts = {k: replies.count(k) for k in sorted(set(replies))}
    return {"clients": room + extra, "free_slots": room, "replies": counts}


async def _disconnects(
    server: ServedEnv, episodes: Sequence[Episode], total: int, wave: int, bystanders: int
) -> dict[str, Any]:
    """`total` clients reset, step once and leave mid-episode (even: drop the TCP connection; odd: close)."""
    rss, open_after, per_session = [server.rss_bytes()], [], []
    done = 0
    while done < total:
        n = min(wave, total - done)
        held: list[Any] = []
        for k in range(n):
            e = episodes[(done + k) % min(len(episodes), 16)]  # few tasks: their caches warm at once
            ws = await connect(server.ws_url, max_size=None, open_timeout=60)
            await request(ws, {"type": "reset", "data": {"seed": e.seed, "task_id": e.task_id}})
            await request(ws, {"type": "step", "data": {"content": e.messages[0]}})
            held.append(ws)
        per_session.append((server.rss_bytes() - rss[-1]) / n)
        for k, ws in enumerate(held):
            if (done + k) % 2 == 0:
                ws.transport.abort()  # the connection drops: no close frame
            else:
                await ws.close()  # a WebSocket close, without openenv's "close" message
        done += n
        open_after.append(await asyncio.to_thread(server.wait_sessions, bystanders))
        rss.append(server.rss_bytes())
    # the last third of the waves: the allocator and the per-task caches have warmed up by then
    tail = rss[len(rss) - max(2, len(rss) // 3) :]
    growth = tail[-1] - tail[0]
    held_kib = statistics.median(per_session)
    per_client_kib = growth / (wave * (len(tail) - 1)) / 1024
    return {
        "clients": total,
        "wave": wave,
        "open_sessions_after_each_wave": sorted(set(open_after)),
        "sessions_freed": all(n == bystanders for n in open_after),
        "rss_mib_after_each_wave": [round(r / 2**20, 1) for r in rss],
        "held_session_kib_median": round(held_kib / 1024, 1),
        "growth_kib_per_client_last_third": round(per_client_kib, 2),
        "retained_fraction_of_a_session_per_client": round(per_client_kib / max(held_kib / 1024, 1.0), 4),
    }


async def _kill_restart(server: ServedEnv, episode: Episode, expected: Verdict) -> dict[str, Any]:
    """The server killed mid-episode, then restarted: what a `ToolUseEnvClient` sees."""
    out: dict[str, Any] = {}
    client = ToolUseEnvClient(base_url=server.url, message_timeout_s=60)
    try:
        await client.reset(seed=episode.seed, task_id=episode.task_id)
        await client.step(episode.messages[0])
        await asyncio.to_thread(server.kill)
        try:
            await client.step(episode.messages[1])
            out["step_after_kill"] = {"type": "no error"}
        except Exception as e:
            out["step_after_kill"] = {"type": type(e).__name__, "message": str(e)[:300]}
        try:
            await ToolUseEnvClient(base_url=server.url, connect_timeout_s=5).connect()
            out["connect_while_down"] = {"type": "no error"}
        except Exception as e:
            out["connect_while_down"] = {"type": type(e).__name__, "message": str(e)[:300]}
        await asyncio.to_thread(server.start)
        result = await client.reset(seed=episode.seed, task_id=episode.task_id)
        steps = 0
        for message in episode.messages:
            if result.done:
                break
            result = await client.step(message)
            steps += 1
        got = verdict(result.reward or 0.0, steps, result.observation.checker)
        out["episode_after_restart_equal"] = got == expected
    finally:
        await client.close()
    out["clear"] = (
        out["step_after_kill"]["type"] == SessionLost.__name__
        and out["connect_while_down"]["type"] == "ConnectionError"
        and out["episode_after_restart_equal"]
    )
    return out


async def run_faults(
    server: ServedEnv,
    episodes: Sequence[Episode],
    expected: dict[int, Verdict],
    *,
    max_sessions: int,
    max_bytes: int,
    disconnects: int,
    flood_extra: int,
) -> dict[str, Any]:
    """Every probe of the module docstring, in order, with the bystander stepping in between."""
    out: dict[str, Any] = {}
    alive: dict[str, bool] = {}
    async with connect(server.ws_url, max_size=None) as ws:
        bystander = _Bystander(ws, episodes[-1])
        await bystander.start()
        out["bad_input"] = await _bad_input(server, episodes, max_bytes)
        alive["bad_input"] = server.alive()
        await bystander.step()
        out["reset_flood"] = await _flood(server, episodes[1 % len(episodes)], max_sessions - 1, flood_extra)
        alive["reset_flood"] = server.alive()
        await bystander.step()
        wave = max(1, min(max_sessions - 1, disconnects))
        out["disconnects"] = await _disconnects(server, episodes, disconnects, wave, bystanders=1)
        alive["disconnects"] = server.alive()
        got = await bystander.finish()
        out["bystander_equal"] = got == expected[episodes[-1].index]
        out["bystander"] = got if isinstance(got, str) else "in-process verdict"
    out["server_alive_after"] = alive
    out["server_log_tracebacks"] = server.log_errors
    out["kill_restart"] = await _kill_restart(server, episodes[0], expected[episodes[0].index])
    return out


def judge(faults: dict[str, Any], *, max_sessions: int, flood_extra: int) -> dict[str, bool]:
    """One pass/fail per fault: the reply a client needs, and nothing else disturbed."""
    bad = faults["bad_input"]
    frame = bad["frame_over_size_cap"]
    flood = faults["reset_flood"]["replies"]
    return {
        "malformed_json": bad["malformed_json"]["code"] == "INVALID_JSON",
        "unknown_action_shape": bad["unknown_action_shape"]["code"] == "VALIDATION_ERROR",
        "message_over_content_limit": bad["message_over_content_limit"]["code"] == "VALIDATION_ERROR",
        "frame_over_size_cap": frame["type"] == "closed" and frame["code"] == 1009 and bool(frame["message"]),
        "unknown_task_id": "unknown task_id" in bad["unknown_task_id"]["message"],
        "step_after_end": "has ended" in bad["step_after_end"]["message"],
        "session_carries_on_after_bad_input": bad["session_after_bad_input"].startswith("(1.0,")
        and bad["reset_after_end"] == "observation",
        "reset_flood": flood.get("observation") == max_sessions - 1 and flood.get("CAPACITY_REACHED") == flood_extra,
        "disconnects_free_sessions": faults["disconnects"]["sessions_freed"],
        # a leaked session keeps about a whole session's memory per client; allocator noise stays far below
        "disconnects_no_memory_growth": faults["disconnects"]["retained_fraction_of_a_session_per_client"] < 0.2,
        "bystander_unaffected": faults["bystander_equal"],
        "server_alive": all(faults["server_alive_after"].values()),
        "no_tracebacks_in_server_log": faults["server_log_tracebacks"] == 0,
        "kill_restart_clear_error": faults["kill_restart"]["clear"],
    }
