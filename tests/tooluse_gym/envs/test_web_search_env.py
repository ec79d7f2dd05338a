"""`ToolUse-WebSearch-v0`: BFCL's web-search questions on the agentic env, the search backend on the card."""

from __future__ import annotations

import hashlib
from pathlib import Path

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

import tooluse_gym  # noqa: F401
from tooluse_gym.tasks.bfcl_web_search import CATEGORIES, load_web_search_tasks
from tooluse_gym.tools.web_search import SearchBackendUnavailable

RECORDING = Path(__file__).parents[1] / "tools" / "data" / "web_search_recording.jsonl"
FORMAT_PROMPT_START = "For your final answer to the user, you must respond in this format"


def play(env, task_id, replies):
    obs, info = env.reset(options={"task_id": task_id})
    out = None
    for reply in replies:
        out = env.step(reply)
        if out[2]:
            break
    return obs, out


def oracle_episode(env, task_id):
    obs, info = env.reset(options={"task_id": task_id})
    task, steps = info["task"], 0
    while True:
        obs, reward, terminated, truncated, info = env.step(task.reference_reply(0, steps, "python", obs["messages"]))
        steps += 1
        if terminated or truncated:
            return reward, info


def test_bfcls_data_both_categories_one_question_each():
    tasks = load_web_search_tasks(["web_search"])
    assert len(tasks) == 200 and {t.category for t in tasks} == set(CATEGORIES)
    base = {t.task_id.removeprefix("web_search_base_"): t for t in tasks if t.category == "web_search_base"}
    for task in tasks:
        assert len(task.questions) == 1 and task.questions[0].answers and task.hops
        assert task.initial_config == {"WebSearchAPI": {"show_snippet": task.category == "web_search_base"}}
        if task.category == "web_search_no_snippet":
            twin = base[task.task_id.removeprefix("web_search_no_snippet_")]
            assert task.turns == twin.turns and task.questions[0].answers == twin.questions[0].answers


def test_no_backend_is_refused_with_the_choices_and_wrong_combinations_too():
    with pytest.raises(ValueError, match="needs a search backend") as refused:
        gym.make("ToolUse-WebSearch-v0")
    assert all(word in str(refused.value) for word in ("recording=FILE", "serpapi", "gold-hops"))
    with pytest.raises(ValueError, match="search_backend must be one of"):
        gym.make("ToolUse-WebSearch-v0", search_backend="google")
    with pytest.raises(ValueError, match="record_to"):
        gym.make("ToolUse-WebSearch-v0", search_backend="gold-hops", record_to="x.jsonl")
    with pytest.raises(ValueError, match="recording is for"):
        gym.make("ToolUse-WebSearch-v0", search_backend="gold-hops", recording=str(RECORDING))
    with pytest.raises(ValueError, match="no such web-search recording"):
        gym.make("ToolUse-WebSearch-v0", recording="missing.jsonl")
    with pytest.raises(SearchBackendUnavailable, match="serpapi"):
        gym.make("ToolUse-WebSearch-v0", search_backend="serpapi")
    with pytest.raises(ValueError, match="unknown web-search category"):
        gym.make("ToolUse-WebSearch-v0", category="web_search_bse", search_backend="gold-hops")


def test_the_oracle_answers_every_question_on_the_gold_hops_and_the_env_passes_check_env():
    env = gym.make("ToolUse-WebSearch-v0", search_backend="gold-hops")
    check_env(env.unwrapped, skip_render_check=True)
    for task in load_web_search_tasks(["web_search"]):
        reward, info = oracle_episode(env, task.task_id)
        assert reward == 1.0, task.task_id
        assert info["checker"]["questions"] == [
            {"task_id": task.task_id, "valid": True, "error_type": None, "error_message": None}
        ]
        assert info["checker"]["backend"] == {"replay_misses": []}  # every hop's search and fetch was found


def test_the_conversation_is_bfcls_and_snippets_follow_the_category():
    env = gym.make("ToolUse-WebSearch-v0", search_backend="gold-hops")
    for category, shown in (("web_search_base", True), ("web_search_no_snippet", False)):
        obs, info = env.reset(options={"task_id": f"{category}_1"})
        system, user = obs["messages"]
        # BFCL's function-calling prompt, then its answer-format message (as its handler merges system messages)
        assert system["role"] == "system" and system["content"].startswith("You are an expert in composing functions")
        assert "\n\n" + FORMAT_PROMPT_START in system["content"]
        assert user == {"role": "user", "content": info["task"].questions[0].content}
        assert (
            '"name": "search_engine_query"' in system["content"] and '"name": "fetch_url_content"' in system["content"]
        )
        hop = info["task"].hops[0]
        obs, *_ = env.step(f"[search_engine_query(keywords={hop['subquestion']!r})]")
        assert obs["messages"][-1]["role"] == "tool"
        assert ("'body'" in obs["messages"][-1]["content"]) is shown


@pytest.mark.parametrize(
    ("replies", "valid", "error"),
    [
        (["{'answer': 'seven', 'context': 'the record'}"], True, None),
        (["<think>maybe 9</think>{'answer': '7', 'context': 'x'}"], True, None),
        (["{'answer': 'I do not know', 'context': 'I do not know'}"], False, "agentic:answer_not_found"),
        (["[search_engine_query(keywords='Usher birthplace')]", "The Cowboys won 7 games."], True, None),
        (["[search_engine_query(keywords='Usher birthplace')]", ""], False, "agentic:no_last_message"),
    ],
)
def test_answers_are_judged_by_bfcls_checker_on_the_last_message(replies, valid, error):
    env = gym.make("ToolUse-WebSearch-v0", recording=str(RECORDING), category="web_search_base")
    _, (obs, reward, terminated, truncated, info) = play(env, "web_search_base_1", replies)
    assert terminated and reward == float(valid)
    (question,) = info["checker"]["questions"]
    assert question["valid"] is valid and question["error_type"] == error


def test_the_replay_recording_is_on_the_card_and_its_misses_in_the_verdict():
    env = gym.make("ToolUse-WebSearch-v0", recording=str(RECORDING))
    obs, info = env.reset(options={"task_id": "web_search_no_snippet_1"})
    extra = info["protocol"]["extra"]
    digest = hashlib.sha256(RECORDING.read_bytes()).hexdigest()[:16]
    assert extra == {
        "answer_check": "bfcl",
        "search_backend": "replay",
        "recording_source": "synthetic",
        "recording": digest,
        "recorded": "2026-12-05..2026-12-06",
    }
    obs, *_ = env.step("[search_engine_query(keywords='Usher birthplace'), search_engine_query(keywords='Usher age')]")
    found, missed = obs["messages"][-2:]
    assert found["content"] == "[{'title': 'Usher (musician)', 'href': 'https://example.org/usher'}]"
    assert "No results for these keywords in the replay recording" in missed["content"]
    *_, info = env.step("{'answer': '7', 'context': 'x'}")
    assert info["checker"]["backend"] == {"replay_misses": [{"search": "Usher age", "region": "wt-wt"}]}
    gold = gym.make("ToolUse-WebSearch-v0", search_backend="gold-hops")
    assert gold.unwrapped.protocol.fingerprint() != env.unwrapped.protocol.fingerprint()
