"""The training run's configuration: one dataclass per component, loaded from YAML with overrides.

    seed: 0
    run_dir: runs/grpo-smoke
    tasks: {source: bfcl, category: base, limit: 4}
    grpo: {mode: next_turn, group_size: 8, update_size: 4}
    update: {lr: 1.0e-5}

Overrides are ``dotted.key=value`` strings whose value is read as YAML
(``grpo.group_size=4``, ``filter.enabled=false``, ``heldout=null``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tooluse_agents.cli.config_loader import dump, from_dict, load, plain
from tooluse_agents.train.checks import require
from tooluse_agents.train.grpo.filtering import FilterConfig
from tooluse_agents.train.grpo.screen import ScreenConfig
from tooluse_agents.train.grpo.tasks import MODES, TaskSource
from tooluse_agents.train.settings import TRAIN_PROTOCOL, PolicyConfig
from tooluse_gym.envs.knobs import Knobs


@dataclass(frozen=True, kw_only=True)
class UpdateConfig:
    """The optimizer and the objective.

    Attributes:
        lr: AdamW learning rate. The paper uses 1e-6 for 3-4B models; small models take larger ones
            (the CPU configs use 1e-5 for SmolLM2-135M, see their comments).
        betas: AdamW betas.
        weight_decay: AdamW weight decay (0: parameters move only with the gradient).
        max_grad_norm: Gradient clipping by global norm (None: off).
        clip_low: Lower clip range: the ratio is kept above 1 - clip_low (paper: 0.2).
        clip_high: Upper clip range: the ratio is kept below 1 + clip_high (paper: 0.28, "clip-higher").
        kl_coef: Weight of a k3 KL penalty to the initial policy (paper: 0, off).
        entropy_coef: Weight of an entropy bonus (paper: 0, off).
        mini_batches: Optimizer steps per rollout batch (each on a slice of the samples).
        ppo_epochs: Passes over the rollout batch.
        micro_batch_tokens: Padded tokens per forward/backward (gradient accumulation beyond that).
        detach_prompt: Run each distinct prompt once without gradient and back-propagate only the
            completions (`tooluse_agents.train.shared_prompt`): same log-probs, but the gradient through the
            prompt positions is dropped. Off by default (exact); several times cheaper on a CPU.
        skip_zero_advantage: Run no forward/backward pass for samples whose advantage is 0 (zero-variance
            groups). Exact: with no KL and no entropy term such a sample's gradient is 0, and its tokens
            still count in the token-mean normalizer, so the update is the same as without skipping.
            Refused together with a KL or entropy term (there the sample's gradient is not 0).
    """

    lr: float = 1e-6
    betas: tuple[float, float] = (0.9, 0.999)
    weight_decay: float = 0.0
    max_grad_norm: float | None = 1.0
    clip_low: float = 0.2
    clip_high: float = 0.28
    kl_coef: float = 0.0
    entropy_coef: float = 0.0
    mini_batches: int = 1
    ppo_epochs: int = 1
    micro_batch_tokens: int = 8192
    detach_prompt: bool = False
    skip_zero_advantage: bool = False

    def __post_init__(self) -> None:
        require(
            self,
            lr="> 0",
            betas="in [0, 1)",
            weight_decay=">= 0",
            max_grad_norm="> 0",
            clip_low="in [0, 1)",
            clip_high=">= 0",
            kl_coef=">= 0",
            entropy_coef=">= 0",
            mini_batches=">= 1",
            ppo_epochs=">= 1",
            micro_batch_tokens=">= 1",
        )
        if self.skip_zero_advantage and (self.kl_coef or self.entropy_coef):
            raise ValueError(
                "skip_zero_advantage is exact only without KL and entropy terms "
                f"(kl_coef={self.kl_coef}, entropy_coef={self.entropy_coef})"
            )


@dataclass(frozen=True, kw_only=True)
class GRPOConfig:
    """Groups, advantages and sub-sampling.

    Attributes:
        mode: ``next_turn`` (the paper's: a ground-truth prefix, the model plays the next turn,
            reward = that turn passes) or ``episode`` (the model plays every turn; terminal reward).
        group_size: Rollouts generated per prompt (n; paper: 8, 16 in its efficient multi-turn run).
        update_size: Rollouts per group used in the update (m <= n), chosen by maximum reward
            variance; None means all n (vanilla GRPO).
        normalize_over: ``group`` (advantages from all n rewards) or ``kept`` (from the m kept).
        prompts_per_step: Prompts (groups) per training step.
    """

    mode: str = "next_turn"
    group_size: int = 8
    update_size: int | None = None
    normalize_over: str = "group"
    prompts_per_step: int = 8

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, got {self.mode!r}")
        why = {"group_size": "a group's advantages compare its rollouts' rewards: it needs at least two"}
        require(self, why, group_size=">= 2", prompts_per_step=">= 1")
        if self.update_size is not None and not 1 <= self.update_size <= self.group_size:
            raise ValueError(f"update_size must be in [1, group_size={self.group_size}], got {self.update_size}")
        if self.normalize_over not in ("group", "kept"):
            raise ValueError(f"normalize_over must be 'group' or 'kept', got {self.normalize_over!r}")


@dataclass(frozen=True, kw_only=True)
class RolloutConfig:
    """How rollouts are generated.

    Attributes:
        engine: ``hf`` (generate with the trained model itself, in-process: no weight sync) or
            ``vllm`` (a vLLM engine in this process; weights pushed after every update).
        num_envs: Episodes played at once (the most requests in flight).
        schedule: ``auto`` | ``async`` | ``lockstep`` (`tooluse_agents.rollout.loop`): with ``async`` each episode's
            next request is queued the moment its previous one finishes (vllm engine); the hf
            engine runs lockstep. Recorded in the run's metadata; never changes what is sampled
            (per-request seeds; exactly so with a float32 engine).
        temperature, top_p, max_tokens: Sampling (the loss uses the same temperature).
        vllm_dtype: Engine dtype (``float32`` matches the trainer's log-probs to ~3e-5 and is
            seed-reproducible on a CPU; ``bfloat16`` is faster on GPUs and AMX CPUs, emulated and
            slower elsewhere; ``auto`` picks by machine, `tooluse_agents.backends.dtypes`).
        max_model_len: Engine context length.
        cpu_kv_cache_gib: Engine KV cache on a CPU.
        gpu_memory_utilization: Fraction of GPU memory the engine may take (the trainer shares the GPU).
        tensor_parallel_size: GPUs one vLLM engine spreads the model over, on several ranks: each
            K consecutive ranks host one engine (vLLM's ``external_launcher``) and play the same
            prompts. GPUs only; untested here (no GPU was lent).
        screen: SPEED-style screening (`tooluse_agents.train.grpo.screen`): roll out ``screen.members`` of each
            group first and the rest only when those rewards are mixed (None: off, whole groups).
    """

    engine: str = "hf"
    num_envs: int = 16
    schedule: str = "auto"
    temperature: float = 1.0
    top_p: float = 1.0
    max_tokens: int = 256
    vllm_dtype: str = "auto"
    max_model_len: int = 4096
    cpu_kv_cache_gib: int = 2
    gpu_memory_utilization: float = 0.4
    tensor_parallel_size: int = 1
    screen: ScreenConfig | None = None

    def __post_init__(self) -> None:
        why = {"temperature": "the loss divides the logits by it; 0 (greedy) is for evaluation"}
        require(
            self,
            why,
            temperature="> 0",
            top_p="in (0, 1]",
            max_tokens=">= 1",
            num_envs=">= 1",
            max_model_len=">= 1",
            cpu_kv_cache_gib=">= 1",
            gpu_memory_utilization="in (0, 1]",
        )
        if self.engine not in ("hf", "vllm"):
            raise ValueError(f"engine must be 'hf' or 'vllm', got {self.engine!r}")
        if self.schedule not in ("auto", "async", "lockstep"):
            raise ValueError(f"schedule must be auto, async or lockstep, got {self.schedule!r}")
        if self.tensor_parallel_size < 1 or (self.tensor_parallel_size > 1 and self.engine != "vllm"):
            raise ValueError(f"rollout.tensor_parallel_size {self.tensor_parallel_size}: a vllm engine's GPUs, >= 1")


@dataclass(frozen=True, kw_only=True)
class HeldoutConfig:
    """Held-out evaluation during training: the ``eval:`` section of a training config.

    The run is always evaluated at its end too; evaluation time is not training time.

    Attributes:
        every_steps: Evaluate after every this many steps (None: only at the end).
        every_train_s: Evaluate at the first step boundary at or after each multiple of this many
            seconds of training time (rollout + update + sync; see `tooluse_agents.train.grpo.schedule`), so
            that runs with steps of different cost are compared at the same training times.
            None: off. Both triggers may be set; a step evaluates once when either fires.
        at_start: Also evaluate before the first step (written to eval.jsonl as step 0).
        temperature: Sampling temperature (0: greedy, one deterministic rollout per prompt).
        samples: Rollouts per held-out prompt.
    """

    every_steps: int | None = None
    every_train_s: float | None = None
    at_start: bool = True
    temperature: float = 0.0
    samples: int = 1

    def __post_init__(self) -> None:
        require(self, every_steps=">= 1", every_train_s="> 0", temperature=">= 0", samples=">= 1")


@dataclass(frozen=True, kw_only=True)
class TrainConfig:
    """A whole training run.

    Attributes:
        seed: Fixes the epoch order, every rollout's sampling and the torch RNG.
        run_dir: Output folder (config.yaml, metrics.jsonl, episodes.jsonl, eval.jsonl, checkpoints/).
        epochs: Passes over the prompts (each epoch rolls out the prompts the filter keeps).
        max_steps: Stop after this many steps (None: after `epochs`).
        budget_s: Stop once the training time (rollout + update + weight sync, summed over steps;
            evaluations, checkpoints and logging excluded) reaches this many seconds, checked
            between steps: the step that reaches it is the last. Counted across resumes. None:
            no time budget. Whichever of `epochs`, `max_steps` and `budget_s` comes first ends the run.
        save_every: Checkpoint every this many steps (and always at the end).
        keep_checkpoints: Checkpoints kept on disk (older ones are deleted); 0 writes none (a run
            that cannot be resumed, e.g. a timing run whose fp32 weights and AdamW state would not fit on disk).
        export_final: Save the final model with `save_pretrained` under run_dir/final_model.
        protocol: The env's knobs: `TRAIN_PROTOCOL`, with the ones a config's ``protocol:`` block sets.
    """

    seed: int = 0
    run_dir: str = "runs/grpo"
    epochs: int = 1
    max_steps: int | None = None
    budget_s: float | None = None
    save_every: int = 10
    keep_checkpoints: int = 2
    export_final: bool = True
    tasks: TaskSource = field(default_factory=TaskSource)
    heldout: TaskSource | None = None
    protocol: Knobs = TRAIN_PROTOCOL
    policy: PolicyConfig = field(default_factory=PolicyConfig)
    rollout: RolloutConfig = field(default_factory=RolloutConfig)
    grpo: GRPOConfig = field(default_factory=GRPOConfig)
    update: UpdateConfig = field(default_factory=UpdateConfig)
    filter: FilterConfig = field(default_factory=FilterConfig)
    eval: HeldoutConfig = field(default_factory=HeldoutConfig)

    def __post_init__(self) -> None:
        require(
            self,
            seed=">= 0",
            epochs=">= 1",
            max_steps=">= 0",
            budget_s="> 0",
            save_every=">= 1",
            keep_checkpoints=">= 0",
        )
        screen = self.rollout.screen
        if screen is not None and screen.members >= self.grpo.group_size:
            raise ValueError(
                f"rollout.screen.members ({screen.members}) must be below grpo.group_size ({self.grpo.group_size})"
            )

    def to_dict(self) -> dict[str, Any]:
        """The config as plain YAML-able values (what `config.yaml` holds)."""
        return plain(dataclasses.asdict(self))


def load_config(path: str | Path | None, overrides: Sequence[str] = ()) -> TrainConfig:
    """Read a YAML config and apply overrides (`tooluse_agents.cli.config_loader.load`)."""
    return load(TrainConfig, path, overrides)


def stored_config(data: Any) -> dict[str, Any]:
    """A stored config.yaml, through the dataclasses: a key added since that run reads as its default."""
    return from_dict(TrainConfig, data or {}).to_dict()


def dump_config(config: TrainConfig) -> str:
    """The config as YAML, in field order."""
    return dump(config)
