"""GRPO steps at the paper's shapes on one GPU: our trainer and TRL's on one Qwen3-4B-shaped model.

    python benchmarks/gpu_grpo_step.py --out runs/gpu-grpo-step [--steps 2] [--arms ours_vanilla trl ours_paper]
    python benchmarks/gpu_grpo_step.py --tiny --out runs/gpu-grpo-step-tiny   # the same path, a tiny model, a CPU

The model has Qwen3-4B's shape (36 layers, hidden 2560, 32 query and 8 key-value heads of 128, MLP
9728, tied embeddings) with SmolLM2's tokenizer and so its vocabulary (49,152 rather than 151,936:
3.8B parameters rather than 4.0B). Its weights are random (nothing is fetched), so it writes no
call and every reward is 0: this measures what a step costs at these lengths, not learning.

Every arm trains on the same next-turn prompts of BFCL's multi-turn ``base`` category (4 a step,
8 rollouts each, up to `--max-tokens` new tokens a message; a random model seldom stops early) and
runs as its own process, one after the other:

- ``ours_vanilla``: our trainer (``python -m tooluse_agents.cli.train``), every rollout in the update;
- ``ours_paper``: our trainer with the paper's recipe (filter k=1, 4 of 8 rollouts a group updated;
  with all rewards 0 no prompt is filtered, so what it saves here is sub-sampling's half of the update);
- ``trl``: TRL's ``GRPOTrainer`` through our adapter (``python -m experiments.trainer_vs_trl.trl_arm``), HF generation.

Equal in all three: fp32 weights and AdamW, bf16 autocast in the update and in generation
(transformers' ``generate`` on the trained model: TRL's through accelerate's autocast wrapper of the
prepared model, ours through ``HFAgentConfig.autocast``; the first run on 2026-12-04 predates ours and
generated in fp32, see benchmarks/results/checks/gpu_grpo_step_2026-12-04.json), TF32 for fp32
matrix products (``TORCH_ALLOW_TF32_CUBLAS_OVERRIDE=1``), 16 sequences a ``generate`` call,
gradient checkpointing.
Update micro-batches: 8 sequences (TRL), 65,536 padded tokens (ours: 7-8 sequences of this length).
Each arm's step times come from its own ``metrics.jsonl`` (rollout, update); OUT/result.json is
rewritten after each arm, so a run cut short keeps the arms it finished.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CONFIG = "agents/train/grpo/configs/gpu_qwen3_4b.yaml"
SHAPES = {
    "qwen3_4b": dict(hidden_size=2560, intermediate_size=9728, num_hidden_layers=36, num_attention_heads=32,
                     num_key_value_heads=8, head_dim=128),
    "tiny": dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                 num_key_value_heads=2, head_dim=16),
}  # fmt: skip
ARMS = {
    "ours_vanilla": ["filter.enabled=false", "grpo.update_size=null"],
    "trl": [],  # the TRL arm adds its own AS_TRL (no filter, every rollout)
    "ours_paper": ["filter.enabled=true", "filter.k=1", "grpo.update_size=4"],
}  # fmt: skip
TRL_MICRO_BATCH = 8


def make_model(folder: Path, tokenizer_path: str, shape: str, device: str) -> dict[str, Any]:
    """Save a random-weight Qwen3 of `shape` with the tokenizer at `tokenizer_path` (bf16 safetensors)."""
    import torch
    from transformers import AutoTokenizer, Qwen3Config, Qwen3ForCausalLM

    tokenizer = AutoTokenizer.from_pretrained(tokenizer_path)
    config = Qwen3Config(
        **SHAPES[shape],
        vocab_size=len(tokenizer),
        max_position_embeddings=40960,
        rope_theta=1_000_000.0,
        rms_norm_eps=1e-6,
        tie_word_embeddings=True,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    start = time.perf_counter()
    torch.manual_seed(0)
    with torch.device(device):
        model = Qwen3ForCausalLM(config).to(torch.bfloat16)
    params = sum(p.numel() for p in model.parameters())
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    del model
    if device == "cuda":
        torch.cuda.empty_cache()  # the arms' processes get the whole card
    return {
        "shape": shape,
        "parameters": params,
        "vocab_size": config.vocab_size,
        "seconds": time.perf_counter() - start,
    }


def overrides(model: Path, run_dir: Path, device: str, steps: int, max_tokens: int) -> list[str]:
    """What every arm's config sets on top of `CONFIG`."""
    return [
        "tasks={source: bfcl, category: base, limit: 4}",
        "heldout=null",
        "eval.at_start=false",
        "protocol.max_steps_per_turn=5",
        f"policy.model={model}",
        f"policy.device={device}",
        "policy.dtype=float32",
        f"policy.autocast={'bfloat16' if device == 'cuda' else 'null'}",
        "policy.gradient_checkpointing=true",
        "rollout.engine=hf",
        "rollout.num_envs=16",
        f"rollout.max_tokens={max_tokens}",
        "rollout.temperature=1.0",
        "grpo.group_size=8",
        "grpo.prompts_per_step=4",
        "grpo.normalize_over=group",
        "update.lr=1.0e-6",
        "update.micro_batch_tokens=65536",
        "epochs=100",
        f"max_steps={steps}",
        "save_every=1000000",
        "keep_checkpoints=0",
        "export_final=false",
        f"run_dir={run_dir}",
    ]


