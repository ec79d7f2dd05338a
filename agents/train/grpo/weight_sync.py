"""The trainer's rollout engine, and pushing the trainer's weights into it while it runs.

`rollout_engine` builds the engine (through `tooluse_agents.backends.factory.make_agent`): an in-process
vLLM engine (no restart; `VLLMWeightSync`), or an HF engine that generates with the policy itself
(one process: nothing to push) or with a whole copy of it (several ranks: `ModuleWeightSync`).

The route (measured in the project's research notes): the worker's `reload_weights` takes
HF-named tensors, re-runs vLLM's weight loading (q/k/v and gate/up fusion included) and
re-packs every layer for the CPU kernels. Two more things are needed: on a CPU, a model with
tied embeddings keeps its own packed copy of the output projection, which must be re-packed
from the new embedding; and KV blocks computed with the old weights must leave the prefix
cache. About 0.4 s for SmolLM2-135M on two CPU cores.

The engine must run in this process (`VLLMAgentConfig(in_process=True)`).
"""

from __future__ import annotations

import copy
import os
from collections.abc import Iterable
from typing import TYPE_CHECKING, Protocol

import torch

from tooluse_agents.backends.factory import BackendSpec, make_agent

if TYPE_CHECKING:
    from tooluse_agents.backends.base import Agent
    from tooluse_agents.train.grpo.config import RolloutConfig
    from tooluse_agents.train.grpo.distributed import Dist
    from tooluse_agents.train.policy import Policy


class WeightSync(Protocol):
    """Something that loads HF-named tensors into a rollout engine."""

    def push(self, weights: Iterable[tuple[str, torch.Tensor]]) -> None:
        """Load the tensors; afterwards the engine generates with them."""
        ...


def rollout_engine(rollout: RolloutConfig, policy: Policy, dist: Dist) -> tuple[Agent, WeightSync | None]:
    """The agent that plays the training rollouts, and how the policy's weights reach it (None: nothing to push).

    Call it before the policy is sharded: an HF engine on several ranks copies the whole model,
    because a rank generating alone cannot run sharded layers.
    """
    if rollout.engine == "hf":
        # generation computes in the update's dtype (bf16 autocast on a GPU), as TRL's accelerate-wrapped model does
        autocast = {"autocast": policy.autocast_dtype} if policy.autocast_dtype else {}
        spec = BackendSpec(backend="hf", model=policy.path, options=autocast)
        if not dist.enabled:  # the engine generates with the policy itself
            return make_agent(spec, model=policy.model, tokenizer=policy.tokenizer), None
        engine = copy.deepcopy(policy.model)
        return make_agent(spec, model=engine, tokenizer=policy.tokenizer), ModuleWeightSync(engine)
    if dist.enabled and not torch.cuda.is_available():  # each rank's engine on its own cores
        os.environ.setdefault("VLLM_CPU_OMP_THREADS_BIND", dist.cpu_cores())
    tp = rollout.tensor_parallel_size
    if tp > 1 and (dist.world_size % tp or not torch.cuda.is_available()):
        raise ValueError(
            f"rollout.tensor_parallel_size {tp} needs GPUs and a world size that it divides "
            f"(this run: {dist.world_size} rank(s)); launch with torchrun --nproc-per-node {tp} or more"
        )
    options = {
        "max_model_len": rollout.max_model_len,
        "cpu_kv_cache_gib": rollout.cpu_kv_cache_gib,
        "gpu_memory_utilization": rollout.gpu_memory_utilization,
        "external_launcher": tp > 1,
        "in_process": True,
    }
    spec = BackendSpec(
        backend="vllm", model=policy.path, dtype=rollout.vllm_dtype, tensor_parallel_size=tp, options=options
    )
    agent = make_agent(spec)
    return agent, VLLMWeightSync(agent.llm)  # type: ignore[attr-defined]


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
