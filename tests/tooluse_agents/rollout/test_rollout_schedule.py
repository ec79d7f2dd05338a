"""The rollout loop's two schedules play the same episodes; async runs fail and resume like lockstep ones."""

from __future__ import annotations

import json
import random

import gymnasium as gym
import pytest

import tooluse_gym  # noqa: F401
from tooluse_agents.backends.base import Generation, SamplingConfig
from tooluse_agents.backends.oracle import OracleAgent
from tooluse_agents.eval.run import EvalConfig, run_eval
from tooluse_agents.rollout.loop import RolloutJob, resolve_schedule, run_rollouts

TASKS = ("multi_turn_base_0", "multi_turn_base_3", "multi_turn_miss_func_1", "multi_turn_long_context_2")
SAMPLING = SamplingConfig(temperature=1.0, max_tokens=16)


class SeededOracle(OracleAgent):
    """The oracle, except that a request's seed decides (as a sampler would) whether it answers wrongly.

    `collect` hands back a random part of what is in flight, in random order: arrival order is
    the one thing an async schedule changes, and the episodes must not depend on it.
    """

    name = "seeded-oracle"

    def __init__(self, shuffle_seed: int = 0):
        super().__init__()
        self._rng = random.Random(shuffle_seed)
        self.collects = 0

    def message(self, request):
        if request.seed % 5 == 0:
            return "[ls(a=1)]" if request.tool_format == "python" else "I cannot help."
        return super().message(request)

    def collect(self):
        self.collects += 1
        done = self._done
        self._rng.shuffle(done)
        take = self._rng.randint(1, len(done)) if done else 0
        self._done = done[take:]
        return done[:take]


def _make_env():
    return gym.make("ToolUse-MultiTurn-v0", category="all", task_ids=list(TASKS))


def _play(agent, schedule, num_envs, seeds=(0, 1, 2)):
    jobs = [RolloutJob(t, s) for s in seeds for t in TASKS]
    episodes = run_rollouts(_make_env, agent, jobs, sampling=SAMPLING, num_envs=num_envs, schedule=schedule)
    return sorted((_strip(e.record.to_dict()) for e in episodes), key=lambda r: (r["task_id"], r["seed"]))


def _strip(record):
    record = json.loads(json.dumps(record))
    record.pop("duration_s")
    for turn in record["turns"]:
        for step in turn["steps"]:
            step.pop("latency_s")
    return record


def test_async_and_lockstep_play_the_same_episodes_whatever_the_arrival_order():
    reference = _play(SeededOracle(), "lockstep", num_envs=3)
    assert len(reference) == 12
    rewards = [r["reward"] for r in reference]
    assert 0.0 in rewards and 1.0 in rewards  # the seeds made some episodes fail: the check has teeth
    for shuffle_seed, num_envs in [(0, 3), (1, 5), (2, 12), (3, 1)]:
        agent = SeededOracle(shuffle_seed)
        assert _play(agent, "async", num_envs=num_envs) == reference
        assert agent.collects > 0


def test_async_keeps_at_most_num_envs_requests_in_flight():
    class Counting(SeededOracle):
        most = 0

        def submit(self, items, sampling=None):
            super().submit(items, sampling)
            Counting.most = max(Counting.most, len(self._done))

    _play(Counting(), "async", num_envs=4)
    assert Counting.most == 4


def test_schedule_resolution():
    class BatchOnly:  # like the HF agent: whole batches only
        name = "batch-only"

        def generate(self, requests, sampling):
            return [Generation(text="Done.") for _ in requests]

        def describe(self):
            return {"name": self.name}

        def close(self):
            pass

    assert resolve_schedule("auto", OracleAgent()) == "async"
    assert resolve_schedule("lockstep", OracleAgent()) == "lockstep"
    assert resolve_schedule("auto", BatchOnly()) == "lockstep"
    with pytest.raises(ValueError, match="cannot schedule per episode"):
        resolve_schedule("async", BatchOnly())
    with pytest.raises(ValueError, match="schedule must be one of"):
        resolve_schedule("eager", OracleAgent())


def test_a_backend_that_raises_in_async_is_recorded_on_each_episode():
    class Broken(SeededOracle):
        def collect(self):
            raise ConnectionError("engine died")

    jobs = [RolloutJob(t, 0) for t in TASKS]
    episodes = run_rollouts(_make_env, Broken(), jobs, sampling=SAMPLING, num_envs=2, schedule="async")
    assert len(episodes) == len(TASKS)
    errors = [e.record.error for e in episodes]
    assert all(err["type"] == "agent_exception" and "engine died" in err["message"] for err in errors)


def _config(**overrides):
    base = dict(agent="oracle", task_ids=TASKS, seeds=(0, 1), sampling=SAMPLING, num_envs=3)
    return EvalConfig(**{**base, **overrides})


def test_a_killed_async_evaluation_resumes_like_a_lockstep_one(tmp_path):
    class Killed(SeededOracle):
        def __init__(self, after):
            super().__init__(shuffle_seed=7)
            self.after = after

        def collect(self):
            if self.collects >= self.after:
                raise KeyboardInterrupt
            return super().collect()

    run_eval(_config(schedule="lockstep"), tmp_path / "whole", agent=SeededOracle(), progress=False)
    with pytest.raises(KeyboardInterrupt):
        run_eval(_config(schedule="async"), tmp_path / "resumed", agent=Killed(after=30), progress=False)
    partial = (tmp_path / "resumed" / "episodes.jsonl").read_text().splitlines()
    assert 0 < len(partial) < 8  # some episodes were written before the kill, not all
    results = run_eval(_config(schedule="lockstep"), tmp_path / "resumed", agent=SeededOracle(), progress=False)
    assert results["schedule"] == "lockstep"
    whole, resumed = (
        [_strip(json.loads(x)) for x in (tmp_path / d / "episodes.jsonl").read_text().splitlines()]
        for d in ("whole", "resumed")
    )
    key = lambda r: (r["task_id"], r["seed"])  # noqa: E731
    assert sorted(resumed, key=key) == sorted(whole, key=key)
    run_json = json.loads((tmp_path / "resumed" / "run.json").read_text())
    assert run_json["schedule"] == "async"  # what the run was started with; resuming under another is allowed
