"""TRL's real `GRPOTrainer` with our rollout function: the tiny taught model, 2 steps, rewards from our checker.

The tasks are `tests.tooluse_agents.train.grpo.tiny`'s MathAPI tasks as next-turn prompts: the oracle closes the
greeting turn, and the model plays the turn it was taught. About 0.4 of its answers are right, so
GRPO groups come out mixed and a step moves the weights.
"""

from __future__ import annotations

import logging
import warnings

import gymnasium as gym
import pytest

from tests.tooluse_agents.train.grpo.tiny import PROTOCOL, build_tiny_model, pool
from tooluse_agents.integrations import trl as tooluse_trl
from tooluse_agents.train.grpo.rollouts import before_last_turn
from tooluse_agents.train.grpo.tasks import env_factory, prompts_for

pytest.importorskip("trl")


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model")


def grpo_args(tmp_path, **overrides):
    """A CPU run's `GRPOConfig`: fp32, no gradient checkpointing, nothing saved or reported."""
    from trl import GRPOConfig

    settings = dict(
        output_dir=str(tmp_path / "out"),
        use_cpu=True,
        bf16=False,
        gradient_checkpointing=False,
        per_device_train_batch_size=8,
        num_generations=4,
        max_steps=2,
        learning_rate=1e-3,
        max_completion_length=128,
        temperature=1.0,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        disable_tqdm=True,
        seed=0,
    )
    return GRPOConfig(**{**settings, **overrides})


def replay(make_env, record):
    """The episode's messages sent straight into a fresh env: its final reward and checker verdict."""
    env = make_env()
    env.reset(seed=record["seed"], options={"task_id": record["task_id"]})
    messages = [step["assistant"] for turn in record["turns"] for step in turn["steps"]]
    for i, text in enumerate(messages):
        _, reward, terminated, truncated, info = env.step(text)
        if terminated or truncated:
            assert i == len(messages) - 1
            return reward, info["checker"]
    raise AssertionError(f"{record['task_id']}: the replay did not end")


