"""The shared start evaluation: run the step-0 held-out evaluation once, reuse it where provably the same.

The held-out evaluation at step 0 depends only on the start model, the held-out prompts, the
protocol, the decoding settings, the code that plays and scores episodes, and the machine (an
``auto`` dtype resolves per machine). Greedy decoding (temperature 0, one sample) makes it
independent of the seed, and nothing of an arm's own knobs (filter, screen, sub-sampling, update)
runs before it. `start_key` collects every one of those inputs:

- the start model's files (sha256 over every file of its folder, names included);
- the held-out source with the sha256 of its scenario file(s) (or the bfcl-eval version);
- the protocol, ``eval.temperature`` and ``eval.samples``, the rollout settings except the
  training sampling temperature and the screen, and the policy's dtype, autocast, device, LoRA and
  thread settings (the hf engine generates with the policy itself);
- the seed, only when the evaluation samples (temperature above 0);
- the sha256 of every ``*.py`` file under ``tooluse_gym/`` and ``agents/`` (except
  ``experiments/``, the study's own code), as they are on disk;
- the machine (`tooluse_agents.backends.dtypes.machine`: CPU model, bf16 flags, cores).

An arm reuses a recorded start evaluation only when its key's sha256 equals the recorded one's;
otherwise it runs its own. What this cannot rule out: an inference engine whose greedy output
depends on how requests happen to be batched (floating-point reduction order). ``--start-eval
every`` runs the start evaluation in every arm and records whether it agrees with the shared one.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Iterable, Mapping
from functools import cache
from pathlib import Path
from typing import Any

from experiments.framework.provenance import ROOT, shown

CODE_DIRS = ("tooluse_gym", "agents")
NOT_CODE = ("experiments/",)


def _hash_files(files: Iterable[Path], base: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(files):
        digest.update(str(path.relative_to(base)).encode() + b"\0")
        with path.open("rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                digest.update(chunk)
        digest.update(b"\0")
    return digest.hexdigest()


def folder_sha256(path: Path) -> str:
    """sha256 over every file under `path` (a file: itself), names included; lock files left out."""
    if path.is_file():
        return _hash_files([path], path.parent)
    return _hash_files((p for p in path.rglob("*") if p.is_file() and p.suffix != ".lock"), path)


@cache
def model_sha256(model: str) -> str:
    """The start model's fingerprint: its folder's files (a named model resolved to its cache folder first)."""
    from tooluse_agents.models.resolve import MODEL_NAMES, resolve_model

    folder = Path(resolve_model(model) if model in MODEL_NAMES else model)
    if not folder.is_absolute():
        folder = ROOT / folder
    if not folder.exists():
        raise FileNotFoundError(f"start model {model!r}: no folder at {folder}")
    return folder_sha256(folder)


def code_sha256() -> str:
    """sha256 of the code that plays and scores a held-out episode (module docstring)."""
    files = [
        p
        for d in CODE_DIRS
        for p in (ROOT / d).rglob("*.py")
        if not any(str(p.relative_to(ROOT)).startswith(x) for x in NOT_CODE)
    ]
    return _hash_files(files, ROOT)


def _heldout(source: Any) -> dict[str, Any]:
    data = dataclasses.asdict(source)
    if source.source == "scenario":
        path = Path(source.path)
        data["files_sha256"] = folder_sha256(path if path.is_absolute() else ROOT / path)
    else:
        from importlib.metadata import PackageNotFoundError, version

        try:
            data["bfcl_eval"] = version("bfcl-eval")
        except PackageNotFoundError:
            data["bfcl_eval"] = None
    return data


def start_key(config: Any) -> dict[str, Any]:
    """Every input of a run's step-0 held-out evaluation (module docstring); `config` is a `TrainConfig`."""
    from tooluse_agents.backends.dtypes import machine

    if config.heldout is None:
        raise ValueError("the run has no held-out set")
    rollout = {k: v for k, v in dataclasses.asdict(config.rollout).items() if k not in ("screen", "temperature")}
    policy = {
        k: v for k, v in dataclasses.asdict(config.policy).items() if k not in ("model", "gradient_checkpointing")
    }
    return {
        "model": shown(config.policy.model),
        "model_sha256": model_sha256(config.policy.model),
        "heldout": _heldout(config.heldout),
        "protocol": dataclasses.asdict(config.protocol),
        "eval": {"temperature": config.eval.temperature, "samples": config.eval.samples},
        "seed": config.seed if config.eval.temperature > 0 else None,
        "rollout": rollout,
        "policy": policy,
        "mode": config.grpo.mode,
        "code_sha256": code_sha256(),
        "machine": machine(),
    }


def key_sha256(key: Mapping[str, Any]) -> str:
    return hashlib.sha256(json.dumps(key, sort_keys=True, default=str).encode()).hexdigest()


def find_shared(results_dir: Path, sha: str) -> dict[str, Any] | None:
    """A recorded start evaluation with this key (from a result that ran it), as `run_summary.evaluations`
    takes it: its step-0 evaluation with ``prompts`` and ``from`` (the result's name); None: none yet."""
    for path in sorted(results_dir.glob("seed*_*.json")):
        try:
            result = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        start = result.get("start_eval", {})
        if start.get("key_sha256") != sha or start.get("source") != "run":
            continue
        first = result["evaluations"][0]
        if first["step"] != 0:
            continue
        return {**first, "prompts": result["heldout_prompts"], "from": path.stem}
    return None
