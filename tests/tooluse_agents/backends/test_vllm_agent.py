"""VLLMAgent on the real SmolLM2-135M with vLLM on the CPU (enforce_eager): real episodes, reproducible per seed."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from tests.tooluse_agents.backends.test_hf_agent import _config as hf_config
from tests.tooluse_agents.backends.test_hf_agent import _episodes
from tooluse_agents.backends.base import AgentRequest, SamplingConfig, chat_prompt
from tooluse_agents.eval.run import run_eval


@pytest.fixture(scope="module")
def agent():
    from tooluse_agents.backends.vllm import VLLMAgent, VLLMAgentConfig

    engine = VLLMAgent(VLLMAgentConfig(model="smollm2-135m", dtype="float32", max_model_len=4096, cpu_kv_cache_gib=1))
    yield engine
    engine.close()


def _config(**overrides):
    return hf_config(**{"agent": "vllm", "num_envs": 3, "dtype": "float32", **overrides})


def test_real_episodes_and_same_seed_same_episodes(agent, tmp_path):
    run_eval(_config(), tmp_path / "a", agent=agent, progress=False)
    run_eval(_config(num_envs=1), tmp_path / "b", agent=agent, progress=False)  # other batches, same seeds
    run_eval(_config(seeds=(1,)), tmp_path / "c", agent=agent, progress=False)
    a, b, c = (_episodes(tmp_path / x / "episodes.jsonl") for x in "abc")
    assert len(a) == 3 and a == b  # per-request seeds: batch composition does not matter
    assert [r["turns"] for r in a] != [r["turns"] for r in c]
    steps = [s for r in a for t in r["turns"] for s in t["steps"]]
    assert steps and all(s["completion_tokens"] > 0 for s in steps)
    assert all(r["agent"]["name"] == "vllm" for r in a)


def test_logprobs_token_ids_and_context_limit(agent):
    long = AgentRequest(
        observation={"messages": [{"role": "user", "content": "word " * 5000}], "tools": []},
        seed=1,
        tool_format="python",
    )
    short = AgentRequest(
        observation={"messages": [{"role": "user", "content": "Say hi."}], "tools": []}, seed=1, tool_format="python"
    )
    overflow, gen = agent.generate([long, short], SamplingConfig(temperature=0.0, max_tokens=8))
    assert overflow.error is not None and overflow.error.type == "context_length_exceeded"
    assert gen.error is None and gen.text and len(gen.token_ids) == len(gen.logprobs) == gen.completion_tokens
    assert all(lp <= 0.0 for lp in gen.logprobs)
    expected = agent.tokenizer(chat_prompt(agent.tokenizer, short.observation), add_special_tokens=False)
    assert gen.prompt_token_ids == tuple(expected["input_ids"]) and gen.prompt_tokens == len(gen.prompt_token_ids)


def test_async_schedule_plays_the_same_episodes_as_lockstep(agent, tmp_path):
    # float32: vLLM's CPU logits do not depend on which requests share an engine step, and every request
    # samples with its own seed, so only the arrival order differs between the schedules.
    config = _config(seeds=(0, 1), num_envs=2)
    steps_before = agent.stats["engine_steps"]
    run_eval(replace(config, schedule="lockstep"), tmp_path / "lockstep", agent=agent, progress=False)
    run_eval(replace(config, schedule="async"), tmp_path / "async", agent=agent, progress=False)
    lockstep, streamed = (_episodes(tmp_path / x / "episodes.jsonl") for x in ("lockstep", "async"))
    assert len(lockstep) == 6 and lockstep == streamed
    assert agent.stats["engine_steps"] > steps_before
    results = json.loads((tmp_path / "async" / "results.json").read_text())
    assert results["schedule"] == "async" and results["agent"]["dtype"] == "float32"
