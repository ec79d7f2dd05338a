"""Model output is untrusted: no text may execute code, and `step` never raises on it."""

from __future__ import annotations

import os

import gymnasium as gym
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tooluse_gym.decoding.limits import MAX_CALLS_PER_MESSAGE, MAX_MESSAGE_CHARS
from tooluse_gym.envs.tool_env import task_ids

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
    # BFCL's decoder evaluates arithmetic and writes dicts of dicts as nested calls, which its executor runs
    "[cd(folder=2**10**10)]",
    "[cd(folder='a'*10**10)]",
    "[cd(folder=[1]*10**9)]",
    "[cd(folder=1<<10**10)]",
    "[cd(folder='%0999999999d' % 1)]",
    f"[cd(folder={{'open': {{'file': '{CANARY}', 'mode': 'w'}}}})]",
    "[cd(folder={'__import__': {'name': 'os'}})]",
    f"[cd(folder={{'x': 1, 'y': {{'open': {{'file': '{CANARY}', 'mode': 'w'}}}}}})]",
    f"[echo(content=0, file_name={{\"x': open('{CANARY}', 'w'), 'y\": 1}})]",
    "[exit(code=1)]",
    '<tool_call>\n{"name": "open", "arguments": {"file": "' + CANARY + '", "mode": "w"}}\n</tool_call>',
    '<tool_call>\n{"name": "__import__(\'os\').system", "arguments": {"command": "touch '
    + CANARY
    + '"}}\n</tool_call>',
]
DECODERS = ["bfcl", "lenient"]


@pytest.fixture
def in_tmp(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize("decoder", DECODERS)
@pytest.mark.parametrize("category", ["base", "long_context"])
@pytest.mark.parametrize("tool_format", ["python", "json"])
def test_hostile_actions_never_execute_code(in_tmp, category, tool_format, decoder):
    env = gym.make("ToolUse-MultiTurn-v0", category=category, tool_format=tool_format, decoder=decoder)
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
    env = gym.make("ToolUse-MultiTurn-v0", category="base", decoder="lenient")
    env.reset(options={"task_id": "multi_turn_base_0"})
    obs, *_ = env.step(f"[cd(folder=open('{CANARY}', 'w')), ls()]")
    first, second = obs["messages"][-2:]
    assert first["content"].startswith("Error during execution: invalid arguments for cd: Call is not a literal")
    assert second["content"].startswith('{"current_directory_content"')
    obs, *_ = env.step("[_load_scenario(scenario={})]")
    assert obs["messages"][-1]["content"] == "Error during execution: name '_load_scenario' is not defined"


def test_hostile_calls_under_the_bfcl_decoder(in_tmp):
    """BFCL passes a call without keywords on as its text, and would run a dict-of-dicts as a call."""
    env = gym.make("ToolUse-MultiTurn-v0", category="base", decoder="bfcl")
    env.reset(options={"task_id": "multi_turn_base_0"})
    obs, *_ = env.step(f"[cd(folder=open('{CANARY}', 'w')), ls()]")
    first, second = obs["messages"][-2:]
    assert first["content"] == f"{{\"error\": \"cd: 'open('{CANARY}', 'w')': No such file or directory\"}}"
    assert second["content"].startswith('{"current_directory_content"')
    obs, *_ = env.step(f"[cd(folder={{'open': {{'file': '{CANARY}', 'mode': 'w'}}}})]")
    assert obs["messages"][-1]["content"] == "Error during execution: name 'open' is not defined"
    obs, *_ = env.step("[_load_scenario(scenario=1)]")
    assert obs["messages"][-1]["content"] == "Error during execution: name '_load_scenario' is not defined"
    obs, *_ = env.step("[exit(code=1)]")
    assert obs["messages"][-1]["content"] == "Error during execution: Function call exit is not allowed."
    assert os.listdir(in_tmp) == []


@pytest.mark.parametrize("decoder", DECODERS)
def test_non_text_actions_do_not_raise(decoder):
    env = gym.make("ToolUse-MultiTurn-v0", category="base", decoder=decoder)
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
    st.from_regex(r"\[[a-z]{1,6}\(a=(\{'[a-z]{1,4}': \{\}\}|-?[0-9]{1,3} ?[-+*/%]{1,2} ?-?[0-9]{1,3}|[a-z]{1,5})\)\]"),
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(actions, min_size=1, max_size=6),
    st.sampled_from(["python", "json"]),
    st.sampled_from(DECODERS),
    st.integers(0, 799),
)
def test_step_never_raises(in_tmp, batch, tool_format, decoder, index):
    env = _ENVS[tool_format, decoder]
    obs, _ = env.reset(seed=index)
    for action in batch:
        obs, reward, terminated, truncated, info = env.unwrapped.step(action)
        assert env.observation_space.contains(obs)
        if terminated:
            break
    assert os.listdir(in_tmp) == []


