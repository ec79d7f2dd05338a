"""The trainer on a tiny model over real MathAPI tasks: a two-step smoke run, token masking, and exact resume."""

from __future__ import annotations

import dataclasses
import json

import pytest
import torch
import yaml

from tests.tooluse_agents.train.grpo.tiny import PROTOCOL, pool
from tooluse_agents.backends.base import SamplingConfig
from tooluse_agents.runs.runlog import EVAL_KEY, METRIC_KEYS
from tooluse_agents.train.grpo.config import load_config
from tooluse_agents.train.grpo.rollouts import ScriptedTurns, before_last_turn, play_groups
from tooluse_agents.train.grpo.tasks import env_factory, prompts_for
from tooluse_agents.train.grpo.trainer import GRPOTrainer, RunConflict


def _config(model, run_dir, *overrides):
    base = [
        f"policy.model={model}",
        "policy.gradient_checkpointing=false",
        "policy.threads=1",
        "policy.autocast=null",  # fp32 compute: the exact-resume and equality checks were written for it
        f"run_dir={run_dir}",
        "grpo.group_size=4",
        "grpo.update_size=2",
        "grpo.prompts_per_step=1",
        "epochs=2",
        "update.lr=1.0e-3",
        "rollout.max_tokens=16",
        "rollout.num_envs=4",
        "save_every=1",
        "export_final=false",
    ]
    config = load_config(None, [*base, *overrides])
    return dataclasses.replace(config, protocol=PROTOCOL)


def tiny_trainer(model, run_dir, *overrides, heldout: bool = True) -> GRPOTrainer:
    """A trainer of the tiny model on the tiny pool (and held out on it too, unless `heldout` is false)."""
    pools = {"train_pool": pool(), **({"heldout_pool": pool()} if heldout else {})}
    return GRPOTrainer(_config(model, run_dir, *overrides), **pools, progress=False)


def _read(path):
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_two_steps_change_parameters_and_write_every_metric(tiny_model, tmp_path):
    trainer = tiny_trainer(tiny_model, tmp_path / "run", "max_steps=2", "eval.every_steps=2")
    before = trainer.policy.trainable_state()
    trainer.train()
    after = trainer.policy.trainable_state()
    assert any(not torch.equal(before[k], after[k]) for k in before)
    metrics = _read(tmp_path / "run" / "metrics.jsonl")
    assert [m["step"] for m in metrics] == [1, 2]
    for m in metrics:
        assert set(METRIC_KEYS) <= set(m)
        assert m["subsample/generated"] == 4 and m["subsample/used"] == 2
        assert m["groups/all_correct_frac"] + m["groups/all_wrong_frac"] + m["groups/mixed_frac"] == pytest.approx(1)
    assert EVAL_KEY not in metrics[0] and 0.0 <= metrics[1][EVAL_KEY] <= 1.0
    # a parameter change needs a non-zero advantage: at least one group had mixed rewards
    assert any(m["groups/mixed_frac"] > 0 for m in metrics)
    episodes = _read(tmp_path / "run" / "episodes.jsonl")
    assert len(episodes) == 8 and sum(e["train"]["used"] for e in episodes) == 4
    assert all(e["task_id"].endswith("@turn1") and "turns" in e and "reward" in e for e in episodes)
    assert [e["step"] for e in _read(tmp_path / "run" / "eval.jsonl")] == [0, 2]
    state = json.loads((tmp_path / "run" / "checkpoints" / "step_000002" / "state.json").read_text())
    assert state["step"] == 2 and set(state["filter"]) == {"add_2_3@turn1", "mul_4_5@turn1"}
    assert (tmp_path / "run" / "config.yaml").is_file()


def test_the_hf_engine_generates_in_the_updates_compute_dtype(tiny_model, tmp_path):
    from tooluse_agents.backends.base import AgentRequest

    fp32 = tiny_trainer(tiny_model, tmp_path / "a", heldout=False)
    assert fp32.agent.config.autocast is None  # policy.autocast=null: fp32 compute everywhere
    bf16 = tiny_trainer(tiny_model, tmp_path / "b", "policy.autocast=bfloat16", heldout=False)
    assert bf16.agent.config.autocast == "bfloat16" and bf16.agent.describe()["autocast"] == "bfloat16"
    observation = {"messages": [{"role": "user", "content": "add 2 and 3"}], "tools": []}
    request = AgentRequest(observation=observation, seed=0, tool_format="python")
    sampling = SamplingConfig(temperature=0.0, max_tokens=8)
    seen = []
    bf16.agent.model.register_forward_hook(lambda module, args, out: seen.append(out.logits.dtype))
    (generation,) = bf16.agent.generate([request], sampling)
    assert generation.token_ids and seen and set(seen) == {torch.bfloat16}  # the weights stay fp32
    assert next(bf16.agent.model.parameters()).dtype == torch.float32


