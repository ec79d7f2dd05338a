"""Group-relative advantages, and what kind of group a rollout is in.

Each rollout's reward is measured against its own group's mean and spread; a group is all-correct,
all-wrong or mixed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

ZERO_STD = 1e-8
"""A group whose reward standard deviation is below this is a zero-variance group."""


def group_stats(rewards: Sequence[float]) -> tuple[float, float]:
    """Mean and population standard deviation (divide by n) of a group's rewards."""
    if not rewards:
        raise ValueError("a group needs at least one reward")
    n = len(rewards)
    mean = sum(rewards) / n
    var = sum((r - mean) ** 2 for r in rewards) / n
    return mean, math.sqrt(var)


def group_advantages(rewards: Sequence[float], over: Sequence[int] | None = None) -> list[float]:
    """``(r - mean) / std`` for every rollout of one group; all zeros for a zero-variance group.

    Args:
        rewards: The rewards of the whole group (n rollouts).
        over: Indices whose rewards give the mean and std (default: all n). With
            max-variance sub-sampling, passing the kept indices normalizes over the kept m.

    The std is the population std (divide by n, not n - 1), so a binary group with k of n
    correct gets ``+sqrt((n - k) / k)`` and ``-sqrt(k / (n - k))``.
    """
    basis = [rewards[i] for i in over] if over is not None else list(rewards)
    mean, std = group_stats(basis)
    if std < ZERO_STD:
        return [0.0] * len(rewards)
    return [(r - mean) / std for r in rewards]


def is_zero_variance(rewards: Sequence[float]) -> bool:
    """All rewards (numerically) equal: the group carries no learning signal."""
    return group_stats(rewards)[1] < ZERO_STD


ALL_CORRECT, ALL_WRONG, MIXED = "all_correct", "all_wrong", "mixed"
"""The outcomes of a group (`group_outcome`); the first two are the zero-variance kinds."""


def group_outcome(rewards: Sequence[float], max_reward: float = 1.0) -> str:
    """The kind of a group: ``all_correct``, ``all_wrong`` or ``mixed``.

    ``all_correct`` when every reward reaches `max_reward`, ``all_wrong`` when the rewards are all
    (numerically) equal below it, else ``mixed``.
    """
    if not rewards:
        raise ValueError("a group needs at least one reward")
    if all(r >= max_reward for r in rewards):
        return ALL_CORRECT
    return ALL_WRONG if is_zero_variance(rewards) else MIXED
