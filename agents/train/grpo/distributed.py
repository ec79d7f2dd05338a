"""The trainer on N ranks with torch.distributed: who this process is, the few collectives it needs, FSDP2.

Launch with ``torchrun --nproc-per-node N -m tooluse_agents.cli.train CONFIG`` (or ``tooluse train --nproc N``).
`Dist.from_env` reads torchrun's ``RANK`` and ``WORLD_SIZE``; at world size 1 (a plain
``tooluse train``) nothing is initialised and every collective here returns its input, so one
code path serves both. `Dist` also owns what differs between one process and several for the
policy itself: sharding it (`Dist.shard`, nothing in one process), checkpointing and resuming it
(`Dist.save`, `Dist.load`: whole tensors in one process, shards on several ranks) and exporting
the final model (`Dist.export`); the trainer calls them unconditionally. The backend is NCCL
when CUDA is there, gloo otherwise.

How the work is split, and why N ranks compute what one process computes:

- Each prompt's whole group of rollouts is played on one rank (the step's prompts dealt
  round-robin, `Dist.deal`), so the max-variance subset of a group is chosen where the group
  is. Rollout seeds depend on (seed, step, prompt, member) only, never on the rank.
- After the rollouts every rank gathers every group (`Dist.gather`), so the pre-rollout
  filter, the epoch plan and the metrics are computed from the same data, in the same
  order, on every rank: the skip decisions are identical everywhere.
- The policy is sharded with FSDP2 (`shard_policy`: each decoder layer, then the rest). The
  token-mean loss of a mini-batch is divided by its token count summed over the ranks and
  multiplied by the world size (FSDP averages gradients over ranks), so the gradient is the
  one-process gradient. Every rank runs the same number of micro-batches (`Dist.max`; padded
  with zero-weight ones), because filtering and sub-sampling leave ranks with unequal work
  and a rank that stops early would leave the others waiting in a collective.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict, TypeVar

import torch

from tooluse_agents.runs.rundir import RunConflict
from tooluse_agents.train.grpo.checkpoint import (
    PREFIX,
    load_checkpoint,
    publish,
    rng_state,
    save_checkpoint,
    scratch_folder,
    set_rng_state,
)

if TYPE_CHECKING:
    from torch.distributed.checkpoint.state_dict import OptimizerStateType, ValueType

    from tooluse_agents.train.policy import Policy

T = TypeVar("T")

__all__ = ["Dist", "ShardedForward", "full_tensor", "load_sharded", "save_sharded", "shard_policy"]


@dataclass(frozen=True)
class Dist:
    """This process's place among the ranks (rank 0 of 1 when not launched by torchrun)."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0
    local_world_size: int = 1
    backend: str | None = None

    @classmethod
    def from_env(cls) -> Dist:
        """Join the process group torchrun set up (``WORLD_SIZE`` > 1), or stay alone."""
        world = int(os.environ.get("WORLD_SIZE", "1"))
        if world <= 1:
            return cls()
        import torch.distributed as dist

        rank, local = int(os.environ["RANK"]), int(os.environ.get("LOCAL_RANK", "0"))
        local_world = int(os.environ.get("LOCAL_WORLD_SIZE", str(world)))
        backend = "nccl" if torch.cuda.is_available() else "gloo"
        if backend == "nccl":
            torch.cuda.set_device(local)
        if not dist.is_initialized():
            dist.init_process_group(backend)
        return cls(rank, world, local, local_world, backend)

    @property
    def enabled(self) -> bool:
        """True on more than one rank."""
        return self.world_size > 1

    @property
    def is_main(self) -> bool:
        """Rank 0: the one that writes the run files."""
        return self.rank == 0

    @property
    def device(self) -> str:
        """Where collectives' tensors live: this rank's GPU under NCCL, the CPU under gloo."""
        return f"cuda:{self.local_rank}" if self.backend == "nccl" else "cpu"

    def cpu_cores(self) -> str:
        """This rank's share of the machine's cores, as a ``first-last`` range (for a CPU vLLM engine's threads)."""
        per = max(1, (os.cpu_count() or 1) // self.local_world_size)
        first = (self.local_rank * per) % max(1, os.cpu_count() or 1)
        return f"{first}-{first + per - 1}"

    def deal(self, items: Sequence[T], ranks_per_share: int = 1) -> list[T]:
        """This rank's share of `items`, dealt round-robin.

        With `ranks_per_share` K (default 1) there are ``world_size // K`` shares, and each K
        consecutive ranks get the same one (they host one tensor-parallel engine, which all of
        them must drive with the same prompts): share ``rank // K`` is every
        ``world_size // K``-th item from that position.
        """
        shares = max(1, self.world_size // ranks_per_share)
        return list(items[self.rank // ranks_per_share :: shares])

    def gather(self, obj: T) -> list[T]:
        """`obj` of every rank, in rank order."""
        if not self.enabled:
            return [obj]
        import torch.distributed as dist

        out: list[Any] = [None] * self.world_size
        dist.all_gather_object(out, obj)
        return out

    def sum(self, values: Sequence[float]) -> list[float]:
        """Element-wise sums over the ranks (float64)."""
        return self._reduce(values, "SUM")

    def max(self, value: int) -> int:
        """The largest `value` of any rank."""
        return self.max_each([value])[0]

    def max_each(self, values: Sequence[int]) -> list[int]:
        """Element-wise maxima over the ranks."""
        return [int(v) for v in self._reduce(values, "MAX")]

    def _reduce(self, values: Sequence[float], op: str) -> list[float]:
        if not self.enabled:
            return [float(v) for v in values]
        import torch.distributed as dist

        tensor = torch.tensor(list(values), dtype=torch.float64, device=self.device)
        dist.all_reduce(tensor, op=getattr(dist.ReduceOp, op))
        return tensor.cpu().tolist()

    def barrier(self) -> None:
        """Wait for every rank (nothing to do in one process)."""
        if self.enabled:
            import torch.distributed as dist

            dist.barrier()

    def close(self) -> None:
        """Leave the process group (what `from_env` joined)."""
        if self.enabled:
            import torch.distributed as dist

            if dist.is_initialized():
                dist.destroy_process_group()

    # --- the policy's life across ranks: shard, checkpoint, resume, export ------------------

    def shard(self, policy: Policy) -> None:
        """Shard the policy's model over the ranks with FSDP2 (`shard_policy`); nothing to do in one process."""
        if self.enabled:
            policy.shard(self)

    def save(
        self, folder: Path, step: int, policy: Policy, optimizer: torch.optim.Optimizer, state: dict, keep: int
    ) -> None:
        """Checkpoint `step` into `folder` (`tooluse_agents.train.grpo.checkpoint`), keeping the newest `keep`.

        One process writes the trainable weights and the optimizer state. On several ranks every
        rank writes its shards (`save_sharded`; a collective, so every rank calls this) and rank 0
        completes the checkpoint with every rank's RNG state.
        """
        if not self.enabled:
            save_checkpoint(folder, step, policy.trainable_state(), optimizer, state, keep)
            return
        tmp = scratch_folder(folder, step) if self.is_main else folder / f".tmp-{PREFIX}{step:06d}"
        self.barrier()  # the scratch folder exists before any rank writes into it
        save_sharded(policy.model, optimizer, tmp / "sharded")
        rng = self.gather(rng_state())
        if self.is_main:
            publish(folder, step, tmp, state, rng, keep)
        self.barrier()

    def load(self, path: Path, policy: Policy, optimizer: torch.optim.Optimizer) -> dict[str, Any]:
        """Restore what `save` wrote into `path` (weights, optimizer, this rank's RNG state); returns the trainer state.

        Raises:
            RunConflict: The checkpoint was written on another number of ranks.
        """
        weights, optimizer_state, state, rng = load_checkpoint(path)
        if state.get("world_size", 1) != self.world_size:
            raise RunConflict(
                f"{path} was written by a run on {state.get('world_size', 1)} rank(s); resume it on as many "
                f"(this run has {self.world_size}), or start a new run folder"
            )
        if self.enabled:
            load_sharded(policy.model, optimizer, path / "sharded")
            rng = rng[self.rank]
        else:
            policy.load_trainable_state(weights)
            optimizer.load_state_dict(optimizer_state)
        set_rng_state(rng)
        return state

    def export(self, policy: Policy, target: Path) -> None:
        """Save the model (with LoRA: the adapter folder, through peft) and its tokenizer into `target`.

        On several ranks the whole weights are gathered on every rank (a collective) and rank 0 writes them.
        """
        if not self.enabled:
            policy.model.save_pretrained(target)
            policy.tokenizer.save_pretrained(target)
            return
        weights = policy.trainable_state()
        if self.is_main:
            policy.model.save_pretrained(target, state_dict=weights)
            policy.tokenizer.save_pretrained(target)
        self.barrier()


class ShardedForward(torch.nn.Module):
    """The FSDP2 root over a model: ``root(fn, *args)`` runs ``fn(*args)`` with the root's parameters gathered.

    The log-prob code calls the decoder and the output head separately (to project only the
    generated positions), so it never calls the model's own ``forward``; running it as this
    module's forward gives FSDP the hooks that gather the embedding, the final norm and the
    head before it and reduce their gradients after the backward pass.
    """

    def __init__(self, model: torch.nn.Module):
        super().__init__()
        self.model = model

    def forward(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Call `fn`; the sharded variant runs it so every rank takes part."""
        return fn(*args, **kwargs)


def shard_policy(model: torch.nn.Module, dist: Dist) -> ShardedForward:
    """Shard `model` in place with FSDP2: each decoder layer (``_no_split_modules``), then the rest."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard

    mesh = init_device_mesh("cuda" if dist.backend == "nccl" else "cpu", (dist.world_size,))
    layer_types = set(getattr(model, "_no_split_modules", None) or ())
    layers = [m for m in model.modules() if type(m).__name__ in layer_types]
    if not layers:
        raise ValueError(f"{type(model).__name__} names no decoder layer type (_no_split_modules) to shard")
    for layer in layers:
        fully_shard(layer, mesh=mesh)
    root = ShardedForward(model)
    fully_shard(root, mesh=mesh)
    return root


def full_tensor(tensor: torch.Tensor) -> torch.Tensor:
    """The whole tensor of a sharded parameter (a collective: every rank calls it, in the same order)."""
    return tensor.full_tensor() if hasattr(tensor, "full_tensor") else tensor


def save_sharded(model: torch.nn.Module, optimizer: torch.optim.Optimizer, folder: Path) -> None:
    """Every rank's shards of the model and optimizer into `folder` (a collective: `torch.distributed.checkpoint`)."""
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.state_dict import get_state_dict

    model_state, optimizer_state = get_state_dict(model, optimizer)
    dcp.save({"model": model_state, "optimizer": optimizer_state}, checkpoint_id=str(folder))


class _ShardedState(TypedDict):
    """What `save_sharded` writes and `load_sharded` reads back (`torch.distributed.checkpoint` state)."""

    model: dict[str, ValueType]
    optimizer: OptimizerStateType


def load_sharded(model: torch.nn.Module, optimizer: torch.optim.Optimizer, folder: Path) -> None:
    """Load what `save_sharded` wrote (on as many ranks) into the sharded model and optimizer."""
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict

    model_state, optimizer_state = get_state_dict(model, optimizer)
    state: _ShardedState = {"model": model_state, "optimizer": optimizer_state}
    dcp.load(state, checkpoint_id=str(folder))
    set_state_dict(model, optimizer, model_state_dict=state["model"], optim_state_dict=state["optimizer"])