_ENVS = {
    (fmt, decoder): gym.make("ToolUse-MultiTurn-v0", category="all", tool_format=fmt, decoder=decoder)
    for fmt in ("python", "json")
    for decoder in DECODERS
}


@pytest.mark.parametrize("decoder", DECODERS)
def test_non_string_content_is_a_parse_failure(decoder):
    env = gym.make("ToolUse-MultiTurn-v0", category="base", decoder=decoder, task_ids=["multi_turn_base_0"])
    for action, failure in [
        ({"content": 5}, "action content must be str or None, got int"),
        ({"content": ["[ls()]"]}, "action content must be str or None, got list"),
        (42, "action must be str or dict, got int"),
        (None, "action must be str or dict, got NoneType"),
    ]:
        env.reset(options={"task_id": "multi_turn_base_0"})
        *_, info = env.unwrapped.step(action)
        assert info["parse_failure"] == failure, action
        assert info["step_record"].parse_failure == failure and not info["step_record"].calls
    # content None is the OpenAI shape of a message that only calls tools
    env.reset(options={"task_id": "multi_turn_base_0"})
    *_, info = env.unwrapped.step({"content": None, "tool_calls": [{"function": {"name": "ls", "arguments": "{}"}}]})
    assert "parse_failure" not in info and info["step_record"].calls[0].name == "ls"


# --- single-turn: the same hostile messages, decoded by BFCL's AST decoders (nothing executes) ----------

SINGLE_TURN_HOSTILE = [
    *HOSTILE,
    f"[calculate_triangle_area(base=__import__('os').system('touch {CANARY}'), height=1)]",
    f"[calculate_triangle_area(base=(lambda: open('{CANARY}', 'w'))(), height=1)]",
    "[calculate_triangle_area(base=10**10**10, height=1)]",
    "[calculate_triangle_area(base=" + "1+" * 5000 + "1, height=1)]",
    "[calculate_triangle_area(**{'base': 10, 'height': 5})]",
    "[f(a=1)]" * 100,
]
SINGLE_TURN_ACTIONS = [
    *SINGLE_TURN_HOSTILE,
    {"tool_calls": [{"function": {"name": "calculate_triangle_area", "arguments": {"base": 10}}}]},
    {"tool_calls": [{"function": {"name": "calculate_triangle_area", "arguments": "[1, 2]"}}]},
    {"tool_calls": [{"function": {"name": "f", "arguments": "[" * 100000}}]},
    {"tool_calls": [{"function": {"name": "f", "arguments": '{"a": ' * 5000 + "1" + "}" * 5000}}]},
    {"tool_calls": None, "content": None},
    {"tool_calls": "calculate_triangle_area"},
    {"tool_calls": [None, 3]},
    b"\xff\xfe",
    None,
    42,
    ["[f()]"],
]


