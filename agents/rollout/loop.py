"""The one rollout loop: many environments at once, scheduled per episode or in lockstep.

Used by evaluation and training. Up to `num_envs` episodes are in play; an episode that ends
is handed out (its record, and the generation of each of its steps, with the token ids the
engine saw and sampled) and its env takes the next job, until the job list is done.

Two schedules, the same episodes (every request samples with its own positional seed):

* ``async``: each episode's next request goes to the agent the moment its previous
  generation comes back, and the backend batches whatever is in flight (vLLM's continuous
  batching; one thread per request for an endpoint). No step waits for the slowest request
  of a batch. Needs a `StreamingAgent` (vLLM, OpenAI-compatible, the oracle).
* ``lockstep``: at every step the observations of all active episodes go to the agent in
  one batch, and the next step waits for the whole batch. The HF backend runs only this way
  (it seeds a batch as a whole, so its batches must not depend on timing).

``auto`` (the default) is ``async`` where the agent streams, else ``lockstep``.
"""

from __future__ import annotations

import itertools
import time
import uuid
from collections import deque
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym

from tooluse_agents.backends.base import (
    Agent,
    AgentError,
    AgentRequest,
    Generation,
    SamplingConfig,
    StreamingAgent,
)
from tooluse_agents.rollout.episode import StepCost, episode_record
from tooluse_agents.rollout.seeding import derive_seed
from tooluse_agents.runs.records import EpisodeRecord

SCHEDULES = ("auto", "async", "lockstep")


def resolve_schedule(schedule: str, agent: Agent) -> str:
    """The schedule a run uses: ``async`` or ``lockstep`` (``auto``: async where the agent streams)."""
    if schedule not in SCHEDULES:
        raise ValueError(f"schedule must be one of {', '.join(SCHEDULES)}, got {schedule!r}")
    streams = isinstance(agent, StreamingAgent) and getattr(agent, "can_stream", True)
    if schedule == "async" and not streams:
        raise ValueError(
            f"the {agent.name} agent cannot schedule per episode (it generates whole batches only); "
            "use schedule lockstep or auto"
        )
    if schedule == "auto":
        return "async" if streams else "lockstep"
    return schedule


@dataclass(frozen=True)
class RolloutJob:
    """One episode to play: a task and the seed that fixes its sampling."""

    task_id: str
    seed: int


def request_for(
    observation: Mapping[str, Any],
    reset_info: Mapping[str, Any],
    info: Mapping[str, Any],
    seed: int,
    *,
    episode: int = 0,
    session: str | None = None,
) -> AgentRequest:
    """The agent request at an episode's current position, from what the env returned.

    Args:
        observation: The latest observation.
        reset_info: The reset's `info` (the task and the protocol card).
        info: The latest `info` (the reset's before the first step): ``turn`` and ``steps_in_turn``.
        seed: The episode's seed; it becomes a per-request seed of the request's place in the episode.
        episode: The loop's number for the episode (`AgentRequest.episode`).
        session: The episode's id, unique across runs (`AgentRequest.session`).
    """
    task = reset_info["task"]
    turn, steps = info["turn"], info["steps_in_turn"]
    return AgentRequest(
        observation=observation,
        seed=derive_seed(seed, task.task_id, turn, steps),
        task=task,
        turn=turn,
        steps_in_turn=steps,
        tool_format=reset_info["protocol"]["tool_format"],
        episode=episode,
        prompt_format=reset_info["protocol"].get("extra", {}).get("prompt_format"),
        session=session,
    )


@dataclass(frozen=True)
class Episode:
    """One finished episode: its record and what generated each of its steps.

    Attributes:
        record: The typed record (`tooluse_agents.runs.records.EpisodeRecord`; ``to_dict()`` is its
            ``episodes.jsonl`` line).
        generations: One per assistant step of the record, in order (a scripted agent's carry no tokens).
        checker: The env's final ``info["checker"]`` (per-turn verdicts included); None when the
            episode stopped before the env ended it.
        number: The loop's number for the episode (`AgentRequest.episode` of its requests).
    """

    record: EpisodeRecord
    generations: tuple[Generation, ...]
    checker: Mapping[str, Any] | None = None
    number: int = 0


@dataclass
class _Slot:
    env: gym.Env
    job: RolloutJob | None = None
    number: int = 0
    session: str = ""
    observation: dict[str, Any] | None = None
    reset_info: dict[str, Any] = field(default_factory=dict)
    infos: list[dict[str, Any]] = field(default_factory=list)
    generations: list[Generation] = field(default_factory=list)
    started: float = 0.0


