"""The clipped policy-gradient objective, per token, with token-level aggregation.

All functions take flat per-token tensors: one entry per model-generated token of the
update batch (prompt, tool-result, user and template tokens never appear here; `batch`
masks them out before the loss sees anything).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch


@dataclass(frozen=True)
class LossTerms:
    """Sums over the tokens of one micro-batch (divide by the mini-batch's token count to average).

    Attributes:
        loss: What to back-propagate: policy loss + kl_coef * kl - entropy_coef * entropy, summed over tokens
            and divided by the normalizer.
        policy_sum: Sum of the per-token clipped policy losses (detached).
        clipped: Tokens where the clipped term was the active one.
        kl_sum: Sum of the per-token KL estimates (0 without a reference).
        entropy_sum: Sum of the per-token entropies (0 when not computed).
        tokens: Tokens in the micro-batch.
    """

    loss: torch.Tensor
    policy_sum: float
    clipped: int
    kl_sum: float
    entropy_sum: float
    tokens: int


def clipped_token_losses(
    logprobs: torch.Tensor,
    old_logprobs: torch.Tensor,
    advantages: torch.Tensor,
    clip_low: float = 0.2,
    clip_high: float = 0.28,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-token ``-min(ratio * A, clip(ratio, 1 - clip_low, 1 + clip_high) * A)`` and where clipping binds.

    Returns the per-token losses and a boolean tensor that is True where the clipped term is
    strictly smaller than the unclipped one (the token gets no gradient).
    """
    ratio = torch.exp(logprobs - old_logprobs)
    unclipped = ratio * advantages
    clipped = torch.clamp(ratio, 1.0 - clip_low, 1.0 + clip_high) * advantages
    return -torch.minimum(unclipped, clipped), clipped < unclipped


def kl_k3(logprobs: torch.Tensor, ref_logprobs: torch.Tensor) -> torch.Tensor:
    """Per-token KL(pi || ref) estimate ``exp(d) - d - 1`` with ``d = ref - logp`` (non-negative, unbiased)."""
    d = ref_logprobs - logprobs
    return torch.exp(d) - d - 1.0


def loss_terms(
    logprobs: torch.Tensor,
    old_logprobs: torch.Tensor,
    advantages: torch.Tensor,
    *,
    normalizer: int,
    clip_low: float = 0.2,
    clip_high: float = 0.28,
    ref_logprobs: torch.Tensor | None = None,
    kl_coef: float = 0.0,
    entropy: torch.Tensor | None = None,
    entropy_coef: float = 0.0,
) -> LossTerms:
    """The micro-batch's share of the token-mean loss of a mini-batch with `normalizer` tokens.

    Token-level aggregation: every generated token of the mini-batch weighs the same,
    however long its sequence is (summing each micro-batch's loss divided by the
    mini-batch's token count gives the token mean, so gradient accumulation is exact).
    """
    if normalizer < 1:
        raise ValueError(f"normalizer must be >= 1, got {normalizer}")
    per_token, clipped = clipped_token_losses(logprobs, old_logprobs, advantages, clip_low, clip_high)
    total = per_token.sum()
    kl_sum = entropy_sum = 0.0
    if ref_logprobs is not None and kl_coef:
        kl = kl_k3(logprobs, ref_logprobs)
        total = total + kl_coef * kl.sum()
        kl_sum = float(kl.detach().sum())
    if entropy is not None:
        entropy_sum = float(entropy.detach().sum())
        if entropy_coef:
            total = total - entropy_coef * entropy.sum()
    return LossTerms(
        loss=total / normalizer,
        policy_sum=float(per_token.detach().sum()),
        clipped=int(clipped.sum()),
        kl_sum=kl_sum,
        entropy_sum=entropy_sum,
        tokens=int(logprobs.numel()),
    )


def describe(terms: list[LossTerms]) -> dict[str, Any]:
    """Token means over micro-batches: policy loss, clip fraction, KL, entropy."""
    tokens = sum(t.tokens for t in terms)
    if not tokens:
        return {"loss/policy": 0.0, "loss/clip_frac": 0.0, "loss/kl": 0.0, "loss/entropy": 0.0}
    return {
        "loss/policy": sum(t.policy_sum for t in terms) / tokens,
        "loss/clip_frac": sum(t.clipped for t in terms) / tokens,
        "loss/kl": sum(t.kl_sum for t in terms) / tokens,
        "loss/entropy": sum(t.entropy_sum for t in terms) / tokens,
    }
