"""Skipping zero-advantage samples in the update is exact: the same parameters after the same steps."""

from __future__ import annotations

import pytest
import torch

from tooluse_agents.train.batch import Sample
from tooluse_agents.train.grpo.update import PolicyUpdater, UpdateConfig
from tooluse_agents.train.policy import Policy, PolicyConfig


def _samples() -> list[Sample]:
    g = torch.Generator().manual_seed(1)

    def ids(n: int) -> tuple[int, ...]:
        return tuple(torch.randint(10, 5000, (n,), generator=g).tolist())

    a, b = ids(30), ids(20)
    # mini-batch 1 mixes zero and non-zero advantages; mini-batch 2 is all zero (an all-wrong group)
    first = [
        Sample(a, ids(6), 1.0, "a", 0),
        Sample(a, ids(9), 0.0, "z", 0),
        Sample(a, ids(4), -1.0, "a", 1),
        Sample(b, ids(7), 0.0, "z", 1),
    ]
    second = [Sample(b, ids(5), 0.0, "y", 0), Sample(b, ids(3), 0.0, "y", 1), Sample(a, ids(8), 0.0, "y", 2)]
    return first + second


def _train(skip: bool, detach_prompt: bool) -> tuple[dict[str, torch.Tensor], dict]:
    torch.manual_seed(0)
    policy = Policy.load(
        PolicyConfig(model="tiny-random", dtype="float32", autocast=None, gradient_checkpointing=False, threads=1)
    )
    config = UpdateConfig(lr=1e-3, mini_batches=2, ppo_epochs=2, skip_zero_advantage=skip, detach_prompt=detach_prompt)
    updater = PolicyUpdater(policy, config)
    stats = updater.step(_samples())
    return policy.trainable_state(), stats


@pytest.mark.parametrize("detach_prompt", [False, True])
def test_skipping_zero_advantage_samples_gives_the_same_parameters(detach_prompt):
    before = Policy.load(PolicyConfig(model="tiny-random", dtype="float32", autocast=None, threads=1)).trainable_state()
    full, full_stats = _train(False, detach_prompt)
    skipped, skip_stats = _train(True, detach_prompt)
    moved = max(float((full[k] - before[k]).abs().max()) for k in full)
    assert moved > 1e-4  # the update did something, so equality below is not vacuous
    for name in full:
        torch.testing.assert_close(skipped[name], full[name], atol=2e-6, rtol=1e-5, msg=name)
    assert full_stats["update/optimizer_steps"] == skip_stats["update/optimizer_steps"] == 4
    # only the two non-zero samples (6 + 4 completion tokens) ran forward and backward
    assert skip_stats["update/computed_tokens"] == 10
    assert full_stats["update/computed_tokens"] == sum(len(s.completion_ids) for s in _samples())


def test_skipping_is_refused_with_a_kl_or_entropy_term():
    with pytest.raises(ValueError, match="exact only without KL and entropy"):
        UpdateConfig(skip_zero_advantage=True, kl_coef=0.01)
    with pytest.raises(ValueError, match="exact only without KL and entropy"):
        UpdateConfig(skip_zero_advantage=True, entropy_coef=0.01)
