"""Checkpoints: trainable weights, optimizer, filter and trainer state, RNG states, step.

A checkpoint is a folder ``checkpoints/step_000042`` holding ``policy.pt``,
``optimizer.pt``, ``rng.pt`` and ``state.json``; it is written under a temporary name and
renamed when complete, so a run killed mid-save leaves the previous checkpoint intact. A run
on several ranks writes ``sharded/`` instead of the two ``.pt`` files (model and optimizer
shards through `torch.distributed.checkpoint`, `tooluse_agents.train.grpo.distributed.save_sharded`) and
every rank's RNG state in ``rng.pt``.
"""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import torch

PREFIX = "step_"


def rng_state() -> dict[str, Any]:
    """Every random generator's state (Python, NumPy, torch, CUDA when present)."""
    state = {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    """Restore the generators from `rng_state`'s result."""
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def scratch_folder(folder: Path, step: int) -> Path:
    """The empty folder a checkpoint of `step` is written into before `publish` renames it."""
    tmp = folder / f".tmp-{PREFIX}{step:06d}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    return tmp


def publish(folder: Path, step: int, tmp: Path, state: dict[str, Any], rng: Any, keep: int) -> Path:
    """Complete the checkpoint in `tmp` (trainer state and RNG state), rename it, delete all but the newest `keep`."""
    torch.save(rng, tmp / "rng.pt")
    (tmp / "state.json").write_text(json.dumps({**state, "step": step}, indent=1), encoding="utf-8")
    final = folder / f"{PREFIX}{step:06d}"
    shutil.rmtree(final, ignore_errors=True)
    tmp.rename(final)
    for old in list_checkpoints(folder)[:-keep] if keep > 0 else []:
        shutil.rmtree(old, ignore_errors=True)
    return final


def save_checkpoint(
    folder: Path, step: int, weights: dict[str, torch.Tensor], optimizer: Any, state: dict[str, Any], keep: int
) -> Path:
    """Write the checkpoint of `step` (one process) and delete all but the newest `keep`."""
    tmp = scratch_folder(folder, step)
    torch.save(weights, tmp / "policy.pt")
    torch.save(optimizer.state_dict(), tmp / "optimizer.pt")
    return publish(folder, step, tmp, state, rng_state(), keep)


def list_checkpoints(folder: Path) -> list[Path]:
    """Complete checkpoints, oldest first."""
    if not folder.is_dir():
        return []
    found = [p for p in folder.iterdir() if p.is_dir() and p.name.startswith(PREFIX) and (p / "state.json").is_file()]
    return sorted(found, key=lambda p: int(p.name[len(PREFIX) :]))


def latest_checkpoint(folder: Path) -> Path | None:
    """The newest complete checkpoint folder, or None."""
    found = list_checkpoints(folder)
    return found[-1] if found else None


def latest_step(folder: Path) -> int:
    """The step of the newest complete checkpoint in `folder` (0: none), where a run of it resumes."""
    found = latest_checkpoint(folder)
    return int(found.name.split("_")[-1]) if found else 0


def load_checkpoint(path: Path) -> tuple[Any, Any, dict[str, Any], Any]:
    """Weights, optimizer state, trainer state and RNG state of a checkpoint folder (None, None for a sharded one)."""
    sharded = (path / "sharded").is_dir()
    weights = None if sharded else torch.load(path / "policy.pt", map_location="cpu", weights_only=True)
    optimizer = None if sharded else torch.load(path / "optimizer.pt", map_location="cpu", weights_only=True)
    rng = torch.load(path / "rng.pt", map_location="cpu", weights_only=False)
    state = json.loads((path / "state.json").read_text(encoding="utf-8"))
    return weights, optimizer, state, rng
