"""Standard Gymnasium usage of both env ids: env_checker, passive checker, render, TimeLimit and
RecordEpisodeStatistics (single and vector), on the env as `gym.make` returns it (wrapped)."""

from __future__ import annotations

import itertools
import warnings
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from gymnasium.wrappers import PassiveEnvChecker, RecordEpisodeStatistics, TimeLimit

from tests._reference.scripted import Reference
from tooluse_gym.prompts import json_call_block
from tooluse_gym.tasks import bfcl
from tooluse_gym.wrappers import RenderedPrompt
from tooluse_gym.wrappers.rendered_prompt import load_tokenizer

TRAIN = str(Path(__file__).resolve().parents[3] / "scenarios" / "curriculum" / "train.yaml")
MULTI_TURN = ("ToolUse-MultiTurn-v0", {"category": "base"}, "multi_turn_base_0")  # 4 turns, 8 oracle steps
SCENARIO = ("ToolUse-Scenario-v0", {"path": TRAIN}, "two_turns_000")  # 2 turns, 4 oracle steps
ENVS = pytest.mark.parametrize("env_id,base_kwargs,task_id", [MULTI_TURN, SCENARIO], ids=["multi_turn", "scenario"])

KNOBS = {
    "template": ("native", "context"),
    "reasoning": ("keep", "strip", "last"),
    "system_prompt": ("bfcl", "strong", "none"),
    "tool_format": ("python", "json"),
    "decoder": ("bfcl", "lenient"),
    "tool_results": ("tool_messages", "user_message"),
}
ALL_COMBOS = [dict(zip(KNOBS, values, strict=True)) for values in itertools.product(*KNOBS.values())]
# six combinations: knob k takes values[(i + k) % len(values)], so every value of every knob appears
REPRESENTATIVE = [
    {knob: values[(i + k) % len(values)] for k, (knob, values) in enumerate(KNOBS.items())} for i in range(6)
]
WITH_TOKENIZER = [ALL_COMBOS[0], REPRESENTATIVE[1], REPRESENTATIVE[5]]
WRAPPED_NOTICE = "is different from the unwrapped version"  # check_env's note that it was given a wrapped env


def _id(combo):
    return "-".join(combo.values())


@pytest.fixture(scope="module")
def smollm2():
    return load_tokenizer("smollm2-135m")


def oracle_play(env, task_id, agent=None):
    """Play one oracle episode; returns the actions sent and the last step."""
    agent = agent or Reference()
    obs, _ = env.reset(seed=0, options={"task_id": task_id})
    actions = []
    while True:
        actions.append(agent.act(env, obs))
        obs, reward, terminated, truncated, info = env.step(actions[-1])
        if terminated or truncated:
            return actions, (obs, reward, terminated, truncated, info)


def check_wrapped(env, **kwargs):
    """check_env on the env as given; the only warning allowed is the note that it is wrapped."""
    assert env.unwrapped is not env
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env, **kwargs)
    # a ResourceWarning is the garbage collector closing another test's object (e.g. a vLLM zmq context)
    unexpected = [
        str(w.message) for w in caught if WRAPPED_NOTICE not in str(w.message) and w.category is not ResourceWarning
    ]
    assert not unexpected, unexpected
    assert any(WRAPPED_NOTICE in str(w.message) for w in caught)


def test_representative_combos_cover_every_value_of_every_knob():
    for knob, values in KNOBS.items():
        assert {combo[knob] for combo in REPRESENTATIVE} == set(values), knob
    assert len(ALL_COMBOS) == 144


# --- env_checker ----------------------------------------------------------------------------


@pytest.mark.parametrize("render_mode", [None, "ansi"])
@pytest.mark.parametrize("category", [*bfcl.CATEGORIES, "all"])
def test_check_env_on_every_category(category, render_mode):
    env = gym.make("ToolUse-MultiTurn-v0", category=category, render_mode=render_mode)
    check_wrapped(env)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(env.unwrapped, skip_render_check=render_mode is None)  # the raw env: no warning at all
    env.close()
    env.close()  # idempotent


@pytest.mark.parametrize("category", bfcl.CATEGORIES)
@pytest.mark.parametrize("combo", REPRESENTATIVE, ids=_id)
def test_check_env_on_every_category_under_representative_knobs(category, combo):
    check_wrapped(gym.make("ToolUse-MultiTurn-v0", category=category, render_mode="ansi", **combo))


def test_check_env_under_every_knob_combination():
    for combo in ALL_COMBOS:
        check_wrapped(gym.make("ToolUse-MultiTurn-v0", category="base", render_mode="ansi", **combo))


@pytest.mark.parametrize("combo", REPRESENTATIVE[:2], ids=_id)  # scenario files load slowly: two will do
def test_check_env_on_the_scenario_env(combo):
    env = gym.make("ToolUse-Scenario-v0", path=TRAIN, render_mode="ansi", **combo)
    check_wrapped(env)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check_env(env.unwrapped)


