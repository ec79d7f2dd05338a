"""The ``prompt_format`` knob's rules: what it needs of the other knobs, where it applies, what the card shows."""

from __future__ import annotations

import json

import gymnasium as gym
import pytest

import tooluse_gym  # noqa: F401  (registers the env ids)
from tooluse_gym.envs.knobs import Knobs
from tooluse_gym.prompt_formats import ALL, PromptFormat, default_prompt_format, expand, prompt_formats

pytest.importorskip("tree_sitter", reason="bfcl_eval's prompt builder needs tree_sitter (the dev extra)")

JSON_TAGGED = "ret_fmt=json&tool_call_tag=True&func_doc_fmt=xml&prompt_fmt=plaintext&style=classic"
EXPERIMENTAL = "ret_fmt=python&tool_call_tag=False&func_doc_fmt=json&prompt_fmt=plaintext&style=experimental"
PYTHON_DOCS = "ret_fmt=python&tool_call_tag=False&func_doc_fmt=python&prompt_fmt=plaintext&style=classic"


def test_an_unknown_configuration_lists_bfcls():
    with pytest.raises(ValueError, match="must be one of BFCL's 26 configurations") as caught:
        Knobs(prompt_format="ret_fmt=yaml")
    assert all(config in str(caught.value) for config in prompt_formats())


@pytest.mark.parametrize(("knob", "value"), [("system_prompt", "strong"), ("tool_format", "json")])
def test_it_sets_the_prompt_and_the_call_format(knob, value):
    with pytest.raises(ValueError, match=f"so {knob} must stay"):
        Knobs(prompt_format=JSON_TAGGED, **{knob: value})


def test_the_card_records_it_and_the_prompt_hash_follows_it():
    cards = {}
    for config in (None, JSON_TAGGED, EXPERIMENTAL):
        env = gym.make("ToolUse-SingleTurn-v0", category="simple_python", prompt_format=config)
        cards[config] = env.reset(seed=0)[1]["protocol"]
    assert "prompt_format" not in cards[None]["extra"]
    assert cards[JSON_TAGGED]["extra"]["prompt_format"] == JSON_TAGGED
    assert len({card["system_prompt_sha256"] for card in cards.values()}) == 3
    assert {card["system_prompt"] for card in cards.values()} == {"bfcl"}


def test_the_return_format_decodes_the_message():
    env = gym.make("ToolUse-SingleTurn-v0", category="simple_python", prompt_format=JSON_TAGGED)
    _, info = env.reset(options={"task_id": "simple_python_0"})
    call = info["task"].ground_truth[0][0]
    body = json.dumps([{"function": call.name, "parameters": dict(call.arguments)}])
    assert env.step(f"<TOOLCALL>```json\n{body}\n```</TOOLCALL>")[1] == 1.0
    env.reset(options={"task_id": "simple_python_0"})
    _, reward, _, _, info = env.step(body)  # no tag: BFCL fails to decode it
    assert reward == 0.0 and info["checker"]["error_type"] == "ast_decoder:decoder_failed"


def test_lenient_takes_the_bare_python_configurations_only():
    with pytest.raises(ValueError, match=r"'lenient' reads Python call lists.*ret_fmt=python&tool_call_tag=False"):
        gym.make("ToolUse-SingleTurn-v0", category="simple_python", prompt_format=JSON_TAGGED, decoder="lenient")
    env = gym.make("ToolUse-SingleTurn-v0", category="simple_python", prompt_format=EXPERIMENTAL, decoder="lenient")
    obs, info = env.reset(options={"task_id": "simple_python_0"})
    assert info["protocol"]["decoder"] == "lenient" and info["protocol"]["extra"]["prompt_format"] == EXPERIMENTAL
    bfcl = gym.make("ToolUse-SingleTurn-v0", category="simple_python", prompt_format=EXPERIMENTAL)
    assert bfcl.reset(options={"task_id": "simple_python_0"})[0]["messages"] == obs["messages"]  # the same prompt
    text = "Here you go:\n```python\n[calculate_triangle_area(10, 5)]\n```"  # read by the lenient parser only
    assert env.step(text)[1] == 1.0
    assert bfcl.step(text)[1] == 0.0


def test_java_and_javascript_categories_refuse_it():
    with pytest.raises(ValueError, match="Python categories"):
        gym.make("ToolUse-SingleTurn-v0", category="simple_java", prompt_format=EXPERIMENTAL)


def test_multi_turn_takes_the_bare_python_configurations_only():
    with pytest.raises(ValueError, match=r"single-turn entries only.*ret_fmt=python&tool_call_tag=False"):
        gym.make("ToolUse-MultiTurn-v0", prompt_format=JSON_TAGGED)
    applicable = [c for c in prompt_formats() if PromptFormat.parse(c).python_calls]
    assert len(applicable) == 5  # the three doc formats, markdown, experimental

    from bfcl_eval.model_handler.utils import formulate_system_prompt

    plain = gym.make("ToolUse-MultiTurn-v0", task_ids=["multi_turn_base_0"])
    default = gym.make("ToolUse-MultiTurn-v0", task_ids=["multi_turn_base_0"], prompt_format=default_prompt_format())
    assert plain.reset(seed=0)[0]["messages"] == default.reset(seed=0)[0]["messages"]
    for config in (EXPERIMENTAL, PYTHON_DOCS):
        env = gym.make("ToolUse-MultiTurn-v0", task_ids=["multi_turn_base_0"], prompt_format=config)
        obs, info = env.reset(seed=0)
        assert obs["messages"][0]["content"] == formulate_system_prompt(config, list(info["task"].functions))
        _, _, _, _, step = env.step("[ls()]")
        assert step["step_record"].calls[0].name == "ls"


def test_all_expands_to_the_grid():
    assert expand([ALL]) == list(prompt_formats())
    assert expand([EXPERIMENTAL, ALL])[0] == EXPERIMENTAL and len(expand([EXPERIMENTAL, ALL])) == 26
