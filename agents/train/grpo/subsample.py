"""Max-variance rollout sub-sampling: generate n rollouts, update on the m whose rewards vary most.

`select_for_update` applies it to a step's groups: each group's advantages, its kept subset,
and the kept rollouts' generated tokens as the update's samples.

A variance-maximizing subset of size m always consists of some of the lowest and some of the
highest rewards, so it suffices to sort once and scan the m + 1 splits "m' lowest plus m - m'
highest" with prefix sums: O(n log n). With binary rewards this keeps m/2 successes and m/2
failures when the group has that many of each.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from tooluse_agents.train.batch import Sample
from tooluse_agents.train.grpo.advantages import group_advantages

if TYPE_CHECKING:
    from tooluse_agents.train.grpo.config import GRPOConfig
    from tooluse_agents.train.grpo.rollouts import Rollout


def max_variance_subset(rewards: Sequence[float], m: int) -> list[int]:
    """Indices (ascending) of the m rollouts whose rewards have the largest variance.

    Ties between splits go to the one with the fewest low rewards; ties between equal
    rewards go to the lower index (a stable sort), so the result is deterministic.
    """
    n = len(rewards)
    if not 1 <= m <= n:
        raise ValueError(f"m must be in [1, {n}], got {m}")
    if m == n:
        return list(range(n))
    order = sorted(range(n), key=lambda i: rewards[i])
    values = [float(rewards[i]) for i in order]
    prefix, prefix_sq = [0.0], [0.0]
    for v in values:
        prefix.append(prefix[-1] + v)
        prefix_sq.append(prefix_sq[-1] + v * v)
    best_low, best_var = 0, -1.0
    for low in range(m + 1):
        high = m - low
        total = prefix[low] + (prefix[n] - prefix[n - high])
        total_sq = prefix_sq[low] + (prefix_sq[n] - prefix_sq[n - high])
        mean = total / m
        var = total_sq / m - mean * mean
        if var > best_var + 1e-12:
            best_low, best_var = low, var
    kept = order[:best_low] + order[n - (m - best_low) :]
    return sorted(kept)


def select_for_update(groups: Mapping[str, Sequence[Rollout]], grpo: GRPOConfig) -> tuple[list[Sample], dict]:
    """Advantages and the kept subset of every group; returns the samples and per-rollout (advantage, used)."""
    samples: list[Sample] = []
    marks: dict[tuple[str, int], tuple[float, bool]] = {}
    for pid, group in groups.items():
        rewards = [r.reward for r in group]
        m = min(grpo.update_size or len(group), len(group))
        kept = max_variance_subset(rewards, m) if group else []
        over = kept if grpo.normalize_over == "kept" else None
        advantages = group_advantages(rewards, over) if group else []
        for i, rollout in enumerate(group):
            used = i in kept
            marks[(pid, rollout.member)] = (advantages[i], used)
            if used:
                samples.extend(
                    Sample(s.prompt_ids, s.completion_ids, advantages[i], pid, rollout.member) for s in rollout.steps
                )
    return samples, marks
