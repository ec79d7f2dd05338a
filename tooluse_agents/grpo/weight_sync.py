"""Pushing the trainer's weights into a live rollout engine.

The engine is an in-process vLLM engine (no restart), or a whole copy of the model that an HF engine
generates with (`ModuleWeightSync`, on several ranks).

The route (measured in the project's research notes): the worker's `reload_weights` takes
HF-named tensors, re-runs vLLM's weight loading (q/k/v and gate/up fusion included) and
re-packs every layer for the CPU kernels. Two more things are needed: on a CPU, a model with
tied embeddings keeps its own packed copy of the output projection, which must be re-packed
from the new embedding; and KV blocks computed with the old weights must leave the prefix
cache. About 0.4 s for SmolLM2-135M on two CPU cores.

The engine must run in this process (`VLLMAgentConfig(in_process=True)`).
"""

from __future__ import annotations

from collections.abc import Iterable

import torch


class VLLMWeightSync:
    """Pushes weights into `llm` (a `vllm.LLM` built in this process)."""

    def __init__(self, llm):
        self.llm = llm
        try:
            self.worker = llm.llm_engine.model_executor.driver_worker.worker
        except AttributeError as e:
            raise RuntimeError(
                "weight sync needs an in-process engine: VLLMAgentConfig(in_process=True), "
                "i.e. VLLM_ENABLE_V1_MULTIPROCESSING=0 before the engine is built"
            ) from e
        hf_config = llm.llm_engine.model_config.hf_config
        self.tied = bool(getattr(hf_config, "tie_word_embeddings", False))
        self.on_cpu = str(getattr(self.worker, "device", "cpu")).startswith("cpu") or not torch.cuda.is_available()

    def push(self, weights: Iterable[tuple[str, torch.Tensor]]) -> None:
        """Load HF-named tensors into the engine; afterwards generation uses them."""
        tensors = [(name, tensor.detach()) for name, tensor in weights]
        if not tensors:
            raise ValueError("no weights to push")
        try:
            self.worker.reload_weights(weights_iterator=tensors)
        except Exception as e:  # a failed reload leaves layers unusable: the engine must be rebuilt
            raise RuntimeError(f"weight push failed; rebuild the vLLM engine ({type(e).__name__}: {e})") from e
        if self.tied and self.on_cpu:
            head = self.worker.model_runner.model.lm_head
            head.quant_method.process_weights_after_loading(head)
        self.llm.reset_prefix_cache()


class ModuleWeightSync:
    """Copies weights into a torch module of the same architecture (the HF engine's own copy on a rank)."""

    def __init__(self, module: torch.nn.Module):
        self.module = module
        self.params = dict(module.named_parameters())

    def push(self, weights: Iterable[tuple[str, torch.Tensor]]) -> None:
        """Load HF-named tensors into the module's parameters; every parameter must be given."""
        seen = set()
        with torch.no_grad():
            for name, tensor in weights:
                if name not in self.params:
                    raise ValueError(f"the engine's model has no parameter {name!r}")
                self.params[name].copy_(tensor)
                seen.add(name)
        if missing := sorted(set(self.params) - seen)[:3]:
            raise ValueError(f"weight push left parameters unset: {missing}")
