"""The policy: an HF causal LM (full fine-tuning, or LoRA through peft) and its per-token log-probs.

Log-probs are computed only at generated positions: the decoder runs over the whole
sequence, but the vocabulary projection runs only on the hidden states that predict a
completion token, in chunks under activation checkpointing, so the (tokens x vocab) logits
are never all kept for the backward pass.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch.utils.checkpoint import checkpoint

from tooluse_agents.train.batch import TokenBatch
from tooluse_agents.train.settings import LoraSettings, PolicyConfig

__all__ = ["LoraSettings", "Policy", "PolicyConfig", "head_logprobs"]

LOGIT_CHUNK = 1024
"""Completion positions per vocabulary-projection chunk."""


@dataclass
class Policy:
    """A loaded model and tokenizer; `base` is the HF model (inside the peft wrapper when LoRA is on)."""

    config: PolicyConfig
    model: Any
    tokenizer: Any
    device: str
    path: str
    base: Any = field(init=False)
    sharded: Any = field(default=None, init=False)
    """The FSDP2 root (`tooluse_agents.train.grpo.distributed.ShardedForward`) once `shard` ran, else None."""

    def __post_init__(self) -> None:
        self.base = self.model.get_base_model() if self.config.lora is not None else self.model

    def shard(self, dist: Any) -> None:
        """Shard the model over `dist`'s ranks with FSDP2 (full fine-tuning only)."""
        from tooluse_agents.train.grpo.distributed import shard_policy

        if self.config.lora is not None:
            raise ValueError("training on several ranks shards the whole model: LoRA is single-process for now")
        self.sharded = shard_policy(self.model, dist)

    def run(self, fn: Any, *args: Any) -> Any:
        """``fn(*args)``, through the FSDP2 root when the model is sharded (see `ShardedForward`)."""
        return self.sharded(fn, *args) if self.sharded is not None else fn(*args)

    @classmethod
    def load(cls, config: PolicyConfig, *, progress: bool = True) -> Policy:
        """Load the model and tokenizer `config` names (LoRA adapters added when configured).

        `progress` False hides transformers' "Loading weights" bar (``--no-progress``).
        """
        from transformers import AutoModelForCausalLM, AutoTokenizer

        from tooluse_agents.backends.load_progress import load_bars
        from tooluse_agents.models.resolve import resolve_model

        if config.threads:
            torch.set_num_threads(config.threads)
        device = config.device
        if device == "auto":
            device = "cuda" if torch.cuda.is_available() else "cpu"
        path = resolve_model(config.model)
        if not Path(path).exists() and Path(path.split("/")[0]).is_dir():
            raise FileNotFoundError(
                f"model folder {path} does not exist (runs/warmstart/model is made by `make warmstart`, "
                "runs/check-model by `python -m experiments.tools.check_model`)"
            )
        tokenizer = AutoTokenizer.from_pretrained(path)
        if tokenizer.pad_token is None:
            tokenizer.pad_token = tokenizer.eos_token
        # transformers wraps `to` in functools.wraps(nn.Module.to), which mypy reads as an unbound function.
        with load_bars(progress):
            model = AutoModelForCausalLM.from_pretrained(path, dtype=getattr(torch, config.dtype)).to(device)  # type: ignore[arg-type]
        if config.gradient_checkpointing:
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        if config.lora is not None:
            from peft import LoraConfig, get_peft_model

            lora = config.lora
            model = get_peft_model(
                model,
                LoraConfig(
                    r=lora.r,
                    lora_alpha=lora.alpha,
                    lora_dropout=lora.dropout,
                    target_modules=list(lora.target_modules),
                    task_type="CAUSAL_LM",
                ),
            )
        model.eval()
        return cls(config, model, tokenizer, device, path)

    def trainable(self) -> list[torch.nn.Parameter]:
        """The parameters the optimizer updates."""
        return [p for p in self.model.parameters() if p.requires_grad]

    def trainable_state(self) -> dict[str, torch.Tensor]:
        """The trainable tensors by name, whole (what a checkpoint must hold to restore the policy).

        On a sharded model this gathers every parameter: all ranks must call it.
        """
        from tooluse_agents.train.grpo.distributed import full_tensor

        return {n: full_tensor(p.detach()).clone() for n, p in self.model.named_parameters() if p.requires_grad}

    def load_trainable_state(self, state: dict[str, torch.Tensor]) -> None:
        """Restore the tensors `trainable_state` returned; a different set of names is an error."""
        params = dict(self.model.named_parameters())
        expected = {n for n, p in params.items() if p.requires_grad}
        if set(state) != expected:
            missing, extra = sorted(expected - set(state))[:3], sorted(set(state) - expected)[:3]
            raise ValueError(f"checkpoint does not match the model (missing {missing}, unexpected {extra})")
        with torch.no_grad():
            for name, tensor in state.items():
                params[name].copy_(tensor)

    @property
    def autocast_dtype(self) -> str | None:
        """The compute dtype of forward/backward (`PolicyConfig.autocast` with ``auto`` resolved; None: off)."""
        if self.config.autocast is None:
            return None
        from tooluse_agents.backends.dtypes import resolve_dtype

        dtype = resolve_dtype(self.config.autocast, self.device)
        return None if dtype == "float32" else dtype

    def autocast(self) -> contextlib.AbstractContextManager:
        """The autocast context of the configured dtype (a no-op without one)."""
        from tooluse_agents.backends.dtypes import autocast

        return autocast(self.device, self.autocast_dtype)

    def token_logprobs(
        self, batch: TokenBatch, temperature: float = 1.0, with_entropy: bool = False
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Log-probs (and entropies) of the generated tokens, flat in ``loss_mask[:, 1:]`` order.

        Logits are divided by the sampling temperature, so the ratio compares the same
        distributions the rollouts were drawn from.
        """
        ids = batch.input_ids.to(self.device)
        attention = batch.attention_mask.to(self.device)
        where = batch.loss_mask[:, 1:].bool().to(self.device)
        return self.run(self._token_logprobs, ids, attention, where, temperature, with_entropy)

    def _token_logprobs(
        self, ids: torch.Tensor, attention: torch.Tensor, where: torch.Tensor, temperature: float, with_entropy: bool
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        with self.autocast():
            decoder = getattr(self.base, self.base.base_model_prefix)
            hidden = decoder(input_ids=ids, attention_mask=attention).last_hidden_state
            states = hidden[:, :-1][where]
            targets = ids[:, 1:][where]
            head = self.base.get_output_embeddings()
            scale = 1.0 / temperature if temperature > 0 else 1.0
            logps, entropies = [], []
            for start in range(0, states.shape[0], LOGIT_CHUNK):
                h, t = states[start : start + LOGIT_CHUNK], targets[start : start + LOGIT_CHUNK]
                if torch.is_grad_enabled():
                    lp, ent = checkpoint(head_logprobs, head, h, t, scale, with_entropy, use_reentrant=False)
                else:
                    lp, ent = head_logprobs(head, h, t, scale, with_entropy)
                logps.append(lp)
                entropies.append(ent)
        logprobs = torch.cat(logps) if logps else states.new_zeros(0, dtype=torch.float32)
        entropy = torch.cat(entropies) if with_entropy and entropies else None
        return logprobs, entropy

    def weights_for_sync(self) -> Iterator[tuple[str, torch.Tensor]]:
        """HF-named full weights for an inference engine (LoRA deltas merged out of place)."""
        if self.config.lora is None:
            from tooluse_agents.train.grpo.distributed import full_tensor

            for name, p in self.model.named_parameters():
                yield name, full_tensor(p.detach())
            return
        from peft.tuners.lora import LoraLayer

        with torch.no_grad():
            for name, module in self.base.named_modules():
                if isinstance(module, LoraLayer):
                    # Every concrete LoraLayer (Linear, Embedding, Conv*) defines get_delta_weight; the mixin does not.
                    delta = module.get_delta_weight("default")  # type: ignore[attr-defined]
                    yield name + ".weight", module.base_layer.weight + delta


def head_logprobs(
    head: torch.nn.Module, states: torch.Tensor, targets: torch.Tensor, scale: float, with_entropy: bool
) -> tuple[torch.Tensor, torch.Tensor]:
    """Log-probs of `targets` (and entropies, or an empty tensor) from hidden `states` through the output head."""
    logits = head(states).float() * scale
    norm = torch.logsumexp(logits, dim=-1)
    logprobs = logits.gather(-1, targets[:, None])[:, 0] - norm
    if not with_entropy:
        return logprobs, logprobs.new_zeros(0)
    entropy = norm - (torch.softmax(logits, dim=-1) * logits).sum(-1)
    return logprobs, entropy
