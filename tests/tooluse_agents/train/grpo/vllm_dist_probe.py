"""One rank of test_distributed_vllm, under torchrun: a sharded SmolLM2 policy and this rank's own vLLM engine.

Each rank builds an in-process vLLM engine (float32) and the policy sharded over the ranks
(FSDP2), takes one real update on its own sample (the ranks' samples differ, the gradient is
their sum), gathers the whole weights and pushes them into its engine, then reports the largest
log-prob gap between engine and trainer on a prompt before and after the push, as
``rank_R.json`` in the folder given as its argument (ranks share stdout, so lines interleave).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

PROMPT = "<|im_start|>user\nList the files, then open notes.txt.<|im_end|>\n<|im_start|>assistant\n"
ANSWERS = ('<tool_call>{"name": "ls", "arguments": {}}</tool_call>', "I cannot open files.")


def main() -> None:
    import torch

    from tooluse_agents.backends.vllm import VLLMAgent, VLLMAgentConfig
    from tooluse_agents.train.batch import Sample, collate
    from tooluse_agents.train.grpo.distributed import Dist
    from tooluse_agents.train.grpo.update import PolicyUpdater, UpdateConfig
    from tooluse_agents.train.grpo.weight_sync import VLLMWeightSync
    from tooluse_agents.train.policy import Policy, PolicyConfig

    dist = Dist.from_env()
    os.environ["VLLM_CPU_OMP_THREADS_BIND"] = dist.cpu_cores()  # the trainer's split: this rank's cores
    torch.set_num_threads(1)
    engine = VLLMAgent(
        VLLMAgentConfig(model="smollm2-135m", dtype="float32", max_model_len=512, cpu_kv_cache_gib=1, in_process=True)
    )
    from vllm import SamplingParams

    policy = Policy.load(
        PolicyConfig(model="smollm2-135m", dtype="float32", autocast=None, gradient_checkpointing=False)
    )
    policy.shard(dist)
    llm, tokenizer = engine.llm, policy.tokenizer
    ids = tokenizer(PROMPT, add_special_tokens=False)["input_ids"]

    def engine_logprobs():
        out = llm.generate([{"prompt_token_ids": ids}], SamplingParams(max_tokens=1, prompt_logprobs=0), use_tqdm=False)
        return [step[token].logprob for step, token in zip(out[0].prompt_logprobs[1:], ids[1:], strict=True)]

    def trainer_logprobs():  # a collective on the sharded model: every rank calls it
        batch = collate([Sample(tuple(ids[:1]), tuple(ids[1:]), 0.0)], tokenizer.pad_token_id)
        with torch.no_grad():
            return policy.token_logprobs(batch)[0].tolist()

    def gap(a, b):
        return max(abs(x - y) for x, y in zip(a, b, strict=True))

    start = gap(engine_logprobs(), trainer_logprobs())
    answer = tokenizer(ANSWERS[dist.rank % 2], add_special_tokens=False)["input_ids"]
    updater = PolicyUpdater(policy, UpdateConfig(lr=1e-4, max_grad_norm=None), dist=dist)
    updater.step([Sample(tuple(ids), (*answer, tokenizer.eos_token_id), 1.0 if dist.rank == 0 else -1.0)])
    before = gap(engine_logprobs(), trainer_logprobs())
    VLLMWeightSync(llm).push(policy.weights_for_sync())
    after = gap(engine_logprobs(), trainer_logprobs())
    mine = engine_logprobs()
    every = dist.gather(mine)
    across = max(gap(every[0], other) for other in every)
    report = {"rank": dist.rank, "start": start, "before_push": before, "after_push": after, "across": across}
    (Path(sys.argv[1]) / f"rank_{dist.rank}.json").write_text(json.dumps(report))
    engine.close()  # vLLM cleans up before the process group goes
    dist.close()


if __name__ == "__main__":
    main()
