"""Token tensors: only generated tokens are in the loss mask; micro-batches respect the token budget."""

from __future__ import annotations

import torch

from tooluse_agents.train.batch import Sample, collate, micro_batches


def test_collate_masks_prompt_and_padding():
    a = Sample(prompt_ids=(5, 6, 7), completion_ids=(8, 9), advantage=1.5)
    b = Sample(prompt_ids=(1,), completion_ids=(2, 3, 4), advantage=-0.5)
    batch = collate([a, b], pad_id=0)
    assert batch.input_ids.tolist() == [[5, 6, 7, 8, 9], [1, 2, 3, 4, 0]]
    assert batch.attention_mask.tolist() == [[1, 1, 1, 1, 1], [1, 1, 1, 1, 0]]
    assert batch.loss_mask.tolist() == [[0, 0, 0, 1, 1], [0, 1, 1, 1, 0]]
    assert batch.num_tokens == 5
    # per-token advantages follow loss_mask[:, 1:] row by row
    assert batch.token_advantages().tolist() == [1.5, 1.5, -0.5, -0.5, -0.5]
    targets = batch.input_ids[:, 1:][batch.loss_mask[:, 1:].bool()]
    assert targets.tolist() == [8, 9, 2, 3, 4]


def test_micro_batches_budget():
    samples = [Sample((1,) * n, (2,), 0.0) for n in (9, 1, 4, 4, 2)]
    batches = micro_batches(samples, max_tokens=10)
    assert sorted(len(s.prompt_ids) for b in batches for s in b) == [1, 2, 4, 4, 9]
    for b in batches:
        assert len(b) == 1 or len(b) * max(s.length for s in b) <= 10
    assert all(isinstance(collate(b, 0).input_ids, torch.Tensor) for b in batches)
