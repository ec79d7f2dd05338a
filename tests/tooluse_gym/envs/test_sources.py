"""`ToolUse-Tasks-v0` over a JSON task source: the same tasks and card as over the pool GRPO builds."""

from __future__ import annotations

import json

import gymnasium as gym
import pytest
from gymnasium.envs.registration import EnvSpec

from tooluse_agents.train.grpo.tasks import TRAIN_PROTOCOL, TaskSource, env_factory, load_pool, prompts_for
from tooluse_gym.envs.builder import TASKS_ENV_ID
from tooluse_gym.envs.sources import source_pool

SCENARIOS = "scenarios/curriculum/heldout.yaml"


@pytest.mark.parametrize(
    ("source", "mode"),
    [
        (TaskSource(category="base", limit=2), "next_turn"),
        (TaskSource(category="miss_func", task_ids=("multi_turn_miss_func_3",)), "episode"),
        (TaskSource(source="scenario", path=SCENARIOS, limit=3), "next_turn"),
    ],
)
def test_a_source_spec_builds_the_env_grpo_builds_over_its_pool(source, mode):
    spec = source.spec(mode)
    assert json.loads(json.dumps(spec)) == spec
    pooled = env_factory(prompts_for(load_pool(source), mode), TRAIN_PROTOCOL)()
    env = gym.make(TASKS_ENV_ID, source=spec, **TRAIN_PROTOCOL.to_dict())
    assert [t.task_id for t in env.unwrapped.tasks] == [t.task_id for t in pooled.unwrapped.tasks]
    assert env.reset(seed=3) == pooled.reset(seed=3)
    again = gym.make(EnvSpec.from_json(env.spec.to_json()))  # the spec is JSON: it rebuilds the env anywhere
    assert again.reset(seed=3)[1]["protocol"] == env.reset(seed=3)[1]["protocol"]
    for e in (env, pooled, again):
        e.close()


def test_next_turn_prompts_cut_each_checked_turn():
    pool = source_pool({"kind": "bfcl", "task_ids": ["multi_turn_base_0"], "next_turn": True})
    whole = source_pool({"kind": "bfcl", "task_ids": ["multi_turn_base_0"]}).tasks[0]
    checked = [i for i in range(whole.num_turns) if whole.ground_truth[i]]
    assert [t.task_id for t in pool.tasks] == [f"multi_turn_base_0@turn{i}" for i in checked]
    assert [t.num_turns for t in pool.tasks] == [i + 1 for i in checked]
    assert pool.label == "bfcl:base"


def test_bad_sources_are_refused():
    with pytest.raises(ValueError, match="unknown task source keys"):
        source_pool({"kind": "bfcl", "categroy": "base"})
    with pytest.raises(ValueError, match="kind must be one of"):
        source_pool({"kind": "csv"})
    with pytest.raises(ValueError, match="needs a path"):
        source_pool({"kind": "scenario"})
    with pytest.raises(TypeError, match="one of a task source"):
        gym.make(TASKS_ENV_ID)
    with pytest.raises(TypeError, match="one of a task source"):
        gym.make(TASKS_ENV_ID, source={"kind": "bfcl"}, pool=load_pool(TaskSource(limit=1)))
