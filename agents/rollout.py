"""The one rollout loop: many environments at once, one batched agent call per step.

Used by evaluation and training. At every step the observations of all active episodes go
to the agent in one batch; an episode that ends is handed out (its record, and the
generation of each of its steps, with the token ids the engine saw and sampled) and its env
takes the next job, until the job list is done.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym

from agents.base import Agent, AgentError, AgentRequest, Generation, SamplingConfig, request_seed
from agents.episode import StepCost, episode_record


@dataclass(frozen=True)
class RolloutJob:
    """One episode to play: a task and the seed that fixes its sampling."""

    task_id: str
    seed: int


def request_for(env: gym.Env, observation: dict[str, Any], seed: int) -> AgentRequest:
    """The agent request for an env's current position (the run seed becomes a per-request seed)."""
    base = env.unwrapped
    return AgentRequest(
        observation=observation,
        seed=request_seed(seed, base.task.task_id, base.turn, base.steps_in_turn),
        task=base.task,
        turn=base.turn,
        steps_in_turn=base.steps_in_turn,
        tool_format=base.config.tool_format,
    )


@dataclass(frozen=True)
class Episode:
    """One finished episode: its record (`agents.episode` format) and what generated each of its steps.

    Attributes:
        record: The JSON record.
        generations: One per assistant step of the record, in order (a scripted agent's carry no tokens).
    """

    record: dict[str, Any]
    generations: tuple[Generation, ...]


@dataclass
class _Slot:
    env: gym.Env
    job: RolloutJob | None = None
    observation: dict[str, Any] | None = None
    protocol: dict[str, Any] = field(default_factory=dict)
    generations: list[Generation] = field(default_factory=list)
    started: float = 0.0


def run_rollouts(
    make_env: Callable[[], gym.Env],
    agent: Agent,
    jobs: Sequence[RolloutJob],
    *,
    sampling: SamplingConfig,
    num_envs: int = 8,
    on_episode: Callable[[Episode], None] | None = None,
    on_batch: Callable[[Sequence[Generation]], None] | None = None,
) -> list[Episode]:
    """Play every job; returns the episodes in the order they finished.

    Args:
        make_env: Builds one env (all envs of a run share the protocol).
        agent: Generates a batch of messages per call.
        jobs: Episodes to play.
        sampling: Sampling settings for every call.
        num_envs: Episodes played at once (the largest agent batch).
        on_episode: Called with each episode as it ends (e.g. to append its record to a file).
        on_batch: Called with each batch of generations (e.g. to update a progress bar).
    """
    if num_envs < 1:
        raise ValueError(f"num_envs must be >= 1, got {num_envs}")
    queue = deque(jobs)
    slots = [_Slot(make_env()) for _ in range(min(num_envs, len(queue)))]
    episodes: list[Episode] = []
    agent_info = agent.describe()

    def finish(slot: _Slot, error: AgentError | None = None) -> None:
        assert slot.job is not None
        base = slot.env.unwrapped
        record = episode_record(
            base,
            protocol=slot.protocol,
            seed=slot.job.seed,
            agent=agent_info,
            costs=[StepCost.of(g) for g in slot.generations],
            error=error,
            duration_s=time.perf_counter() - slot.started,
        )
        episode = Episode(record, tuple(slot.generations[: len(base.step_log)]))
        episodes.append(episode)
        if on_episode is not None:
            on_episode(episode)
        start(slot)

    def start(slot: _Slot) -> None:
        slot.job, slot.generations = None, []
        if queue:
            slot.job = queue.popleft()
            slot.started = time.perf_counter()
            slot.observation, info = slot.env.reset(seed=slot.job.seed, options={"task_id": slot.job.task_id})
            slot.protocol = info["protocol"]

    for slot in slots:
        start(slot)
    try:
        while active := [s for s in slots if s.job is not None]:
            requests = [request_for(s.env, s.observation, s.job.seed) for s in active]
            generations = _generate(agent, requests, sampling)
            if on_batch is not None:
                on_batch(generations)
            for slot, generation in zip(active, generations, strict=True):
                _advance(slot, generation, finish)
    finally:
        for slot in slots:
            slot.env.close()
    return episodes


def _generate(agent: Agent, requests: list[AgentRequest], sampling: SamplingConfig) -> list[Generation]:
    """The agent's batch; a backend that raises, or miscounts, fails every request of the batch as data."""
    try:
        generations = list(agent.generate(requests, sampling))
    except Exception as e:
        error = AgentError("agent_exception", f"{type(e).__name__}: {e}")
        return [Generation(error=error) for _ in requests]
    if len(generations) != len(requests):
        error = AgentError("agent_exception", f"agent returned {len(generations)} generations for {len(requests)}")
        return [Generation(error=error) for _ in requests]
    return generations


def _advance(slot: _Slot, generation: Generation, finish: Callable[..., None]) -> None:
    if generation.error is not None:
        finish(slot, generation.error)
        return
    slot.generations.append(generation)
    try:
        slot.observation, _, terminated, truncated, _ = slot.env.step(generation.action)
    except Exception as e:  # a bug must not lose the run: the episode records it
        finish(slot, AgentError("env_error", f"{type(e).__name__}: {e}"))
        return
    if terminated or truncated:
        finish(slot)
