"""Ship a LoRA warm-start made by `tooluse sft` as a named model of the package, with its card.

    python -m experiments.tools.ship_adapter runs/warmstart-adapter agents/models/adapters/smollm2-135m-warmstart \
        --command "make warmstart-adapter"

Copies the adapter (``adapter_config.json``, ``adapter_model.safetensors``) out of the run's
``model/`` folder and writes ``card.json`` beside it: the command and full `SFTConfig` that trained
it, the training data (scenario file and its sha256, tasks, examples), the protocol card the
examples were rendered under (from a reset of the scenario env with those knobs), the training
summary, the code commit and the files' sizes and digests. `tooluse_agents.models.resolve` merges the
adapter into SmolLM2-135M when the name ``smollm2-135m-warmstart`` is first used.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import gymnasium as gym

import tooluse_gym  # noqa: F401  (registers the environments)
from tooluse_gym.envs import SCENARIO_ID
from tooluse_gym.protocol import ProtocolCard

FILES = ("adapter_config.json", "adapter_model.safetensors")


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def protocol_card(scenarios: str, knobs: dict[str, Any]) -> dict[str, Any]:
    """The card of the scenario env under the training knobs, with its fingerprint (the seed left as reset sets it)."""
    env = gym.make(SCENARIO_ID, path=scenarios, **knobs)
    try:
        _, info = env.reset(seed=0)
    finally:
        env.close()
    card = info["protocol"]
    return {"card": card, "fingerprint": ProtocolCard.from_dict(card).fingerprint()}


def card(run: Path, target: Path, command: str) -> dict[str, Any]:
    """The card of the adapter in `target`, trained by the run folder `run`."""
    config = json.loads((run / "config.json").read_text())
    summary = json.loads((run / "summary.json").read_text())
    scenarios = Path(config["scenarios"])
    commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, check=False).stdout.strip()
    return {
        "name": target.name,
        "base": config["model"],
        "what": "LoRA adapter (peft) for SmolLM2-135M-Instruct, trained by `tooluse sft` on the curriculum's "
        "warm-up split (no task of the train or held-out splits); merged into the base when first loaded",
        "command": command,
        "config": config,
        "data": {
            "scenarios": str(scenarios),
            "sha256": _sha256(scenarios),
            "tasks": summary["tasks"],
            "examples": summary["examples"],
            "completion_tokens": summary["completion_tokens"],
        },
        "protocol": protocol_card(str(scenarios), config["protocol"]),
        "training": {k: summary[k] for k in ("steps", "epoch_loss", "seconds")},
        "code_commit": commit or None,
        "files": {name: {"bytes": (target / name).stat().st_size, "sha256": _sha256(target / name)} for name in FILES},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path, help="a `tooluse sft` run folder trained with lora")
    parser.add_argument("target", type=Path, help="the adapter's folder in the package")
    parser.add_argument("--command", required=True, help="the command that trained it, as the card records it")
    args = parser.parse_args(argv)
    source = args.run / "model"
    if not (source / "adapter_config.json").is_file():
        parser.error(f"{source} holds no adapter: train with lora (lora.r=16 ...)")
    args.target.mkdir(parents=True, exist_ok=True)
    for name in FILES:
        shutil.copyfile(source / name, args.target / name)
    (args.target / "card.json").write_text(json.dumps(card(args.run, args.target, args.command), indent=2) + "\n")
    print(f"shipped {args.target}: " + ", ".join(f"{n} {(args.target / n).stat().st_size:,} B" for n in FILES))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
