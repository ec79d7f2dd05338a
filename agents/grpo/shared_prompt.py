"""Log-probs of completions that share a prompt, with the prompt run once and without gradient.

The n rollouts of a GRPO group start from the same prompt, which on the curriculum is ~900
tokens against ~30 generated ones. The exact update runs every (prompt + completion)
sequence forward and backward; this one runs each distinct prompt once under ``no_grad``,
repeats its keys and values across the group, and runs only the completions with gradient.

The log-probs are the same numbers (up to float rounding). The gradient is not: what
would flow back through the prompt positions' keys and values is dropped, so the update
moves the weights only through the computation at generated positions. It is an
approximation, off by default (``update.detach_prompt``), for CPUs where the exact update
costs far more than the rollouts.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence

import torch

from agents.grpo.batch import Sample
from agents.grpo.policy import LOGIT_CHUNK, Policy, _head_logprobs


def prompt_groups(samples: Sequence[Sample]) -> list[list[Sample]]:
    """Samples grouped by identical prompt, groups in order of first appearance."""
    groups: dict[tuple[int, ...], list[Sample]] = {}
    for s in samples:
        groups.setdefault(s.prompt_ids, []).append(s)
    return list(groups.values())


@contextlib.contextmanager
def _no_checkpointing(model: torch.nn.Module) -> Iterator[None]:
    """Gradient checkpointing re-runs layers in backward, which would append to the cache twice."""
    was_on = bool(getattr(model, "is_gradient_checkpointing", False))
    if was_on:
        model.gradient_checkpointing_disable()
    try:
        yield
    finally:
        if was_on:
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})


def shared_prompt_logprobs(
    policy: Policy, samples: Sequence[Sample], temperature: float = 1.0, with_entropy: bool = False
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Flat log-probs (and entropies) of the samples' completion tokens, in sample order.

    The order is the one `collate(samples)` gives (``loss_mask[:, 1:]``), so the result drops
    into the same loss as `Policy.token_logprobs`.
    """
    base, device = policy.base, policy.device
    decoder = getattr(base, base.base_model_prefix)
    head = base.get_output_embeddings()
    scale = 1.0 / temperature if temperature > 0 else 1.0
    pad = policy.tokenizer.pad_token_id
    found: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}
    with _no_checkpointing(base), policy.autocast():
        for group in prompt_groups(samples):
            prompt = group[0].prompt_ids
            cache = None
            if len(prompt) > 1:
                with torch.no_grad():
                    ids = torch.tensor([prompt[:-1]], device=device)
                    cache = decoder(input_ids=ids, use_cache=True).past_key_values
                cache.batch_repeat_interleave(len(group))
            # Each row: the prompt's last token, then the completion but its last token (right-padded:
            # a real token never attends to a pad, so no mask is needed).
            width = max(len(s.completion_ids) for s in group)
            rows = torch.full((len(group), width), pad, dtype=torch.long)
            for r, s in enumerate(group):
                seq = (prompt[-1], *s.completion_ids[:-1])
                rows[r, : len(seq)] = torch.tensor(seq, dtype=torch.long)
            hidden = decoder(input_ids=rows.to(device), past_key_values=cache, use_cache=cache is not None)
            hidden = hidden.last_hidden_state
            for r, s in enumerate(group):
                if not s.completion_ids:
                    found[id(s)] = (hidden.new_zeros(0), hidden.new_zeros(0))
                    continue
                targets = torch.tensor(s.completion_ids, device=device)
                lps, ents = [], []
                for start in range(0, len(targets), LOGIT_CHUNK):
                    lp, ent = _head_logprobs(
                        head,
                        hidden[r, start : start + LOGIT_CHUNK][: len(targets) - start],
                        targets[start : start + LOGIT_CHUNK],
                        scale,
                        with_entropy,
                    )
                    lps.append(lp)
                    ents.append(ent)
                found[id(s)] = (torch.cat(lps), torch.cat(ents))
    logprobs = torch.cat([found[id(s)][0] for s in samples])
    entropy = torch.cat([found[id(s)][1] for s in samples]) if with_entropy else None
    return logprobs, entropy
