"""Groups of rollouts through the shared rollout loop, with the tokens the policy generated.

`run_rollouts` returns each episode with the generation of each of its steps, and a local
backend's generation holds the prompt ids its engine saw and the ids it sampled, so the
trainer uses exactly those and never re-renders or re-tokenizes. In next-turn mode the oracle
answers the scripted turns before the prompt's last turn (`ScriptedTurns`); those messages
carry no tokens and no loss.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import gymnasium as gym

from tooluse_agents.backends.base import Agent, Generation, SamplingConfig
from tooluse_agents.backends.scripted import ScriptedTurns, before_last_turn
from tooluse_agents.rollout.loop import Episode, RolloutJob, run_rollouts
from tooluse_agents.rollout.seeding import derive_seed
from tooluse_agents.runs.records import EpisodeRecord

__all__ = ["Rollout", "ScriptedTurns", "StepTokens", "before_last_turn", "play_groups", "policy_steps"]


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
        record: The episode record.
    """

    prompt_id: str
    member: int
    reward: float
    steps: tuple[StepTokens, ...]
    record: EpisodeRecord

    @property
    def completion_tokens(self) -> int:
        """Tokens the policy generated in this rollout."""
        return sum(len(s.completion_ids) for s in self.steps)


def policy_steps(episode: Episode) -> tuple[StepTokens, ...]:
    """The policy's messages of one episode, in order, with their tokens (scripted and failed ones carry none)."""
    steps = []
    for g in episode.generations:
        if g.error is not None or not g.token_ids:
            continue
        if g.prompt_token_ids is None:
            raise ValueError(f"the {episode.record.agent.get('name')} agent returned no prompt_token_ids")
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
    member's seed is the same either way (``derive_seed("grpo", seed, step, prompt, member)``), so a
    group played in parts is the group.
    """
    jobs, owner = [], {}
    for pid in prompt_ids:
        for member in range(group_size) if members is None else members:
            job = RolloutJob(pid, derive_seed("grpo", seed, step, pid, member))
            owner[(pid, job.seed)] = member
            jobs.append(job)
    episodes = run_rollouts(
        make_env, agent, jobs, sampling=sampling, num_envs=num_envs, schedule=schedule, on_batch=on_batch
    )
    groups: dict[str, list[Rollout]] = {pid: [] for pid in prompt_ids}
    for episode in episodes:
        record = episode.record
        member = owner[(record.task_id, record.seed)]
        groups[record.task_id].append(Rollout(record.task_id, member, record.reward, policy_steps(episode), record))
    for group in groups.values():
        group.sort(key=_member)
    return groups


def _member(rollout: Rollout) -> int:
    return rollout.member
