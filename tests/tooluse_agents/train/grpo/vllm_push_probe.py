"""Run by test_vllm_sync in its own process (an in-process vLLM engine changes process-wide torch settings).

Loads SmolLM2-135M as the policy (float32) and as an in-process vLLM engine (float32), takes a
real policy update, and reports the largest log-prob gaps between engine and trainer before
and after pushing the new weights: on prompt tokens, and on a generation from a prompt the
engine had cached before the update. Prints one JSON object.
"""

from __future__ import annotations

import json

PROMPT = (
    "<|im_start|>user\nList the files in the current folder, then open notes.txt and count its words."
    "<|im_end|>\n<|im_start|>assistant\n"
)


def main() -> None:
    from tooluse_agents.backends.vllm import VLLMAgent, VLLMAgentConfig
    from tooluse_agents.train.batch import Sample, collate
    from tooluse_agents.train.grpo.update import PolicyUpdater, UpdateConfig
    from tooluse_agents.train.grpo.weight_sync import VLLMWeightSync
    from tooluse_agents.train.policy import Policy, PolicyConfig

    engine = VLLMAgent(
        VLLMAgentConfig(model="smollm2-135m", dtype="float32", max_model_len=2048, cpu_kv_cache_gib=1, in_process=True)
    )
    from vllm import SamplingParams

    policy = Policy.load(
        PolicyConfig(model="smollm2-135m", dtype="float32", autocast=None, gradient_checkpointing=False)
    )
    llm, tokenizer = engine.llm, policy.tokenizer
    ids = tokenizer(PROMPT, add_special_tokens=False)["input_ids"]
    gen_params = SamplingParams(temperature=1.0, max_tokens=24, seed=7, logprobs=0)

    def engine_prompt_logprobs():
        out = llm.generate([{"prompt_token_ids": ids}], SamplingParams(max_tokens=1, prompt_logprobs=0), use_tqdm=False)
        return [step[token].logprob for step, token in zip(out[0].prompt_logprobs[1:], ids[1:], strict=True)]

    def trainer_logprobs(prompt, completion):
        batch = collate([Sample(tuple(prompt), tuple(completion), 0.0)], tokenizer.pad_token_id)
        import torch

        with torch.no_grad():
            return policy.token_logprobs(batch)[0].tolist()

    def gap(a, b):
        return max(abs(x - y) for x, y in zip(a, b, strict=True))

    llm.generate([{"prompt_token_ids": ids}], gen_params, use_tqdm=False)  # fills the prefix cache
    parity_start = gap(engine_prompt_logprobs(), trainer_logprobs(ids[:1], ids[1:]))
    updater = PolicyUpdater(policy, UpdateConfig(lr=1e-4, max_grad_norm=None))
    answer = tokenizer('<tool_call>{"name": "ls", "arguments": {}}</tool_call>', add_special_tokens=False)["input_ids"]
    updater.step([Sample(tuple(ids), (*answer, tokenizer.eos_token_id), 1.0)])
    before_push = gap(engine_prompt_logprobs(), trainer_logprobs(ids[:1], ids[1:]))
    sync = VLLMWeightSync(llm)
    sync.push(policy.weights_for_sync())
    after_push = gap(engine_prompt_logprobs(), trainer_logprobs(ids[:1], ids[1:]))
    out = llm.generate([{"prompt_token_ids": ids}], gen_params, use_tqdm=False)[0]
    completion = list(out.outputs[0].token_ids)
    sampled = [step[t].logprob for step, t in zip(out.outputs[0].logprobs, completion, strict=True)]
    generation_after_push = gap(sampled, trainer_logprobs(ids, completion))
    print(
        json.dumps(
            {
                "parity_start": parity_start,
                "before_push": before_push,
                "after_push": after_push,
                "generation_after_push": generation_after_push,
                "cached_tokens": out.num_cached_tokens,
                "tied": sync.tied,
            }
        )
    )


if __name__ == "__main__":
    main()