def _portable(result: dict[str, Any]) -> Any:
    """The result with its paths relative to the checkout (`tooluse_agents.runs.portable`).

    Imported here: this script's other imports are the standard library's.
    """
    from tooluse_agents.runs.portable import portable

    return portable(result, ROOT)


def arm_command(arm: str, sets: list[str], python: str) -> list[str]:
    if arm == "trl":
        return [
            python,
            "-m",
            "experiments.trainer_vs_trl.trl_arm",
            CONFIG,
            *sets,
            "--micro-batch",
            str(TRL_MICRO_BATCH),
            "--no-progress",
        ]
    return [python, "-m", "tooluse_agents.cli.train", CONFIG, *sets, "--no-progress"]


def read_steps(run_dir: Path) -> list[dict[str, Any]]:
    keys = (
        *("step", "time/rollout_s", "time/update_s", "time/sync_s", "rollout/completion_tokens", "update/tokens"),
        *(
            "update/computed_tokens",
            "perf/tokens_per_s",
            "rollout/reward_mean",
            "subsample/used",
            "subsample/generated",
        ),
    )
    path = run_dir / "metrics.jsonl"
    if not path.exists():
        return []
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [{k: r[k] for k in keys if k in r} for r in rows]


def prompt_tokens(run_dir: Path) -> dict[str, int] | None:
    """The smallest and largest prompt (tokens) the policy was given, from the episode records."""
    path = run_dir / "episodes.jsonl"
    if not path.exists():
        return None
    sizes = []
    for line in path.read_text().splitlines():
        for turn in json.loads(line).get("turns", []):
            for step in turn.get("steps", []):
                if step.get("prompt_tokens"):
                    sizes.append(int(step["prompt_tokens"]))
    return {"min": min(sizes), "max": max(sizes), "count": len(sizes)} if sizes else None


def git_head() -> str | None:
    """The checkout's commit (None where git or the repository's history is not there)."""
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def episode_errors(run_dir: Path) -> dict[str, Any]:
    """Episodes and policy messages that ended in an error, by error type, with one message of each type."""
    path = run_dir / "episodes.jsonl"
    found: dict[str, Any] = {}
    if not path.exists():
        return found
    for line in path.read_text().splitlines():
        episode = json.loads(line)
        errors = [episode.get("error")] + [s.get("error") for t in episode.get("turns", []) for s in t.get("steps", [])]
        for error in filter(None, errors):
            kind = error.get("type", str(error)) if isinstance(error, dict) else str(error)[:80]
            entry = found.setdefault(kind, {"count": 0, "example": str(error)[:400]})
            entry["count"] += 1
    return found


def machine() -> dict[str, Any]:
    import torch
    import transformers

    info: dict[str, Any] = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
    }
    try:
        import trl

        info["trl"] = trl.__version__
    except ImportError:
        pass
    if torch.cuda.is_available():
        info["gpu"] = torch.cuda.get_device_name(0)
        info["gpu_memory_gib"] = round(torch.cuda.get_device_properties(0).total_memory / 2**30, 1)
    return info


