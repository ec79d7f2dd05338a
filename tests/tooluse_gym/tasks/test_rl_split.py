"""The published RL split of BFCL multi-turn: reproducible, stratified, no held-out task reachable from training."""

from __future__ import annotations

import json
from collections import Counter

import gymnasium as gym
import pytest

import tooluse_gym  # noqa: F401  (registers the ids)
from tooluse_gym.envs.sources import source_pool
from tooluse_gym.tasks import bfcl, bfcl_data, rl_split

SPLIT = rl_split.load_split()
TASKS = {t.task_id: t for t in bfcl.load_bfcl_tasks("all")}


def _sides():
    return [TASKS[i] for i in SPLIT["splits"]["train"]], [TASKS[i] for i in SPLIT["splits"]["heldout"]]


def test_the_split_file_reproduces_from_its_rule_and_names_its_data():
    assert (SPLIT["name"], SPLIT["seed"], SPLIT["heldout_fraction"]) == (
        rl_split.SPLIT_NAME,
        rl_split.SEED,
        rl_split.HELDOUT_FRACTION,
    )
    assert SPLIT["rule"] == rl_split.RULE and SPLIT["bfcl_version"] == bfcl.bfcl_version()
    files = bfcl_data.multi_turn_files(list(bfcl.CATEGORIES), backends=())
    assert SPLIT["data_sha256"] == dict(bfcl_data.digests(files)) and len(SPLIT["data_sha256"]) == 8
    assert SPLIT["splits"] == rl_split.make_split(list(TASKS.values()))


def test_the_sides_cover_the_800_tasks_without_overlap():
    train, heldout = SPLIT["splits"]["train"], SPLIT["splits"]["heldout"]
    assert not set(train) & set(heldout)
    assert sorted(train + heldout) == sorted(TASKS) and len(TASKS) == 800


def test_each_category_holds_out_a_quarter():
    train, heldout = _sides()
    assert Counter(t.category for t in heldout) == dict.fromkeys(bfcl.CATEGORIES, 50)
    assert Counter(t.category for t in train) == dict.fromkeys(bfcl.CATEGORIES, 150)


def test_no_training_task_shares_a_state_and_ground_truth_with_a_held_out_one():
    train, heldout = _sides()

    def state(t):
        return json.dumps(t.initial_config, sort_keys=True, default=str)

    held = {(state(t), repr(t.ground_truth)) for t in heldout}
    assert not [t.task_id for t in train if (state(t), repr(t.ground_truth)) in held]
    # stronger: no shared initial state, first message or BFCL index at all
    assert not {state(t) for t in train} & {state(t) for t in heldout}
    assert not {repr(t.turns[0]) for t in train} & {repr(t.turns[0]) for t in heldout}
    assert not {rl_split.task_index(t.task_id) for t in train} & {rl_split.task_index(t.task_id) for t in heldout}


def test_linked_groups_join_indices_with_a_shared_state_or_question():
    groups = rl_split.linked_groups(list(TASKS.values()))
    assert sorted(i for g in groups for i in g) == list(range(200))
    assert (66, 70, 74) in groups and (40, 43) in groups  # a shared initial state; a shared first message


def test_the_env_plays_one_side_and_its_card_names_the_split():
    env = gym.make("ToolUse-MultiTurn-v0", category="all", split="heldout")
    assert [t.task_id for t in env.unwrapped.tasks] == SPLIT["splits"]["heldout"]
    card = env.reset(seed=0)[1]["protocol"]
    assert card["extra"]["split"] == f"{rl_split.SPLIT_NAME}:heldout" and card["category"] == "all"
    env.close()
    plain = gym.make("ToolUse-MultiTurn-v0", task_ids=["multi_turn_base_0"], category="base")
    assert "split" not in plain.reset(seed=0)[1]["protocol"]["extra"]
    plain.close()


def test_a_held_out_task_is_refused_by_name_on_the_training_side():
    held = SPLIT["splits"]["heldout"][0]
    with pytest.raises(ValueError, match="not in the train split"):
        gym.make("ToolUse-MultiTurn-v0", category="all", task_ids=[held], split="train")
    with pytest.raises(ValueError, match="split must be one of"):
        gym.make("ToolUse-MultiTurn-v0", split="test")


def test_a_task_source_takes_the_split():
    pool = source_pool({"kind": "bfcl", "category": "all", "split": "train"})
    assert [t.task_id for t in pool.tasks] == SPLIT["splits"]["train"]
    assert pool.label == f"bfcl:all@{rl_split.SPLIT_NAME}:train"
    with pytest.raises(ValueError, match="kind bfcl"):
        source_pool({"kind": "scenario", "path": "scenarios/curriculum/heldout.yaml", "split": "train"})
