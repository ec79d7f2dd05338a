"""`CandidateActions`: the candidate-choice env over real BFCL tasks, its checks, leaks and learnability."""

from __future__ import annotations

import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from tooluse_gym.tasks import bfcl
from tooluse_gym.wrappers import CandidateActions, CandidateConfig
from tooluse_gym.wrappers.candidates import render_message
from tooluse_gym.wrappers.features import CANDIDATE_FEATURES, CONTEXT_FEATURES

TASKS = ["multi_turn_base_0", "multi_turn_base_1", "multi_turn_base_2"]
K = 7


def _env(task_ids=TASKS, tool_format="python", **config) -> CandidateActions:
    base = gym.make("ToolUse-MultiTurn-v0", task_ids=task_ids, tool_format=tool_format)
    return CandidateActions(base, CandidateConfig(num_candidates=K, **config))


def _play(env, policy, seed, task_id=None):
    """One episode; returns (terminal reward, picks that matched the ground truth, picks)."""
    options = {"task_id": task_id} if task_id else None
    obs, info = env.reset(seed=seed, options=options)
    correct = picks = 0
    while True:
        obs, reward, terminated, truncated, info = env.step(policy(obs, env))
        picks += 1
        correct += info["candidate_correct"]
        if terminated or truncated:
            return reward, correct, picks


@pytest.mark.parametrize("tool_format", ["python", "json"])
def test_gymnasium_and_sb3_env_checkers_pass(tool_format):
    sb3_checker = pytest.importorskip("stable_baselines3.common.env_checker")
    env = _env(tool_format=tool_format)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*different from the unwrapped version.*")
        check_env(env)
    sb3_checker.check_env(env, warn=True)
    obs, info = env.reset(seed=0)
    assert env.observation_space.contains(obs)
    assert obs.shape == (len(CONTEXT_FEATURES) + K * len(CANDIDATE_FEATURES),)
    assert len(info["candidates"]) == K == len(set(info["candidates"]))


@pytest.mark.parametrize("tool_format", ["python", "json"])
def test_picking_the_answer_replays_the_ground_truth_and_scores(tool_format, tasks_by_id):
    env = _env(tool_format=tool_format, reward="shaped")
    for task_id in TASKS:
        task = tasks_by_id[task_id]
        obs, info = env.reset(seed=5, options={"task_id": task_id})
        total = 0.0
        for calls in task.ground_truth:
            for call in [*calls, None]:  # one ground-truth call per step, then the end of the turn
                assert env.candidates[env.answer_index] == render_message(call, tool_format, "Done.")
                obs, reward, terminated, truncated, info = env.step(env.answer_index)
                total += reward
                assert info["candidate_correct"]
        assert terminated and info["checker"]["valid"]
        assert total == pytest.approx(2.0)  # terminal 1.0 plus the shaped picks summing to 1.0


def test_same_seed_same_candidates_and_observations():
    a, b = _env(), _env()
    rng = np.random.default_rng(0)
    actions = rng.integers(K, size=40)
    obs_a, info_a = a.reset(seed=11)
    obs_b, info_b = b.reset(seed=11)
    for action in actions:
        assert info_a["candidates"] == info_b["candidates"]
        np.testing.assert_array_equal(obs_a, obs_b)
        obs_a, _, done_a, trunc_a, info_a = a.step(int(action))
        obs_b, _, done_b, trunc_b, info_b = b.step(int(action))
        assert done_a == done_b
        if done_a:
            obs_a, info_a = a.reset(seed=12)
            obs_b, info_b = b.reset(seed=12)
    other = _env()
    _, info_c = other.reset(seed=13)
    _, info_a = a.reset(seed=11)
    assert info_c["candidates"] != info_a["candidates"]


def test_answer_position_is_uniform_over_the_slots():
    env = _env(task_ids=[t.task_id for t in bfcl.load_bfcl_tasks("base")[:20]])
    counts = np.zeros(K)
    n = 700
    for seed in range(n):
        env.reset(seed=seed)
        counts[env.answer_index] += 1
    assert counts.min() > 0
    expected = n / K
    chi2 = float(((counts - expected) ** 2 / expected).sum())
    assert chi2 < 22.46, counts  # the 0.999 quantile of chi-square with K - 1 = 6 degrees of freedom


def test_always_first_candidate_scores_like_chance():
    env = _env()
    first = [_play(env, lambda obs, e: 0, seed) for seed in range(40)]
    rng = np.random.default_rng(1)
    rand = [_play(env, lambda obs, e: int(rng.integers(K)), 100 + seed) for seed in range(40)]
    rate_first = sum(c for _, c, _ in first) / sum(p for *_, p in first)
    rate_random = sum(c for _, c, _ in rand) / sum(p for *_, p in rand)
    assert abs(rate_first - 1 / K) < 0.05 and abs(rate_random - 1 / K) < 0.05
    assert sum(r for r, *_ in first) == 0  # no BFCL episode is solved by slot 0


