"""Training samples and their token tensors: only model-generated tokens carry loss.

A `Sample` is one assistant message the policy generated: the prompt is the observation
rendered at that step (system prompt, user turns, earlier assistant messages, tool results
and chat-template tokens, all as the model saw them) and the completion is exactly the
tokens it sampled. An episode with several assistant steps gives several samples that
share the episode's advantage. The loss mask is 1 on completion positions only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class Sample:
    """One generated assistant message and its advantage.

    Attributes:
        prompt_ids: Token ids of the rendered observation (masked out of the loss).
        completion_ids: Token ids the policy generated (these carry the loss).
        advantage: The rollout's group-relative advantage.
        group: The prompt id (for metrics).
        rollout: Index of the rollout in its group.
    """

    prompt_ids: tuple[int, ...]
    completion_ids: tuple[int, ...]
    advantage: float
    group: str = ""
    rollout: int = 0

    @property
    def length(self) -> int:
        """Prompt plus completion tokens."""
        return len(self.prompt_ids) + len(self.completion_ids)


@dataclass(frozen=True)
class TokenBatch:
    """Right-padded tensors of a micro-batch.

    Attributes:
        input_ids: ``[B, T]`` prompt + completion ids, padded with `pad_id`.
        attention_mask: ``[B, T]`` 1 on real tokens.
        loss_mask: ``[B, T]`` 1 where the token at that position is a generated one; its
            log-probability comes from the logits at the position before.
        advantages: ``[B]`` one advantage per sample.
    """

    input_ids: torch.Tensor
    attention_mask: torch.Tensor
    loss_mask: torch.Tensor
    advantages: torch.Tensor

    @property
    def num_tokens(self) -> int:
        """Generated tokens in the batch (the token-level loss normalizer's share)."""
        return int(self.loss_mask.sum())

    def token_advantages(self) -> torch.Tensor:
        """One advantage per generated token, flat, in the order of ``loss_mask[:, 1:]``."""
        counts = self.loss_mask[:, 1:].sum(dim=1)
        return torch.repeat_interleave(self.advantages, counts)


def collate(samples: Sequence[Sample], pad_id: int) -> TokenBatch:
    """Pad samples into one batch (right padding; the first token of a sequence is never a target)."""
    if not samples:
        raise ValueError("cannot collate an empty micro-batch")
    width = max(s.length for s in samples)
    ids = torch.full((len(samples), width), pad_id, dtype=torch.long)
    attention = torch.zeros((len(samples), width), dtype=torch.long)
    loss = torch.zeros((len(samples), width), dtype=torch.long)
    for row, s in enumerate(samples):
        if not s.prompt_ids:
            raise ValueError("a sample needs at least one prompt token")
        p, c = len(s.prompt_ids), len(s.completion_ids)
        ids[row, : p + c] = torch.tensor(s.prompt_ids + s.completion_ids, dtype=torch.long)
        attention[row, : p + c] = 1
        loss[row, p : p + c] = 1
    advantages = torch.tensor([s.advantage for s in samples], dtype=torch.float32)
    return TokenBatch(ids, attention, loss, advantages)


def micro_batches(samples: Sequence[Sample], max_tokens: int) -> list[list[Sample]]:
    """Consecutive groups whose padded size (rows x longest sequence) stays within `max_tokens`.

    Samples are sorted by length first (stable), so similar lengths share a batch and little
    is padded; a sample longer than `max_tokens` gets a batch of its own.
    """
    out: list[list[Sample]] = []
    current: list[Sample] = []
    width = 0
    for s in sorted(samples, key=lambda x: x.length):
        new_width = max(width, s.length)
        if current and new_width * (len(current) + 1) > max_tokens:
            out.append(current)
            current, new_width = [], s.length
        current.append(s)
        width = new_width
    if current:
        out.append(current)
    return out