SINGLE_TURN_IDS = [
    "simple_python_0",
    "parallel_multiple_0",
    "irrelevance_0",
    "live_relevance_0-0-0",
    "live_simple_0-0-0",
]
LENIENT_HOSTILE = [
    f"Sure! Here is the call:\n```python\n[calculate_triangle_area(base=open('{CANARY}', 'w'), height=1)]\n```",
    f"I'll call [calculate_triangle_area(__import__('os').system('touch {CANARY}'), 1)] now.",
    f"<think>x</think> Call: [calculate_triangle_area(*['{CANARY}'], **{{'height': 1}})]",
    "Sure " + "[calculate_triangle_area(" * 2500,
    "Sure " + "[f('" * 12000,
    "Text [f(a=1) b] " * 3000,
    "```\n" * 16000,
    "prose [calculate_triangle_area(base=10, height=5)] " + " " * MAX_MESSAGE_CHARS,  # right, but over the cap
]


@pytest.mark.parametrize("decoder", DECODERS)
@pytest.mark.parametrize("tool_format", ["python", "json"])
def test_single_turn_hostile_actions_never_execute_code(in_tmp, tool_format, decoder):
    env = gym.make(
        "ToolUse-SingleTurn-v0",
        category="single_turn",
        task_ids=SINGLE_TURN_IDS,
        tool_format=tool_format,
        decoder=decoder,
    )
    for task_id in SINGLE_TURN_IDS:
        for action in [*SINGLE_TURN_ACTIONS, *LENIENT_HOSTILE]:
            env.reset(seed=0, options={"task_id": task_id})
            obs, reward, terminated, truncated, info = env.unwrapped.step(action)
            assert terminated and not truncated
            assert env.observation_space.contains(obs)
            assert info["checker"]["error_type"] != "ast_checker:crashed"
            if "irrelevance" not in task_id and "relevance" not in task_id:
                assert reward == 0.0, (task_id, decoder, action)
            calls = info["step_record"].calls
            assert len(calls) <= MAX_CALLS_PER_MESSAGE
    assert not (in_tmp / CANARY).exists()
    assert os.listdir(in_tmp) == []


_SINGLE_TURN_ENVS = {
    (fmt, "bfcl"): gym.make("ToolUse-SingleTurn-v0", category="single_turn", tool_format=fmt)
    for fmt in ("python", "json")
}
_SINGLE_TURN_ENVS.update(
    {  # the lenient decoder refuses the Java and JavaScript categories: every other entry
        (fmt, "lenient"): gym.make(
            "ToolUse-SingleTurn-v0",
            category="single_turn",
            task_ids=[i for i in task_ids(_SINGLE_TURN_ENVS["python", "bfcl"]) if "java" not in i],
            tool_format=fmt,
            decoder="lenient",
        )
        for fmt in ("python", "json")
    }
)
single_turn_actions = st.one_of(
    actions,
    st.tuples(st.text(max_size=30), actions.filter(lambda a: isinstance(a, str)), st.text(max_size=30)).map("".join),
    st.from_regex(r"[a-zA-Z ,.!']{0,20}\n?```[a-z]{0,6}\n\[?[a-z_]{1,12}\(([a-z0-9'=, ]{0,20})\)\]?\n```[a-z .]{0,10}"),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(single_turn_actions, st.sampled_from(["python", "json"]), st.sampled_from(DECODERS), st.integers(0, 10_000))
def test_single_turn_step_never_raises(in_tmp, action, tool_format, decoder, index):
    env = _SINGLE_TURN_ENVS[tool_format, decoder]
    env.reset(seed=index)
    obs, reward, terminated, truncated, info = env.unwrapped.step(action)
    assert terminated
    assert env.observation_space.contains(obs)
    assert reward in (0.0, 1.0)
    assert info["checker"]["error_type"] != "ast_checker:crashed"
    assert len(info["step_record"].calls) <= MAX_CALLS_PER_MESSAGE
    assert os.listdir(in_tmp) == []