def test_protocol_card_records_the_setting_and_its_leaks():
    env = _env(reward="shaped")
    _, info = env.reset(seed=0)
    entry = info["protocol"]["extra"]["candidate_actions"]
    assert entry["num_candidates"] == K and entry["reward"] == "shaped"
    assert entry["comparable_to_text_agents"] is False
    assert info["protocol"]["reward"] == env.protocol.reward == "shaped"  # the card's own reward field too
    assert _env(reward="terminal").protocol.reward == "terminal"
    assert set(entry["leaks"]) >= {"answer_in_set", "ground_truth_values", "group_structure", "feedback"}
    assert env.protocol.fingerprint() != env.unwrapped.protocol.fingerprint()
    assert "candidate_actions" not in env.unwrapped.protocol.to_dict()["extra"]


def test_features_read_the_conversation():
    env = _env()
    obs, info = env.reset(seed=0, options={"task_id": "multi_turn_base_0"})  # "Move 'final_report.pdf' ..."
    c, f = len(CONTEXT_FEATURES), len(CANDIDATE_FEATURES)
    per = obs[c:].reshape(K, f)
    col = {name: i for i, name in enumerate(CANDIDATE_FEATURES)}
    answer = per[env.answer_index]
    assert answer[col["args_in_user"]] == 1.0 and answer[col["done_in_turn"]] == 0.0  # cd(folder='document')
    ends = [i for i, m in enumerate(info["candidates"]) if m == "Done."]
    assert per[ends[0], col["is_end"]] == 1.0 and per[ends[0]].sum() == 1.0
    obs, *_ = env.step(env.answer_index)
    per = obs[c:].reshape(K, f)
    repeat = env.candidates.index("[cd(folder='document')]")  # the last call, offered again
    assert per[repeat, col["done_in_turn"]] == 1.0 and per[repeat, col["name_in_turn"]] > 0
    assert obs[:c][CONTEXT_FEATURES.index("first_step_of_turn")] == 0.0


def test_end_on_mistake_ends_the_episode_and_bad_use_raises():
    env = _env(end_on_mistake=True)
    env.reset(seed=0, options={"task_id": "multi_turn_base_0"})
    wrong = next(i for i in range(K) if env.candidates[i] != env.candidates[env.answer_index])
    *_, terminated, truncated, info = env.step(wrong)
    assert terminated and not truncated and not info["candidate_correct"] and "checker" not in info
    with pytest.raises(gym.error.ResetNeeded):
        env.step(0)
    env.reset(seed=0)
    with pytest.raises(ValueError):
        env.step(K)
    with pytest.raises(ValueError):
        CandidateConfig(num_candidates=1)
    with pytest.raises(ValueError):
        CandidateConfig(reward="dense")
    with pytest.raises(gym.error.ResetNeeded):
        _env().step(0)


def _choice_accuracy(env, policy, tasks, seeds) -> float:
    """Share of states on the ground-truth path where `policy` picks the correct candidate."""
    hits = total = 0
    for seed in seeds:
        obs, _ = env.reset(seed=seed, options={"task_id": tasks[seed % len(tasks)]})
        while True:
            hits += policy(obs) == env.answer_index
            total += 1
            obs, _, terminated, truncated, _ = env.step(env.answer_index)
            if terminated or truncated:
                break
    return hits / total


def test_ppo_learns_above_random_on_a_small_task_set():
    pytest.importorskip("stable_baselines3")
    import torch

    from experiments.tools.sb3_baselines import model_policy, train_model

    torch.set_num_threads(1)
    tasks = TASKS[:2]
    model = train_model("ppo", _env(task_ids=tasks, reward="shaped", end_on_mistake=True), 4096, seed=0)
    rng = np.random.default_rng(0)
    seeds = range(300, 310)
    trained = _choice_accuracy(_env(task_ids=tasks), model_policy(model), tasks, seeds)
    chance = _choice_accuracy(_env(task_ids=tasks), lambda obs: int(rng.integers(K)), tasks, seeds)
    assert trained > chance + 0.12, (trained, chance)


def test_the_sb3_driver_plays_its_policies_through_the_one_rollout_loop():
    pytest.importorskip("stable_baselines3")
    from experiments.tools.sb3_baselines import PolicyAgent, play

    envs: list[CandidateActions] = []

    def make_env():
        envs.append(_env())
        return envs[-1]

    def right(obs):  # reads the answer the way only a test may (`answer_index`)
        return envs[-1].answer_index

    def wrong(obs):
        return (envs[-1].answer_index + 1) % K

    agent = {"name": "test", "seed": 3}
    solved = play(make_env, right, TASKS[:2], 3, agent)
    assert [r["task_id"] for r in solved] == TASKS[:2] and len(envs) == 1  # in task order, one env per call
    assert all(r["reward"] == 1.0 and r["candidate_accuracy"] == 1.0 and r["seed"] == 3 for r in solved)
    assert all(r["agent"] == agent and r["error"] is None and r["turns"][0]["steps"] for r in solved)
    assert solved[0]["protocol"]["extra"]["candidate_actions"]  # the wrapper's card, from the reset's info
    failed = play(make_env, wrong, TASKS[:1], 3, agent)
    assert failed[0]["reward"] == 0.0 and failed[0]["candidate_accuracy"] == 0.0
    assert PolicyAgent(wrong, agent).describe() == agent
