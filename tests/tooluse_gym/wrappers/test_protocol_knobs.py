"""Each protocol knob changes the observation exactly as documented, on real BFCL tasks."""

from __future__ import annotations

import ast
import copy
import json
import warnings

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

from tests._reference.bfcl_reference import bfcl_persona
from tests._reference.scripted import END_OF_TURN
from tooluse_gym.prompts import JSON_CALL_FORMAT, system_prompt_spec
from tooluse_gym.protocol import ProtocolCard, sha256_text
from tooluse_gym.tasks import bfcl
from tooluse_gym.wrappers.template import CONTEXT_HEADER

BASE_0 = "multi_turn_base_0"
TURN_0 = "[cd(folder='document'), mkdir(dir_name='temp'), mv(source='final_report.pdf', destination='temp')]"


def make(**kwargs):
    return gym.make("ToolUse-MultiTurn-v0", category=kwargs.pop("category", "base"), **kwargs)


def test_bfcl_prompt_equals_bfcl_eval_for_all_800_tasks(all_tasks):
    bfcl.backend_classes()  # sets BFCL_PROJECT_ROOT before bfcl_eval.model_handler is imported
    from bfcl_eval.model_handler.utils import system_prompt_pre_processing_chat_model
    from bfcl_eval.utils import load_dataset_entry

    spec = system_prompt_spec("bfcl", "python")
    entries = {e["id"]: e for c in bfcl.CATEGORIES for e in load_dataset_entry(f"multi_turn_{c}")}
    for task in all_tasks:
        entry = copy.deepcopy(entries[task.task_id])
        official = system_prompt_pre_processing_chat_model(entry["question"][0], entry["function"], task.task_id)
        assert official[0]["role"] == "system"
        assert spec.render(task.functions) == official[0]["content"], task.task_id


def test_bfcl_system_prompt_carries_the_tools():
    env = make(system_prompt="bfcl")
    obs, info = env.reset(options={"task_id": BASE_0})
    system = obs["messages"][0]
    assert system["role"] == "system" and system["content"].startswith(bfcl_persona())
    assert '"name": "cd"' in system["content"] and obs["tools"] == []
    assert info["protocol"]["system_prompt"] == "bfcl"
    assert info["protocol"]["system_prompt_sha256"] == sha256_text(system_prompt_spec("bfcl", "python").template)
    obs, *_ = env.step(TURN_0)
    assert obs["messages"][0] == system  # the system message stays first and unchanged


def test_bfcl_holdout_notice_in_prompting_mode_equals_bfcl_eval():
    from bfcl_eval.constants.default_prompts import DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_PROMPTING
    from bfcl_eval.utils import load_dataset_entry

    entry = next(e for e in load_dataset_entry("multi_turn_miss_func") if e["id"] == "multi_turn_miss_func_47")
    expected = DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_PROMPTING.format(functions=entry["missed_function"]["2"])
    env = make(category="miss_func", system_prompt="bfcl")
    env.reset(options={"task_id": "multi_turn_miss_func_47"})
    for action in ("[find(path='.')]", END_OF_TURN, END_OF_TURN):
        obs, *_ = env.step(action)
    assert obs["messages"][-1] == {"role": "user", "content": expected}
    assert obs["tools"] == []  # BFCL's prompting mode does not rebuild the system prompt either


def test_none_prompt_uses_the_tools_field():
    obs, info = make(system_prompt="none").reset(options={"task_id": BASE_0})
    assert obs["messages"][0]["role"] == "user"
    assert {t["function"]["name"] for t in obs["tools"]} >= {"cd", "mv"}
    assert info["protocol"]["system_prompt"] == "none" and info["protocol"]["system_prompt_sha256"] == ""