@pytest.mark.parametrize("combo", WITH_TOKENIZER, ids=_id)
def test_check_env_with_a_tokenizer(smollm2, combo):
    env = gym.make("ToolUse-MultiTurn-v0", category="base", tokenizer="smollm2-135m", render_mode="ansi", **combo)
    check_wrapped(env)


# --- render ---------------------------------------------------------------------------------


def _render_after_a_step(env, task_id):
    obs, _ = env.reset(seed=0, options={"task_id": task_id})
    before = env.render()
    env.step(Reference().act(env, obs))
    return before, env.render()


@pytest.mark.parametrize("render_mode", [None, "ansi"])
def test_render_under_every_knob_combination(render_mode):
    for combo in ALL_COMBOS:
        env = gym.make("ToolUse-MultiTurn-v0", category="base", render_mode=render_mode, **combo)
        for text in _render_after_a_step(env, "multi_turn_base_0"):
            if render_mode is None:
                assert text is None, combo
            else:
                assert isinstance(text, str) and text.startswith("# multi_turn_base_0\n"), combo
        if render_mode == "ansi":
            assert "[assistant] [" in text or "[assistant] <tool_call>" in text, combo


@pytest.mark.parametrize("render_mode", [None, "ansi"])
@pytest.mark.parametrize("combo", REPRESENTATIVE[3:4], ids=_id)
def test_render_on_the_scenario_env(combo, render_mode):
    env = gym.make("ToolUse-Scenario-v0", path=TRAIN, render_mode=render_mode, **combo)
    for text in _render_after_a_step(env, SCENARIO[2]):
        assert text is None if render_mode is None else text.startswith(f"# {SCENARIO[2]}\n")


@pytest.mark.parametrize("render_mode", [None, "ansi"])
@pytest.mark.parametrize("combo", WITH_TOKENIZER, ids=_id)
def test_render_with_a_tokenizer(smollm2, combo, render_mode):
    env = gym.make("ToolUse-MultiTurn-v0", category="base", tokenizer="smollm2-135m", render_mode=render_mode, **combo)
    for text in _render_after_a_step(env, "multi_turn_base_0"):
        assert text is None if render_mode is None else text.startswith("# multi_turn_base_0\n")
    obs, _ = env.reset(seed=0, options={"task_id": "multi_turn_base_0"})
    render_prompt = env.get_wrapper_attr("render_prompt")
    assert obs["prompt"] == render_prompt(obs["messages"], obs["tools"])
    assert obs["prompt"].endswith("<|im_start|>assistant\n")
    assert render_prompt(obs["messages"], add_generation_prompt=False) + "<|im_start|>assistant\n" == obs["prompt"]


def test_rendered_prompt_leaves_gymnasium_render_alone():
    assert "render" not in RenderedPrompt.__dict__ and "render_prompt" in RenderedPrompt.__dict__


# --- the passive checker gym.make adds ---------------------------------------------------------


def _has_passive_checker(env):
    while isinstance(env, gym.Wrapper):
        if isinstance(env, PassiveEnvChecker):
            return True
        env = env.env
    return False


def _passive_checked_episode(env, task_id):
    assert _has_passive_checker(env)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        env.reset(seed=0, options={"task_id": task_id})
        env.render()
        _, (_, reward, terminated, truncated, _) = oracle_play(env, task_id)
        env.render()
    assert reward == 1.0 and terminated and not truncated


@pytest.mark.parametrize("render_mode", [None, "ansi"])
@pytest.mark.parametrize("combo", REPRESENTATIVE, ids=_id)
def test_passive_checker_is_silent(combo, render_mode):
    env = gym.make("ToolUse-MultiTurn-v0", category="base", render_mode=render_mode, **combo)
    _passive_checked_episode(env, "multi_turn_base_0")


@pytest.mark.parametrize("render_mode", [None, "ansi"])
def test_passive_checker_is_silent_on_the_scenario_env(render_mode):
    _passive_checked_episode(gym.make("ToolUse-Scenario-v0", path=TRAIN, render_mode=render_mode), SCENARIO[2])


@pytest.mark.parametrize("render_mode", [None, "ansi"])
def test_passive_checker_is_silent_with_a_tokenizer(smollm2, render_mode):
    env = gym.make("ToolUse-MultiTurn-v0", category="base", tokenizer="smollm2-135m", render_mode=render_mode)
    _passive_checked_episode(env, "multi_turn_base_0")


@pytest.mark.parametrize("decoder", ["bfcl", "lenient"])
def test_model_text_the_compiler_warns_about_steps_silently(decoder):
    """An invalid escape in a call argument (a regex, say) is model text, not a warning to raise."""
    env = gym.make("ToolUse-MultiTurn-v0", category="base", decoder=decoder)
    env.reset(seed=0, options={"task_id": "multi_turn_base_0"})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for text in [r"[grep(file_name='final_report.pdf', pattern='\d+')]", r"[ls(a='\O'), 1(2)]", "[f('\\q"]:
            env.step(text)
    calls = env.unwrapped.step_log[0].calls
    assert [c.name for c in calls] == ["grep"] and calls[0].arguments["pattern"] == "\\d+"


# --- TimeLimit ------------------------------------------------------------------------------


