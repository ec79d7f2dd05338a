"""The runtime against bfcl_eval's own executor: same result strings, isolated episodes."""

from __future__ import annotations

import random
import uuid

import pytest

from tests.tooluse_gym.checking.test_checker_parity import _wrong_value
from tooluse_gym.decoding.lenient import parse_call_string
from tooluse_gym.tasks import bfcl
from tooluse_gym.tools.runtime import ToolRuntime
from tooluse_gym.types import ToolCall


def runtime(task, **kwargs):
    return ToolRuntime(task, bfcl.backend_classes(), bfcl.stateless_backends(), hooks=bfcl.HOOKS, **kwargs)


def official_results(task, turns: list[list[str]]) -> list[list[str]]:
    from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_utils

    from tests._reference.bfcl_reference import _entries

    entry = _entries(task.category)[task.task_id][0]
    model = "rt_" + uuid.uuid4().hex
    try:
        return [
            multi_turn_utils.execute_multi_turn_func_call(
                calls, entry["initial_config"], entry["involved_classes"], model, task.task_id, task.long_context
            )[0]
            for calls in turns
        ]
    finally:
        g = vars(multi_turn_utils)
        for key in [k for k in g if k.startswith(model)]:
            del g[key]


@pytest.mark.parametrize("category", bfcl.CATEGORIES)
def test_result_strings_equal_official_executor(category, all_tasks):
    """Ground-truth calls, and each followed by a wrong-valued variant, give identical strings."""
    rng = random.Random(category)
    compared = errors = 0
    for task in [t for t in all_tasks if t.category == category]:
        from tests._reference.bfcl_reference import ground_truth_strings

        turns = []
        for turn in ground_truth_strings(task.task_id):
            calls = []
            for call in turn:
                calls.append(call)
                wrong = _wrong_value(call, rng)
                if wrong is not None and rng.random() < 0.3:
                    calls.append(wrong)
            turns.append(calls)
        ours = runtime(task)
        mine = [[r.result for r in ours.execute(parse_call_string(c) for c in calls)] for calls in turns]
        theirs = official_results(task, turns)
        assert mine == theirs, task.task_id
        compared += sum(len(t) for t in turns)
        errors += sum(r.startswith("Error during execution") for t in mine for r in t)
    assert compared > 1100 and errors > 0


def test_unknown_function_reads_like_bfcl(tasks_by_id):
    task = tasks_by_id["multi_turn_base_0"]
    (record,) = runtime(task).execute([ToolCall(name="launch_rocket")])
    assert record.result == "Error during execution: name 'launch_rocket' is not defined"
    assert official_results(task, [["launch_rocket()"]]) == [[record.result]]


def test_private_and_dunder_methods_are_not_callable(tasks_by_id):
    rt = runtime(tasks_by_id["multi_turn_base_0"])
    for name in ("_load_scenario", "__init__", "__class__", "__dict__", "_current_dir"):
        (record,) = rt.execute([ToolCall(name=name, arguments={"scenario": {}})])
        assert record.result.endswith("is not defined") and not record.executed


def test_invalid_arguments_are_refused_before_the_call(tasks_by_id):
    rt = runtime(tasks_by_id["multi_turn_base_0"])
    before = rt.state()["GorillaFileSystem"]["root"]
    (record,) = rt.execute([ToolCall(name="mkdir", arguments={"dir_name": 5})])
    assert not record.executed and "invalid arguments for mkdir" in record.result
    (record,) = rt.execute([ToolCall(name="mkdir", arguments={"dir_name": "x", "mode": "777"})])
    assert "Additional properties" in record.result
    (record,) = rt.execute([ToolCall(name="cd", positional=("a", "b"))])
    assert record.result.startswith("Error during execution: cd(): too many positional arguments")
    assert rt.state()["GorillaFileSystem"]["root"] == before


def test_guard_refuses_runaway_math(tasks_by_id):
    task = next(t for t in tasks_by_id.values() if "MathAPI" in t.backends)
    rt = runtime(task)
    (record,) = rt.execute([ToolCall(name="power", arguments={"base": 10, "exponent": 10**15})])
    assert "exponent above" in record.result
    (record,) = rt.execute([ToolCall(name="square_root", arguments={"number": 2, "precision": 10**9})])
    assert "precision above" in record.result
    (record,) = rt.execute([ToolCall(name="add", arguments={"a": 2**70, "b": 1})])
    assert "2**63" in record.result
    (record,) = rt.execute([ToolCall(name="power", arguments={"base": 2, "exponent": 10})])
    assert record.result == '{"result": 1024}'


def test_strict_offered_set(tasks_by_id):
    task = tasks_by_id["multi_turn_miss_func_47"]
    rt = runtime(task)
    (record,) = rt.execute([parse_call_string("mean(numbers=[1, 2, 3])")], offered=task.offered_names(1))
    assert record.result == "Error during execution: name 'mean' is not defined"
    (record,) = rt.execute([parse_call_string("mean(numbers=[1, 2, 3])")], offered=task.offered_names(2))
    assert record.result == '{"result": 2.0}'


def test_long_context_instances_do_not_share_module_data(tasks_by_id):
    from bfcl_eval.eval_checker.multi_turn_eval.func_source_code import long_context

    task = next(t for t in tasks_by_id.values() if t.long_context and "TravelAPI" in t.backends)
    card_id = next(iter(long_context.CREDIT_CARD_EXTENSION))
    module_balance = long_context.CREDIT_CARD_EXTENSION[card_id]["balance"]
    a, b = runtime(task), runtime(task)
    a.instances["TravelAPI"].credit_card_list[card_id]["balance"] = -1
    assert b.instances["TravelAPI"].credit_card_list[card_id]["balance"] == module_balance
    assert long_context.CREDIT_CARD_EXTENSION[card_id]["balance"] == module_balance


def test_arguments_are_copied_before_the_call(tasks_by_id):
    task = next(t for t in tasks_by_id.values() if "TwitterAPI" in t.backends)
    rt = runtime(task)
    config = task.initial_config["TwitterAPI"]
    rt.execute([ToolCall(name="authenticate_twitter", arguments={k: config[k] for k in ("username", "password")})])
    post = parse_call_string("post_tweet(content='hi', tags=['#a'], mentions=['@b'])")
    (record,) = rt.execute([post])
    tweet_id = int(record.result.split('"id": ')[1].split(",")[0])
    rt.execute([ToolCall(name="mention", arguments={"tweet_id": tweet_id, "mentioned_usernames": ["@c"]})])
    assert rt.instances["TwitterAPI"].tweets[tweet_id]["mentions"] == ["@b", "@c"]
    assert post.arguments["mentions"] == ["@b"]  # the simulator extended its own copy
