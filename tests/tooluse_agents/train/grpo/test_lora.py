"""LoRA through peft: only adapters train, and the weights pushed to an engine are the merged ones."""

from __future__ import annotations

import torch

from tooluse_agents.train.batch import Sample
from tooluse_agents.train.grpo.update import PolicyUpdater, UpdateConfig
from tooluse_agents.train.policy import LoraSettings, Policy, PolicyConfig


def test_lora_update_moves_adapters_and_merged_weights(tiny_model):
    torch.manual_seed(0)
    policy = Policy.load(
        PolicyConfig(
            model=str(tiny_model), autocast=None, gradient_checkpointing=False, threads=1, lora=LoraSettings(r=4)
        )
    )
    base_before = {n: p.detach().clone() for n, p in policy.base.named_parameters() if "lora_" not in n}
    merged_before = dict(policy.weights_for_sync())
    names = {n for n, _ in policy.base.named_parameters()}
    assert set(merged_before) <= {n.replace(".base_layer", "") for n in names}
    assert len(merged_before) == 2 * 7  # two layers, seven adapted projections each
    updater = PolicyUpdater(policy, UpdateConfig(lr=1e-2))
    ids = tuple(policy.tokenizer("Add 2 and 3.", add_special_tokens=False)["input_ids"])
    updater.step([Sample(ids, (28, 29, 30), 1.0), Sample(ids, (31, 32), -1.0)])
    for n, p in policy.base.named_parameters():
        if "lora_" not in n:
            assert torch.equal(p, base_before[n]), n  # the base stays frozen
    merged_after = dict(policy.weights_for_sync())
    assert any(not torch.equal(merged_before[k], merged_after[k]) for k in merged_before)