def run_rollouts(
    make_env: Callable[[], gym.Env],
    agent: Agent,
    jobs: Sequence[RolloutJob],
    *,
    sampling: SamplingConfig,
    num_envs: int = 8,
    schedule: str = "auto",
    on_episode: Callable[[Episode], None] | None = None,
    on_batch: Callable[[Sequence[Generation]], None] | None = None,
    on_step: Callable[[int, Mapping[str, Any]], None] | None = None,
) -> list[Episode]:
    """Play every job; returns the episodes in the order they finished.

    Args:
        make_env: Builds one env (all envs of a run share the protocol).
        agent: Generates the messages.
        jobs: Episodes to play.
        sampling: Sampling settings for every call.
        num_envs: Episodes played at once (the most requests in flight, the largest agent batch).
        schedule: ``auto`` | ``async`` | ``lockstep`` (module docstring); it never changes a verdict.
        on_episode: Called with each episode as it ends (e.g. to append its record to a file).
        on_batch: Called with generations as they come back (a lockstep batch, or those an async
            poll returned; e.g. to update a progress bar).
        on_step: Called with the episode's number (`Episode.number`) and the `info` of each of its
            steps as the env returns it, for keys the record does not hold (a wrapper's own, e.g.
            `CandidateActions`' ``candidate_correct``).
    """
    if num_envs < 1:
        raise ValueError(f"num_envs must be >= 1, got {num_envs}")
    use_async = resolve_schedule(schedule, agent) == "async"
    queue = deque(jobs)
    slots = [_Slot(make_env()) for _ in range(min(num_envs, len(queue)))]
    episodes: list[Episode] = []
    agent_info = agent.describe()
    numbers = itertools.count()
    run_id = uuid.uuid4().hex[:12]  # with the episode's number, its session id (`AgentRequest.session`)

    def finish(slot: _Slot, error: AgentError | None = None) -> None:
        assert slot.job is not None
        record = episode_record(
            slot.reset_info,
            slot.infos,
            seed=slot.job.seed,
            agent=agent_info,
            costs=[StepCost.of(g) for g in slot.generations],
            error=error,
            duration_s=time.perf_counter() - slot.started,
        )
        checker = slot.infos[-1].get("checker") if slot.infos else None
        generations = tuple(slot.generations[: len(slot.infos)])
        episode = Episode(record, generations, checker, slot.number)
        episodes.append(episode)
        if on_episode is not None:
            on_episode(episode)
        start(slot)

    def start(slot: _Slot) -> None:
        slot.job, slot.generations, slot.infos = None, [], []
        if queue:
            slot.job, slot.number = queue.popleft(), next(numbers)
            slot.session = f"{run_id}-{slot.number}"
            slot.started = time.perf_counter()
            slot.observation, slot.reset_info = slot.env.reset(
                seed=slot.job.seed, options={"task_id": slot.job.task_id}
            )

    def advance(slot: _Slot, generation: Generation) -> None:
        _advance(slot, generation, finish, on_step)

    for slot in slots:
        start(slot)
    try:
        if use_async:
            assert isinstance(agent, StreamingAgent)  # resolve_schedule checked
            _play_async(slots, agent, sampling, advance, on_batch)
        else:
            _play_lockstep(slots, agent, sampling, advance, on_batch)
    finally:
        for slot in slots:
            slot.env.close()
    return episodes


def _request(slot: _Slot) -> AgentRequest:
    """The request for a slot's episode in play (its job is set, its env reset)."""
    assert slot.job is not None and slot.observation is not None
    info = slot.infos[-1] if slot.infos else slot.reset_info
    return request_for(
        slot.observation, slot.reset_info, info, slot.job.seed, episode=slot.number, session=slot.session
    )


def _play_lockstep(slots, agent, sampling, advance, on_batch) -> None:
    while active := [s for s in slots if s.job is not None]:
        requests = [_request(s) for s in active]
        generations = _generate(agent, requests, sampling)
        if on_batch is not None:
            on_batch(generations)
        for slot, generation in zip(active, generations, strict=True):
            advance(slot, generation)


def _play_async(slots: list[_Slot], agent: StreamingAgent, sampling, advance, on_batch) -> None:
    """Each slot has at most one request in flight; a finished one is stepped and its next one submitted."""
    in_flight: dict[Hashable, _Slot] = {}

    def submit(ready: list[_Slot]) -> None:
        while ready:
            items: list[tuple[Hashable, AgentRequest]] = [(id(s), _request(s)) for s in ready]
            try:
                agent.submit(items, sampling)
            except Exception as e:  # a backend that raises fails these requests as data, as in lockstep
                error = AgentError("agent_exception", f"{type(e).__name__}: {e}")
                for slot in ready:
                    advance(slot, Generation(error=error))
                ready = [s for s in ready if s.job is not None]  # their next jobs
                continue
            in_flight.update((id(s), s) for s in ready)
            return

    submit([s for s in slots if s.job is not None])
    while in_flight:
        try:
            done = agent.collect()
        except Exception as e:
            error = AgentError("agent_exception", f"{type(e).__name__}: {e}")
            done = [(key, Generation(error=error)) for key in list(in_flight)]
        if not done:
            error = AgentError("agent_exception", f"agent returned nothing for {len(in_flight)} requests in flight")
            done = [(key, Generation(error=error)) for key in list(in_flight)]
        if on_batch is not None:
            on_batch([g for _, g in done])
        ready = []
        for key, generation in done:
            slot = in_flight.pop(key)
            advance(slot, generation)
            if slot.job is not None:
                ready.append(slot)
        if ready:
            submit(ready)


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


def _advance(
    slot: _Slot,
    generation: Generation,
    finish: Callable[..., None],
    on_step: Callable[[int, Mapping[str, Any]], None] | None = None,
) -> None:
    if generation.error is not None:
        finish(slot, generation.error)
        return
    slot.generations.append(generation)
    try:
        slot.observation, _, terminated, truncated, info = slot.env.step(generation.action)
    except Exception as e:  # a bug must not lose the run: the episode records it
        finish(slot, AgentError("env_error", f"{type(e).__name__}: {e}"))
        return
    slot.infos.append(info)
    if on_step is not None:
        on_step(slot.number, info)
    if terminated or truncated:
        finish(slot)
