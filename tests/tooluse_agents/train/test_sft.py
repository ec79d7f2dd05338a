"""The supervised warm-start: oracle examples through the env, the detached-prompt loss, a real training run."""

from __future__ import annotations

import json
from pathlib import Path

import gymnasium as gym
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from tooluse_agents.backends.base import chat_prompt  # noqa: E402
from tooluse_agents.models.resolve import resolve_model  # noqa: E402
from tooluse_agents.train.grpo.tasks import TRAIN_PROTOCOL  # noqa: E402
from tooluse_agents.train.policy import Policy  # noqa: E402
from tooluse_agents.train.settings import PolicyConfig  # noqa: E402
from tooluse_agents.train.sft import SFTConfig, batch_nll, build_examples, main, task_order  # noqa: E402

WARMUP = str(Path(__file__).resolve().parents[3] / "scenarios" / "curriculum" / "warmup.yaml")


@pytest.fixture(scope="module")
def tiny():
    path = resolve_model("tiny-random")
    tokenizer = transformers.AutoTokenizer.from_pretrained(path)
    model = transformers.AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)
    return model, tokenizer


def test_examples_are_the_oracle_steps_rendered_as_the_agents_render_them(tiny):
    _, tokenizer = tiny
    config = SFTConfig(scenarios=WARMUP, limit=10, protocol=TRAIN_PROTOCOL.with_defaults(system_prompt="strong"))
    examples = build_examples(config, tokenizer)
    # One example per assistant step: each turn is its calls, then a closing message.
    env = gym.make("ToolUse-Scenario-v0", path=WARMUP, system_prompt="strong", tool_format="json")
    first = examples[0]
    observation, _ = env.reset(seed=0, options={"task_id": first.task_id})
    rendered = tokenizer(chat_prompt(tokenizer, observation), add_special_tokens=False)["input_ids"]
    assert first.prompt_ids == tuple(rendered)
    assert tokenizer.decode(first.completion_ids[:-1]).startswith("<tool_call>")
    assert first.completion_ids[-1] == tokenizer.eos_token_id
    closing = [e for e in examples if e.step == 1]
    assert closing and all(tokenizer.decode(e.completion_ids[:-1]) == "Done." for e in closing)
    tasks = {e.task_id for e in examples}
    assert len(tasks) == 10
    # A later step's prompt extends the earlier one: the history is rendered as the model saw it.
    second = next(e for e in examples if e.task_id == first.task_id and e.step == 1)
    assert second.prompt_ids[: len(first.prompt_ids)] == first.prompt_ids


def test_task_order_keeps_steps_together_and_is_seeded(tiny):
    import random

    _, tokenizer = tiny
    examples = build_examples(SFTConfig(scenarios=WARMUP, limit=6), tokenizer)
    order = task_order(examples, random.Random(0))
    assert sorted(order, key=id) == sorted(examples, key=id)
    seen: list[str] = []
    for e in order:
        if not seen or seen[-1] != e.task_id:
            assert e.task_id not in seen  # a task's steps are contiguous
            seen.append(e.task_id)
    assert order == task_order(examples, random.Random(0))


def test_the_detached_prompt_loss_equals_the_full_forward(tiny):
    _, tokenizer = tiny
    policy = Policy.load(
        PolicyConfig(model="tiny-random", dtype="float32", autocast=None, gradient_checkpointing=False)
    )
    examples = build_examples(SFTConfig(scenarios=WARMUP, limit=4), tokenizer)
    batch = examples[:5]  # several tasks' steps: the common prefix is the system text, later steps extend earlier ones
    assert len({e.task_id for e in batch}) > 1
    with torch.no_grad():
        shared = batch_nll(policy, batch, detach_prompt=True)
        full = batch_nll(policy, batch, detach_prompt=False)
        one_by_one = sum(batch_nll(policy, [e], detach_prompt=False) for e in batch)
    assert shared == pytest.approx(full, rel=1e-4) and full == pytest.approx(one_by_one, rel=1e-6)
    assert full > 0


def test_a_short_run_lowers_the_loss_and_saves_a_loadable_model(tmp_path):
    out = tmp_path / "warm"
    args = ["--model", "tiny-random", "--scenarios", WARMUP, "--limit", "3", "--epochs", "3", "--lr", "1e-3"]
    code = main([*args, "--batch-size", "2", "--out", str(out)])
    assert code == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["tasks"] == 3 and summary["examples"] >= 6
    first, *_, last = summary["epoch_loss"]
    assert last < first
    rows = [json.loads(line) for line in (out / "sft.jsonl").read_text().splitlines()]
    assert len(rows) == summary["steps"] and {"loss", "grad_norm", "lr", "epoch"} <= set(rows[0])
    assert (out / "epoch_1" / "config.json").is_file() and not (out / "model.partial").exists()
    reloaded = transformers.AutoModelForCausalLM.from_pretrained(out / "model")
    original = transformers.AutoModelForCausalLM.from_pretrained(resolve_model("tiny-random"))
    changed = [
        name
        for (name, p), q in zip(reloaded.named_parameters(), original.parameters(), strict=True)
        if not torch.equal(p, q)
    ]
    assert changed


def test_bad_settings_are_refused():
    with pytest.raises(ValueError, match="epochs"):
        SFTConfig(epochs=0)
    with pytest.raises(ValueError, match="lr"):
        SFTConfig(lr=0.0)


def test_config_file_flags_and_overrides_merge_in_that_order(tmp_path):
    from tooluse_agents.train.sft import build_parser, config_from_args

    path = tmp_path / "sft.yaml"
    path.write_text("epochs: 3\nlr: 2.0e-5\nbatch_size: 4\nprotocol: {template: context}\n")
    args = build_parser().parse_args(["--config", str(path), "--epochs", "2", "batch_size=16", "--reasoning", "strip"])
    config = config_from_args(args)
    assert (config.epochs, config.lr, config.batch_size) == (2, 2e-5, 16)  # flag over file, override over both
    assert (config.protocol.template, config.protocol.reasoning) == ("context", "strip")
    assert config.protocol.tool_format == SFTConfig().protocol.tool_format  # the rest: the training protocol
    assert config_from_args(build_parser().parse_args([])) == SFTConfig()
    with pytest.raises(ValueError, match=r"epochs: expected int, got 'two'"):
        config_from_args(build_parser().parse_args(["epochs=two"]))
    with pytest.raises(ValueError, match="unknown SFTConfig keys"):
        config_from_args(build_parser().parse_args(["epoch=2"]))