@pytest.mark.parametrize("tool_format", ["python", "json"])
def test_strong_prompt(tool_format):
    obs, info = make(system_prompt="strong", tool_format=tool_format).reset(options={"task_id": BASE_0})
    text = obs["messages"][0]["content"]
    for rule in ("Plan the steps", "Check every call against its schema", "Recover from errors", "Stop and summarize"):
        assert rule in text
    assert ("<tool_call>" in text) == (tool_format == "json")
    assert ("[func_name1(param1=value1" in text) == (tool_format == "python")
    assert obs["tools"] == [] and '{"name": "cd"' in text
    assert info["protocol"]["system_prompt"] == "strong"


def test_bfcl_prompt_with_json_format_asks_for_tool_call_tags():
    obs, _ = make(system_prompt="bfcl", tool_format="json").reset(options={"task_id": BASE_0})
    text = obs["messages"][0]["content"]
    assert JSON_CALL_FORMAT in text and "[func_name1(params_name1" not in text


def test_literal_prompts():
    obs, info = make(system_prompt="Be brief.").reset(options={"task_id": BASE_0})
    assert obs["messages"][0] == {"role": "system", "content": "Be brief."} and obs["tools"]
    assert info["protocol"]["system_prompt"] == "literal"
    assert info["protocol"]["system_prompt_sha256"] == sha256_text("Be brief.")
    obs, _ = make(system_prompt="Tools:\n{functions}").reset(options={"task_id": BASE_0})
    assert obs["messages"][0]["content"].startswith("Tools:\n{") and obs["tools"] == []


def test_prompt_hash_is_the_same_for_every_task():
    env = make(category="all", system_prompt="bfcl")
    cards = {json.dumps({**env.reset(seed=s)[1]["protocol"], "seed": None}, sort_keys=True) for s in range(10)}
    assert len(cards) == 1


THINK = "<think>I should look around first.</think>\n"


def _play_two_turns(env):
    env.reset(options={"task_id": BASE_0})
    env.step(THINK + "[cd(folder='document')]")
    env.step(THINK + "[mkdir(dir_name='temp'), mv(source='final_report.pdf', destination='temp')]")
    obs_turn_end, *_ = env.step(THINK + "Moved.")  # ends turn 0
    obs_next, *_ = env.step(THINK + "[ls()]")  # a step in turn 1
    return obs_turn_end, obs_next


def _assistant_contents(obs):
    return [m["content"] for m in obs["messages"] if m["role"] == "assistant"]


def test_reasoning_keep():
    turn_end, nxt = _play_two_turns(make(system_prompt="none", reasoning="keep"))
    assert all(c.startswith(THINK) for c in _assistant_contents(turn_end) + _assistant_contents(nxt))


def test_reasoning_strip_keeps_only_the_current_turn():
    turn_end, nxt = _play_two_turns(make(system_prompt="none", reasoning="strip"))
    assert _assistant_contents(turn_end) == [
        "[cd(folder='document')]",
        "[mkdir(dir_name='temp'), mv(source='final_report.pdf', destination='temp')]",
        "Moved.",
    ]
    contents = _assistant_contents(nxt)
    assert not any("<think>" in c for c in contents[:-1]) and contents[-1].startswith(THINK)


def test_reasoning_last_keeps_only_the_most_recent():
    _, nxt = _play_two_turns(make(system_prompt="none", reasoning="last"))
    contents = _assistant_contents(nxt)
    assert [c.startswith(THINK) for c in contents] == [False, False, False, True]


def test_reasoning_content_field_follows_the_same_rule():
    env = make(system_prompt="none", reasoning="strip")
    env.reset(options={"task_id": BASE_0})
    env.step({"content": "[cd(folder='document')]", "reasoning_content": "plan"})
    obs, *_ = env.step({"content": "Done.", "reasoning_content": "done"})
    assert all("reasoning_content" not in m for m in obs["messages"])
    env = make(system_prompt="none", reasoning="keep")
    env.reset(options={"task_id": BASE_0})
    obs, *_ = env.step({"content": "[cd(folder='document')]", "reasoning_content": "plan"})
    assert obs["messages"][1]["reasoning_content"] == "plan"


