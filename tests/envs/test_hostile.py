"""Model output is untrusted: no text may execute code, and `step` never raises on it."""

from __future__ import annotations

import os

import gymnasium as gym
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

CANARY = "tooluse_canary_file"

HOSTILE = [
    f"[__import__('os').system('touch {CANARY}')]",
    f"__import__('os').system('touch {CANARY}')",
    f"[open(file='{CANARY}', mode='w')]",
    f"[cd(folder=open('{CANARY}', 'w'))]",
    f"[cd(folder=__import__('os').system('touch {CANARY}'))]",
    f"[cd(folder=(lambda: open('{CANARY}', 'w'))())]",
    f"[cd(folder=[open('{CANARY}', 'w') for _ in 'a'])]",
    f"[cd(folder=f\"{{open('{CANARY}', 'w')}}\")]",
    f"[exec(\"open('{CANARY}', 'w')\")]",
    f"[eval(\"open('{CANARY}', 'w')\")]",
    f"[__builtins__.open('{CANARY}', 'w')]",
    f"[cd.__globals__['__builtins__']['open']('{CANARY}', 'w')]",
    "[().__class__.__bases__[0].__subclasses__()]",
    "[cd(folder=().__class__.__bases__[0].__subclasses__())]",
    "[_load_scenario(scenario={}, long_context=True)]",
    "[__init__()]",
    "[ls.__call__(a=True)]",
    f"[cd(folder='x'), __import__('subprocess').run(['touch', '{CANARY}'])]",
    '<tool_call>{"name": "__import__", "arguments": {"name": "os"}}</tool_call>',
    "[cd(folder='" + "A" * 60000 + "')]",
    "[cd(folder=" + "[" * 3000 + "]" * 3000 + ")]",
    "[" + "(" * 500 + ")" * 500 + "]",
    "[cd(folder=" + "9" * 10000 + ")]",
    "[power(base=10, exponent=99999999999)]",
    "[square_root(number=2, precision=100000000)]",
    "\udcff\udcfe[cd(folder='\ud800')]",
    "\x00" * 1000,
    "[cd(folder='x')]" * 2000,
]


@pytest.fixture
def in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("category", ["base", "long_context"])
@pytest.mark.parametrize("tool_format", ["python", "json"])
def test_hostile_actions_never_execute_code(in_tmp, category, tool_format):
    env = gym.make("ToolUse-MultiTurn-v0", category=category, tool_format=tool_format)
    tasks = [t for t in env.unwrapped.tasks if "MathAPI" in t.backends][:1] + env.unwrapped.tasks[:2]
    for task in tasks:
        for action in HOSTILE:
            env.reset(seed=0, options={"task_id": task.task_id})
            obs, reward, terminated, truncated, info = env.step(action)
            assert env.observation_space.contains(obs)
            assert reward == 0.0
    assert not (in_tmp / CANARY).exists()
    assert os.listdir(in_tmp) == []


def test_hostile_calls_get_error_results(in_tmp):
    env = gym.make("ToolUse-MultiTurn-v0", category="base")
    env.reset(options={"task_id": "multi_turn_base_0"})
    obs, *_ = env.step(f"[cd(folder=open('{CANARY}', 'w')), ls()]")
    first, second = obs["messages"][-2:]
    assert first["content"].startswith("Error during execution: invalid arguments for cd: Call is not a literal")
    assert second["content"].startswith('{"current_directory_content"')
    obs, *_ = env.step("[_load_scenario(scenario={})]")
    assert obs["messages"][-1]["content"] == "Error during execution: name '_load_scenario' is not defined"


def test_non_text_actions_do_not_raise():
    env = gym.make("ToolUse-MultiTurn-v0", category="base")
    for action in [
        b"\xff\xfe",
        None,
        42,
        ["[ls()]"],
        {"tool_calls": "ls"},
        {"tool_calls": [None, 3]},
        {"content": 5},
        {"tool_calls": [{"function": {"name": "ls", "arguments": "{" * 5000}}]},
    ]:
        env.reset(options={"task_id": "multi_turn_base_0"})
        env.unwrapped.step(action)  # bypass the passive checker, which asserts on action types


actions = st.one_of(
    st.text(),
    st.text().map(lambda s: "[" + s + "]"),
    st.text().map(lambda s: "<tool_call>" + s + "</tool_call>"),
    st.from_regex(r"\[[a-z_]{1,12}\((([a-z_]{1,8}=('[^']{0,8}'|-?[0-9]{1,4}|\[\]|None|True)), ?){0,3}\)\]"),
    st.dictionaries(st.sampled_from(["content", "tool_calls"]), st.text() | st.lists(st.text(), max_size=3)),
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(actions, min_size=1, max_size=6), st.sampled_from(["python", "json"]), st.integers(0, 799))
def test_step_never_raises(in_tmp, batch, tool_format, index):
    env = _ENVS[tool_format]
    obs, _ = env.reset(seed=index)
    for action in batch:
        obs, reward, terminated, truncated, info = env.unwrapped.step(action)
        assert env.observation_space.contains(obs)
        if terminated:
            break
    assert os.listdir(in_tmp) == []


_ENVS = {fmt: gym.make("ToolUse-MultiTurn-v0", category="all", tool_format=fmt) for fmt in ("python", "json")}
