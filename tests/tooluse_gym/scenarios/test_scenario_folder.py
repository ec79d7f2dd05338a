"""Every file under scenarios/ validates, and its ground truth replays to reward 1.0 through the Gym API."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import pytest

import tooluse_gym  # noqa: F401
from tests._reference.scripted import play_reference
from tooluse_gym.tasks.scenario import load_scenario_set, scenario_files
from tooluse_gym.tools.runtime import ToolRuntime

ROOT = Path(__file__).resolve().parents[3]
SCENARIOS = ROOT / "scenarios"
CURRICULUM = SCENARIOS / "curriculum"
FILES = scenario_files(SCENARIOS)


GENERATED = ("train.yaml", "heldout.yaml", "warmup.yaml", "single_turn_train.yaml", "single_turn_heldout.yaml")


def test_the_folder_holds_the_curriculum():
    assert {f.name for f in FILES} >= set(GENERATED)


@pytest.mark.parametrize("path", FILES, ids=[str(f.relative_to(SCENARIOS)) for f in FILES])
def test_every_scenario_replays_to_reward_one(path):
    tasks = load_scenario_set(path).tasks
    env = gym.make("ToolUse-Scenario-v0", path=path, system_prompt="strong", tool_format="json")
    failed = [t.task_id for t in tasks if play_reference(env, t.task_id)[0] != 1.0]
    assert not failed


def test_curriculum_size_tiers_and_disjoint_splits():
    train = load_scenario_set(CURRICULUM / "train.yaml").tasks
    heldout = load_scenario_set(CURRICULUM / "heldout.yaml").tasks
    warmup = load_scenario_set(CURRICULUM / "warmup.yaml").tasks
    assert len(train) + len(heldout) >= 300
    tiers = {"literal", "from_state", "two_calls", "two_turns", "recover"}
    assert {t.category for t in train} == tiers == {t.category for t in heldout} == {t.category for t in warmup}

    def content(t):
        return repr((dict(t.initial_config), t.turns, t.ground_truth))

    splits = (train, heldout, warmup)
    for i, a in enumerate(splits):
        for b in splits[i + 1 :]:
            assert not {t.task_id for t in a} & {t.task_id for t in b}
            assert not {content(t) for t in a} & {content(t) for t in b}


def test_recover_tier_obvious_call_fails_first():
    """In the recover tier, the request's final call fails on the initial state (the model meets an error)."""
    scenarios = load_scenario_set(CURRICULUM / "train.yaml")
    for task in [t for t in scenarios.tasks if t.category == "recover"]:
        runtime = ToolRuntime(task, scenarios.classes(), scenarios.stateless(), hooks=scenarios.hooks())
        result = runtime.execute_one(task.ground_truth[-1][-1]).result
        assert "error" in result.lower(), (task.task_id, result)


def test_generator_is_seeded_and_matches_the_committed_files(tmp_path):
    for seed in (0, 1):
        out = tmp_path / str(seed)
        command = [sys.executable, str(CURRICULUM / "generate.py"), "--seed", str(seed), "--out", str(out)]
        subprocess.run(command, check=True, capture_output=True)
    for name in GENERATED:
        assert (tmp_path / "0" / name).read_text() == (CURRICULUM / name).read_text()
        assert (tmp_path / "1" / name).read_text() != (CURRICULUM / name).read_text()