def test_tool_results_as_one_user_message():
    env = make(system_prompt="bfcl", tool_results="user_message")
    env.reset(options={"task_id": BASE_0})
    obs, _, _, _, info = env.step("[cd(folder='document'), mkdir(dir_name='temp')]")
    last = obs["messages"][-1]
    assert last["role"] == "user" and [m["role"] for m in obs["messages"]] == ["system", "user", "assistant", "user"]
    assert ast.literal_eval(last["content"]) == [
        {"role": "tool", "name": "cd(folder='document')", "content": '{"current_working_directory": "document"}'},
        {"role": "tool", "name": "mkdir(dir_name='temp')", "content": "None"},
    ]
    assert info["turn"] == 0  # still the same user turn: only the display changed


def test_context_template_is_one_user_message_with_the_whole_history():
    env = make(system_prompt="bfcl", template="context")
    obs, _ = env.reset(options={"task_id": BASE_0})
    assert [m["role"] for m in obs["messages"]] == ["system", "user"]
    first_user = env.unwrapped.task.turns[0][0]["content"]
    assert obs["messages"][1]["content"] == f"{CONTEXT_HEADER}\n\n[user]\n{first_user}"
    obs, *_ = env.step("[cd(folder='document')]")
    text = obs["messages"][1]["content"]
    assert [m["role"] for m in obs["messages"]] == ["system", "user"]
    assert text.endswith(
        f"[user]\n{first_user}\n\n[assistant]\n[cd(folder='document')]\n\n"
        '[tool: cd(folder=\'document\')]\n{"current_working_directory": "document"}'
    )
    for action in ("Done.", "[ls()]"):
        obs, *_ = env.step(action)
    text = obs["messages"][1]["content"]
    assert text.count("[user]") == 2 and text.count("[assistant]") == 3 and text.count("[tool: ") == 2


def test_unknown_knob_values_fail_at_make_with_the_valid_ones():
    for kwargs, listed in [
        ({"template": "chatml"}, "'native', 'context'"),
        ({"reasoning": "drop"}, "'keep', 'strip', 'last'"),
        ({"tool_format": "xml"}, "'python', 'json'"),
        ({"tool_results": "inline"}, "'tool_messages', 'user_message'"),
        ({"category": "simple"}, "base, miss_func, miss_param, long_context"),
        ({"system_prompt": ""}, "bfcl, strong, none"),
    ]:
        with pytest.raises(ValueError, match=listed):
            make(**kwargs)


KNOBS = {
    "category": "miss_func",
    "template": "context",
    "reasoning": "strip",
    "system_prompt": "strong",
    "tool_format": "json",
    "tool_results": "user_message",
    "strict_tools": True,
    "max_steps_per_turn": 7,
}


def test_spec_round_trip_and_card():
    env = make(**KNOBS)
    _, info = env.reset(seed=5)
    again = gym.make(env.spec)
    _, info_again = again.reset(seed=5)
    assert env.spec.kwargs == again.spec.kwargs and info["protocol"] == info_again["protocol"]
    json.dumps(env.spec.kwargs)
    card = ProtocolCard.from_dict(info["protocol"])
    assert card.to_dict() == info["protocol"]
    for knob in ("template", "reasoning", "system_prompt", "tool_format", "tool_results", "max_steps_per_turn"):
        assert info["protocol"][knob] == KNOBS[knob]
    assert card.seed == 5 and card.strict_tools and card.category == "miss_func"
    assert len(card.fingerprint()) == 12 and card.fingerprint() == card.replace(seed=9).fingerprint()
    assert card.fingerprint() != card.replace(template="native").fingerprint()
    assert card.differences(card.replace(reasoning="keep", seed=1)) == {"reasoning": ("strip", "keep")}


@pytest.mark.parametrize(
    "kwargs",
    [KNOBS, {"system_prompt": "bfcl", "reasoning": "last"}, {"template": "context", "system_prompt": "none"}],
)
def test_check_env_on_wrapped_envs(kwargs):
    env = make(**kwargs)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env)
    unexpected = [w for w in caught if "different from the unwrapped version" not in str(w.message)]
    assert not unexpected, [str(w.message) for w in unexpected]
