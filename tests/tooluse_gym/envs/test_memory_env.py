"""ToolUse-Memory-v0: sessions write what questions read, BFCL's prompt and checker, both episode units, bad input."""

from __future__ import annotations

import json
from typing import Any

import gymnasium as gym
import pytest

import tooluse_gym  # noqa: F401
from tooluse_gym.envs.base import task_env
from tooluse_gym.tasks.bfcl_memory import SCENARIOS, load_memory_tasks, memory_system_prompt
from tooluse_gym.tasks.task import END_OF_TURN


def play_reference(env: gym.Env, task_id: str, replies: Any = None) -> tuple[float, dict[str, Any], int]:
    """Play the scripted reference (or `replies(task, turn, steps, messages)`) to the end: (reward, info, steps)."""
    obs, info = env.reset(seed=0, options={"task_id": task_id})
    task, base, steps = info["task"], task_env(env), 0
    while True:
        turn, in_turn = base.turn, base.steps_in_turn
        if replies is None:
            message = task.reference_reply(turn, in_turn, "python", obs["messages"])
        else:
            message = replies(task, turn, in_turn, obs["messages"])
        obs, reward, terminated, truncated, info = env.step(message)
        steps += 1
        if terminated or truncated:
            return float(reward), info, steps


@pytest.mark.parametrize("category", ["memory_kv", "memory_rec_sum"])
def test_the_scripted_reference_answers_every_question_from_the_memory_it_wrote(category):
    env = gym.make("ToolUse-Memory-v0", category=category)
    for scenario in SCENARIOS:
        reward, info, _ = play_reference(env, f"{category}-{scenario}")
        assert reward == 1.0, [q for q in info["checker"]["questions"] if not q["valid"]]
        assert info["checker"]["valid"] and info["tooluse"]["answered"] == info["tooluse"]["questions"]
        memories = [v["memory"] for v in info["checker"]["turns"] if "memory" in v]
        task = task_env(env).episode_task()
        assert len(memories) == sum(s.kind == "session" for s in task.segments)


def test_a_memory_never_written_gives_no_answer():
    """The reference reads its answers back: without the write phase it knows nothing (memory is the only channel)."""

    def no_writes(task, turn, steps, messages):
        segment = task.segments[task.segment_at(turn)]
        if segment.kind == "session":
            return END_OF_TURN
        return task.reference_reply(turn, steps, "python", messages)

    env = gym.make("ToolUse-Memory-v0", category="memory_kv")
    reward, info, _ = play_reference(env, "memory_kv-finance", no_writes)
    assert reward == 0.0
    assert {q["error_type"] for q in info["checker"]["questions"]} == {"agentic:answer_not_found"}


def test_each_segment_is_its_own_conversation_with_bfcls_memory_prompt():
    env = gym.make("ToolUse-Memory-v0", category="memory_rec_sum", system_prompt="none")
    obs, info = env.reset(options={"task_id": "memory_rec_sum-notetaker"})
    task = info["task"]
    first = task.segments[0]
    assert obs["messages"][0] == {
        "role": "system",
        "content": memory_system_prompt(
            "memory_rec_sum", "notetaker", "There is no content in the memory at this point.", False
        ),
    }
    assert [m["role"] for m in obs["messages"]] == ["system", "user"]
    assert {t["function"]["name"] for t in obs["tools"]} >= {"memory_append", "memory_retrieve"}
    obs, *_ = env.step("[memory_append(text='likes tea')]")
    for _ in range(first.num_turns):  # end every turn of the first session
        obs, *_ = env.step("ok")
    assert task_env(env).segment == 1
    assert [m["role"] for m in obs["messages"]] == ["system", "user"]  # a new conversation
    assert "likes tea" in obs["messages"][0]["content"]  # holding the memory the last one wrote


def test_questions_start_from_the_sessions_final_memory_and_their_writes_are_dropped():
    env = gym.make("ToolUse-Memory-v0", category="memory_rec_sum", system_prompt="none")
    obs, info = env.reset(options={"task_id": "memory_rec_sum-finance"})
    task = info["task"]
    base = task_env(env)
    obs, *_ = env.step("[memory_append(text='final fact')]")
    while task.segments[base.segment].kind == "session":
        obs, *_ = env.step("ok")
    assert "final fact" in obs["messages"][0]["content"]
    assert "answer' " not in obs["messages"][0]["content"]
    assert "{'answer': A short and precise answer" in obs["messages"][0]["content"]  # BFCL's answer format
    env.step("[memory_append(text='written by a question')]")
    obs, *_ = env.step("I do not know")
    assert "written by a question" not in obs["messages"][0]["content"]
    assert "final fact" in obs["messages"][0]["content"]


def test_question_episodes_from_the_oracle_snapshot():
    env = gym.make("ToolUse-Memory-v0", category="memory_kv", episode="question", snapshot="oracle")
    tasks = task_env(env).tasks
    assert len(tasks) == 155 and tasks[0].task_id == "memory_kv_0-customer-0"
    for task_id in ("memory_kv_0-customer-0", "memory_kv_154-notetaker-24"):
        reward, info, steps = play_reference(env, task_id)
        assert (reward, steps) == (1.0, 2)
        assert info["checker"]["questions"][0]["task_id"] == task_id
    extra = dict(task_env(env).protocol.extra)
    assert extra["episode"] == "question" and extra["snapshot"] == "oracle"


