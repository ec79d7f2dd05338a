"""Episodes in one process never see each other's simulator state."""

from __future__ import annotations

import gymnasium as gym
import pytest

from tests._reference.scripted import END_OF_TURN, Reference


@pytest.mark.parametrize("category", ["base", "long_context"])
def test_interleaved_episodes_of_the_same_task(category):
    a = gym.make("ToolUse-MultiTurn-v0", category=category)
    b = gym.make("ToolUse-MultiTurn-v0", category=category)
    task_id = f"multi_turn_{category}_0"  # GorillaFileSystem: move a report into a new folder
    obs_a, _ = a.reset(options={"task_id": task_id})
    b.reset(options={"task_id": task_id})
    oracle = Reference()
    b.step("[cd(folder='document'), rm(file_name='final_report.pdf')]")
    obs_a, *_ = a.step(oracle.act(a, obs_a))
    assert obs_a["messages"][-1]["content"] == "{\"result\": \"'final_report.pdf' moved to 'temp/final_report.pdf'\"}"
    obs_b, *_ = b.step("[ls()]")
    assert "final_report.pdf" not in obs_b["messages"][-1]["content"] and "temp" not in obs_b["messages"][-1]["content"]
    done_a = done_b = False
    reward_a = reward_b = None
    while not (done_a and done_b):  # alternate steps until both end
        if not done_a:
            obs_a, reward_a, done_a, _, _ = a.step(oracle.act(a, obs_a))
        if not done_b:
            obs_b, reward_b, done_b, _, _ = b.step(END_OF_TURN)
    assert reward_a == 1.0 and reward_b == 0.0


def test_long_context_travel_state_not_shared_between_episodes():
    env_a = gym.make("ToolUse-MultiTurn-v0", category="long_context")
    env_b = gym.make("ToolUse-MultiTurn-v0", category="long_context")
    task = next(t for t in env_a.unwrapped.tasks if "TravelAPI" in t.backends)
    env_a.reset(options={"task_id": task.task_id})
    env_b.reset(options={"task_id": task.task_id})
    cards_a = env_a.unwrapped.runtime.instances["TravelAPI"].credit_card_list
    cards_b = env_b.unwrapped.runtime.instances["TravelAPI"].credit_card_list
    shared = [k for k in cards_a if cards_a[k] is cards_b[k]]
    assert shared == []
    for card in cards_a.values():
        card["balance"] = 0.0
    assert all(card["balance"] != 0.0 for card in cards_b.values())
