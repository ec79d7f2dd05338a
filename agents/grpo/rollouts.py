"""Groups of rollouts through the shared rollout loop, with the tokens the policy generated.

`RecordingAgent` wraps the policy's agent. It remembers, for every request the policy
answers, the prompt token ids (the observation rendered exactly as the backend renders it)
and the generated token ids, keyed by the request's place in its episode. After
`run_rollouts` returns the episode records, each assistant step of a record is matched back
to its tokens through the same key, so the trainer never re-tokenizes model text. In
next-turn mode the oracle answers the scripted turns before the prompt's last turn; those
messages carry no tokens and no loss.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import gymnasium as gym

from agents.base import Agent, AgentRequest, Generation, SamplingConfig, chat_prompt, request_seed
from agents.oracle import OracleAgent
from agents.rollout import RolloutJob, run_rollouts

Key = tuple[str, int, int, int]  # task id, turn, steps taken in the turn, request seed


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
        record: The episode record (`agents.episode` format).
    """

    prompt_id: str
    member: int
    reward: float
    steps: tuple[StepTokens, ...]
    record: Mapping[str, Any]

    @property
    def completion_tokens(self) -> int:
        return sum(len(s.completion_ids) for s in self.steps)


def job_seed(seed: int, step: int, prompt_id: str, member: int) -> int:
    """The seed of one group member's episode: distinct per (training seed, step, prompt, member)."""
    digest = hashlib.sha256(f"grpo/{seed}/{step}/{prompt_id}/{member}".encode()).digest()
    return int.from_bytes(digest[:4], "little") & 0x7FFFFFFF


class RecordingAgent:
    """Sends requests to the policy's agent (or the oracle for scripted turns) and records the policy's tokens."""

    def __init__(self, agent: Agent, tokenizer: Any, scripted: Callable[[AgentRequest], bool] | None = None):
        self.agent = agent
        self.tokenizer = tokenizer
        self.scripted = scripted or (lambda request: False)
        self.name = agent.name
        self._oracle = OracleAgent()
        self.tokens: dict[Key, StepTokens] = {}

    def describe(self) -> dict[str, Any]:
        return self.agent.describe()

    def close(self) -> None:
        self.agent.close()

    def generate(self, requests: Sequence[AgentRequest], sampling: SamplingConfig) -> list[Generation]:
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
                self._record(requests[i], generation)
        return [g for g in out if g is not None]

    def _record(self, request: AgentRequest, generation: Generation) -> None:
        if generation.error is not None or not generation.token_ids:
            return
        text = chat_prompt(self.tokenizer, request.observation)
        prompt_ids = tuple(self.tokenizer(text, add_special_tokens=False)["input_ids"])
        key = (request.task.task_id, request.turn, request.steps_in_turn, request.seed)
        self.tokens[key] = StepTokens(prompt_ids, tuple(generation.token_ids))

    def steps_of(self, record: Mapping[str, Any]) -> tuple[StepTokens, ...]:
        """The recorded policy messages of one episode record, in order."""
        task_id, seed = record["task_id"], record["seed"]
        found = []
        for turn in record["turns"]:
            for k, _ in enumerate(turn["steps"]):
                key = (task_id, turn["turn"], k, request_seed(seed, task_id, turn["turn"], k))
                if key in self.tokens:
                    found.append(self.tokens.pop(key))
        return tuple(found)


def play_groups(
    make_env: Callable[[], gym.Env],
    agent: RecordingAgent,
    prompt_ids: Sequence[str],
    *,
    group_size: int,
    seed: int,
    step: int,
    sampling: SamplingConfig,
    num_envs: int,
    on_batch: Callable[[Sequence[Generation]], None] | None = None,
) -> dict[str, list[Rollout]]:
    """Play `group_size` rollouts of every prompt; returns each prompt's group ordered by member."""
    jobs, owner = [], {}
    for pid in prompt_ids:
        for member in range(group_size):
            job = RolloutJob(pid, job_seed(seed, step, pid, member))
            owner[(pid, job.seed)] = member
            jobs.append(job)
    records = run_rollouts(make_env, agent, jobs, sampling=sampling, num_envs=num_envs, on_batch=on_batch)
    groups: dict[str, list[Rollout]] = {pid: [] for pid in prompt_ids}
    for record in records:
        pid = record["task_id"]
        member = owner[(pid, record["seed"])]
        rollout = Rollout(pid, member, float(record["reward"]), agent.steps_of(record), record)
        groups[pid].append(rollout)
    for group in groups.values():
        group.sort(key=lambda r: r.member)
    agent.tokens.clear()
    return groups
