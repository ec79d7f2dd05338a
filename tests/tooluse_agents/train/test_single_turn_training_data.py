"""The curriculum's single-turn splits as training data: SFT examples and a GRPO prompt pool, built, not trained."""

from __future__ import annotations

import collections
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from tooluse_agents.backends.base import Generation, SamplingConfig  # noqa: E402
from tooluse_agents.backends.oracle import OracleAgent  # noqa: E402
from tooluse_agents.backends.scripted import ScriptedTurns, before_last_turn  # noqa: E402
from tooluse_agents.models.resolve import resolve_model  # noqa: E402
from tooluse_agents.rollout.loop import RolloutJob, run_rollouts  # noqa: E402
from tooluse_agents.train.grpo.tasks import TRAIN_PROTOCOL, TaskSource, env_factory, load_pool, prompts_for  # noqa: E402
from tooluse_agents.train.sft import SFTConfig, build_examples  # noqa: E402
from tooluse_gym.tasks.scenario import load_scenario_set  # noqa: E402

CURRICULUM = Path(__file__).resolve().parents[3] / "scenarios" / "curriculum"
TRAIN = str(CURRICULUM / "single_turn_train.yaml")
HELDOUT = str(CURRICULUM / "single_turn_heldout.yaml")
BFCL_PROTOCOL = TRAIN_PROTOCOL.with_defaults(decoder="bfcl")
"""The training protocol (strong prompt, JSON calls) with BFCL's decoder instead of its lenient one."""


class Prose:
    """An agent that never calls: right only on the irrelevant requests."""

    name = "prose"

    def generate(self, requests, sampling=None):
        return [Generation(text="I cannot do that with these functions.") for _ in requests]

    def describe(self):
        return {"name": self.name}

    def close(self):
        pass


def test_sft_builds_one_example_per_task_from_the_possible_answers():
    tokenizer = transformers.AutoTokenizer.from_pretrained(resolve_model("tiny-random"))
    tasks = {t.task_id: t for t in load_scenario_set(TRAIN).tasks}
    examples = build_examples(SFTConfig(scenarios=TRAIN, protocol=TRAIN_PROTOCOL), tokenizer)
    assert sorted(e.task_id for e in examples) == sorted(tasks)  # one message per request, irrelevant ones too
    for example in examples:
        task = tasks[example.task_id]
        assert example.step == 0 and example.completion_ids[-1] == tokenizer.eos_token_id
        text = tokenizer.decode(example.completion_ids[:-1])
        expected = task.reference_message(0, 0, "json")  # the first possible answer, in <tool_call> blocks
        assert text == expected
        if task.category == "irrelevant":
            assert "<tool_call>" not in text
        else:
            assert text.count("<tool_call>") == len(task.answer)
    # BFCL's decoder builds the same examples (the completion is the possible answer, however it is decoded)
    bfcl = build_examples(SFTConfig(scenarios=TRAIN, protocol=BFCL_PROTOCOL, limit=4), tokenizer)
    assert [e.completion_ids for e in bfcl] == [
        e.completion_ids for e in examples if e.task_id in {b.task_id for b in bfcl}
    ]


def test_a_grpo_prompt_pool_rewards_by_the_env():
    pool = prompts_for(load_pool(TaskSource(source="scenario", path=HELDOUT)), "next_turn")
    assert pool.single_turn and len(pool.tasks) == 132
    assert collections.Counter(t.category for t in pool.tasks) == {
        "one_call": 33,
        "choose": 33,
        "several_calls": 33,
        "irrelevant": 33,
    }
    for protocol in (TRAIN_PROTOCOL, BFCL_PROTOCOL):  # the lenient default, and BFCL's decoder
        make_env = env_factory(pool, protocol)
        jobs = [RolloutJob(t.task_id, 0) for t in pool.tasks]
        sampling = SamplingConfig()
        oracle = run_rollouts(make_env, ScriptedTurns(OracleAgent(), before_last_turn), jobs, sampling=sampling)
        assert sorted(e.record.reward for e in oracle) == [1.0] * 132
        assert {e.record.protocol["decoder"] for e in oracle} == {protocol.decoder}
        prose = run_rollouts(make_env, ScriptedTurns(Prose(), before_last_turn), jobs, sampling=sampling)
        by_tier = collections.defaultdict(list)
        for episode in prose:
            task = next(t for t in pool.tasks if t.task_id == episode.record.task_id)
            by_tier[task.category].append((episode.record.reward, episode.record.error_type))
        # JSON calls expected and none written: BFCL's count error of the category's checker, under either decoder
        assert {tier: set(results) for tier, results in by_tier.items()} == {
            "irrelevant": {(1.0, None)},
            "one_call": {(0.0, "simple_function_checker:wrong_count")},
            "choose": {(0.0, "multiple_function_checker:wrong_count")},
            "several_calls": {(0.0, "parallel_function_checker_no_order:wrong_count")},
        }
