"""Shared fixtures: real BFCL data and simulators from bfcl-eval (no stubs)."""

from __future__ import annotations

import gymnasium as gym
import pytest

import tooluse_gym  # noqa: F401  (registers the ids)
from tooluse_gym.tasks import bfcl


@pytest.fixture(scope="session")
def all_tasks():
    return bfcl.load_bfcl_tasks("all")


@pytest.fixture(scope="session")
def tasks_by_id(all_tasks):
    return {t.task_id: t for t in all_tasks}


@pytest.fixture
def make_env():
    envs = []

    def _make(**kwargs):
        env = gym.make("ToolUse-MultiTurn-v0", **kwargs)
        envs.append(env)
        return env

    yield _make
    for env in envs:
        env.close()


def play(env, actions_per_turn, task_id, seed=0):
    """Play `actions_per_turn[t]` (a list of assistant messages) in each turn; returns the last step."""
    env.reset(seed=seed, options={"task_id": task_id})
    result = None
    for actions in actions_per_turn:
        for action in actions:
            result = env.step(action)
            if result[2] or result[3]:
                return result
    return result
