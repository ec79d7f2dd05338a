"""`HFAgent`: batched generation with transformers, on CPU or GPU."""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from tooluse_agents.backends.base import AgentError, AgentRequest, Generation, SamplingConfig, chat_prompt
from tooluse_agents.backends.dtypes import autocast
from tooluse_agents.backends.load_progress import load_bars
from tooluse_gym.errors import DependencyNotInstalled


@dataclass(frozen=True, kw_only=True)
class HFAgentConfig:
    """Settings of the transformers backend.

    Attributes:
        model: A local folder, a hub id already in the local cache, or ``smollm2-135m``.
        dtype: ``float32`` (exact, reproducible), ``bfloat16`` (faster on GPUs and AMX CPUs), or
            ``auto`` (`tooluse_agents.backends.dtypes`: bfloat16 where the hardware has native bf16, else float32).
        device: ``cpu``, ``cuda`` or ``auto``.
        max_context: Prompt plus completion tokens allowed; longer prompts are refused
            (``context_length_exceeded``). Default: the model's ``max_position_embeddings``.
        threads: torch CPU threads (default: torch's choice).
        autocast: Compute dtype of generation under ``torch.autocast`` (``bfloat16``), the weights
            kept in `dtype`; None: compute in the weights' dtype. A trainer's HF engine generates
            with the dtype its update computes in (`tooluse_agents.train.grpo.weight_sync.rollout_engine`).
    """

    model: str = "smollm2-135m"
    dtype: str = "float32"
    device: str = "cpu"
    max_context: int | None = None
    threads: int | None = None
    autocast: str | None = None


class HFAgent:
    """Renders each observation with the model's chat template (or uses ``prompt``) and generates in one batch.

    Sampling is seeded per batch from the requests' seeds (transformers draws a batch from
    one generator), so a run is reproducible when its batches are, as they are in the
    rollout loop with a fixed seed.
    """

    name = "hf"

    def __init__(
        self, config: HFAgentConfig | None = None, *, model: Any = None, tokenizer: Any = None, progress: bool = True
    ):
        """Load the configured model, or use an already-loaded `model` and `tokenizer` (both or neither).

        A trainer passes its own model so that rollouts always use the current weights, with no copy.
        `progress` False hides transformers' "Loading weights" bar (``--no-progress``).
        """
        self.config = config or HFAgentConfig()
        if (model is None) != (tokenizer is None):
            raise ValueError("pass both model and tokenizer, or neither")
        try:
            import torch
            from transformers import AutoModelForCausalLM, AutoTokenizer
        except ImportError as e:
            raise DependencyNotInstalled('HFAgent needs torch and transformers: pip install "tooluse-gym[hf]"') from e
        from tooluse_agents.models.resolve import resolve_model

        if self.config.threads:
            torch.set_num_threads(self.config.threads)
        self._torch = torch
        if model is not None:
            self._adopt(model, tokenizer)
            return
        path = resolve_model(self.config.model)
        self.tokenizer = AutoTokenizer.from_pretrained(path)
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        device = (
            ("cuda" if torch.cuda.is_available() else "cpu") if self.config.device == "auto" else self.config.device
        )
        from tooluse_agents.backends.dtypes import resolve_dtype

        self.dtype = resolve_dtype(self.config.dtype, device)
        # transformers wraps `to` in functools.wraps(nn.Module.to), which mypy reads as an unbound function.
        with load_bars(progress):
            self.model = AutoModelForCausalLM.from_pretrained(path, dtype=getattr(torch, self.dtype)).to(device)  # type: ignore[arg-type]
        self.model.eval()
        self.device = device
        self.max_context = self.config.max_context or int(getattr(self.model.config, "max_position_embeddings", 4096))

    def _adopt(self, model: Any, tokenizer: Any) -> None:
        self.model, self.tokenizer = model, tokenizer
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.device = str(next(model.parameters()).device)
        self.dtype = str(next(model.parameters()).dtype).removeprefix("torch.")
        self.max_context = self.config.max_context or int(getattr(model.config, "max_position_embeddings", 4096))

    def describe(self) -> dict[str, Any]:
        """The agent's identity for result files (config, dtype, device; ``autocast`` only when set)."""
        config = {k: v for k, v in asdict(self.config).items() if k != "autocast" or v is not None}
        return {"name": self.name, **config, "dtype": self.dtype, "device": self.device}

    def generate(self, requests: Sequence[AgentRequest], sampling: SamplingConfig) -> list[Generation]:
        """One lockstep batch, seeded from its requests' seeds."""
        torch = self._torch
        prompts = [chat_prompt(self.tokenizer, r.observation) for r in requests]
        encoded = [self.tokenizer(p, add_special_tokens=False)["input_ids"] for p in prompts]
        out: list[Generation | None] = [None] * len(requests)
        todo = []
        for i, ids in enumerate(encoded):
            if len(ids) + sampling.max_tokens > self.max_context:
                out[i] = Generation(
                    prompt_tokens=len(ids),
                    error=AgentError(
                        "context_length_exceeded",
                        f"{len(ids)} prompt tokens + {sampling.max_tokens} > {self.max_context}",
                    ),
                )
            else:
                todo.append(i)
        if todo:
            start = time.perf_counter()
            batch = self.tokenizer.pad({"input_ids": [encoded[i] for i in todo]}, return_tensors="pt").to(self.device)
            kwargs: dict[str, Any] = {
                "max_new_tokens": sampling.max_tokens,
                "pad_token_id": self.tokenizer.pad_token_id,
                "return_dict_in_generate": True,
                "output_scores": True,
            }
            if sampling.temperature > 0:
                kwargs.update(do_sample=True, temperature=sampling.temperature, top_p=sampling.top_p, top_k=0)
            else:
                kwargs.update(do_sample=False, temperature=None, top_p=None, top_k=None)
            torch.manual_seed(_batch_seed(requests[i].seed for i in todo))
            with torch.no_grad(), autocast(self.device, self.config.autocast):
                result = self.model.generate(**batch, **kwargs)
            scores = self.model.compute_transition_scores(result.sequences, result.scores, normalize_logits=True)
            latency = (time.perf_counter() - start) / len(todo)
            width = batch["input_ids"].shape[1]
            for row, i in enumerate(todo):
                out[i] = self._generation(result.sequences[row, width:], scores[row], encoded[i], latency)
        return [g for g in out if g is not None]

    def _generation(self, tokens: Any, scores: Any, prompt_ids: Sequence[int], latency: float) -> Generation:
        ids = tokens.tolist()
        stops = {self.tokenizer.eos_token_id, self.tokenizer.pad_token_id}
        end = next((k for k, t in enumerate(ids) if t in stops), None)
        finish = "stop" if end is not None else "length"
        kept = ids[: end + 1] if end is not None else ids
        text = self.tokenizer.decode(kept, skip_special_tokens=True)
        assert isinstance(text, str)  # one sequence decodes to one string
        return Generation(
            text=text,
            prompt_tokens=len(prompt_ids),
            completion_tokens=len(kept),
            prompt_token_ids=tuple(prompt_ids),
            token_ids=tuple(kept),
            logprobs=tuple(float(x) for x in scores[: len(kept)].tolist()),
            finish_reason=finish,
            latency_s=latency,
        )

    def close(self) -> None:
        """Drop the model."""
        self.model = None


def _batch_seed(seeds: Any) -> int:
    value = 0
    for s in seeds:
        value = (value * 1_000_003 + int(s)) & 0x7FFFFFFF
    return value
