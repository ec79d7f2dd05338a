"""`openenv validate` on the repository and on a running `tooluse serve-env`, and RFC 008's checks we run ourselves.

openenv-core 0.3.0's command (run as users run it: ``python -m openenv.cli validate``) must give
exactly what docs/integrations/openenv.md's "OpenEnv validate" section says: every runtime criterion
it lists passes against a real `tooluse serve-env` subprocess, and the static run on the repository
refuses exactly the layout items the page lists. 0.3.0 has none of RFC 008's graders, so the checks
of the RFC that a served env can show over the wire are measured here on real BFCL tasks: the
oracle reaches the maximum reward, doing nothing stays at the floor, rewards are well formed, the
state keeps its contract, a seed controls the draw, episodes replay identically after another one,
every observation fits the advertised schema, and no observation shows the ground-truth calls.
"""

from __future__ import annotations

import json
import math
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest

pytest.importorskip("openenv.core")

import httpx
import jsonschema
from websockets.sync.client import connect

from benchmarks.env_server_process import ServedEnv
from benchmarks.env_server_wire import spread
from tooluse_gym.envs import MULTI_TURN_ID, SINGLE_TURN_ID
from tooluse_gym.envs.tool_env import task_env, task_ids
from tooluse_gym.tasks.task import END_OF_TURN

ROOT = Path(__file__).resolve().parents[3]
PAGE = ROOT / "docs" / "integrations" / "openenv.md"
CATEGORY = {MULTI_TURN_ID: "all", SINGLE_TURN_ID: "single_turn"}
TASKS_PER_ENV = 8


def section(title: str) -> str:
    """The text of the page's section `title` (up to the next heading of the same level)."""
    page = PAGE.read_text(encoding="utf-8")
    start = page.index(f"## {title}\n")
    end = page.find("\n## ", start + 1)
    return page[start : end if end > 0 else len(page)]


def documented(table_title: str) -> list[str]:
    """The first column's backticked names of the table under the bold line `table_title` in "OpenEnv validate"."""
    text = section("OpenEnv validate")
    table = text[text.index(f"**{table_title}**") :].split("\n\n")[1]
    return [m.group(1) for line in table.splitlines()[2:] if (m := re.match(r"\| `([^`]+)`", line))]


def openenv_validate(*args: str) -> tuple[int, dict[str, Any]]:
    run = subprocess.run(
        [sys.executable, "-m", "openenv.cli", "validate", *args], capture_output=True, text=True, timeout=120
    )
    return run.returncode, json.loads(run.stdout)


@pytest.fixture(scope="module")
def server():
    with ServedEnv(["--max-sessions", "8", "--idle-timeout", "600"]) as running:
        yield running


def test_the_runtime_validator_passes_every_documented_criterion(server):
    code, report = openenv_validate("--url", server.url)
    passed = [c["id"] for c in report["criteria"] if c["passed"]]
    assert code == 0 and report["passed"], report
    assert sorted(passed) == sorted(documented("Runtime")) == sorted(c["id"] for c in report["criteria"])
    assert report["standard_profile"] == "openenv-http/1.x" and report["mode"] == "simulation"


def test_the_static_validator_refuses_exactly_the_documented_layout_items():
    code, report = openenv_validate(str(ROOT), "--json")
    assert code == 1 and not report["passed"]
    assert sorted(report["issues"]) == sorted(documented("Static"))
    for package in sorted((ROOT / "environments").iterdir()):  # verifiers packages, not OpenEnv ones
        run = subprocess.run([sys.executable, "-m", "openenv.cli", "validate", str(package)], capture_output=True)
        assert run.returncode == 1 and b"missing openenv.yaml" in run.stderr, package


# --- RFC 008's checks, measured over the wire ------------------------------------------------------


class Session:
    """One raw WebSocket session that keeps every reply (the RFC's collector: no client defaults in between)."""

    def __init__(self, ws_url: str):
        self.ws = connect(ws_url, max_size=None)

    def send(self, kind: str, data: dict[str, Any] | None = None) -> dict[str, Any]:
        self.ws.send(json.dumps({"type": kind, **({} if data is None else {"data": data})}))
        reply = dict(json.loads(self.ws.recv(timeout=60)))
        assert reply["type"] in ("observation", "state"), reply
        return dict(reply["data"])

    def close(self) -> None:
        self.ws.close()


