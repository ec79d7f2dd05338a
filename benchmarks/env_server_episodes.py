"""The oracle's episodes both ways, for the server benchmark: in-process (the reference) and over WebSocket sessions.

The messages are the oracle agent's (`tooluse_agents.backends.oracle`: each turn's ground-truth calls, then a
message without calls), played once on the rollout loop before anything is timed, so both ways send
the same messages and the agent is not what is measured. A verdict is what an episode ended with:
the reward, the number of steps and the checker's verdict (valid, error type, per-turn verdicts) as
canonical JSON. Over the wire every observation must also name the episode's own task: a session
that received another session's step would fail that check or end with another verdict.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
from websockets.asyncio.client import connect

import tooluse_gym  # noqa: F401
from tooluse_agents.backends.base import SamplingConfig
from tooluse_agents.backends.factory import BackendSpec, make_agent
from tooluse_agents.rollout.loop import RolloutJob, run_rollouts
from tooluse_gym.envs import MULTI_TURN_ID
from tooluse_gym.envs.tool_env import play_messages, task_ids

Verdict = tuple[float, int, str]
"""(reward, steps, the checker's verdict as canonical JSON)."""


@dataclass(frozen=True)
class Episode:
    """One episode to play: its place in the list, the task, the reset's seed and the oracle's messages."""

    index: int
    task_id: str
    seed: int
    messages: tuple[str, ...]


def verdict(reward: float, steps: int, checker: Any) -> Verdict:
    return float(reward), steps, json.dumps(json.loads(json.dumps(checker, default=str)), sort_keys=True)


def make_env(category: str) -> gym.Env:
    return gym.make(MULTI_TURN_ID, category=category)


def oracle_episodes(count: int, category: str = "all") -> list[Episode]:
    """`count` episodes over the category's tasks, spread evenly (cycling past the last), seeds 0, 1, ..."""
    env = make_env(category)
    ids = task_ids(env)
    env.close()
    spread = count <= len(ids)
    chosen = [ids[i * len(ids) // count] if spread else ids[i % len(ids)] for i in range(count)]
    jobs = [RolloutJob(task_id, seed) for seed, task_id in enumerate(chosen)]
    oracle = make_agent(BackendSpec(backend="oracle"))
    played = run_rollouts(
        lambda: make_env(category), oracle, jobs, sampling=SamplingConfig(), num_envs=1, schedule="lockstep"
    )
    scripts = {(e.record.task_id, e.record.seed): tuple(s.assistant for s in e.record.steps) for e in played}
    return [Episode(i, job.task_id, job.seed, scripts[(job.task_id, job.seed)]) for i, job in enumerate(jobs)]


def in_process(episodes: Sequence[Episode], category: str = "all") -> tuple[dict[int, Verdict], float]:
    """Each episode's verdict in-process, and the seconds they took (a fresh env, built before timing)."""
    env = make_env(category)
    out: dict[int, Verdict] = {}
    start = time.perf_counter()
    for e in episodes:
        p = play_messages(env, e.task_id, e.messages, seed=e.seed)
        out[e.index] = verdict(p.reward, len(p.infos), p.infos[-1].get("checker") if p.infos else None)
    seconds = time.perf_counter() - start
    env.close()
    return out, seconds


def quantile(values: Sequence[float], q: float) -> float:
    """The `q` quantile of `values` (the nearest rank at or above it); NaN when there are none."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def request(ws: Any, message: dict[str, Any]) -> dict[str, Any]:
    """Send one message; the reply, parsed."""
    await ws.send(json.dumps(message))
    return dict(json.loads(await ws.recv()))


async def play_wire(
    ws: Any,
    episode: Episode,
    latencies: list[float],
    *,
    think: Callable[[], Awaitable[None]] | None = None,
    sent: list[float] | None = None,
    observation: str = "full",
) -> Verdict | str:
    """Play `episode` on an open session: its verdict, or what went wrong (an error reply, a crossed task).

    Each step's latency (send to reply) goes to `latencies`; with `sent`, its send time (`time.perf_counter`)
    goes there too, at the same index. `think` is awaited after each observation that asks for a next
    message, before it is sent (a model's generation time). `observation`: what the session asks each step
    to send, ``full`` (a generic OpenEnv client's observations) or ``delta`` (our client's: the new messages).
    """
    reset = {
        "seed": episode.seed,
        "task_id": episode.task_id,
        **({"observation": "delta"} if observation == "delta" else {}),
    }
    reply = await request(ws, {"type": "reset", "data": reset})
    steps = 0
    for message in episode.messages:
        if reply.get("type") != "observation":
            return f"step {steps}: {str(reply)[:300]}"
        if reply["data"]["observation"]["task_id"] != episode.task_id:
            return f"crossed: step {steps} shows {reply['data']['observation']['task_id']}"
        if reply["data"]["done"]:
            break
        if think is not None:
            await think()
        start = time.perf_counter()
        await ws.send(json.dumps({"type": "step", "data": {"content": message}}))
        raw = await ws.recv()
        latencies.append(time.perf_counter() - start)
        if sent is not None:
            sent.append(start)
        reply = json.loads(raw)
        steps += 1
    if reply.get("type") != "observation":
        return f"step {steps}: {str(reply)[:300]}"
    data = reply["data"]
    if not data["done"]:
        return f"not done after the oracle's {steps} messages"
    return verdict(data["reward"], steps, data["observation"]["checker"])


@dataclass
class Load:
    """What the sessions of one load level saw."""

    verdicts: dict[int, Verdict | str] = field(default_factory=dict)
    latencies: list[float] = field(default_factory=list)
    seconds: float = 0.0
    errors: list[str] = field(default_factory=list)


async def _session(ws_url: str, queue: Iterator[Episode], load: Load) -> None:
    try:
        async with connect(ws_url, max_size=None, open_timeout=60) as ws:
            for episode in queue:
                load.verdicts[episode.index] = await play_wire(ws, episode, load.latencies)
    except Exception as e:  # a session that fails loses its episodes: counted as lost, reported
        load.errors.append(f"{type(e).__name__}: {e}")


async def play_sessions(ws_url: str, episodes: Sequence[Episode], sessions: int) -> Load:
    """`sessions` WebSocket sessions at once, each taking the next episode of the list until none is left."""
    load = Load()
    queue = iter(episodes)
    start = time.perf_counter()
    await asyncio.gather(*(_session(ws_url, queue, load) for _ in range(sessions)))
    load.seconds = time.perf_counter() - start
    return load


def compare(expected: dict[int, Verdict], got: dict[int, Verdict | str]) -> dict[str, Any]:
    """Every verdict equal to in-process? Lost (never finished), crossed, or different ones, with examples."""
    lost = [i for i in expected if i not in got or (isinstance(got[i], str) and not got[i].startswith("crossed"))]
    crossed = [i for i in expected if isinstance(got.get(i), str) and str(got[i]).startswith("crossed")]
    different = [i for i in expected if isinstance(got.get(i), tuple) and got[i] != expected[i]]
    return {
        "episodes": len(expected),
        "equal": sum(1 for i in expected if got.get(i) == expected[i]),
        "lost": len(lost),
        "crossed": len(crossed),
        "different": len(different),
        "all_equal": not (lost or crossed or different),
        "examples": [f"{i}: {got.get(i)}" for i in (lost + crossed + different)[:3]],
    }