def test_grpo_trainer_trains_on_our_episodes(tiny_model, tmp_path, monkeypatch):
    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOTrainer

    make_env = env_factory(prompts_for(pool(), "next_turn"), PROTOCOL)
    train = tooluse_trl.dataset(make_env)
    assert sorted(train["prompt"]) == ["add_2_3@turn1", "mul_4_5@turn1"]
    rollout = tooluse_trl.make_rollout_func(make_env, max_new_tokens=16, scripted=before_last_turn)
    outputs, scored = [], []

    def recorded_rollout(prompts, trainer):
        out = rollout(prompts, trainer)
        outputs.append((list(prompts), out))
        return out

    def checker(completions, **kwargs):
        rewards = tooluse_trl.checker_reward(completions, **kwargs)
        scored.append((rewards, kwargs["tooluse_checker"], kwargs["task_id"]))
        return rewards

    model = AutoModelForCausalLM.from_pretrained(tiny_model, dtype=torch.float32)
    tokenizer = AutoTokenizer.from_pretrained(tiny_model)
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    args = grpo_args(tmp_path)
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=checker,
        args=args,
        train_dataset=train,
        processing_class=tokenizer,
        rollout_func=recorded_rollout,
    )
    trainer.train()
    rollout.close()

    # the rollout function played one episode per prompt TRL gave it (each task 4 times per step)
    assert len(outputs) == 2
    for prompts, out in outputs:
        assert len(prompts) == 8 and all(len(out[key]) == 8 for key in out)
        for prompt, record in zip(prompts, out["tooluse_episode"], strict=True):
            assert record["task_id"] == prompt and record["error"] is None
        for completion, mask, logprobs in zip(out["completion_ids"], out["env_mask"], out["logprobs"], strict=True):
            assert len(completion) == len(mask) == len(logprobs) and 1 in mask
            assert all(lp == 0.0 for lp, m in zip(logprobs, mask, strict=True) if m == 0)
            assert all(lp <= 0.0 for lp in logprobs) and any(lp < 0.0 for lp in logprobs)
        # the oracle's greeting turn is in the prompt; the model's turn starts the completion
        for prompt_ids in out["prompt_ids"]:
            text = tokenizer.decode(prompt_ids)
            assert "Hello." in text and "Done." in text and text.endswith("<|im_start|>assistant\n")

    # rewards are our checker's verdicts, and the same messages sent straight into the env get the same ones
    flat = [
        (reward, verdict, record)
        for (rewards, verdicts, _), (_, out) in zip(scored, outputs, strict=True)
        for reward, verdict, record in zip(rewards, verdicts, out["tooluse_episode"], strict=True)
    ]
    assert len(flat) == 16
    for reward, verdict, record in flat:
        assert reward == (1.0 if verdict["valid"] else 0.0) == record["reward"]
        assert replay(make_env, record) == (reward, verdict)
    assert {reward for reward, _, _ in flat} == {0.0, 1.0}

    # a right answer ran its call: the tool result went in as env tokens (mask 0) between the model's messages
    for _, out in outputs:
        for completion, mask, reward, record in zip(
            out["completion_ids"], out["env_mask"], out["tooluse_reward"], out["tooluse_episode"], strict=True
        ):
            if reward == 1.0:
                env_text = tokenizer.decode([t for t, m in zip(completion, mask, strict=True) if m == 0])
                first = record["turns"][-1]["steps"][0]["results"]  # the model's first message of its turn
                assert first and all(r in env_text for r in first)
                assert mask[0] == 1 and 0 in mask

    after = dict(trainer.model.named_parameters())
    assert any(not torch.equal(before[name], after[name].detach()) for name in before)
    logged = [entry for entry in trainer.state.log_history if "reward" in entry]
    assert logged and any("tooluse/error_frac" in entry for entry in logged)


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def test_generation_passes_one_generation_config(tiny_model, tmp_path, monkeypatch):
    """transformers' generate warns when it gets a `generation_config` and generation arguments beside it.

    The warning goes through transformers' logger (``logger.warning_once``: once per process,
    so the cache is cleared first), not `warnings`. The adapter passes one config; a direct
    call with both shows that the capture sees the warning.
    """
    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging as hf_logging
    from trl import GRPOTrainer

    make_env = env_factory(prompts_for(pool(), "next_turn"), PROTOCOL)
    rollout = tooluse_trl.make_rollout_func(make_env, max_new_tokens=4, scripted=before_last_turn)
    trainer = GRPOTrainer(
        model=AutoModelForCausalLM.from_pretrained(tiny_model, dtype=torch.float32),
        reward_funcs=tooluse_trl.checker_reward,
        args=grpo_args(tmp_path, per_device_train_batch_size=2, num_generations=2, max_completion_length=32),
        train_dataset=tooluse_trl.dataset(make_env),
        processing_class=AutoTokenizer.from_pretrained(tiny_model),
        rollout_func=rollout,
    )
    deprecated = "Passing `generation_config` together with generation-related arguments"
    records, root, verbosity = _Records(), logging.getLogger("transformers"), hf_logging.get_verbosity()
    root.addHandler(records)
    hf_logging.set_verbosity_warning()
    try:
        hf_logging.warning_once.cache_clear()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = rollout(["add_2_3@turn1", "add_2_3@turn1"], trainer)
        ours = list(records.messages)
        hf_logging.warning_once.cache_clear()
        prompt = torch.tensor([out["prompt_ids"][0]])
        trainer.model.generate(input_ids=prompt, generation_config=trainer.generation_config, max_new_tokens=2)
    finally:
        root.removeHandler(records)
        hf_logging.set_verbosity(verbosity)
        rollout.close()

    assert all(1 in mask for mask in out["env_mask"])  # the adapter generated: each episode holds model tokens
    assert not [m for m in ours if deprecated in m]
    assert not [w for w in caught if deprecated in str(w.message)]
    assert [m for m in records.messages[len(ours) :] if deprecated in m]  # the control: both at once warns


def test_the_rollout_function_refuses_what_it_cannot_play():
    with pytest.raises(TypeError, match="knobs"):
        tooluse_trl.make_rollout_func(lambda: gym.make("ToolUse-MultiTurn-v0"), category="base")
    with pytest.raises(ValueError, match="on_prefix_break"):
        tooluse_trl.make_rollout_func(on_prefix_break="ignore")
    with pytest.raises(ValueError, match="no tasks"):
        tooluse_trl.dataset(category="base", task_ids=["multi_turn_base_0", "no_such_task"])
    with pytest.raises(ValueError, match="tooluse_reward"):
        tooluse_trl.checker_reward(["a completion"])
