"""Log-probs of completions that share a prompt, with the prompt run once and without gradient.

The n rollouts of a GRPO group start from the same prompt, which on the curriculum is ~900
tokens against ~30 generated ones. The exact update runs every (prompt + completion)
sequence forward and backward; this one runs the group's common prompt prefix once under
``no_grad`` (a later step's prompt, which holds the rollout's own earlier messages, extends a
copy of it), repeats the keys and values across the rollouts that share a prompt, and runs
only the completions with gradient.

The log-probs are the same numbers (up to float rounding). The gradient is not: what
would flow back through the prompt positions' keys and values is dropped, so the update
moves the weights only through the computation at generated positions. It is an
approximation, off by default (``update.detach_prompt``), for CPUs where the exact update
costs far more than the rollouts.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import torch

from tooluse_agents.train.batch import Sample
from tooluse_agents.train.policy import LOGIT_CHUNK, Policy, head_logprobs

if TYPE_CHECKING:
    from transformers import PreTrainedModel


def prompt_groups(samples: Sequence[Sample]) -> list[list[Sample]]:
    """Samples grouped by their GRPO group (``Sample.group``), groups in order of first appearance."""
    groups: dict[str, list[Sample]] = {}
    for s in samples:
        groups.setdefault(s.group, []).append(s)
    return list(groups.values())


def common_prefix_len(prompts: Sequence[Sequence[int]]) -> int:
    """How many leading tokens all `prompts` share."""
    first = prompts[0]
    n = min(len(p) for p in prompts)
    for i in range(n):
        if any(p[i] != first[i] for p in prompts):
            return i
    return n


@contextlib.contextmanager
def _no_checkpointing(model: PreTrainedModel) -> Iterator[None]:
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
            # The group's common prefix runs once; each distinct prompt extends a copy of it (a later
            # step's prompt holds the rollout's own earlier messages and tool results).
            root_len = min(common_prefix_len([s.prompt_ids for s in group]), min(len(s.prompt_ids) for s in group) - 1)
            root = _forward_no_grad(decoder, group[0].prompt_ids[:root_len], None, device)
            distinct: dict[tuple[int, ...], list[Sample]] = {}
            for s in group:
                distinct.setdefault(s.prompt_ids, []).append(s)
            for prompt, members in distinct.items():
                cache = copy.deepcopy(root) if root is not None and len(distinct) > 1 else root
                cache = _forward_no_grad(decoder, prompt[root_len:-1], cache, device)
                if cache is not None:
                    cache.batch_repeat_interleave(len(members))
                found.update(_completion_logprobs(decoder, head, prompt[-1], members, cache, scale, with_entropy, pad))
    logprobs = torch.cat([found[id(s)][0] for s in samples])
    entropy = torch.cat([found[id(s)][1] for s in samples]) if with_entropy else None
    return logprobs, entropy


def _forward_no_grad(decoder: torch.nn.Module, ids: Sequence[int], cache: Any, device: str) -> Any:
    """`cache` extended by `ids`, computed without gradient (None stays None when `ids` is empty)."""
    if not ids:
        return cache
    with torch.no_grad():
        tokens = torch.tensor([list(ids)], device=device)
        return decoder(input_ids=tokens, past_key_values=cache, use_cache=True).past_key_values


def _completion_logprobs(
    decoder: torch.nn.Module,
    head: torch.nn.Module,
    last_prompt_token: int,
    members: Sequence[Sample],
    cache: Any,
    scale: float,
    with_entropy: bool,
    pad: int,
) -> dict[int, tuple[torch.Tensor, torch.Tensor]]:
    """Log-probs of the members' completions after a shared prompt whose last token is not in `cache`."""
    device = next(decoder.parameters()).device
    # Each row: the prompt's last token, then the completion but its last token (right-padded:
    # a real token never attends to a pad, so no mask is needed).
    width = max(1, max(len(s.completion_ids) for s in members))
    rows = torch.full((len(members), width), pad, dtype=torch.long)
    for r, s in enumerate(members):
        seq = (last_prompt_token, *s.completion_ids[:-1])
        rows[r, : len(seq)] = torch.tensor(seq, dtype=torch.long)
    hidden = decoder(input_ids=rows.to(device), past_key_values=cache, use_cache=cache is not None).last_hidden_state
    out = {}
    for r, s in enumerate(members):
        if not s.completion_ids:
            out[id(s)] = (hidden.new_zeros(0), hidden.new_zeros(0))
            continue
        targets = torch.tensor(s.completion_ids, device=device)
        lps, ents = [], []
        for start in range(0, len(targets), LOGIT_CHUNK):
            chunk = targets[start : start + LOGIT_CHUNK]
            lp, ent = head_logprobs(head, hidden[r, start : start + len(chunk)], chunk, scale, with_entropy)
            lps.append(lp)
            ents.append(ent)
        out[id(s)] = (torch.cat(lps), torch.cat(ents))
    return out