def tasks_of(env_id: str) -> dict[str, Any]:
    env = gym.make(env_id, category=CATEGORY[env_id])
    tasks = {t.task_id: t for t in task_env(env).tasks}
    chosen = spread(task_ids(env), TASKS_PER_ENV)
    env.close()
    return {t: tasks[t] for t in chosen}


def play(session: Session, task: Any, policy: str, seed: int = 0) -> list[dict[str, Any]]:
    """One episode, `policy` ``oracle`` (the ground truth) or ``nothing`` (a message without calls, every turn)."""
    frames = [session.send("reset", {"seed": seed, "task_id": task.task_id, "episode_id": f"probe-{seed}"})]
    states = [session.send("state")]
    while not frames[-1]["done"]:
        o = frames[-1]["observation"]
        if policy == "oracle":
            message = task.reference_message(o["turn"], o["steps_in_turn"], "python")
        else:  # no call: the end of a multi-turn turn, an empty answer to a single-turn question
            message = "" if o["env_id"] == SINGLE_TURN_ID else END_OF_TURN
        frames.append(session.send("step", {"content": message}))
        states.append(session.send("state"))
    for i, state in enumerate(states):  # runtime.state_contract
        assert state["episode_id"] == f"probe-{seed}" and state["step_count"] == i, (task.task_id, state)
    return frames


@pytest.fixture(scope="module")
def episodes(server):
    """Every chosen task played by the oracle and by doing nothing, on one session, then the oracle again on another."""
    schema = httpx.get(f"{server.url}/schema", timeout=30).json()["observation"]
    first, second = Session(server.ws_url), Session(server.ws_url)
    played: dict[str, Any] = {"schema": schema, "oracle": {}, "nothing": {}, "replay": {}, "tasks": {}}
    try:
        for env_id in (MULTI_TURN_ID, SINGLE_TURN_ID):
            for task_id, task in tasks_of(env_id).items():
                played["tasks"][task_id] = task
                played["oracle"][task_id] = play(first, task, "oracle")
                played["nothing"][task_id] = play(first, task, "nothing")
        for task_id, task in reversed(played["tasks"].items()):  # after other episodes, in another order
            played["replay"][task_id] = play(second, task, "oracle")
    finally:
        first.close()
        second.close()
    return played


def test_oracle_reaches_the_maximum_and_doing_nothing_stays_at_the_floor(episodes):
    """semantic.oracle_max and semantic.floor_gap (the floor: reward 0 unless the task's answer is no call)."""
    for task_id, task in episodes["tasks"].items():
        assert episodes["oracle"][task_id][-1]["reward"] == 1.0, task_id
        no_call_is_right = getattr(task, "check", "ast") == "irrelevance"  # BFCL's irrelevance: the answer is no call
        assert episodes["nothing"][task_id][-1]["reward"] == (1.0 if no_call_is_right else 0.0), task_id
    assert any(getattr(t, "check", "") == "irrelevance" for t in episodes["tasks"].values())  # the exception is seen


def test_rewards_are_well_formed_and_observations_fit_the_schema(episodes):
    """runtime.reward_well_formed and runtime.observation_schema."""
    for frames in (*episodes["oracle"].values(), *episodes["nothing"].values()):
        assert frames[0]["reward"] is None and not frames[0]["done"]
        for frame in frames[1:]:
            r = frame["reward"]
            assert isinstance(r, float) and math.isfinite(r) and 0.0 <= r <= 1.0, frame["reward"]
        for frame in frames:
            jsonschema.validate(frame["observation"], episodes["schema"])


def test_episodes_replay_identically_after_other_episodes(episodes):
    """runtime.episode_determinism, runtime.episode_isolation, semantic.replayability (same session or another)."""
    for task_id, frames in episodes["oracle"].items():
        assert episodes["replay"][task_id] == frames, task_id


def test_no_observation_shows_the_ground_truth_calls(episodes):
    """semantic.no_solution_leakage: a model that never calls sees none of the calls that solve its task."""
    for task_id, task in episodes["tasks"].items():
        seen = json.dumps(episodes["nothing"][task_id])
        for calls in task.ground_truth:
            for call in calls:
                assert call.render() not in seen, (task_id, call.render())


def test_a_seed_controls_the_draw(server):
    """runtime.seed_control: the same seed draws the same task and observation, other seeds other tasks."""
    session = Session(server.ws_url)
    try:
        draws = {seed: [session.send("reset", {"seed": seed})["observation"] for _ in range(2)] for seed in range(4)}
    finally:
        session.close()
    assert all(a == b for a, b in draws.values())
    assert len({a["task_id"] for a, _ in draws.values()}) > 1