@ENVS
def test_max_episode_steps_truncates(env_id, base_kwargs, task_id):
    env = gym.make(env_id, max_episode_steps=3, **base_kwargs)
    assert any(isinstance(w, TimeLimit) for w in _wrappers(env))
    agent = Reference()
    obs, _ = env.reset(seed=0, options={"task_id": task_id})
    for step in range(1, 4):
        obs, reward, terminated, truncated, info = env.step(agent.act(env, obs))
        assert not terminated and truncated == (step == 3) and reward == 0.0
    assert "checker" not in info
    actions, (_, _, terminated, truncated, _) = oracle_play(env, task_id)  # reset restarts the count
    assert len(actions) == 3 and truncated and not terminated
    # an episode shorter than the limit terminates without truncation
    long = gym.make(env_id, max_episode_steps=100, **base_kwargs)
    actions, (_, reward, terminated, truncated, info) = oracle_play(long, task_id)
    assert terminated and not truncated and reward == 1.0 and len(actions) > 3 and "tooluse" in info


def _wrappers(env):
    while isinstance(env, gym.Wrapper):
        yield env
        env = env.env


# --- RecordEpisodeStatistics ----------------------------------------------------------------


@ENVS
def test_record_episode_statistics(env_id, base_kwargs, task_id):
    env = RecordEpisodeStatistics(gym.make(env_id, **base_kwargs))
    for _ in range(2):  # every episode ends cleanly, not only the first
        actions, (_, reward, terminated, truncated, info) = oracle_play(env, task_id)
        assert terminated and not truncated and reward == 1.0
        assert info["episode"]["r"] == 1.0 and info["episode"]["l"] == len(actions) and info["episode"]["t"] >= 0
        base = env.unwrapped
        assert info["tooluse"] == {
            "task_id": task_id,
            "reward": 1.0,
            "turns": base.task.num_turns,
            "steps": sum(bool(record.calls) for record in base.step_log),
        }
        assert info["checker"]["valid"] is True
    assert list(env.return_queue) == [1.0, 1.0] and list(env.length_queue) == [len(actions)] * 2


@ENVS
def test_record_episode_statistics_counts_a_truncated_episode(env_id, base_kwargs, task_id):
    env = RecordEpisodeStatistics(gym.make(env_id, max_episode_steps=3, **base_kwargs))
    _, (_, reward, terminated, truncated, info) = oracle_play(env, task_id)
    assert truncated and not terminated and info["episode"]["l"] == 3 and info["episode"]["r"] == 0.0


def _wrong_first_call(actions, tool_format):
    """The oracle's actions with the first call message replaced by a wrong call (same step count)."""
    if tool_format == "json":
        return [json_call_block("mkdir", {"dir_name": "probe_dir"}), *actions[1:]]
    return ["[mkdir(dir_name='probe_dir')]", *actions[1:]]


@pytest.mark.parametrize(
    "env_id,kwargs,task_id,mode",
    [
        ("ToolUse-MultiTurn-v0", {"task_ids": [MULTI_TURN[2]]}, MULTI_TURN[2], "sync"),
        ("ToolUse-MultiTurn-v0", {"task_ids": [MULTI_TURN[2]], "tool_format": "json"}, MULTI_TURN[2], "async"),
        ("ToolUse-Scenario-v0", {"path": TRAIN, "task_ids": [SCENARIO[2]]}, SCENARIO[2], "sync"),
    ],
    ids=["multi_turn-sync", "multi_turn-async", "scenario-sync"],
)
def test_vector_record_episode_statistics(env_id, kwargs, task_id, mode):
    actions, (_, _, _, _, single) = oracle_play(gym.make(env_id, **kwargs), task_id)
    vec = gym.wrappers.vector.RecordEpisodeStatistics(
        gym.make_vec(env_id, num_envs=2, vectorization_mode=mode, **kwargs)
    )
    try:
        vec.reset(seed=0)
        wrong = _wrong_first_call(actions, kwargs.get("tool_format", "python"))
        rewards = terminated = truncated = infos = None
        for step, pair in enumerate(zip(actions, wrong, strict=True), start=1):
            _, rewards, terminated, truncated, infos = vec.step(pair)
            if step < len(actions):
                assert not terminated.any() and "episode" not in infos
        assert terminated.all() and not truncated.any()
        assert rewards.tolist() == [1.0, 0.0]
        assert infos["_episode"].all()
        np.testing.assert_array_equal(infos["episode"]["r"], [1.0, 0.0])
        np.testing.assert_array_equal(infos["episode"]["l"], [len(actions)] * 2)
        ours = infos["tooluse"]
        assert infos["_tooluse"].all()
        assert list(ours["task_id"]) == [task_id] * 2 and ours["reward"].tolist() == [1.0, 0.0]
        assert ours["turns"].tolist() == [single["tooluse"]["turns"]] * 2
        assert ours["steps"].tolist() == [single["tooluse"]["steps"]] * 2
        assert infos["checker"]["valid"].tolist() == [True, False]
        assert list(vec.return_queue) == [1.0, 0.0] and list(vec.length_queue) == [len(actions)] * 2
    finally:
        vec.close()
