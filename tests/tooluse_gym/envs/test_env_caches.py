"""What the env keeps across resets, and what it shares between tasks, changes nothing an episode sees.

The env builds its random generator on first use, keeps each task's offered names and tool
schemas, and the BFCL loader shares identical function docs between tasks (and renders each
once for the system prompt). Each of these must give exactly what computing afresh gives, and
nothing an episode mutates may reach the next one.
"""

from __future__ import annotations

import copy
import json

import gymnasium as gym
import pytest
from gymnasium.utils import seeding

from tests._reference.scripted import Reference
from tooluse_gym.prompts import system_prompt_spec
from tooluse_gym.tasks import bfcl
from tooluse_gym.tasks.task import Task
from tooluse_gym.tools.runtime import ToolRuntime
from tooluse_gym.types import ToolCall


def test_seeded_reset_draws_as_gymnasium_does(make_env):
    env = make_env(category="base")
    base = env.unwrapped
    _, info = env.reset(seed=3)  # no task given: the seed picks one
    rng, _ = seeding.np_random(3)
    assert info["task_id"] == base.tasks[int(rng.integers(len(base.tasks)))].task_id
    assert base.np_random.integers(10**9) == rng.integers(10**9)

    env.reset(seed=4, options={"task_id": "multi_turn_base_0"})  # a named task draws nothing
    assert base.np_random_seed == 4
    assert base.np_random.integers(10**9) == seeding.np_random(4)[0].integers(10**9)

    env.reset(seed=5, options={"task_id": "multi_turn_base_0"})
    env.reset(options={"task_id": "multi_turn_base_1"})  # no seed: the generator carries on
    assert base.np_random.integers(10**9) == seeding.np_random(5)[0].integers(10**9)

    with pytest.raises(gym.error.Error, match="greater or equal to zero"):
        env.reset(seed=-1)
    env.reset(seed=6, options={"task_id": "multi_turn_base_0"})
    base.np_random = seeding.np_random(7)[0]  # set by hand: no seed is known
    assert base.np_random_seed == -1
    assert base.np_random.integers(10**9) == seeding.np_random(7)[0].integers(10**9)


def test_tool_schemas_per_task_equal_fresh_ones_and_are_not_shared(make_env):
    task_ids = ["multi_turn_miss_func_0", "multi_turn_miss_func_1", "multi_turn_miss_func_0"]
    env = make_env(category="miss_func", system_prompt="none")
    oracle = Reference()
    seen = []
    for task_id in task_ids:
        obs, _ = env.reset(options={"task_id": task_id})
        tools = [copy.deepcopy(obs["tools"])]
        obs["tools"].clear()  # the caller owns the list it was given
        done = False
        while not done:
            obs, _, done, _, _ = env.step(oracle.act(env, obs))
            tools.append(copy.deepcopy(obs["tools"]))
        seen.append(tools)
    assert seen[0] == seen[2]
    fresh = make_env(category="miss_func", system_prompt="none")
    obs, _ = fresh.reset(options={"task_id": "multi_turn_miss_func_1"})
    assert seen[1][0] == obs["tools"]
    assert len(seen[0][-1]) > len(seen[0][0])  # the held-out function arrived


def test_function_list_renders_as_bfcl_writes_it(all_tasks):
    for task in all_tasks:
        for docs in (task.functions, task.all_functions()):
            assert bfcl.format_functions(docs) == json.dumps(list(docs), indent=4)
    odd = [{"name": "é\n", "parameters": {"a": [1, 2.5, None, True, {}], "b": []}}, {"name": "x"}]
    assert bfcl.format_functions(odd) == json.dumps(odd, indent=4)
    assert bfcl.format_functions([]) == json.dumps([], indent=4)
    assert bfcl.format_functions(({"name": "t"}, [1])) == json.dumps([{"name": "t"}, [1]], indent=4)


def test_system_prompt_render_equals_replacing_the_placeholder(all_tasks):
    task = next(t for t in all_tasks if t.held_out)
    for prompt in ("bfcl", "strong", "none", "literal text", "a {functions} b {functions}"):
        for tool_format in ("python", "json"):
            spec = system_prompt_spec(prompt, tool_format)
            expected = None
            if spec.template is not None:
                expected = spec.template.replace("{functions}", spec.format_functions(task.functions))
            assert spec.render(task.functions) == expected


def test_tasks_share_identical_docs_only(all_tasks):
    from bfcl_eval.utils import load_dataset_entry

    by_id = {t.task_id: t for t in all_tasks}
    by_text: dict[str, object] = {}
    for category in bfcl.CATEGORIES:
        for entry in load_dataset_entry(f"multi_turn_{category}", include_language_specific_hint=True):
            task = by_id[entry["id"]]
            assert [json.dumps(d) for d in task.functions] == [json.dumps(d) for d in entry["function"]]
            for doc in task.all_functions():
                assert by_text.setdefault(json.dumps(doc), doc) is doc  # one object per distinct doc
    assert len(by_text) < sum(len(t.all_functions()) for t in all_tasks) / 10


def _containers(value, out):
    if isinstance(value, (dict, list)):
        out.append(id(value))
        for item in value.values() if isinstance(value, dict) else value:
            _containers(item, out)
    else:
        assert value is None or type(value) in (str, int, float, bool), type(value)
    return out


def test_isolated_travel_state_is_plain_data_without_repeats(all_tasks):
    """`isolate_instance` copies with `copy_state`: the same copy as deepcopy for this data."""
    tasks = [t for t in all_tasks if t.long_context and "TravelAPI" in t.backends][:5]
    assert tasks
    for task in tasks:
        runtime = ToolRuntime(task, bfcl.backend_classes(), bfcl.stateless_backends(), hooks=bfcl.HOOKS)
        travel = runtime.instances["TravelAPI"]
        cls = type(travel)
        loaded = cls()
        loaded._load_scenario(copy.deepcopy(task.initial_config.get("TravelAPI", {})), long_context=True)
        for attr in ("credit_card_list", "booking_record"):
            shared = getattr(loaded, attr)  # as loaded: part of it is the module's own data
            ids = _containers(shared, [])
            assert len(ids) == len(set(ids)), attr
            assert getattr(travel, attr) == copy.deepcopy(shared)
            assert not set(_containers(getattr(travel, attr), [])) & set(ids)


class _Adder:
    def add(self, a, b):
        return a + b


def test_validation_uses_the_last_doc_of_a_name():
    def doc(kind):
        properties = {"a": {"type": kind}, "b": {"type": kind}}
        return {"name": "add", "description": "", "parameters": {"type": "dict", "properties": properties}}

    task = Task(
        task_id="t",
        category="x",
        turns=(({"role": "user", "content": "add"},),),
        ground_truth=((),),
        functions=(doc("string"), doc("integer")),
        backends=("Adder",),
        initial_config={},
    )
    runtime = ToolRuntime(task, {"Adder": _Adder}, {"Adder"}, validate=True)
    assert runtime.execute_one(ToolCall("add", {"a": 1, "b": 2})).result == "3"
    assert "invalid arguments" in runtime.execute_one(ToolCall("add", {"a": "x", "b": "y"})).result
