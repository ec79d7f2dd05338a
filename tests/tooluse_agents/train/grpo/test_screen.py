"""SPEED-style screening: the decision, the two phases, what a screened prompt leaves, and seeds that do
not depend on screening."""

from __future__ import annotations

import pytest

from tests.tooluse_agents.train.grpo.tiny import PROTOCOL, pool
from tooluse_agents.backends.base import SamplingConfig
from tooluse_agents.backends.oracle import OracleAgent
from tooluse_agents.rollout.seeding import derive_seed
from tooluse_agents.train.grpo.config import load_config
from tooluse_agents.train.grpo.rollouts import Rollout, ScriptedTurns, before_last_turn, play_groups
from tooluse_agents.train.grpo.screen import ScreenConfig, passes, play_screened
from tooluse_agents.train.grpo.tasks import env_factory, prompts_for

REWARDS = {  # member rewards of each prompt's group of 6
    "mixed_early": [1, 0, 1, 1, 0, 0],
    "mixed_late": [0, 0, 1, 0, 1, 1],  # the first 2 agree, the first 3 do not
    "right": [1, 1, 1, 1, 1, 1],
    "wrong": [0, 0, 0, 0, 0, 0],
}


class Recorder:
    """A `Play` that answers from `REWARDS` and records each call's prompts and members."""

    def __init__(self):
        self.calls: list[tuple[list[str], list[int]]] = []

    def __call__(self, prompt_ids, members):
        self.calls.append((list(prompt_ids), list(members)))
        return {pid: [Rollout(pid, m, float(REWARDS[pid][m]), (), {}) for m in members] for pid in prompt_ids}


def test_the_screen_passes_mixed_rewards_only():
    assert passes([1.0, 0.0]) and passes([0.0, 0.0, 1.0])
    assert not passes([1.0, 1.0, 1.0]) and not passes([0.0, 0.0])


def test_two_phases_keep_mixed_screens_and_drop_unanimous_ones():
    play, ids = Recorder(), list(REWARDS)
    step = play_screened(play, ids, 6, ScreenConfig(members=2))
    assert play.calls == [(ids, [0, 1]), (["mixed_early"], [2, 3, 4, 5])]
    assert list(step.groups) == ["mixed_early"]
    assert [r.member for r in step.groups["mixed_early"]] == [0, 1, 2, 3, 4, 5]
    assert [r.reward for r in step.groups["mixed_early"]] == [1, 0, 1, 1, 0, 0]  # the group, whole
    assert {pid: [r.member for r in g] for pid, g in step.screened.items()} == {
        "mixed_late": [0, 1],  # a false negative of a 2-member screen: 0, 0 before 1, 0, 1, 1
        "right": [0, 1],
        "wrong": [0, 1],
    }
    assert list(step.seen) == ids and step.seen["right"] == step.screened["right"]
    assert step.rollouts_saved == 3 * (6 - 2) == 12
    assert step.metrics() == {"screen/screened_prompts": 3, "screen/rollouts_saved": 12}
    wider = play_screened(Recorder(), ids, 6, ScreenConfig(members=3))
    assert sorted(wider.groups) == ["mixed_early", "mixed_late"] and wider.rollouts_saved == 2 * 3


def test_without_a_screen_one_call_and_nothing_screened():
    play = Recorder()
    step = play_screened(play, ["right", "wrong"], 6, None)
    assert play.calls == [(["right", "wrong"], [0, 1, 2, 3, 4, 5])]
    assert not step.screened and step.metrics() == {"screen/screened_prompts": 0, "screen/rollouts_saved": 0}
    everything_screened = Recorder()
    step = play_screened(everything_screened, ["right", "wrong"], 6, ScreenConfig(members=4))
    assert len(everything_screened.calls) == 1 and not step.groups and step.rollouts_saved == 4


def test_screen_settings_are_checked():
    with pytest.raises(ValueError):
        ScreenConfig(members=1)
    with pytest.raises(ValueError):
        load_config(None, ["grpo.group_size=4", "rollout.screen.members=4"])
    with pytest.raises(ValueError):
        play_screened(Recorder(), ["right"], 4, ScreenConfig(members=4))
    config = load_config(None, ["grpo.group_size=8", "rollout.screen={}"])
    assert config.rollout.screen == ScreenConfig(members=4) and load_config(None, []).rollout.screen is None


def test_members_played_in_parts_have_the_seeds_of_the_whole_group():
    prompts = prompts_for(pool(), "next_turn")
    agent = ScriptedTurns(OracleAgent(), before_last_turn)

    def play(members=None):
        return play_groups(
            env_factory(prompts, PROTOCOL),
            agent,
            ["add_2_3@turn1"],
            group_size=4,
            seed=3,
            step=7,
            sampling=SamplingConfig(temperature=1.0, max_tokens=16),
            num_envs=4,
            members=members,
        )["add_2_3@turn1"]

    whole, first, rest = play(), play(range(2)), play(range(2, 4))
    assert [r.member for r in first + rest] == [0, 1, 2, 3]
    assert [r.record.seed for r in first + rest] == [r.record.seed for r in whole]
    assert [r.record.seed for r in whole] == [derive_seed("grpo", 3, 7, "add_2_3@turn1", m) for m in range(4)]
