"""Groups of rollouts through the shared rollout loop, with the tokens the policy generated.

`run_rollouts` returns each episode with the generation of each of its steps, and a local
backend's generation holds the prompt ids its engine saw and the ids it sampled, so the
trainer uses exactly those and never re-renders or re-tokenizes. In next-turn mode the oracle
answers the scripted turns before the prompt's last turn (`ScriptedTurns`); those messages
carry no tokens and no loss.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import gymnasium as gym

from tooluse_agents.base import Agent, AgentRequest, Generation, SamplingConfig, StreamingAgent
from tooluse_agents.oracle import OracleAgent
from tooluse_agents.rollout import Episode, RolloutJob, run_rollouts


@dataclass(frozen=True)
class StepTokens:
    """One assistant message the policy generated: what it saw and what it sampled."""

    prompt_ids: tuple[int, ...]
    completion_ids: tuple[int, ...]


@dataclass(frozen=True)
class Rollout:
    """One episode of a group.

    Attributes:
        prompt_id: The prompt (task id) the group starts from.
        member: Index of the rollout in its group.
        reward: Terminal reward.
        steps: The policy's messages in order (scripted oracle messages are not included).
        record: The episode record (`tooluse_agents.episode` format).
    """

    prompt_id: str
    member: int
    reward: float
    steps: tuple[StepTokens, ...]
    record: Mapping[str, Any]

    @property
    def completion_tokens(self) -> int:
        """Tokens the policy generated in this rollout."""
        return sum(len(s.completion_ids) for s in self.steps)


def job_seed(seed: int, step: int, prompt_id: str, member: int) -> int:
    """The seed of one group member's episode: distinct per (training seed, step, prompt, member)."""
    digest = hashlib.sha256(f"grpo/{seed}/{step}/{prompt_id}/{member}".encode()).digest()
    return int.from_bytes(digest[:4], "little") & 0x7FFFFFFF


class ScriptedTurns:
    """The policy's agent, with the oracle answering the scripted turns (next-turn mode's earlier turns).

    The oracle's messages carry no token ids, so they carry no loss; the policy's carry exactly
    the ids its engine saw and sampled (`Generation.prompt_token_ids` and `token_ids`).
    """

    def __init__(self, agent: Agent, scripted: Callable[[AgentRequest], bool] | None = None):
        self.agent = agent
        self.scripted = scripted or _never
        self.name = agent.name
        self._streaming = agent if isinstance(agent, StreamingAgent) else None
        self.can_stream = self._streaming is not None
        self._oracle = OracleAgent()
        self._done: list[tuple[Hashable, Generation]] = []

    def describe(self) -> dict[str, Any]:
        """The wrapped agent's identity."""
        return self.agent.describe()

    def close(self) -> None:
        """Close the wrapped agent."""
        self.agent.close()

    def generate(self, requests: Sequence[AgentRequest], sampling: SamplingConfig) -> list[Generation]:
        """Scripted requests answered by the oracle, the others by the policy's agent, in order."""
        out: list[Generation | None] = [None] * len(requests)
        policy = [i for i, r in enumerate(requests) if not self.scripted(r)]
        for i, r in enumerate(requests):
            if self.scripted(r):
                out[i] = self._oracle.generate([r], sampling)[0]
        if policy:
            generations = self.agent.generate([requests[i] for i in policy], sampling)
            if len(generations) != len(policy):
                raise RuntimeError(f"agent returned {len(generations)} generations for {len(policy)} requests")
            for i, generation in zip(policy, generations, strict=True):
                out[i] = generation
        return [g for g in out if g is not None]

    def submit(self, items: Sequence[tuple[Hashable, AgentRequest]], sampling: SamplingConfig) -> None:
        """Answer scripted requests at once; submit the others to the policy's agent."""
        policy = []
        for key, request in items:
            if self.scripted(request):
                self._done.append((key, self._oracle.generate([request], sampling)[0]))
            else:
                policy.append((key, request))
        if policy:
            assert self._streaming is not None, "submit() needs a streaming agent (can_stream)"
            self._streaming.submit(policy, sampling)

    def collect(self) -> list[tuple[Hashable, Generation]]:
        """Finished generations: scripted ones first, then the agent's."""
        if self._done:  # scripted answers first: the engine is not stepped, so the schedule stays token-driven
            done, self._done = self._done, []
            return done
        assert self._streaming is not None, "collect() needs a streaming agent (can_stream)"
        return self._streaming.collect()


def _never(request: AgentRequest) -> bool:
    return False


def before_last_turn(request: AgentRequest) -> bool:
    """Next-turn mode's scripted requests: every turn of the prompt but its last, which the policy plays."""
    assert request.task is not None  # the rollout loop sets every request's task
    return request.turn < request.task.num_turns - 1


def policy_steps(episode: Episode) -> tuple[StepTokens, ...]:
    """The policy's messages of one episode, in order, with their tokens (scripted and failed ones carry none)."""
    steps = []
    for g in episode.generations:
        if g.error is not None or not g.token_ids:
            continue
        if g.prompt_token_ids is None:
            raise ValueError(f"the {episode.record['agent'].get('name')} agent returned no prompt_token_ids")
        steps.append(StepTokens(tuple(g.prompt_token_ids), tuple(g.token_ids)))
    return tuple(steps)


def play_groups(
    make_env: Callable[[], gym.Env],
    agent: Agent,
    prompt_ids: Sequence[str],
    *,
    group_size: int,
    seed: int,
    step: int,
    sampling: SamplingConfig,
    num_envs: int,
    schedule: str = "auto",
    on_batch: Callable[[Sequence[Generation]], None] | None = None,
    members: Sequence[int] | None = None,
) -> dict[str, list[Rollout]]:
    """Play `group_size` rollouts of every prompt; returns each prompt's group ordered by member.

    `members` plays only those members of each group (default: all, ``range(group_size)``); a
    member's seed is the same either way (`job_seed`), so a group played in parts is the group.
    """
    jobs, owner = [], {}
    for pid in prompt_ids:
        for member in range(group_size) if members is None else members:
            job = RolloutJob(pid, job_seed(seed, step, pid, member))
            owner[(pid, job.seed)] = member
            jobs.append(job)
    episodes = run_rollouts(
        make_env, agent, jobs, sampling=sampling, num_envs=num_envs, schedule=schedule, on_batch=on_batch
    )
    groups: dict[str, list[Rollout]] = {pid: [] for pid in prompt_ids}
    for episode in episodes:
        record = episode.record
        pid = record["task_id"]
        member = owner[(pid, record["seed"])]
        groups[pid].append(Rollout(pid, member, float(record["reward"]), policy_steps(episode), record))
    for group in groups.values():
        group.sort(key=_member)
    return groups


def _member(rollout: Rollout) -> int:
    return rollout.member
