"""Single-turn scenarios: the curriculum's single-turn splits through gym.make, BFCL's verdicts, the knob rules."""

from __future__ import annotations

import collections
import inspect
import itertools
from pathlib import Path

import gymnasium as gym
import pytest

import tooluse_gym  # noqa: F401  (registers the ids)
from tests._reference.single_turn_cases import message
from tooluse_gym.envs.tool_env import task_ids
from tooluse_gym.tasks.bfcl_single_turn import SingleTurnTask
from tooluse_gym.tasks.scenario import load_scenario_set
from tooluse_gym.tasks.scenario_single_turn import scored_as, single_turn_task
from tooluse_gym.tools.registry import get_backend

CURRICULUM = Path(__file__).resolve().parents[3] / "scenarios" / "curriculum"
TRAIN = CURRICULUM / "single_turn_train.yaml"
HELDOUT = CURRICULUM / "single_turn_heldout.yaml"
SPLITS = (TRAIN, HELDOUT)
TIERS = {"one_call": {"simple_python"}, "choose": {"multiple"}, "several_calls": {"parallel", "parallel_multiple"}}
TIERS["irrelevant"] = {"irrelevance"}


def test_the_splits_have_every_tier_and_share_no_request():
    train, heldout = (load_scenario_set(p).tasks for p in SPLITS)
    assert (len(train), len(heldout)) == (268, 132)
    for tasks in (train, heldout):
        assert all(isinstance(t, SingleTurnTask) for t in tasks)
        by_tier = collections.defaultdict(set)
        for t in tasks:
            by_tier[t.category].add(t.test_category)
        assert by_tier == TIERS
    backends = {t.backends[0] for t in train}
    assert len(backends) == 7

    def requests(tasks):
        return [repr(t.turns) for t in tasks]

    assert not set(requests(train)) & set(requests(heldout))
    assert len(set(requests(train))) == len(train)


@pytest.mark.parametrize("decoder", [None, "bfcl"])
@pytest.mark.parametrize("tool_format", ["python", "json"])
@pytest.mark.parametrize("path", SPLITS, ids=["train", "heldout"])
def test_the_oracle_scores_100_percent_through_gym_make(path, tool_format, decoder):
    """Without a decoder argument the scenario env's default, ``lenient``, plays them; ``bfcl`` given, BFCL's."""
    knobs = {} if decoder is None else {"decoder": decoder}
    env = gym.make("ToolUse-Scenario-v0", path=path, system_prompt="strong", tool_format=tool_format, **knobs)
    rewards = []
    for task_id in task_ids(env):
        _, info = env.reset(seed=0, options={"task_id": task_id})
        assert info["protocol"]["decoder"] == (decoder or "lenient") and info["protocol"]["validate_args"] is False
        text = info["task"].reference_message(0, 0, tool_format)
        _, reward, terminated, truncated, info = env.step(text)
        assert terminated and not truncated
        rewards.append(reward)
        assert info["checker"]["valid"] == (reward == 1.0), (task_id, info["checker"])
    assert rewards == [1.0] * len(load_scenario_set(path).tasks)


def test_positional_answers_score_under_lenient_only():
    """Each call's leading arguments by position (in the schema's order, which is the functions' signature order)."""
    lenient = gym.make("ToolUse-Scenario-v0", path=HELDOUT, categories=["one_call", "several_calls"])
    bfcl = gym.make("ToolUse-Scenario-v0", path=HELDOUT, categories=["one_call", "several_calls"], decoder="bfcl")
    scores: collections.Counter[tuple[str, float]] = collections.Counter()
    for task_id in task_ids(lenient):
        _, info = lenient.reset(options={"task_id": task_id})
        bfcl.reset(options={"task_id": task_id})
        task = info["task"]
        calls = []
        for call in task.ground_truth[0]:
            (doc,) = [d for d in task.functions if d["name"] == call.name]
            signature = list(inspect.signature(getattr(get_backend(task.backends[0]).cls, call.name)).parameters)[1:]
            assert list(doc["parameters"]["properties"]) == signature
            leading = list(itertools.takewhile(call.arguments.__contains__, signature))
            parts = [repr(call.arguments[p]) for p in leading]
            parts += [f"{k}={v!r}" for k, v in call.arguments.items() if k not in leading]
            calls.append(f"{call.name}({', '.join(parts)})")
        text = "Sure:\n```python\n[" + ", ".join(calls) + "]\n```"
        scores["lenient", lenient.step(text)[1]] += 1
        scores["bfcl", bfcl.step(text)[1]] += 1
    assert scores == {("lenient", 1.0): 66, ("bfcl", 0.0): 66}


