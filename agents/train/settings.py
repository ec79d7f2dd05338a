"""The trained model's settings and the training protocol, shared by SFT and GRPO (no torch here)."""

from __future__ import annotations

from dataclasses import dataclass

from tooluse_agents.train.checks import require
from tooluse_gym.envs.knobs import Knobs

__all__ = ["TRAIN_PROTOCOL", "LoraSettings", "PolicyConfig"]

TRAIN_PROTOCOL = Knobs(system_prompt="strong", tool_format="json", decoder="lenient")
"""The training protocol's knobs (`TrainConfig.protocol`'s and SFT's defaults): the paper's.

The stronger system prompt with JSON calls in ``<tool_call>`` tags, the native template,
reasoning history kept, and the ``lenient`` decoder (each malformed call answered with its own
error: a denser signal for a small model). A config's ``protocol:`` block changes these.
"""


@dataclass(frozen=True, kw_only=True)
class LoraSettings:
    """LoRA adapters (peft) instead of full fine-tuning.

    Attributes:
        r: Rank.
        alpha: Scale numerator (the update is scaled by alpha / r).
        dropout: Adapter dropout.
        target_modules: Linear layers that get adapters.
    """

    r: int = 16
    alpha: int = 32
    dropout: float = 0.0
    target_modules: tuple[str, ...] = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")

    def __post_init__(self) -> None:
        require(self, r=">= 1", alpha="> 0", dropout="in [0, 1)")


@dataclass(frozen=True, kw_only=True)
class PolicyConfig:
    """The trained model.

    Attributes:
        model: A local folder, a cached hub id, or ``smollm2-135m``.
        dtype: Dtype of the trained (master) weights. ``float32`` is exact and reproducible;
            with lr ~1e-6 bf16 weights would round most updates away.
        autocast: Compute dtype for forward/backward (``bfloat16``: ~1.7x faster on AMX CPUs and on GPUs),
            ``auto`` (bfloat16 on a GPU or a CPU with native bf16 matmuls, else none; `tooluse_agents.backends.dtypes`),
            or None (fp32 compute).
        device: ``cpu``, ``cuda`` or ``auto``.
        gradient_checkpointing: Recompute activations in the backward pass (much less memory, on this
            CPU no slower).
        lora: LoRA settings, or None for full fine-tuning.
        threads: torch CPU threads (None: torch's choice).
    """

    model: str = "smollm2-135m"
    dtype: str = "float32"
    autocast: str | None = "auto"
    device: str = "cpu"
    gradient_checkpointing: bool = True
    lora: LoraSettings | None = None
    threads: int | None = None

    def __post_init__(self) -> None:
        require(self, threads=">= 1")
