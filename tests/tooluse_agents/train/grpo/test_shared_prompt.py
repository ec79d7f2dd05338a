"""Shared-prompt log-probs: the same numbers as the full forward, in the same order; the update still learns."""

from __future__ import annotations

import pytest
import torch

from tooluse_agents.train.batch import Sample, collate
from tooluse_agents.train.grpo.update import PolicyUpdater, UpdateConfig
from tooluse_agents.train.policy import Policy, PolicyConfig
from tooluse_agents.train.shared_prompt import prompt_groups, shared_prompt_logprobs


@pytest.fixture(scope="module")
def policy():
    return Policy.load(
        PolicyConfig(model="tiny-random", dtype="float32", autocast=None, gradient_checkpointing=True, threads=1)
    )


def _samples() -> list[Sample]:
    g = torch.Generator().manual_seed(0)

    def ids(n: int) -> tuple[int, ...]:
        return tuple(torch.randint(10, 5000, (n,), generator=g).tolist())

    a, b = ids(40), ids(25)
    # Interleaved groups and completions of different lengths: a later step of group a whose prompt
    # extends a's, a one-token prompt, and a group whose two prompts share nothing.
    return [
        Sample(a, ids(7), 1.0, "a", 0),
        Sample(b, ids(3), -1.0, "b", 0),
        Sample(a, ids(12), -0.5, "a", 1),
        Sample((42,), ids(5), 0.5, "c", 0),
        Sample(a, ids(1), 0.25, "a", 2),
        Sample(b, ids(9), 1.0, "b", 1),
        Sample(a + ids(6), ids(4), 1.0, "a", 0),
        Sample(ids(8), ids(2), -1.0, "d", 0),
        Sample(ids(5), ids(3), 1.0, "d", 1),
    ]


def test_groups_follow_first_appearance():
    samples = _samples()
    groups = prompt_groups(samples)
    assert [[s.group for s in g] for g in groups] == [["a"] * 4, ["b", "b"], ["c"], ["d", "d"]]


def test_same_logprobs_and_entropies_as_the_full_forward(policy):
    samples = _samples()
    with torch.no_grad():
        full, full_ent = policy.token_logprobs(collate(samples, policy.tokenizer.pad_token_id), with_entropy=True)
        shared, shared_ent = shared_prompt_logprobs(policy, samples, with_entropy=True)
    assert shared.shape == full.shape == (sum(len(s.completion_ids) for s in samples),)
    torch.testing.assert_close(shared, full, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(shared_ent, full_ent, atol=1e-5, rtol=1e-5)
    # at temperature 0.5 too (logits scaled the same way)
    with torch.no_grad():
        hot = policy.token_logprobs(collate(samples, policy.tokenizer.pad_token_id), temperature=0.5)[0]
        torch.testing.assert_close(shared_prompt_logprobs(policy, samples, 0.5)[0], hot, atol=1e-5, rtol=1e-5)


def test_gradient_reaches_the_weights_and_checkpointing_is_restored(policy):
    samples = _samples()
    assert policy.base.is_gradient_checkpointing
    logprobs, _ = shared_prompt_logprobs(policy, samples)
    logprobs.sum().backward()
    grads = [p.grad for p in policy.trainable() if p.grad is not None]
    assert grads and any(float(g.abs().sum()) > 0 for g in grads)
    policy.model.zero_grad(set_to_none=True)
    assert policy.base.is_gradient_checkpointing


def test_update_with_a_detached_prompt_moves_the_policy_toward_good_samples(policy):
    samples = _samples()
    before = {n: p.detach().clone() for n, p in policy.model.named_parameters()}
    with torch.no_grad():
        start = shared_prompt_logprobs(policy, samples)[0]
    stats = PolicyUpdater(policy, UpdateConfig(lr=1e-3, detach_prompt=True)).step(samples)
    assert stats["update/optimizer_steps"] == 1
    assert any(not torch.equal(p, before[n]) for n, p in policy.model.named_parameters())
    with torch.no_grad():
        after = shared_prompt_logprobs(policy, samples)[0]
    # The positive-advantage sample's tokens became likelier on average, the negative ones' less likely.
    counts = [len(s.completion_ids) for s in samples]
    moved = [float(d.mean()) for d in torch.split(after - start, counts)]
    assert moved[0] > 0 and moved[5] > 0 and moved[1] < 0 and moved[2] < 0
    with torch.no_grad():
        for n, p in policy.model.named_parameters():
            p.copy_(before[n])
