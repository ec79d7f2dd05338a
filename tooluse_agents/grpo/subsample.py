"""Max-variance rollout sub-sampling: generate n rollouts, update on the m whose rewards vary most.

A variance-maximizing subset of size m always consists of some of the lowest and some of the
highest rewards, so it suffices to sort once and scan the m + 1 splits "m' lowest plus m - m'
highest" with prefix sums: O(n log n). With binary rewards this keeps m/2 successes and m/2
failures when the group has that many of each.
"""

from __future__ import annotations

from collections.abc import Sequence


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
