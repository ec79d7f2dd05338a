"""The batched rollout loop against one episode at a time, same tasks, same model, same seeds, one run.

    python benchmarks/rollout_throughput.py [--agent vllm|hf] [--episodes 32] [--num-envs 32]

Both passes play the same jobs (the per-request seeds make the episodes the same for vLLM)
and report completion tokens per second; the ratio is batched / sequential. The tasks are
the curriculum's train split (evenly spaced over its tiers) under the ``strong`` prompt with
JSON calls: ~800-1,500-token prompts, the setting RL on a CPU uses. BFCL's 6-8k-token prompts
would measure prefill, not the loop.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import gymnasium as gym

import tooluse_gym  # noqa: F401
from tooluse_agents.backends.base import SamplingConfig
from tooluse_agents.backends.factory import BackendSpec, make_agent
from tooluse_agents.eval.run import eval_task_ids
from tooluse_agents.rollout.loop import RolloutJob, run_rollouts
from tooluse_gym.envs import SCENARIO_ID

CURRICULUM = str(Path(__file__).resolve().parents[1] / "scenarios" / "curriculum" / "train.yaml")


def _agent(kind: str, dtype: str):
    options = {"max_model_len": 4096} if kind == "vllm" else {}
    return make_agent(BackendSpec(backend=kind, model="smollm2-135m", dtype=dtype, options=options))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--agent", choices=("vllm", "hf"), default="vllm")
    parser.add_argument("--episodes", type=int, default=32)
    parser.add_argument("--num-envs", type=int, default=32)
    parser.add_argument("--max-tokens", type=int, default=48)
    # float32: on CPUs without AMX/AVX-512 BF16, vLLM's bf16 kernels are emulated and the batched pass
    # runs at less than half the fp32 speed (measured: README, Speed).
    parser.add_argument("--dtype", default="float32")
    args = parser.parse_args()
    tasks = eval_task_ids(None, args.episodes // 5 + 1, [CURRICULUM])[: args.episodes]
    jobs = [RolloutJob(t, 0) for t in tasks]
    sampling = SamplingConfig(temperature=1.0, max_tokens=args.max_tokens)
    agent = _agent(args.agent, args.dtype)

    def make_env():
        return gym.make(SCENARIO_ID, path=CURRICULUM, task_ids=tasks, system_prompt="strong", tool_format="json")

    run_rollouts(make_env, agent, jobs[:2], sampling=sampling, num_envs=2)  # warm-up
    rates = {}
    for name, num_envs in (("sequential", 1), ("batched", args.num_envs)):
        start = time.perf_counter()
        records = [e.record for e in run_rollouts(make_env, agent, jobs, sampling=sampling, num_envs=num_envs)]
        seconds = time.perf_counter() - start
        tokens = sum(r.completion_tokens for r in records)
        rates[name] = tokens / seconds
        print(
            f"{name:<10} num_envs={num_envs:<2} episodes={len(records)} completion tokens={tokens} "
            f"time={seconds:.1f}s  {rates[name]:.1f} tok/s"
        )
    print(f"batched / sequential: {rates['batched'] / rates['sequential']:.2f}x ({args.agent}, {args.dtype})")


if __name__ == "__main__":
    main()
