"""`gym.make_vec` over real BFCL tasks, in one process (sync) and in worker processes (async)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from tooluse_gym.wrappers.candidates import CandidateActions

TASK = "multi_turn_base_0"  # GorillaFileSystem: move a report into a new folder, four turns


def _truth_messages(task, probe: str | None = None) -> list[str]:
    """Two messages per turn: all the turn's ground-truth calls, then one that ends the turn."""
    messages = []
    for turn, calls in enumerate(task.ground_truth):
        text = ", ".join(c.render() for c in calls)
        if probe is not None and turn == 0:
            text += f", mkdir(dir_name={probe!r})"
        messages += [f"[{text}]", "Done."]
    return messages


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_make_vec_plays_bfcl_tasks_with_state_isolated_per_env(mode, tasks_by_id):
    task = tasks_by_id[TASK]
    assert all(task.ground_truth)  # every turn has calls, so both envs stay in lockstep
    envs = gym.make_vec("ToolUse-MultiTurn-v0", num_envs=2, vectorization_mode=mode, task_ids=[TASK])
    try:
        assert envs.observation_space.contains(envs.observation_space.sample())
        obs, infos = envs.reset(seed=0)
        assert [m[0]["role"] for m in obs["messages"]] == ["system", "system"]
        assert list(infos["task_id"]) == [TASK, TASK]
        # env 1 creates an extra folder in its first turn; env 0 must not see it
        plays = list(zip(_truth_messages(task), _truth_messages(task, probe="probe_dir"), strict=True))
        obs, *_ = envs.step(plays[0])
        assert obs["messages"][0][-1]["content"] != obs["messages"][1][-1]["content"]
        obs, *_ = envs.step(("[ls()]", "[ls()]"))
        listing = [m[-1]["content"] for m in obs["messages"]]
        assert "probe_dir" in listing[1] and "probe_dir" not in listing[0]
        rewards = terminated = None
        for actions in plays[1:]:
            obs, rewards, terminated, truncated, infos = envs.step(actions)
            assert not truncated.any()
        assert terminated.all()
        assert rewards.tolist() == [1.0, 0.0]
        assert infos["checker"]["error_type"][1] == "multi_turn:instance_state_mismatch"
    finally:
        envs.close()


def test_sync_and_async_observations_agree(tasks_by_id):
    actions = [("[ls()]", "[pwd()]"), ("[cd(folder='document')]", "Done."), ("[ls()]", "[ls()]")]
    seen = {}
    for mode in ("sync", "async"):
        envs = gym.make_vec("ToolUse-MultiTurn-v0", num_envs=2, vectorization_mode=mode, task_ids=[TASK])
        try:
            obs, _ = envs.reset(seed=3)
            trace = [obs]
            for a in actions:
                trace.append(envs.step(a)[0])
        finally:
            envs.close()
        seen[mode] = trace
    assert seen["sync"] == seen["async"]
    assert isinstance(seen["async"][-1]["messages"], tuple)  # a frozen copy, not the shared view


def test_async_without_shared_memory_and_with_the_candidate_wrapper():
    envs = gym.make_vec(
        "ToolUse-MultiTurn-v0",
        num_envs=2,
        vectorization_mode="async",
        vector_kwargs={"shared_memory": False},
        task_ids=[TASK],
    )
    try:
        obs, _ = envs.reset(seed=0)
        obs, *_ = envs.step(("[pwd()]", "[ls()]"))
        assert "current_working_directory" in obs["messages"][0][-1]["content"]
        assert "current_directory_content" in obs["messages"][1][-1]["content"]
    finally:
        envs.close()
    envs = gym.make_vec(
        "ToolUse-MultiTurn-v0", num_envs=2, vectorization_mode="async", task_ids=[TASK], wrappers=[CandidateActions]
    )
    try:
        obs, _ = envs.reset(seed=[1, 2])
        assert obs.shape == (2, *envs.single_observation_space.shape) and obs.dtype == np.float32
        obs, rewards, terminated, truncated, infos = envs.step(np.array([0, 1]))
        assert obs.shape[0] == 2 and rewards.shape == (2,)
    finally:
        envs.close()
