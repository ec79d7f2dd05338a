from __future__ import annotations

import json

import gymnasium as gym
import pytest

from tests._reference.scripted import END_OF_TURN, Reference, play_reference
from tooluse_gym import __version__
from tooluse_gym.tasks import bfcl
from tooluse_gym.tasks.bfcl import BFCL_VERSION

TOOLUSE_IDS = [spec_id for spec_id in gym.registry if spec_id.startswith("ToolUse-")]


def test_registered_ids():
    assert {"ToolUse-MultiTurn-v0", "ToolUse-Scenario-v0"} <= set(TOOLUSE_IDS)


# check_env (on the wrapped env and on env.unwrapped) runs in tests/tooluse_gym/envs/test_gymnasium_wrappers.py.


def test_category_all_and_unknown_arguments():
    env = gym.make("ToolUse-MultiTurn-v0", category="all")
    assert len(env.unwrapped.tasks) == 800
    with pytest.raises(ValueError, match="unknown BFCL category"):
        gym.make("ToolUse-MultiTurn-v0", category="irrelevance")
    with pytest.raises(ValueError, match="tool_format"):
        gym.make("ToolUse-MultiTurn-v0", tool_format="xml")
    with pytest.raises(ValueError, match="unknown task_id"):
        env.reset(options={"task_id": "nope"})


def test_seeded_reset_picks_tasks_reproducibly(make_env):
    env = make_env(category="all")
    first = [env.reset(seed=s)[1]["task_id"] for s in range(20)]
    again = [env.reset(seed=s)[1]["task_id"] for s in range(20)]
    assert first == again and len(set(first)) > 10


def test_observation_and_protocol_card(make_env):
    env = make_env(category="base", system_prompt="none")
    obs, info = env.reset(seed=0, options={"task_id": "multi_turn_base_0"})
    assert obs["messages"] == [{"role": "user", "content": env.unwrapped.task.turns[0][0]["content"]}]
    names = {t["function"]["name"] for t in obs["tools"]}
    assert {"cd", "mkdir", "mv"} <= names
    card = info["protocol"]
    assert card["env_id"] == "ToolUse-MultiTurn-v0" and card["category"] == "base"
    assert card["bfcl_version"] == BFCL_VERSION and card["tooluse_gym_version"] == __version__
    assert card["tool_format"] == "python" and card["max_steps_per_turn"] == 20 and not card["strict_tools"]
    json.dumps(card)


def test_step_executes_calls_and_shows_results(make_env):
    env = make_env(category="base")
    env.reset(options={"task_id": "multi_turn_base_0"})
    obs, reward, terminated, truncated, info = env.step("[cd(folder='document'), mkdir(dir_name='temp')]")
    assert (reward, terminated, truncated) == (0.0, False, False)
    tool_messages = obs["messages"][-2:]
    assert [m["role"] for m in tool_messages] == ["tool", "tool"]
    assert tool_messages[0]["content"] == '{"current_working_directory": "document"}'
    assert tool_messages[1]["content"] == "None"  # BFCL's str() of a None result
    assert info["step"] == 1 and info["turn"] == 0


def test_message_without_call_ends_the_turn_and_next_user_turn_follows(make_env):
    env = make_env(category="base")
    env.reset(options={"task_id": "multi_turn_base_0"})
    env.step("[cd(folder='document'), mkdir(dir_name='temp'), mv(source='final_report.pdf', destination='temp')]")
    obs, reward, terminated, _, info = env.step("All done.")
    assert info["turn"] == 1 and info["turn_verdict"] == {"turn": 0, "checked": True, "valid": True, "error_type": None}
    assert obs["messages"][-1] == env.unwrapped.task.turns[1][0]
    assert not terminated


def test_holdout_turn_offers_new_functions(make_env):
    env = make_env(category="miss_func", system_prompt="none")
    obs, _ = env.reset(options={"task_id": "multi_turn_miss_func_47"})
    assert "mean" not in {t["function"]["name"] for t in obs["tools"]}
    for action in ("[find(path='.')]", END_OF_TURN, END_OF_TURN):
        obs, *_ = env.step(action)
    assert obs["messages"][-1] == {"role": "user", "content": bfcl.holdout_notice_template(prompting=False)}
    assert "mean" in {t["function"]["name"] for t in obs["tools"]}


def test_strict_tools_refuses_held_out_and_excluded(make_env):
    env = make_env(category="miss_func", strict_tools=True)
    env.reset(options={"task_id": "multi_turn_miss_func_47"})
    obs, *_ = env.step("[mean(numbers=[1, 2])]")
    assert obs["messages"][-1]["content"] == "Error during execution: name 'mean' is not defined"
    lenient = make_env(category="miss_func")
    lenient.reset(options={"task_id": "multi_turn_miss_func_47"})
    obs, *_ = lenient.step("[mean(numbers=[1, 2])]")
    assert obs["messages"][-1]["content"] == '{"result": 1.5}'  # BFCL executes held-out functions

    task = next(t for t in env.unwrapped.tasks if t.excluded_functions)
    fn = task.excluded_functions[0]
    env.reset(options={"task_id": task.task_id})
    obs, *_ = env.step(f"[{fn}(source='a', destination='b')]" if fn in ("mv", "cp") else f"[{fn}(file_name='a')]")
    assert obs["messages"][-1]["content"] == f"Error during execution: name '{fn}' is not defined"


