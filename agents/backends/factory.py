"""The one place that builds an agent backend: `make_agent(BackendSpec(...))`.

The evaluation harness (``tooluse eval --agent``), the trainer's rollout engine, ``tooluse train
prefilter`` and the benchmarks all name the backend they want with a `BackendSpec` and get the
agent from `make_agent`; each backend's heavy imports (torch, vLLM, openai) happen only here, and
only for the backend asked for.

    agent = make_agent(BackendSpec(backend="vllm", model="smollm2-135m", dtype="float32"))
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from tooluse_agents.backends.base import Agent

T = TypeVar("T")

BACKENDS = ("oracle", "hf", "vllm", "openai")
"""The backends `make_agent` builds."""

__all__ = ["BACKENDS", "BackendSpec", "make_agent"]


@dataclass(frozen=True, kw_only=True)
class BackendSpec:
    """Which backend, serving which model, with which settings.

    Attributes:
        backend: ``oracle`` (replays the ground truth) | ``hf`` (transformers, `tooluse_agents.backends.hf`) |
            ``vllm`` (`tooluse_agents.backends.vllm`) | ``openai`` (an OpenAI-compatible endpoint,
            `tooluse_agents.backends.openai_compat`).
        model: Model name for the backend (``smollm2-135m``, a folder, a hub id, a served model name);
            required by every backend but the oracle.
        dtype: Model dtype of a local backend (``auto``, ``float32``, ``bfloat16``, ``float16``;
            None: the backend's default).
        tensor_parallel_size: GPUs one vLLM engine spreads the model over.
        base_url: Endpoint of the ``openai`` backend.
        base_urls: Several endpoints of the ``openai`` backend, instead of `base_url` (each episode's
            requests go to one of them: `OpenAIAgentConfig.base_urls`).
        text_replies: ``openai`` backend: ``decode`` or ``fc`` (`OpenAIAgentConfig`).
        options: Further settings of the backend's own config class, by name (e.g. ``max_model_len``
            and ``in_process`` for vLLM, ``timeout_s`` for openai, ``threads`` for hf).
    """

    backend: str
    model: str | None = None
    dtype: str | None = None
    tensor_parallel_size: int = 1
    base_url: str | None = None
    base_urls: tuple[str, ...] = ()
    text_replies: str = "decode"
    options: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.backend not in BACKENDS:
            raise ValueError(f"agent must be one of {', '.join(BACKENDS)}, got {self.backend!r}")
        if self.backend != "oracle" and not self.model:
            raise ValueError(f"--model is required for the {self.backend} agent")
        if self.tensor_parallel_size < 1 or (self.tensor_parallel_size > 1 and self.backend != "vllm"):
            raise ValueError(f"tensor_parallel_size {self.tensor_parallel_size}: a vllm backend's GPU count, >= 1")
        if self.text_replies not in ("decode", "fc") or (self.text_replies != "decode" and self.backend != "openai"):
            raise ValueError(f"text_replies {self.text_replies!r}: decode, or fc with the openai backend")
        if self.base_urls and self.backend != "openai":
            raise ValueError(f"base_urls: endpoints of the openai backend, not of {self.backend}")


def make_agent(spec: BackendSpec, *, model: Any = None, tokenizer: Any = None, progress: bool = True) -> Agent:
    """Build the agent `spec` names.

    Args:
        spec: The backend and its settings.
        model: ``hf`` only: an already-loaded model to generate with (with `tokenizer`), e.g. the
            policy a trainer updates, so that rollouts use its current weights with no copy.
        tokenizer: ``hf`` only: the tokenizer of `model`.
        progress: False hides the model's loading bar (``--no-progress``; vLLM's agent never shows it).

    Returns:
        The agent; the caller closes it.
    """
    if (model is not None or tokenizer is not None) and spec.backend != "hf":
        raise ValueError(f"a loaded model is an hf backend's, not a {spec.backend} one's")
    if spec.backend == "oracle":
        from tooluse_agents.backends.oracle import OracleAgent

        return OracleAgent()
    assert spec.model is not None  # BackendSpec requires a model for every other backend
    if spec.backend in ("hf", "vllm") and model is None:
        from tooluse_agents.models.resolve import check_model

        check_model(spec.model)  # a mistyped name fails here, offline, before torch or vLLM is imported
    local = {"model": spec.model, **({"dtype": spec.dtype} if spec.dtype is not None else {})}
    if spec.backend == "hf":
        from tooluse_agents.backends.hf import HFAgent, HFAgentConfig

        return HFAgent(_config(HFAgentConfig, local, spec), model=model, tokenizer=tokenizer, progress=progress)
    if spec.backend == "vllm":
        from tooluse_agents.backends.vllm import VLLMAgent, VLLMAgentConfig

        tp = {"tensor_parallel_size": spec.tensor_parallel_size}
        return VLLMAgent(_config(VLLMAgentConfig, {**local, **tp}, spec))
    from tooluse_agents.backends.openai_compat import OpenAIAgent, OpenAIAgentConfig

    served: dict[str, Any] = {"model": spec.model, "base_url": spec.base_url, "text_replies": spec.text_replies}
    if spec.base_urls:
        served["base_urls"] = tuple(spec.base_urls)
    return OpenAIAgent(_config(OpenAIAgentConfig, served, spec))


def _config(cls: type[T], settings: Mapping[str, Any], spec: BackendSpec) -> T:
    """The backend's config: the spec's settings, then its `options` (a name the config lacks is a `ValueError`)."""
    unknown = sorted(set(spec.options) - {f.name for f in dataclasses.fields(cls)})  # type: ignore[arg-type]
    if unknown:
        raise ValueError(f"{spec.backend} backend: unknown options {unknown}")
    return cls(**{**settings, **spec.options})
