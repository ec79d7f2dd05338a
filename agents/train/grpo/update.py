"""One GRPO policy update: mini-batches of samples, token-mean clipped loss, AdamW steps.

With one mini-batch and one epoch per rollout batch (the default), the old policy is the
current one, so its log-probs are the detached current ones and no extra forward pass is
needed; the ratio is then 1 and the loss is the plain policy gradient. With more mini-batches
or epochs the old log-probs are computed once, without gradients, before the first step.

On several ranks (`tooluse_agents.train.grpo.distributed`) each rank updates on its own groups' samples:
a mini-batch's token count is summed over the ranks, the loss is scaled by the world size
(FSDP averages gradients), and every rank runs as many micro-batches as the busiest one
(zero-weight padding), so the gradient is the one-process gradient. Mini-batches are split
per rank, so with ``mini_batches`` > 1 the grouping differs from one process's.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from typing import Any

import torch

from tooluse_agents.train.batch import Sample, TokenBatch, collate, micro_batches
from tooluse_agents.train.grpo.config import UpdateConfig
from tooluse_agents.train.grpo.distributed import Dist, full_tensor
from tooluse_agents.train.grpo.loss import LossTerms, describe, loss_terms
from tooluse_agents.train.policy import Policy
from tooluse_agents.train.shared_prompt import prompt_groups, shared_prompt_logprobs


class PolicyUpdater:
    """Owns the optimizer (and the frozen reference when a KL term is on)."""

    def __init__(self, policy: Policy, config: UpdateConfig, temperature: float = 1.0, dist: Dist | None = None):
        self.policy = policy
        self.config = config
        self.temperature = temperature
        self.dist = dist or Dist()
        if self.dist.enabled:
            _refuse_unsharded(config)
        self.optimizer = torch.optim.AdamW(
            policy.trainable(), lr=config.lr, betas=config.betas, weight_decay=config.weight_decay
        )
        self._reference = None
        if config.kl_coef and policy.config.lora is None:
            self._reference = copy.deepcopy(policy.model).eval().requires_grad_(False)

    def step(self, samples: Sequence[Sample]) -> dict[str, Any]:
        """Update on the samples; returns loss statistics (zeros when there is nothing to learn from)."""
        cfg = self.config
        dist = self.dist
        if not dist.max(len(samples)):
            return {**describe([]), "update/grad_norm": 0.0, "update/optimizer_steps": 0, "update/computed_tokens": 0}
        chunks = _split(samples, cfg.mini_batches) if samples else []
        if dist.enabled:  # the same optimizer steps on every rank
            chunks += [[] for _ in range(cfg.mini_batches - len(chunks))]
        # token-mean over every sample of a mini-batch (of every rank), computed or not (skipping is then exact)
        normalizers = [max(1, int(n)) for n in dist.sum([sum(len(s.completion_ids) for s in c) for c in chunks])]
        if cfg.skip_zero_advantage:
            chunks = [[s for s in chunk if s.advantage != 0.0] for chunk in chunks]
        plans = self._plan(chunks)
        self.policy.model.train()
        try:
            multi = cfg.mini_batches > 1 or cfg.ppo_epochs > 1
            old = self._old_logprobs(plans) if multi else None
            terms: list[LossTerms] = []
            norms = []
            for _ in range(cfg.ppo_epochs):
                for plan, normalizer in zip(plans, normalizers, strict=True):
                    terms.extend(self._accumulate(plan, old, normalizer))
                    if not plan:  # all skipped: a zero gradient, so AdamW's momentum step still happens
                        for p in self.policy.trainable():
                            p.grad = torch.zeros_like(p)
                    norms.append(self._optimizer_step())
        finally:
            self.policy.model.eval()
        computed = sum(len(s.completion_ids) for chunk in chunks for s in chunk)
        return {
            **self._describe(terms),
            "update/grad_norm": max(norms),
            "update/optimizer_steps": len(norms),
            "update/computed_tokens": int(dist.sum([computed])[0]),
        }

    def _plan(self, chunks: Sequence[Sequence[Sample]]) -> list[list[list[Sample] | None]]:
        """Each mini-batch's micro-batches, padded with None (a zero-weight micro-batch) to the busiest rank's count."""
        plans: list[list[list[Sample] | None]] = [list(self._micro_batches(chunk)) for chunk in chunks]
        for plan, count in zip(plans, self.dist.max_each([len(p) for p in plans]), strict=True):
            plan.extend([None] * (int(count) - len(plan)))  # in one process: none
        return plans

    def _padding(self) -> list[Sample]:
        pad = self.policy.tokenizer.pad_token_id
        return [Sample((pad,), (pad,), 0.0, group="")]

    def _describe(self, terms: Sequence[LossTerms]) -> dict[str, Any]:
        """`describe` over every rank's micro-batches (in one process the sums are this process's own)."""
        sums = self.dist.sum(
            [sum(getattr(t, k) for t in terms) for k in ("policy_sum", "clipped", "kl_sum", "entropy_sum", "tokens")]
        )
        whole = LossTerms(torch.zeros(()), sums[0], int(sums[1]), sums[2], sums[3], int(sums[4]))
        return describe([whole])

    def _accumulate(
        self, plan: Sequence[list[Sample] | None], old: dict[Sample, torch.Tensor] | None, normalizer: int
    ) -> list[LossTerms]:
        cfg, pad = self.config, self.policy.tokenizer.pad_token_id
        out = []
        for micro in plan:
            if micro is None:  # padding: the same collectives as a real micro-batch, no gradient of its own
                logprobs, _ = self._logprobs(self._padding(), collate(self._padding(), pad))
                (logprobs.sum() * 0.0).backward()
                continue
            batch = collate(micro, pad)
            logprobs, entropy = self._logprobs(micro, batch, with_entropy=bool(cfg.entropy_coef))
            old_lp = torch.cat([old[s] for s in micro]) if old is not None else logprobs.detach()
            terms = loss_terms(
                logprobs,
                old_lp.to(logprobs.device),
                batch.token_advantages().to(logprobs.device),
                normalizer=normalizer,
                clip_low=cfg.clip_low,
                clip_high=cfg.clip_high,
                ref_logprobs=self._reference_logprobs(batch),
                kl_coef=cfg.kl_coef,
                entropy=entropy,
                entropy_coef=cfg.entropy_coef,
            )
            (terms.loss * self.dist.world_size).backward()  # FSDP averages over ranks; the normalizer is global
            out.append(terms)
        return out

    def _micro_batches(self, samples: Sequence[Sample]) -> list[list[Sample]]:
        if self.config.detach_prompt:
            return prompt_groups(samples)
        return micro_batches(samples, self.config.micro_batch_tokens)

    def _logprobs(
        self, micro: Sequence[Sample], batch: TokenBatch, with_entropy: bool = False
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        if self.config.detach_prompt:
            return shared_prompt_logprobs(self.policy, micro, self.temperature, with_entropy)
        return self.policy.token_logprobs(batch, self.temperature, with_entropy=with_entropy)

    def _optimizer_step(self) -> float:
        params = self.policy.trainable()
        max_norm = self.config.max_grad_norm if self.config.max_grad_norm is not None else math.inf
        norm = float(full_tensor(torch.nn.utils.clip_grad_norm_(params, max_norm)))
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        return norm

    @torch.no_grad()
    def _old_logprobs(self, plans: Sequence[Sequence[list[Sample] | None]]) -> dict[Sample, torch.Tensor]:
        out: dict[Sample, torch.Tensor] = {}
        pad = self.policy.tokenizer.pad_token_id
        for micro in (m for plan in plans for m in plan):
            if micro is None:
                self._logprobs(self._padding(), collate(self._padding(), pad))
                continue
            logprobs, _ = self._logprobs(micro, collate(micro, pad))
            counts = [len(s.completion_ids) for s in micro]
            out.update(zip(micro, torch.split(logprobs.detach(), counts), strict=True))
        return out

    @torch.no_grad()
    def _reference_logprobs(self, batch) -> torch.Tensor | None:
        if not self.config.kl_coef:
            return None
        if self._reference is not None:
            reference = Policy(self.policy.config, self._reference, self.policy.tokenizer, self.policy.device, "")
            return reference.token_logprobs(batch, self.temperature)[0]
        with self.policy.model.disable_adapter():  # LoRA: the base model is the reference
            return self.policy.token_logprobs(batch, self.temperature)[0]


def _split(samples: Sequence[Sample], parts: int) -> list[list[Sample]]:
    size = math.ceil(len(samples) / parts)
    return [list(samples[i : i + size]) for i in range(0, len(samples), size)]


def _refuse_unsharded(config: UpdateConfig) -> None:
    """Refuse the update settings that sharded training (several ranks) does not support yet."""
    if config.detach_prompt:
        raise ValueError(
            "update.detach_prompt runs a data-dependent number of forward passes, which sharded "
            "training cannot match across ranks: set update.detach_prompt=false to train on several ranks"
        )
    if config.kl_coef:
        raise ValueError("update.kl_coef needs a reference model, which is not sharded yet: train on one rank")
