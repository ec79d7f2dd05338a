"""`EnvSettings`: JSON-able settings in, the env `gymnasium.make` would build out; bad settings refused."""

from __future__ import annotations

import json

import pytest

from tooluse_gym.envs import MEMORY_ID, MULTI_TURN_ID, SCENARIO_ID, SINGLE_TURN_ID
from tooluse_gym.envs.settings import EnvSettings, env_groups, env_id_for, make_env
from tooluse_gym.envs.tool_env import task_ids


def test_round_trip_through_json():
    settings = EnvSettings(SINGLE_TURN_ID, task_ids=["simple_python_0"], knobs={"system_prompt": "none"})
    again = EnvSettings.from_dict(json.loads(json.dumps(settings.to_dict())))
    assert again == settings
    assert again.task_ids == ("simple_python_0",)


@pytest.mark.parametrize(
    ("env_id", "ids", "category"),
    [
        (MULTI_TURN_ID, None, "base"),
        (MULTI_TURN_ID, ("multi_turn_miss_func_0",), "all"),
        (SINGLE_TURN_ID, None, "simple_python"),
        (SINGLE_TURN_ID, ("live_simple_0-0-0",), "single_turn"),
    ],
)
def test_the_default_category_depends_on_task_ids(env_id, ids, category):
    assert EnvSettings(env_id, task_ids=ids).source_kwargs() == {"category": category}


def test_make_builds_the_env_with_the_knobs():
    env = make_env(MULTI_TURN_ID, task_ids=["multi_turn_base_0"], system_prompt="none")
    _, info = env.reset(seed=0)
    assert task_ids(env) == ["multi_turn_base_0"]
    assert info["protocol"]["system_prompt"] == "none"
    env.close()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"env_id": "ToolUse-Tasks-v0"}, "env_id must be one of"),
        ({"env_id": MULTI_TURN_ID, "scenario_path": ("x.yaml",)}, "scenario_path is for ToolUse-Scenario-v0"),
        ({"env_id": SCENARIO_ID}, "needs scenario_path"),
    ],
)
def test_settings_of_another_env_id_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        EnvSettings(**kwargs)


def test_unknown_keys_are_refused():
    with pytest.raises(ValueError, match="unknown env settings"):
        EnvSettings.from_dict({"env_id": MULTI_TURN_ID, "categroy": "base"})


def test_env_id_for_categories():
    assert env_id_for(None, None) == MULTI_TURN_ID
    assert env_id_for(["simple_python", "live"], None) == SINGLE_TURN_ID
    assert env_id_for(["base"], ["scenarios/x.yaml"]) == SCENARIO_ID
    assert env_id_for(["memory_kv", "memory"], None) == MEMORY_ID
    with pytest.raises(ValueError, match="span several envs"):
        env_id_for(["base", "simple_python"], None)


def test_env_groups_split_categories_by_env_in_the_order_given():
    assert env_groups(["memory_kv", "base", "simple_python", "miss_func", "live"], None) == [
        (MEMORY_ID, ("memory_kv",)),
        (MULTI_TURN_ID, ("base", "miss_func")),
        (SINGLE_TURN_ID, ("simple_python", "live")),
    ]
    assert env_groups(["bfcl"], None) == [
        (SINGLE_TURN_ID, ("single_turn",)),
        (MULTI_TURN_ID, ("all",)),
        (MEMORY_ID, ("memory",)),
    ]
    assert env_groups(None, None) == [(MULTI_TURN_ID, ())]