def test_question_episodes_from_a_snapshot_file(tmp_path):
    path = tmp_path / "snap.json"
    memory = {"core_memory": {}, "archival_memory": {"answer_0": "Michael"}}
    path.write_text(
        json.dumps({"format": "tooluse-memory-snapshots/1", "category": "memory_kv", "snapshots": {"customer": memory}})
    )
    env = gym.make("ToolUse-Memory-v0", category="memory_kv", episode="question", snapshot=str(path))
    reward, _, _ = play_reference(env, "memory_kv_0-customer-0")
    assert reward == 1.0
    reward, _, _ = play_reference(env, "memory_kv_1-customer-1")  # not in that memory
    assert reward == 0.0
    assert dict(task_env(env).protocol.extra)["snapshot"].startswith("file:")


def test_the_strict_check_refuses_a_list_of_candidates():
    lister = "{'answer': 'Michael, John, Anna, Maria', 'context': 'one of these'}"
    for check, expected in (("bfcl", 1.0), ("strict", 0.0)):
        env = gym.make(
            "ToolUse-Memory-v0", category="memory_kv", episode="question", snapshot="empty", answer_check=check
        )
        env.reset(options={"task_id": "memory_kv_0-customer-0"})
        _, reward, terminated, _, info = env.step(lister)
        assert terminated and reward == expected, info["checker"]


def test_a_question_that_never_stops_calling_is_force_quit_without_an_answer():
    env = gym.make(
        "ToolUse-Memory-v0", category="memory_rec_sum", episode="question", snapshot="empty", max_steps_per_turn=2
    )
    env.reset(options={"task_id": "memory_rec_sum_0-customer-0"})
    for _ in range(3):
        _, reward, terminated, _, info = env.step("[memory_retrieve()]")
    assert terminated and reward == 0.0
    assert info["checker"]["error_type"] == "agentic:no_last_message"


def test_json_tool_calls_and_the_lenient_decoder():
    env = gym.make(
        "ToolUse-Memory-v0", category="memory_kv", tool_format="json", decoder="lenient", system_prompt="strong"
    )
    reward, _, _ = play_reference_json(env, "memory_kv-notetaker")
    assert reward == 1.0


def play_reference_json(env: gym.Env, task_id: str):
    obs, info = env.reset(seed=0, options={"task_id": task_id})
    task, base = info["task"], task_env(env)
    while True:
        message = task.reference_reply(base.turn, base.steps_in_turn, "json", obs["messages"])
        obs, reward, terminated, _, info = env.step(message)
        if terminated:
            return reward, info, None


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"category": "memory_kvv"}, "unknown memory category"),
        ({"category": "memory_vector"}, "memory_vector needs"),
        ({"category": "memory_kv", "episode": "session"}, "episode must be one of"),
        ({"category": "memory_kv", "snapshot": "oracle"}, "snapshot is for episode='question'"),
        ({"category": "memory_kv", "episode": "question"}, "needs snapshot"),
        ({"category": "memory_kv", "episode": "question", "snapshot": "/no/such/file.json"}, "no such snapshot file"),
        ({"category": "memory_kv", "answer_check": "loose"}, "answer_check must be one of"),
        ({"category": "memory_kv", "task_ids": ["memory_kv_0-customer-0"]}, "unknown memory task ids"),
    ],
)
def test_bad_settings_are_refused_with_what_to_do(kwargs, message):
    with pytest.raises(ValueError, match=message):
        gym.make("ToolUse-Memory-v0", **kwargs)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "not readable as JSON"),
        (json.dumps({"format": "other"}), "not a memory snapshot file"),
        (
            json.dumps(
                {
                    "format": "tooluse-memory-snapshots/1",
                    "category": "memory_rec_sum",
                    "snapshots": {"customer": {"memory": ""}},
                }
            ),
            "holds 'memory_rec_sum' memory",
        ),
        (
            json.dumps({"format": "tooluse-memory-snapshots/1", "category": "memory_kv", "snapshots": {"airline": {}}}),
            "unknown scenarios",
        ),
        (
            json.dumps(
                {
                    "format": "tooluse-memory-snapshots/1",
                    "category": "memory_kv",
                    "snapshots": {"customer": {"memory": "x"}},
                }
            ),
            "not a MemoryAPI_kv snapshot",
        ),
    ],
)
def test_bad_snapshot_files_are_refused_naming_the_file(tmp_path, content, message):
    path = tmp_path / "snap.json"
    path.write_text(content)
    with pytest.raises(ValueError, match=message):
        gym.make("ToolUse-Memory-v0", category="memory_kv", episode="question", snapshot=str(path))


def test_a_bfcl_memory_snapshot_folder_is_read(tmp_path):
    (tmp_path / "customer_final.json").write_text(json.dumps({"memory": "answer_0: Michael\n"}))
    env = gym.make("ToolUse-Memory-v0", category="memory_rec_sum", episode="question", snapshot=str(tmp_path))
    assert play_reference(env, "memory_rec_sum_0-customer-0")[0] == 1.0


def test_task_counts_follow_bfcls_data():
    assert len(load_memory_tasks(["memory_kv"], "scenario")) == 5
    questions = [q for t in load_memory_tasks(["memory_kv", "memory_rec_sum"], "scenario") for q in t.questions]
    assert len(questions) == 310 and len({q.task_id for q in questions}) == 310


def test_the_answer_is_judged_after_the_reasoning_as_bfcl_does():
    env = gym.make("ToolUse-Memory-v0", category="memory_kv", episode="question", snapshot="empty")
    for reply, expected in (("<think>It is Michael.</think>I do not know.", 0.0), ("<think>hm</think>Michael", 1.0)):
        env.reset(options={"task_id": "memory_kv_0-customer-0"})
        assert env.step(reply)[1] == expected