class MemoryPeak:
    """The GPU's most used memory (MiB, nvidia-smi, every second) while an arm runs; None without nvidia-smi."""

    def __init__(self) -> None:
        self.peak: int | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)

    def _poll(self) -> None:
        query = ["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits"]
        while not self._stop.wait(1.0):
            try:
                used = int(subprocess.run(query, capture_output=True, text=True, timeout=10).stdout.split()[0])
            except (OSError, ValueError, IndexError, subprocess.SubprocessError):
                return
            self.peak = max(self.peak or 0, used)

    def __enter__(self) -> MemoryPeak:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def summary(arms: dict[str, Any]) -> dict[str, Any]:
    """Each arm's last step (the first carries start-up costs), and our arms' step time against TRL's
    where both reached the same step."""
    last = {name: a["steps"][-1] for name, a in arms.items() if a.get("steps")}
    out: dict[str, Any] = {}
    for name, s in last.items():
        step_s = s["time/rollout_s"] + s["time/update_s"] + s.get("time/sync_s", 0.0)
        out[name] = {
            "step": s["step"],
            "step_s": step_s,
            "rollout_s": s["time/rollout_s"],
            "update_s": s["time/update_s"],
            "update_share": s["time/update_s"] / step_s if step_s else None,
            "tokens_per_s": s.get("perf/tokens_per_s"),
        }
    if "trl" in out:
        for name in out:
            if name != "trl" and last[name]["step"] == last["trl"]["step"]:  # the same step of each, or no ratio
                out[name]["trl_step_s_over_this"] = out["trl"]["step_s"] / out[name]["step_s"]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="result.json and the models' and arms' folders")
    parser.add_argument("--work", type=Path, help="the model and the arms' run folders (default: OUT)")
    parser.add_argument("--tiny", action="store_true", help="a tiny model on the CPU (checks the path, times nothing)")
    parser.add_argument("--tokenizer", default="smollm2-135m", help="tokenizer folder or our model name")
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--max-tokens", type=int, default=256)
    parser.add_argument("--arms", nargs="*", choices=list(ARMS), default=list(ARMS))
    parser.add_argument("--arm-timeout", type=float, default=240.0, help="seconds before an arm is stopped")
    parser.add_argument("--deadline", type=float, help="seconds from the start after which every arm is stopped")
    args = parser.parse_args(argv)
    from tooluse_agents.models.resolve import resolve_model

    work = args.work or args.out
    args.out.mkdir(parents=True, exist_ok=True)
    work.mkdir(parents=True, exist_ok=True)
    device = "cpu" if args.tiny else "cuda"
    result: dict[str, Any] = {
        "benchmark": "gpu_grpo_step",
        "command": " ".join(["python benchmarks/gpu_grpo_step.py", *(argv if argv is not None else sys.argv[1:])]),
        "commit": os.environ.get("TOOLUSE_COMMIT") or git_head(),
        "machine": machine(),
        "settings": {
            "config": CONFIG,
            "steps": args.steps,
            "max_tokens": args.max_tokens,
            "trl_micro_batch": TRL_MICRO_BATCH,
            "env": {"TORCH_ALLOW_TF32_CUBLAS_OVERRIDE": "1"},
        },
        "arms": {},
    }
    model = work / "model"
    result["model"] = make_model(model, resolve_model(args.tokenizer), "tiny" if args.tiny else "qwen3_4b", device)
    print("model:", json.dumps(result["model"]), flush=True)
    env = {**os.environ, "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE": "1", "TOKENIZERS_PARALLELISM": "false"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), str(ROOT / ".packages"), env.get("PYTHONPATH")]))
    started = time.perf_counter()
    for arm in args.arms:
        timeout = args.arm_timeout
        if args.deadline is not None:
            timeout = min(timeout, args.deadline - (time.perf_counter() - started))
            if timeout <= 10:
                print(f"[{arm}] not run: the deadline is reached", flush=True)
                continue
        run_dir = work / arm
        sets = [*overrides(model, run_dir, device, args.steps, args.max_tokens), *ARMS[arm]]
        cmd = arm_command(arm, sets, sys.executable)
        start = time.perf_counter()
        with MemoryPeak() as memory:
            try:
                done = subprocess.run(cmd, cwd=ROOT, env=env, timeout=timeout, capture_output=True, text=True)
                rc, tail = done.returncode, (done.stdout + done.stderr)[-3000:]
            except subprocess.TimeoutExpired as e:
                rc, tail = None, f"stopped after {timeout:.0f} s; " + str(e.stderr or b"")[-2000:]
        entry = {
            "command": " ".join(cmd[1:]),
            "returncode": rc,
            "wall_s": time.perf_counter() - start,
            "steps": read_steps(run_dir),
            "prompt_tokens": prompt_tokens(run_dir),
            "gpu_memory_peak_mib": memory.peak,
            "errors": episode_errors(run_dir),
        }
        if rc != 0:
            entry["output_tail"] = tail
        result["arms"][arm] = entry
        result["summary"] = summary(result["arms"])
        (args.out / "result.json").write_text(json.dumps(_portable(result), indent=2) + "\n")
        print(f"[{arm}] rc={rc} wall {entry['wall_s']:.0f} s", json.dumps(result["summary"].get(arm)), flush=True)
        if rc != 0:
            print(tail, flush=True)
    return 0 if all(a["returncode"] == 0 for a in result["arms"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