def test_step_limit_force_terminates_before_the_last_turn(make_env):
    env = make_env(category="base")
    env.reset(options={"task_id": "multi_turn_base_0"})
    for i in range(20):
        _, _, terminated, _, info = env.step("[pwd()]")
        assert not terminated and info["step"] == i + 1
    _, reward, terminated, _, info = env.step("[pwd()]")
    assert terminated and reward == 0.0
    assert info["checker"]["error_type"] == "multi_turn:force_terminated"
    with pytest.raises(gym.error.ResetNeeded):
        env.step("[pwd()]")


def test_step_limit_in_the_last_turn_is_checked_normally(make_env):
    """BFCL's runner only fails force-quit runs whose turn count is short; in the last turn it checks."""
    env = make_env(category="base")
    task = next(t for t in env.unwrapped.tasks if t.num_turns == 1)
    env.reset(options={"task_id": task.task_id})
    calls = "[" + ", ".join(c.render() for c in task.ground_truth[0]) + "]"
    for _ in range(20):
        assert not env.step("[pwd()]" if "GorillaFileSystem" in task.backends else calls)[2]
    _, reward, terminated, _, info = env.step(calls)
    assert terminated and info["checker"]["error_type"] != "multi_turn:force_terminated"


def test_custom_step_limit(make_env):
    env = make_env(category="base", max_steps_per_turn=2)
    env.reset(options={"task_id": "multi_turn_base_0"})
    env.step("[pwd()]")
    env.step("[pwd()]")
    assert env.step("[pwd()]")[2]


@pytest.mark.parametrize("tool_format", ["python", "json"])
def test_oracle_passes_in_both_formats(make_env, tool_format, all_tasks):
    env = make_env(category="all", tool_format=tool_format)
    sample = [t.task_id for t in all_tasks[::40]]
    for task_id in sample:
        reward, info = play_reference(env, task_id)
        assert reward == 1.0 and info["checker"]["valid"], (task_id, info["checker"])


def test_structured_tool_calls_action(make_env, tasks_by_id):
    env = make_env(category="base")
    task = tasks_by_id["multi_turn_base_0"]
    obs, _ = env.reset(options={"task_id": task.task_id})
    runtime = env.unwrapped.runtime
    for turn, calls in enumerate(task.ground_truth):
        tool_calls = [
            {
                "id": f"t{turn}_{i}",
                "type": "function",
                "function": {"name": c.name, "arguments": json.dumps(runtime.keyword_arguments(c))},
            }
            for i, c in enumerate(calls)
        ]
        if tool_calls:
            obs, *_ = env.step({"content": None, "tool_calls": tool_calls})
            assert obs["messages"][-1]["tool_call_id"] == f"t{turn}_{len(calls) - 1}"
            assert obs["messages"][-len(calls) - 1]["tool_calls"][0]["id"] == f"t{turn}_0"
        obs, reward, terminated, _, info = env.step({"content": "Done."})
    assert terminated and reward == 1.0


def test_observations_stay_in_the_space(make_env):
    env = make_env(category="miss_func")
    space = env.observation_space
    obs, _ = env.reset(seed=3)
    assert space.contains(obs)
    agent = Reference()
    done = False
    while not done:
        obs, _, done, _, _ = env.step(agent.act(env, obs))
        assert space.contains(obs)


def test_render_ansi(make_env):
    env = make_env(category="base", render_mode="ansi")
    env.reset(options={"task_id": "multi_turn_base_0"})
    env.step("[cd(folder='document')]")
    text = env.render()
    assert "# multi_turn_base_0" in text and "[user]" in text and "[assistant] [cd(folder='document')]" in text
    assert "[tool cd]" in text
    quiet = make_env(category="base")
    quiet.reset(seed=0)
    assert quiet.render() is None


def test_wrong_answers_are_scored_zero_with_a_state_diff(make_env):
    env = make_env(category="base")
    env.reset(options={"task_id": "multi_turn_base_0"})
    env.step("[cd(folder='document'), mkdir(dir_name='tmp')]")
    _, _, _, _, info = env.step("Done.")
    verdict = info["turn_verdict"]
    assert verdict["error_type"] == "multi_turn:instance_state_mismatch"
    diff = verdict["state_diff"]["GorillaFileSystem"]["root"]
    json.dumps(diff)  # JSON-able for episode files
    assert "tmp" in json.dumps(diff) and "temp" in json.dumps(diff)


def test_unknown_reset_options_are_refused_with_the_known_ones(make_env):
    env = make_env(category="base")
    with pytest.raises(ValueError, match="unknown reset options \\['taskid'\\]; the known ones are: task_id"):
        env.reset(seed=0, options={"taskid": "multi_turn_base_7"})
    assert env.reset(seed=0, options={"task_id": "multi_turn_base_7"})[1]["task_id"] == "multi_turn_base_7"
    assert env.reset(seed=0, options={})[1]["task_id"].startswith("multi_turn_base_")
