"""Group advantages against hand-computed numbers."""

from __future__ import annotations

import math

import pytest

from tooluse_agents.train.grpo.advantages import group_advantages, group_stats, is_zero_variance


def test_one_success_in_four():
    # mean 0.25, population std sqrt(0.25 * 0.75) = 0.4330: +sqrt(3) and -1/sqrt(3)
    adv = group_advantages([1.0, 0.0, 0.0, 0.0])
    assert adv == pytest.approx([math.sqrt(3), -1 / math.sqrt(3), -1 / math.sqrt(3), -1 / math.sqrt(3)])
    assert sum(adv) == pytest.approx(0.0, abs=1e-12)


def test_non_binary_rewards():
    # mean 0.5, std sqrt(1/6) = 0.40825
    assert group_advantages([0.0, 0.5, 1.0]) == pytest.approx([-1.2247449, 0.0, 1.2247449])


@pytest.mark.parametrize("rewards", [[1.0] * 4, [0.0] * 8, [0.3]])
def test_zero_variance_groups_get_zero(rewards):
    assert group_advantages(rewards) == [0.0] * len(rewards)
    assert is_zero_variance(rewards)


def test_normalized_over_the_kept_subset():
    rewards = [1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    # over all 8: mean 3/8, std sqrt(15)/8 = 0.4841
    assert group_advantages(rewards)[0] == pytest.approx((1 - 3 / 8) / (math.sqrt(15) / 8))
    # over the kept [0, 1, 3, 4]: mean 0.5, std 0.5 -> exactly +-1 for every rollout
    assert group_advantages(rewards, over=[0, 1, 3, 4]) == pytest.approx([1, 1, 1, -1, -1, -1, -1, -1])


def test_group_stats_and_empty_group():
    assert group_stats([2.0, 4.0]) == (3.0, 1.0)
    with pytest.raises(ValueError):
        group_stats([])
