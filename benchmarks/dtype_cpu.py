"""bf16 against fp32 on this machine's CPU: vLLM rollouts and one GRPO update, one run.

    python benchmarks/dtype_cpu.py [--episodes 16] [--num-envs 16] [--max-tokens 48]

Whether bf16 pays on a CPU depends on the CPU: with native bf16 matrix units (Intel AMX,
``amx_bf16``) it is faster than fp32; without them it is emulated and slower. This measures
both dtypes here and records the CPU's model and bf16 flags beside the figures, which is what
``dtype: auto`` (`tooluse_agents.backends.dtypes`) decides from.

* rollouts: `benchmarks/rollout_throughput.py`'s setting (curriculum train tasks, ``strong``
  prompt, JSON calls), completion tokens per second one episode at a time and batched
  (``num_envs``), each dtype in its own vLLM engine (one engine per process: each dtype runs
  in a subprocess);
* update: forward + backward of `Policy.token_logprobs` on one 1,000-token sequence of
  SmolLM2-135M (fp32 master weights), fp32 against bf16 autocast, median of 3 after a warm-up.

Timed: run it with the CPU to itself. Writes ``benchmarks/results/dtype_cpu.json``.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "dtype_cpu.json"


def _rollouts(dtype: str, episodes: int, num_envs: int, max_tokens: int) -> dict:
    import gymnasium as gym

    import tooluse_gym  # noqa: F401
    from tooluse_agents.backends.base import SamplingConfig
    from tooluse_agents.backends.factory import BackendSpec, make_agent
    from tooluse_agents.eval.run import eval_task_ids
    from tooluse_agents.rollout.loop import RolloutJob, run_rollouts
    from tooluse_gym.envs import SCENARIO_ID

    curriculum = str(ROOT / "scenarios" / "curriculum" / "train.yaml")
    tasks = eval_task_ids(None, episodes // 5 + 1, [curriculum])[:episodes]
    jobs = [RolloutJob(t, 0) for t in tasks]
    sampling = SamplingConfig(temperature=1.0, max_tokens=max_tokens)
    options = {"max_model_len": 4096, "in_process": True}
    agent = make_agent(BackendSpec(backend="vllm", model="smollm2-135m", dtype=dtype, options=options))

    def make_env():
        return gym.make(SCENARIO_ID, path=curriculum, task_ids=tasks, system_prompt="strong", tool_format="json")

    run_rollouts(make_env, agent, jobs[:2], sampling=sampling, num_envs=2)  # warm-up
    out = {}
    for name, n in (("one_at_a_time", 1), ("batched", num_envs)):
        start = time.perf_counter()
        records = [e.record for e in run_rollouts(make_env, agent, jobs, sampling=sampling, num_envs=n)]
        seconds = time.perf_counter() - start
        tokens = sum(r.completion_tokens for r in records)
        out[name] = {
            "num_envs": n,
            "seconds": round(seconds, 2),
            "tokens": tokens,
            "tok_per_s": round(tokens / seconds, 2),
        }
    return out


def _update(tokens: int = 1000) -> dict:
    import torch

    from tooluse_agents.train.batch import Sample, collate
    from tooluse_agents.train.policy import Policy
    from tooluse_agents.train.settings import PolicyConfig

    out = {}
    for autocast in (None, "bfloat16"):
        policy = Policy.load(PolicyConfig(autocast=autocast, gradient_checkpointing=True, threads=None))
        policy.model.train()
        g = torch.Generator().manual_seed(0)
        ids = torch.randint(0, policy.base.config.vocab_size, (tokens,), generator=g).tolist()
        batch = collate([Sample(tuple(ids[:200]), tuple(ids[200:]), advantage=1.0)], pad_id=0)
        times = []
        for _ in range(4):
            start = time.perf_counter()
            logprobs, _ = policy.token_logprobs(batch)
            forward = time.perf_counter() - start
            (-logprobs.mean()).backward()
            times.append((forward, time.perf_counter() - start - forward))
            policy.model.zero_grad(set_to_none=True)
        kept = times[1:]
        out[autocast or "float32"] = {
            "forward_s": round(statistics.median(t[0] for t in kept), 3),
            "backward_s": round(statistics.median(t[1] for t in kept), 3),
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--episodes", type=int, default=16)
    parser.add_argument("--num-envs", type=int, default=16)
    parser.add_argument("--max-tokens", type=int, default=48)
    parser.add_argument("--part", choices=("rollouts", "update"), help=argparse.SUPPRESS)  # a subprocess's share
    parser.add_argument("--dtype", help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    if args.part == "rollouts":
        print(json.dumps(_rollouts(args.dtype, args.episodes, args.num_envs, args.max_tokens)))
        return
    if args.part == "update":
        print(json.dumps(_update()))
        return
    from tooluse_agents.backends.dtypes import machine, resolve_dtype

    report = {
        "command": "python benchmarks/dtype_cpu.py " + " ".join(sys.argv[1:]),
        "machine": {**machine(), "python": platform.python_version()},
        "auto_resolves_to": resolve_dtype("auto", "cpu"),
        "commit": subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, cwd=ROOT).stdout.strip(),
        "rollouts": {},
    }
    base = [
        sys.executable,
        __file__,
        "--episodes",
        str(args.episodes),
        "--num-envs",
        str(args.num_envs),
        "--max-tokens",
        str(args.max_tokens),
    ]
    for dtype in ("float32", "bfloat16"):
        done = subprocess.run([*base, "--part", "rollouts", "--dtype", dtype], capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(f"rollouts in {dtype} failed:\n{done.stderr[-3000:]}")
        report["rollouts"][dtype] = json.loads(done.stdout.strip().splitlines()[-1])
        print(dtype, report["rollouts"][dtype], flush=True)
    done = subprocess.run([*base, "--part", "update"], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"update failed:\n{done.stderr[-3000:]}")
    report["update_1000_tokens"] = json.loads(done.stdout.strip().splitlines()[-1])
    print("update", report["update_1000_tokens"], flush=True)
    r = report["rollouts"]
    u = report["update_1000_tokens"]
    report["bf16_over_fp32"] = {
        "rollouts_one_at_a_time": round(
            r["bfloat16"]["one_at_a_time"]["tok_per_s"] / r["float32"]["one_at_a_time"]["tok_per_s"], 3
        ),
        "rollouts_batched": round(r["bfloat16"]["batched"]["tok_per_s"] / r["float32"]["batched"]["tok_per_s"], 3),
        "update_speed": round(
            (u["float32"]["forward_s"] + u["float32"]["backward_s"])
            / (u["bfloat16"]["forward_s"] + u["bfloat16"]["backward_s"]),
            3,
        ),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(json.dumps(report["bf16_over_fp32"]))


if __name__ == "__main__":
    main()
