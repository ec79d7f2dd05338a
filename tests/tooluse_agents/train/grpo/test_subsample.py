"""Max-variance sub-sampling: hand cases, and brute force over every subset for small n."""

from __future__ import annotations

import itertools
import statistics

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tooluse_agents.train.grpo.subsample import max_variance_subset


def _var(values):
    return statistics.pvariance(values)


def test_binary_keeps_half_successes_half_failures():
    rewards = [1, 1, 1, 1, 1, 1, 0, 0]
    kept = max_variance_subset(rewards, 4)
    assert kept == [4, 5, 6, 7]
    assert sorted(rewards[i] for i in kept) == [0, 0, 1, 1]


def test_binary_with_one_failure_keeps_it():
    rewards = [1, 1, 0, 1, 1, 1, 1, 1]
    kept = max_variance_subset(rewards, 4)
    assert 2 in kept and sum(rewards[i] for i in kept) == 3


def test_extremes_of_a_graded_group():
    # lowest and highest pair up: {0.0, 0.1} with {0.9, 1.0} beats any mix with the middle
    assert max_variance_subset([0.5, 0.0, 1.0, 0.4, 0.9, 0.1], 4) == [1, 2, 4, 5]


def test_m_equal_n_and_bad_m():
    assert max_variance_subset([0, 1, 0], 3) == [0, 1, 2]
    for m in (0, 4):
        with pytest.raises(ValueError):
            max_variance_subset([0, 1, 0], m)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.sampled_from([0.0, 0.25, 0.5, 0.75, 1.0]) | st.floats(0, 1), min_size=1, max_size=9),
    st.data(),
)
def test_brute_force_agrees(rewards, data):
    m = data.draw(st.integers(1, len(rewards)))
    kept = max_variance_subset(rewards, m)
    assert len(kept) == m == len(set(kept)) and kept == sorted(kept)
    best = max(_var([rewards[i] for i in subset]) for subset in itertools.combinations(range(len(rewards)), m))
    assert _var([rewards[i] for i in kept]) == pytest.approx(best, abs=1e-9)


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 8), st.integers(0, 8), st.data())
def test_binary_balance(ones, zeros, data):
    rewards = [1.0] * ones + [0.0] * zeros
    m = data.draw(st.integers(1, len(rewards)))
    kept = [rewards[i] for i in max_variance_subset(rewards, m)]
    successes = sum(kept)
    # as close to m/2 successes as the group allows
    want = min(max(m // 2, m - zeros), ones)
    assert successes in {want, min(max((m + 1) // 2, m - zeros), ones)}