def _wrong(task: SingleTurnTask) -> tuple[list[tuple[str, dict]], str]:
    """A wrong answer for the task's tier and the BFCL error type (or its prefix) it must get."""
    calls = [(c.name, dict(c.arguments)) for c in task.ground_truth[0]]
    if task.category == "irrelevant":
        doc = task.functions[0]
        return [(doc["name"], {})], "irrelevance_error:decoder_success"
    if task.category == "several_calls":
        return calls[:-1], "parallel_function_checker_no_order:wrong_count"
    name, arguments = calls[0]
    if task.category == "choose":
        other = next(d["name"] for d in task.functions if d["name"] != name)
        return [(other, arguments)], "simple_function_checker:wrong_func_name"
    param, value = next(iter(arguments.items()))
    if isinstance(value, list):  # one more item of the same kind
        changed = [*value, value[0] + ("_x" if isinstance(value[0], str) else 1)]
    elif isinstance(value, bool):
        changed = not value
    else:
        changed = value + ("_x" if isinstance(value, str) else 1)
    return [(name, {**arguments, param: changed})], "value_error:"


@pytest.mark.parametrize("decoder", ["lenient", "bfcl"])
@pytest.mark.parametrize("response_format", ["python", "json", "fc"])
def test_wrong_answers_score_0_with_bfcls_error_types(response_format, decoder):
    knobs = {"system_prompt": "none"} if response_format == "fc" else {"tool_format": response_format}
    env = gym.make("ToolUse-Scenario-v0", path=HELDOUT, decoder=decoder, **knobs)
    played = 0
    for task_id in task_ids(env):
        _, info = env.reset(seed=0, options={"task_id": task_id})
        calls, error = _wrong(info["task"])
        _, reward, _, _, info = env.step(message(calls, response_format))
        assert reward == 0.0 and info["checker"]["error_type"].startswith(error), (task_id, info["checker"])
        played += 1
        _, info = env.reset(seed=0, options={"task_id": task_id})
        if info["task"].check == "ast":  # prose where a call is due: undecodable for BFCL, no call for lenient
            _, reward, _, _, info = env.step(message("I would rather not.", response_format))
            expected = (
                "ast_decoder:decoder_failed" if response_format != "json" and decoder == "bfcl" else "wrong_count"
            )
            assert reward == 0.0 and expected in info["checker"]["error_type"], (task_id, info["checker"])
    assert played == 132


def test_the_answer_picks_bfcls_checker():
    assert [scored_as(1, 0), scored_as(1, 1), scored_as(3, 1), scored_as(1, 2), scored_as(2, 3)] == [
        "irrelevance",
        "simple_python",
        "multiple",
        "parallel",
        "parallel_multiple",
    ]


def test_a_reference_answer_the_checker_refuses_is_reported():
    """A doc BFCL's checker cannot read (no ``required`` list: its checker would raise) fails the replay check."""
    problems = []
    spec = {
        "id": "s1",
        "tools": {"MathAPI": {}},
        "single_turn": {"request": "Add 3 and 4.", "possible_answer": [{"add": {"a": [3], "b": [4]}}]},
    }
    (add,) = [d for d in get_backend("MathAPI").docs if d["name"] == "add"]
    parameters = {k: v for k, v in add["parameters"].items() if k != "required"}
    docs = [{**add, "parameters": parameters}]

    def fail(*problem):
        problems.append(problem)

    task = single_turn_task(spec, docs, fail=fail, validate=lambda *_: None, source="x", backends=["MathAPI"])
    assert task is None
    ((field, kind, reason),) = problems
    assert (field, kind) == ("single_turn.possible_answer", "replay_failed")
    assert "ast_checker:crashed" in reason
    problems.clear()
    kept = single_turn_task(spec, docs, fail=fail, validate=lambda *_: None, source="x", backends=[], replay=False)
    assert kept is not None
    assert not problems


def test_single_turn_pools_take_the_env_ids_decoder_and_one_kind():
    card = gym.make("ToolUse-Scenario-v0", path=TRAIN, decoder="lenient").reset(seed=0)[1]["protocol"]
    assert (card["decoder"], card["validate_args"]) == ("lenient", False)
    with pytest.raises(ValueError, match="validate_args cannot apply"):
        gym.make("ToolUse-Scenario-v0", path=TRAIN, validate_args=True)
    with pytest.raises(ValueError, match="mixes 132 single-turn and 120 multi-turn"):
        gym.make("ToolUse-Scenario-v0", path=[HELDOUT, CURRICULUM / "heldout.yaml"])
    env = gym.make("ToolUse-Scenario-v0", path=[HELDOUT, CURRICULUM / "heldout.yaml"], categories=["choose"])
    assert len(task_ids(env)) == 33
    source = {"kind": "scenario", "path": str(HELDOUT), "next_turn": True}
    env = gym.make("ToolUse-Tasks-v0", source=source)
    assert len(task_ids(env)) == 132  # irrelevant requests stay prompts: each single-turn task is checked
    _, info = env.reset(seed=3)
    assert info["protocol"]["decoder"] == "lenient" and info["protocol"]["env_id"] == "ToolUse-Tasks-v0"
    _, info = gym.make("ToolUse-Tasks-v0", source=source, decoder="bfcl").reset(seed=3)
    assert info["protocol"]["decoder"] == "bfcl"
