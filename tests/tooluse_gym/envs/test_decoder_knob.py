"""The `decoder` knob: its values, defaults, card and the behaviour each value promises."""

from __future__ import annotations

import json

import gymnasium as gym
import pytest

from tooluse_gym.protocol import ProtocolCard


def _env(**kwargs):
    return gym.make("ToolUse-MultiTurn-v0", category="base", **kwargs)


def test_bad_decoder_fails_at_make_listing_the_valid_ones():
    with pytest.raises(ValueError, match=r"decoder must be one of 'bfcl', 'lenient'; got 'strict'"):
        _env(decoder="strict")
    with pytest.raises(ValueError, match="decoder must be one of"):
        gym.make("ToolUse-Scenario-v0", path="scenarios/curriculum/train.yaml", decoder="BFCL")


def test_defaults_and_card():
    _, info = _env().reset(seed=0)
    card = info["protocol"]
    assert card["decoder"] == "bfcl" and card["validate_args"] is False
    _, lenient = _env(decoder="lenient").reset(seed=0)
    assert lenient["protocol"]["decoder"] == "lenient" and lenient["protocol"]["validate_args"] is True
    a, b = ProtocolCard.from_dict(card), ProtocolCard.from_dict(lenient["protocol"])
    assert a.fingerprint() != b.fingerprint()
    assert set(a.differences(b)) == {"decoder", "validate_args"}
    _, explicit = _env(decoder="bfcl", validate_args=True).reset(seed=0)
    assert explicit["protocol"]["validate_args"] is True  # a deliberate deviation, recorded
    scenario = gym.make("ToolUse-Scenario-v0", path="scenarios/curriculum/train.yaml")
    assert scenario.reset(seed=0)[1]["protocol"]["decoder"] == "lenient"


def test_card_written_before_the_knob_reads_as_lenient():
    _, info = _env(decoder="lenient").reset(seed=0)
    old = {k: v for k, v in info["protocol"].items() if k != "decoder"}
    assert ProtocolCard.from_dict(old).decoder == "lenient"


def _first_turn(env, action):
    env.reset(options={"task_id": "multi_turn_base_0"})
    return env.step(action)


@pytest.mark.parametrize(
    ("action", "bfcl_results", "lenient_results"),
    [
        # positional arguments: BFCL drops them, lenient binds them
        ("[cd('document')]", ["Error during execution: GorillaFileSystem.cd() missing 1 required"], ['{"current']),
        # a bare name is its string under BFCL; lenient refuses it
        ("[cd(folder=document)]", ['{"current_working_directory": "document"}'], ["Error during execution: invalid"]),
        # a fenced list with a language tag fails BFCL's decoder (the turn ends); lenient strips the fence
        ("```python\n[cd(folder='document')]\n```", None, ['{"current_working_directory": "document"}']),
        ("I will now run [cd(folder='document')]", None, None),
    ],
)
def test_surface_forms(action, bfcl_results, lenient_results):
    for decoder, expected in (("bfcl", bfcl_results), ("lenient", lenient_results)):
        obs, _, _, _, info = _first_turn(_env(decoder=decoder), action)
        if expected is None:
            assert info["turn"] == 1, (decoder, "the message must end the turn")
            continue
        results = [m["content"] for m in obs["messages"] if m["role"] == "tool"]
        assert len(results) == len(expected), (decoder, results)
        for got, prefix in zip(results, expected, strict=True):
            assert got.startswith(prefix), (decoder, got)


def test_one_malformed_function_call_fails_the_whole_step_under_bfcl():
    calls = [
        {"id": "a", "type": "function", "function": {"name": "cd", "arguments": json.dumps({"folder": "document"})}},
        {"id": "b", "type": "function", "function": {"name": "ls", "arguments": '{"a": 124?}'}},
    ]
    obs, _, _, _, info = _first_turn(_env(decoder="bfcl"), {"content": "", "tool_calls": calls})
    assert info["turn"] == 1 and "not valid JSON" in info["parse_failure"]
    assert not [m for m in obs["messages"] if m["role"] == "tool"]
    obs, _, _, _, info = _first_turn(_env(decoder="lenient"), {"content": "", "tool_calls": calls})
    results = [m["content"] for m in obs["messages"] if m["role"] == "tool"]
    assert info["turn"] == 0 and results[0].startswith('{"current') and "not valid JSON" in results[1]


def test_none_for_a_none_default_parameter_runs_under_bfcl():
    obs, *_ = _first_turn(_env(decoder="bfcl"), "[find(path='.', name=None)]")
    assert obs["messages"][-1]["content"].startswith('{"matches": [')
    obs, *_ = _first_turn(_env(decoder="lenient"), "[find(path='.', name=None)]")
    assert "None is not of type 'string'" in obs["messages"][-1]["content"]


def test_bfcl_calls_carry_their_call_string():
    env = _env(decoder="bfcl")
    env.reset(options={"task_id": "multi_turn_base_0"})
    env.step("[mkdir(dir_name='a' + 'b'), cd(folder=ab)]")
    calls = env.unwrapped.step_log[-1].calls
    assert [c.source for c in calls] == ["mkdir(dir_name='ab')", "cd(folder='ab')"]
    assert [c.to_dict()["arguments"] for c in calls] == [{"dir_name": "ab"}, {"folder": "ab"}]
