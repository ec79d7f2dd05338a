"""`ToolUse-SingleTurn-v0`: BFCL single-turn entries through `gym.make`, the knob rules, and the info contract."""

from __future__ import annotations

import collections
import json

import gymnasium as gym
import pytest

import tooluse_gym  # noqa: F401  (registers the ids)
from tests._reference.single_turn_cases import UNWRITTEN_AS_JAVA_TEXT, message
from tooluse_agents.backends.base import SamplingConfig
from tooluse_agents.backends.oracle import OracleAgent
from tooluse_agents.rollout.episode import episode_record
from tooluse_agents.rollout.loop import RolloutJob, run_rollouts
from tooluse_gym.checking.languages import language_of
from tooluse_gym.envs.ids import SINGLE_TURN_ID
from tooluse_gym.envs.tool_env import protocol_card, task_ids
from tooluse_gym.tasks.bfcl_single_turn import CATEGORIES, GROUPS, UNSATISFIABLE

# (knobs, response format): BFCL's prompting mode in Python and in <tool_call> JSON, and function calling
MODES = [({}, "python"), ({"tool_format": "json"}, "json"), ({"system_prompt": "none"}, "fc")]
"""Reference answers `message` cannot write as Java call text that BFCL's parser reads back (a HashMap's
anonymous body is dropped; a String[] of unquoted items is not Java): they fail in Python-format prompting."""


def play(env: gym.Env, response_format: str, every: int = 1) -> collections.Counter[str]:
    """The reference answer of every `every`-th entry through the env; counts of verdicts."""
    counts: collections.Counter[str] = collections.Counter()
    for task_id in task_ids(env)[::every]:
        _, info = env.reset(seed=0, options={"task_id": task_id})
        task = info["task"]
        raw = message(
            [(c.name, dict(c.arguments)) for c in task.ground_truth[0]], response_format, language_of(task.category)
        )
        if task.check == "irrelevance":
            raw = message("These functions cannot answer that.", response_format)
        _, reward, terminated, truncated, info = env.step(raw)
        assert terminated and not truncated
        assert reward == (1.0 if info["checker"]["valid"] else 0.0)
        if task_id in UNSATISFIABLE:
            assert reward == 0.0
            counts["unsatisfiable"] += 1
        elif response_format == "python" and task_id in UNWRITTEN_AS_JAVA_TEXT:
            assert reward == 0.0
            counts["unwritten"] += 1
        else:
            assert reward == 1.0, (task_id, info["checker"])
            counts["valid"] += 1
    return counts


@pytest.mark.parametrize(("knobs", "response_format"), MODES)
def test_reference_answers_score_100_percent_on_a_sample(knobs, response_format):
    env = gym.make(SINGLE_TURN_ID, category="single_turn", **knobs)
    counts = play(env, response_format, every=37)
    assert counts["valid"] >= 90


@pytest.mark.slow
@pytest.mark.parametrize(("knobs", "response_format"), MODES)
def test_reference_answers_score_100_percent_in_every_category(knobs, response_format):
    totals = {}
    for category in CATEGORIES:
        counts = play(gym.make(SINGLE_TURN_ID, category=category, **knobs), response_format)
        totals[category] = dict(counts)
    print(response_format, totals)
    assert sum(c.get("unsatisfiable", 0) for c in totals.values()) == len(UNSATISFIABLE)


def test_categories_and_groups():
    sizes = {c: len(task_ids(gym.make(SINGLE_TURN_ID, category=c))) for c in CATEGORIES}
    assert sizes == {
        "simple_python": 400,
        "simple_java": 100,
        "simple_javascript": 50,
        "multiple": 200,
        "parallel": 200,
        "parallel_multiple": 200,
        "irrelevance": 240,
        "live_simple": 258,
        "live_multiple": 1053,
        "live_parallel": 16,
        "live_parallel_multiple": 24,
        "live_irrelevance": 884,
        "live_relevance": 16,
    }
    for group, members in GROUPS.items():
        assert len(task_ids(gym.make(SINGLE_TURN_ID, category=group))) == sum(sizes[c] for c in members)
    with pytest.raises(ValueError, match="unknown BFCL single-turn category"):
        gym.make(SINGLE_TURN_ID, category="base")


def test_card_and_knob_rules():
    env = gym.make(SINGLE_TURN_ID, category="parallel", template="context", tool_format="json")
    card = protocol_card(env)
    assert (card.env_id, card.category, card.template, card.tool_format, card.decoder) == (
        SINGLE_TURN_ID,
        "parallel",
        "context",
        "json",
        "bfcl",
    )
    _, info = env.reset(seed=3)
    assert info["protocol"]["seed"] == 3 and info["protocol"]["env_id"] == SINGLE_TURN_ID
    for knobs in [
        {"tool_results": "user_message"},
        {"strict_tools": True},
        {"validate_args": True},
        {"max_steps_per_turn": 5},
    ]:
        with pytest.raises(ValueError, match="SingleTurn"):
            gym.make(SINGLE_TURN_ID, **knobs)
    gym.make(SINGLE_TURN_ID, validate_args=False, max_steps_per_turn=20)  # the defaults are accepted
    # lenient decoding applies; validate_args stays off under it (nothing executes: the checker judges)
    card = protocol_card(gym.make(SINGLE_TURN_ID, decoder="lenient"))
    assert (card.decoder, card.validate_args) == ("lenient", False)
    with pytest.raises(ValueError, match="validate_args cannot apply"):
        gym.make(SINGLE_TURN_ID, decoder="lenient", validate_args=True)
    with pytest.raises(TypeError, match="unknown knobs"):
        gym.make(SINGLE_TURN_ID, nonsense=1)


