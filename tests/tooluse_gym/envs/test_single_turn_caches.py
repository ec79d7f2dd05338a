"""What `ToolUse-SingleTurn-v0` keeps per task across episodes changes nothing an episode sees.

The env makes each task's decoder, bound checker and tool schemas once, and the `SystemPrompt`
wrapper keeps each task's rendered prompt: an episode played after others must show and score
exactly what a fresh env's first episode does, under every knob that shapes the prompt, and
nothing a caller does to what one episode handed out may reach the next.
"""

from __future__ import annotations

import copy
from typing import Any

import gymnasium as gym
import pytest

import tooluse_gym  # noqa: F401  (registers the ids)
from tests._reference.single_turn_cases import message
from tooluse_gym.checking.languages import language_of
from tooluse_gym.envs.ids import SINGLE_TURN_ID
from tooluse_gym.envs.tool_env import protocol_card
from tooluse_gym.wrappers import system_prompt

# a simple, a dotted-name, a parallel, a multiple, an irrelevance and a relevance entry, one with its own
# system message, and a Java one
TASK_IDS = [
    "simple_python_0",
    "live_simple_0-0-0",
    "parallel_3",
    "multiple_5",
    "irrelevance_3",
    "live_relevance_1-1-0",
    "live_irrelevance_0-0-0",
    "simple_java_0",
]
KNOBS = [
    {},
    {"tool_format": "json"},
    {"system_prompt": "strong"},
    {"system_prompt": "none"},
    {"system_prompt": "Call these functions when they help.\n{functions}"},
    {"system_prompt": "A prompt without the function list.", "tool_format": "json"},
    {"template": "context"},
]


def _answer(info: dict[str, Any], response_format: str) -> Any:
    """The oracle's message for the episode's task (a wrong one for every other task, to vary the verdicts)."""
    task = info["task"]
    calls = [(c.name, dict(c.arguments)) for c in task.ground_truth[0]]
    if task.check == "irrelevance" or not calls:
        return message("No function fits.", response_format)
    return message(calls, response_format, language_of(task.test_category))


def _episode(env: gym.Env, task_id: str, response_format: str) -> tuple[Any, ...]:
    """Everything one episode shows: both observations, both infos (the task object left out), the reward."""
    obs, info = env.reset(seed=0, options={"task_id": task_id})
    shown = copy.deepcopy((obs, {k: v for k, v in info.items() if k != "task"}))
    step_obs, reward, terminated, truncated, step_info = env.step(_answer(info, response_format))
    return (*shown, copy.deepcopy(step_obs), reward, terminated, truncated, copy.deepcopy(step_info))


def _format(knobs: dict[str, Any]) -> str:
    if knobs.get("system_prompt") == "none":
        return "fc"
    return str(knobs.get("tool_format", "python"))


@pytest.mark.parametrize("knobs", KNOBS, ids=lambda k: ",".join(f"{n}={v[:12]}" for n, v in k.items()) or "default")
def test_later_episodes_show_what_a_fresh_env_shows(knobs: dict[str, Any]):
    env = gym.make(SINGLE_TURN_ID, category="single_turn", task_ids=TASK_IDS, **knobs)
    played: dict[str, tuple[Any, ...]] = {}
    for task_id in [*TASK_IDS, *reversed(TASK_IDS), TASK_IDS[0]]:
        seen = _episode(env, task_id, _format(knobs))
        assert played.setdefault(task_id, seen) == seen
    for task_id in TASK_IDS:
        fresh = gym.make(SINGLE_TURN_ID, category="single_turn", task_ids=TASK_IDS, **knobs)
        assert _episode(fresh, task_id, _format(knobs)) == played[task_id], task_id


def test_prompts_past_the_kept_ones_are_rendered_again(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(system_prompt, "RENDERED_TASKS", 2)
    env = gym.make(SINGLE_TURN_ID, category="single_turn", task_ids=TASK_IDS)
    prompts: dict[str, str] = {}
    for task_id in [*TASK_IDS, *TASK_IDS]:
        obs, _ = env.reset(options={"task_id": task_id})
        assert prompts.setdefault(task_id, obs["messages"][0]["content"]) == obs["messages"][0]["content"]
    kept = env.get_wrapper_attr("_rendered")
    assert len(kept) == 2 and list(kept) == TASK_IDS[-2:]
    fresh = gym.make(SINGLE_TURN_ID, category="single_turn", task_ids=TASK_IDS)
    obs, _ = fresh.reset(options={"task_id": TASK_IDS[0]})
    assert obs["messages"][0]["content"] == prompts[TASK_IDS[0]]


@pytest.mark.parametrize("knobs", [{}, {"system_prompt": "none"}], ids=["prompting", "function-calling"])
def test_what_an_episode_hands_out_is_the_callers(knobs: dict[str, Any]):
    task_id = "live_simple_0-0-0"
    env = gym.make(SINGLE_TURN_ID, category="live_simple", task_ids=[task_id], **knobs)
    first = _episode(env, task_id, _format(knobs))

    obs, info = env.reset(seed=0, options={"task_id": task_id})
    obs["messages"][0]["content"] = "changed"
    obs["messages"].append({"role": "user", "content": "more"})
    obs["tools"].clear()  # the list is the caller's (the schemas in it are shared, as `openai_tool` says)
    info["protocol"]["seed"] = 99
    info["protocol"]["extra"]["note"] = "changed"
    info["protocol"]["task_data"].clear()
    step_obs, _, _, _, step_info = env.step(_answer(info, _format(knobs)))
    step_obs["messages"][-1]["content"] = "changed"
    step_obs["messages"].clear()
    step_info["checker"]["turns"].clear()
    step_info["checker"]["valid"] = None
    step_info["turn_verdict"]["valid"] = None
    step_info["tooluse"]["reward"] = -1.0
    arguments = step_info["step_record"].calls[0].arguments
    arguments["injected"] = True
    next(iter(v for v in arguments.values() if isinstance(v, (list, dict))), []).clear()

    assert _episode(env, task_id, _format(knobs)) == first
    assert protocol_card(env).to_dict()["extra"] == {}


def test_step_record_arguments_are_json_values_not_the_decoders():
    env = gym.make(SINGLE_TURN_ID, category="simple_python", task_ids=["simple_python_0"])
    env.reset(options={"task_id": "simple_python_0"})
    _, _, _, _, info = env.step("[calculate_triangle_area(base=10, height=(1, 2), unit=None)]")
    assert dict(info["step_record"].calls[0].arguments) == {"base": 10, "height": [1, 2], "unit": None}