def test_keep_checkpoints_0_writes_none(tiny_model, tmp_path):
    tiny_trainer(tiny_model, tmp_path / "run", "max_steps=1", "keep_checkpoints=0", heldout=False).train()
    assert [m["step"] for m in _read(tmp_path / "run" / "metrics.jsonl")] == [1]
    assert not any((tmp_path / "run" / "checkpoints").glob("step_*"))
    with pytest.raises(ValueError, match="keep_checkpoints"):
        load_config(None, ["keep_checkpoints=-1"])


def test_only_generated_tokens_are_samples(tiny_model):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from tooluse_agents.backends.hf import HFAgent, HFAgentConfig

    torch.set_num_threads(1)
    model, tokenizer = AutoModelForCausalLM.from_pretrained(tiny_model), AutoTokenizer.from_pretrained(tiny_model)
    hf = HFAgent(HFAgentConfig(model=str(tiny_model)), model=model, tokenizer=tokenizer)
    agent = ScriptedTurns(hf, before_last_turn)
    prompts = prompts_for(pool(), "next_turn")
    groups = play_groups(
        env_factory(prompts, PROTOCOL),
        agent,
        ["add_2_3@turn1"],
        group_size=3,
        seed=0,
        step=0,
        sampling=SamplingConfig(temperature=1.0, max_tokens=16),
        num_envs=3,
    )
    for rollout in groups["add_2_3@turn1"]:
        turns = rollout.record.turns
        assert turns[0].steps[0].assistant == "Done."  # the oracle's scripted turn: no tokens recorded
        model_steps = turns[1].steps
        assert len(rollout.steps) == len(model_steps) >= 1
        for tokens, step in zip(rollout.steps, model_steps, strict=True):
            assert tokenizer.decode(tokens.completion_ids, skip_special_tokens=True) == step.assistant
            prompt = tokenizer.decode(tokens.prompt_ids)
            assert prompt.endswith("<|im_start|>assistant\n") and "Add 2 and 3." in prompt and "Done." in prompt
        if len(model_steps) > 1:  # the tool result is part of the next prompt, never of a completion
            result = model_steps[0].results[0]
            assert result in tokenizer.decode(rollout.steps[1].prompt_ids)
            assert result not in tokenizer.decode(rollout.steps[1].completion_ids)


def _without_timing(records):
    out = []
    for r in records:
        r = {k: v for k, v in r.items() if not k.startswith(("time/", "perf/")) and k != "duration_s"}
        for turn in r.get("turns", []):
            for step in turn["steps"]:
                step.pop("latency_s")
        out.append(r)
    return out


def test_killed_run_resumes_exactly(tiny_model, tmp_path):
    straight = tiny_trainer(tiny_model, tmp_path / "a", "max_steps=3", heldout=False)
    straight.train()
    tiny_trainer(tiny_model, tmp_path / "b", "max_steps=2", heldout=False).train()
    # what a kill during step 3 leaves behind: a metrics line and a torn episode line past the checkpoint
    with (tmp_path / "b" / "metrics.jsonl").open("a") as f:
        f.write(json.dumps({"step": 3, "epoch": 2}) + "\n")
    with (tmp_path / "b" / "episodes.jsonl").open("a") as f:
        f.write('{"task_id": "add_2_3@turn1", "train": {"st')
    resumed = tiny_trainer(tiny_model, tmp_path / "b", "max_steps=3", heldout=False)
    assert resumed.step == 2
    resumed.train()
    a, b = straight.policy.trainable_state(), resumed.policy.trainable_state()
    assert all(torch.equal(a[k], b[k]) for k in a)
    for name in ("metrics.jsonl", "episodes.jsonl"):
        assert _without_timing(_read(tmp_path / "a" / name)) == _without_timing(_read(tmp_path / "b" / name))
    with pytest.raises(RunConflict):
        tiny_trainer(tiny_model, tmp_path / "b", "update.lr=0.5", heldout=False)
    # a run written before a config key existed resumes (the key reads as its default) ...
    saved = yaml.safe_load((tmp_path / "b" / "config.yaml").read_text())
    del saved["update"]["skip_zero_advantage"]
    (tmp_path / "b" / "config.yaml").write_text(yaml.safe_dump(saved))
    assert tiny_trainer(tiny_model, tmp_path / "b", "max_steps=4", heldout=False).step == 3
    # ... and one with a key this version does not know is refused, not silently resumed
    saved["update"]["no_such_knob"] = 1
    (tmp_path / "b" / "config.yaml").write_text(yaml.safe_dump(saved))
    with pytest.raises(RunConflict, match="cannot read"):
        tiny_trainer(tiny_model, tmp_path / "b", "max_steps=4", heldout=False)