def test_observation_under_prompting_and_function_calling():
    prompting = gym.make(SINGLE_TURN_ID, category="simple_python")
    obs, _ = prompting.reset(options={"task_id": "simple_python_0"})
    assert obs["tools"] == [] and obs["messages"][0]["role"] == "system"
    assert "calculate_triangle_area" in obs["messages"][0]["content"]
    fc = gym.make(SINGLE_TURN_ID, category="simple_python", system_prompt="none")
    obs, _ = fc.reset(options={"task_id": "simple_python_0"})
    assert [m["role"] for m in obs["messages"]] == ["user"]
    assert obs["tools"][0]["function"]["name"] == "calculate_triangle_area"
    # dotted names: kept in the prompt, written with underscores in the tools field
    dotted = next(t for t in task_ids(fc) if "." in _task(fc, t).functions[0]["name"])
    obs, info = fc.reset(options={"task_id": dotted})
    assert "." not in obs["tools"][0]["function"]["name"]
    assert info["task"].ground_truth[0][0].name == obs["tools"][0]["function"]["name"]


def test_a_task_system_message_follows_the_prompt():
    env = gym.make(SINGLE_TURN_ID, category="live_simple")
    task_id = next(t for t in task_ids(env) if _task(env, t).turns[0][0]["role"] == "system")
    obs, info = env.reset(options={"task_id": task_id})
    own = info["task"].turns[0][0]["content"]
    assert obs["messages"][0]["role"] == "system"
    assert obs["messages"][0]["content"].endswith("\n\n" + own)
    assert [m["role"] for m in obs["messages"]].count("system") == 1


def test_step_info_and_episode_record():
    env = gym.make(SINGLE_TURN_ID, category="simple_python")
    _, reset_info = env.reset(seed=0, options={"task_id": "simple_python_0"})
    _, reward, terminated, _, info = env.step("[calculate_triangle_area(base=10)]")
    assert (reward, terminated) == (0.0, True)
    assert info["checker"]["error_type"] == "simple_function_checker:missing_required"
    assert info["turn_verdict"]["valid"] is False
    assert info["step_record"].calls[0].name == "calculate_triangle_area"
    record = episode_record(reset_info, [info], seed=0, agent={"name": "test"}, costs=[])
    json.dumps(record.to_dict())
    assert record.reward == 0.0 and record.category == "simple_python"
    assert record.checker is not None and record.checker["error_type"] == "simple_function_checker:missing_required"
    assert record.turns[0].steps[0].assistant == "[calculate_triangle_area(base=10)]"
    with pytest.raises(gym.error.ResetNeeded):
        env.step("[f()]")


def test_rollout_loop_plays_it_with_the_oracle():
    jobs = [RolloutJob(t, seed=0) for t in ["simple_python_1", "parallel_0", "irrelevance_3", "live_relevance_1-1-0"]]
    episodes = run_rollouts(
        lambda: gym.make(SINGLE_TURN_ID, category="single_turn"),
        OracleAgent(),
        jobs,
        sampling=SamplingConfig(temperature=0.0),
        num_envs=2,
    )
    assert sorted(e.record.task_id for e in episodes) == sorted(j.task_id for j in jobs)
    assert all(e.record.reward == 1.0 for e in episodes)


def oracle_rewards(category: str, **knobs) -> dict[str, float]:
    """The oracle agent (`tooluse eval run --agent oracle`'s) on every entry of `category`: reward per entry."""
    env = gym.make(SINGLE_TURN_ID, category=category, **knobs)
    jobs = [RolloutJob(t, seed=0) for t in task_ids(env)]
    episodes = run_rollouts(
        lambda: gym.make(SINGLE_TURN_ID, category=category, **knobs),
        OracleAgent(),
        jobs,
        sampling=SamplingConfig(temperature=0.0),
        num_envs=8,
    )
    return {e.record.task_id: e.record.reward for e in episodes}


@pytest.mark.parametrize("category", ["simple_java", "simple_javascript"])
def test_the_oracle_reaches_every_satisfiable_java_and_javascript_entry(category):
    """Java and JavaScript call text is read by BFCL's tree-sitter parsers, which undo no escape: a value
    holding both quote characters (simple_javascript_5's ``applyMiddleware('myMiddleWare')`` inside
    double-quoted items) is written as its source, not as an escaped literal."""
    rewards = oracle_rewards(category)
    failed = sorted(t for t, r in rewards.items() if r != 1.0)
    assert failed == sorted(t for t in UNSATISFIABLE if t in rewards)
    assert rewards["simple_javascript_5" if category == "simple_javascript" else "simple_java_0"] == 1.0


@pytest.mark.parametrize("knobs", [{}, {"tool_format": "json"}])
def test_the_oracle_reaches_every_satisfiable_single_turn_entry(knobs):
    """Every entry BFCL's own data can satisfy scores 1 with the reference agent; only `UNSATISFIABLE` fails."""
    rewards = oracle_rewards("single_turn", **knobs)
    assert len(rewards) == 3641
    assert sorted(t for t, r in rewards.items() if r != 1.0) == sorted(UNSATISFIABLE)


def test_render_ansi():
    env = gym.make(SINGLE_TURN_ID, category="simple_python", render_mode="ansi")
    env.reset(options={"task_id": "simple_python_0"})
    env.step("[calculate_triangle_area(base=10, height=5)]")
    text = env.render()
    assert "simple_python_0" in text and "valid=True" in text


def _task(env: gym.Env, task_id: str):
    return next(t for t in env.unwrapped.tasks if t.task_id == task_id)
