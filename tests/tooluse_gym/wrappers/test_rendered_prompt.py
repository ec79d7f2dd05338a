"""`prompt` rendered with real chat templates, and where the prefix property holds or breaks."""

from __future__ import annotations

import warnings
from pathlib import Path

import gymnasium as gym
import pytest

from tests._reference.bfcl_reference import bfcl_persona
from tests._reference.scripted import Reference
from tooluse_agents.backends.base import chat_prompt
from tooluse_gym.wrappers import ToolsNotShownWarning, prefix_breaks
from tooluse_gym.wrappers.rendered_prompt import load_tokenizer, template_renders_tools

QWEN3_STYLE = str(Path(__file__).resolve().parents[2] / "_reference" / "data" / "qwen3_style.jinja")
THINK = "<think>step by step</think>\n"


class ThinkingOracle(Reference):
    """The oracle, with reasoning in front of every message (as a reasoning model writes)."""

    def act(self, env, observation):
        return THINK + super().act(env, observation)


def play(env, agent, task_id):
    """Prompts seen at every step, and the messages sent."""
    obs, _ = env.reset(seed=0, options={"task_id": task_id})
    prompts, actions, turns = [obs["prompt"]], [], [0]
    while True:
        action = agent.act(env, obs)
        obs, _, terminated, _, info = env.step(action)
        actions.append(action)
        if terminated:
            return prompts, actions, turns
        prompts.append(obs["prompt"])
        turns.append(info["turn"])


@pytest.fixture(scope="module")
def smollm2():
    return load_tokenizer("smollm2-135m")


def test_prompt_is_the_chat_template_rendering(smollm2):
    env = gym.make("ToolUse-MultiTurn-v0", category="base", system_prompt="bfcl", tokenizer="smollm2-135m")
    obs, info = env.reset(options={"task_id": "multi_turn_base_0"})
    assert obs["prompt"] == smollm2.apply_chat_template(obs["messages"], tokenize=False, add_generation_prompt=True)
    assert obs["prompt"].startswith("<|im_start|>system\n" + bfcl_persona())
    assert obs["prompt"].endswith("<|im_start|>assistant\n")
    assert info["protocol"]["extra"] == {"tokenizer": "smollm2-135m"}
    assert env.observation_space.contains(obs)


def test_tools_reach_templates_that_render_them():
    env = gym.make("ToolUse-MultiTurn-v0", system_prompt="none", tokenizer="smollm2-135m", chat_template=QWEN3_STYLE)
    obs, info = env.reset(options={"task_id": "multi_turn_base_0"})
    assert "# Tools\n<tools>" in obs["prompt"] and '"name": "mkdir"' in obs["prompt"]
    assert "chat_template_sha256" in info["protocol"]["extra"]


@pytest.mark.parametrize("task_id", ["multi_turn_base_0", "multi_turn_miss_func_47", "multi_turn_long_context_1"])
def test_prefix_property_holds_for_smollm2_native(task_id):
    env = gym.make("ToolUse-MultiTurn-v0", category="all", system_prompt="bfcl", tokenizer="smollm2-135m")
    for agent in (Reference(), ThinkingOracle()):
        prompts, actions, _ = play(env, agent, task_id)
        assert len(prompts) > 3 and prefix_breaks(prompts, actions) == []


def test_qwen3_style_template_breaks_the_prefix_at_turn_boundaries_only():
    env = gym.make(
        "ToolUse-MultiTurn-v0",
        category="base",
        system_prompt="none",
        tokenizer="smollm2-135m",
        chat_template=QWEN3_STYLE,
    )
    prompts, actions, turns = play(env, Reference(), "multi_turn_base_0")
    assert prefix_breaks(prompts, actions) == []  # no reasoning: nothing to strip
    prompts, actions, turns = play(env, ThinkingOracle(), "multi_turn_base_0")
    breaks = prefix_breaks(prompts, actions)
    boundaries = [k for k in range(len(turns) - 1) if turns[k + 1] != turns[k]]
    assert breaks == boundaries and breaks  # the new user turn removes the earlier turn's reasoning


def test_reasoning_strip_breaks_like_qwen3_and_context_breaks_everywhere():
    strip = gym.make("ToolUse-MultiTurn-v0", reasoning="strip", tokenizer="smollm2-135m")
    prompts, actions, turns = play(strip, ThinkingOracle(), "multi_turn_base_0")
    boundaries = [k for k in range(len(turns) - 1) if turns[k + 1] != turns[k]]
    assert prefix_breaks(prompts, actions) == boundaries
    context = gym.make("ToolUse-MultiTurn-v0", template="context", tokenizer="smollm2-135m")
    prompts, actions, _ = play(context, Reference(), "multi_turn_base_0")
    assert prefix_breaks(prompts, actions) == list(range(len(prompts) - 1))


def test_a_template_without_a_tools_slot_warns_that_the_model_sees_no_tools():
    # SmolLM2's template does not render `tools`; under system_prompt="none" the functions are only there.
    env = gym.make("ToolUse-MultiTurn-v0", system_prompt="none", tokenizer="smollm2-135m")
    with pytest.warns(ToolsNotShownWarning, match="the model sees no tools"):
        obs, _ = env.reset(options={"task_id": "multi_turn_base_0"})
    assert obs["tools"] and '"name": "mkdir"' not in obs["prompt"]


@pytest.mark.parametrize(
    ("knobs", "template"),
    [({"system_prompt": "strong"}, None), ({"system_prompt": "none"}, QWEN3_STYLE)],
)
def test_no_warning_when_the_prompt_shows_the_tools(knobs, template):
    env = gym.make("ToolUse-MultiTurn-v0", tokenizer="smollm2-135m", chat_template=template, **knobs)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ToolsNotShownWarning)
        obs, _ = env.reset(options={"task_id": "multi_turn_base_0"})
    assert "mkdir" in obs["prompt"]


def test_chat_prompt_warns_for_a_tokenizer_without_a_tools_slot(smollm2):
    observation = {"messages": [{"role": "user", "content": "hi"}], "tools": [{"name": "mkdir"}]}
    with pytest.warns(ToolsNotShownWarning):
        chat_prompt(smollm2, observation)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ToolsNotShownWarning)
        chat_prompt(smollm2, {**observation, "tools": []})


def test_template_renders_tools_reads_text_and_named_templates():
    assert template_renders_tools("{% for t in tools %}{{ t }}{% endfor %}")
    assert not template_renders_tools("{{ messages }}")
    assert template_renders_tools({"default": "{{ messages }}", "tool_use": "{{ tools }}"})
    assert not template_renders_tools(None)
