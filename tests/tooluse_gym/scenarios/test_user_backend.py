"""A user-registered tool backend runs end to end: docs from type hints, state, checker, check_env."""

from __future__ import annotations

import warnings

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

import tooluse_gym
from tests._reference.scripted import play_reference
from tooluse_gym.tools.registry import get_backend, unregister_tools


class Pantry:
    """A kitchen pantry (a user-defined backend for the tests)."""

    def __init__(self):
        self.items: dict[str, int] = {}

    def load_state(self, state: dict) -> None:
        self.items = dict(state.get("items", {}))

    def stock(self, item: str) -> dict:
        """How many units of an item are in the pantry.

        Args:
            item: Name of the item.
        """
        return {"item": item, "count": self.items.get(item, 0)}

    def take(self, item: str, count: int = 1) -> dict:
        """Take units of an item out of the pantry.

        Args:
            item: Name of the item.
            count: Units to take.
        """
        have = self.items.get(item, 0)
        if count > have:
            return {"error": f"only {have} {item} left"}
        self.items[item] = have - count
        return {"item": item, "count": self.items[item]}


SCENARIO = """
version: 1
scenarios:
  - id: pantry_take_two
    category: user_backend
    tools:
      Pantry: {items: {egg: 6, milk: 1}}
    turns:
      - user: "Take two eggs."
        ground_truth: ["take(item='egg', count=2)"]
      - user: "How much milk is left?"
        ground_truth: ["stock(item='milk')"]
"""


@pytest.fixture
def pantry_env(tmp_path):
    tooluse_gym.register_tools("Pantry", Pantry)
    path = tmp_path / "pantry.yaml"
    path.write_text(SCENARIO)
    try:
        yield gym.make("ToolUse-Scenario-v0", path=path, system_prompt="strong", tool_format="json")
    finally:
        unregister_tools("Pantry")


def test_docs_derived_from_hints_and_docstrings(pantry_env):
    docs = {d["name"]: d for d in get_backend("Pantry").docs}
    assert sorted(docs) == ["stock", "take"]  # load_state is never offered to the model
    take = docs["take"]
    assert take["description"] == "Take units of an item out of the pantry."
    assert take["parameters"]["required"] == ["item"]
    assert take["parameters"]["properties"]["count"] == {
        "type": "integer",
        "description": "Units to take.",
        "default": 1,
    }


def test_user_backend_end_to_end(pantry_env):
    reward, info = play_reference(pantry_env, "pantry_take_two")
    assert reward == 1.0 and info["checker"]["valid"]
    assert pantry_env.unwrapped.runtime.instances["Pantry"].items == {"egg": 4, "milk": 1}

    obs, _ = pantry_env.reset(options={"task_id": "pantry_take_two"})
    assert "take" in obs["messages"][0]["content"] and "load_state" not in obs["messages"][0]["content"]
    _, _, terminated, _, _ = pantry_env.step('<tool_call>{"name": "take", "arguments": {"item": "egg"}}</tool_call>')
    assert not terminated
    pantry_env.step("Done.")
    pantry_env.step('<tool_call>{"name": "load_state", "arguments": {"state": {}}}</tool_call>')
    _, reward, terminated, _, info = pantry_env.step("Done.")
    assert terminated and reward == 0.0
    assert info["checker"]["error_type"] == "multi_turn:instance_state_mismatch"
    refused = pantry_env.unwrapped.step_log[-2].results[0]
    assert "name 'load_state' is not defined" in refused


def test_check_env_passes_on_scenario_env(pantry_env):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(pantry_env.unwrapped, skip_render_check=True)
