"""OpenAIAgent over several servers: sticky sessions, the session header, failover, and the run's report.

The servers are real HTTP servers on loopback that answer every chat completion with a text reply
(`FaultyServer`); a dead server is a port that refuses connections, or a server shut down mid-run.
The same over two real `tooluse serve` model servers: `test_openai_servers_real.py` (slow).
"""

from __future__ import annotations

import dataclasses
import json
import socket
from collections import defaultdict

import gymnasium as gym
import pytest

from tests.tooluse_agents.backends.test_openai_agent import FaultyServer
from tooluse_agents.backends.base import AgentRequest, SamplingConfig
from tooluse_agents.backends.factory import BackendSpec, make_agent
from tooluse_agents.backends.openai_compat import OpenAIAgent, OpenAIAgentConfig, ServerDownWarning
from tooluse_agents.cli.eval import main
from tooluse_agents.eval.run import EvalConfig, run_eval
from tooluse_agents.rollout.loop import RolloutJob, run_rollouts
from tooluse_agents.runs.rundir import RunConflict

TASKS = ("multi_turn_base_0", "multi_turn_base_1", "multi_turn_base_2", "multi_turn_base_3")
SAMPLING = SamplingConfig(max_tokens=8)


@pytest.fixture
def stub():
    """Makes loopback servers that answer every chat completion with a text reply; all stopped at the end."""
    made: list[FaultyServer] = []

    def make() -> FaultyServer:
        made.append(FaultyServer([]))
        return made[-1]

    yield make
    for server in made:
        server.close()


@pytest.fixture
def refused_url():
    """A loopback port that is bound but never listens: every connection to it is refused."""
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{closed.getsockname()[1]}/v1"


def agent_over(*urls: str, **settings) -> OpenAIAgent:
    quick = {"max_attempts": 2, "backoff_s": 0.01, "backoff_max_s": 0.02, "timeout_s": 10.0, **settings}
    return OpenAIAgent(OpenAIAgentConfig(model="m", base_urls=urls, **quick))


def sessions(server: FaultyServer) -> dict[str, int]:
    """Requests the server received per session header."""
    counts: dict[str, int] = defaultdict(int)
    for headers in server.headers:
        counts[{k.lower(): v for k, v in headers.items()}.get("x-session-id", "")] += 1
    return dict(counts)


@pytest.mark.parametrize("schedule", ["async", "lockstep"])
def test_each_episode_stays_on_one_server_and_names_itself_in_a_header(stub, tmp_path, schedule):
    a, b = stub(), stub()
    config = EvalConfig(
        agent="openai", model="m", base_urls=(a.url, b.url), task_ids=TASKS, num_envs=4, schedule=schedule
    )
    results = run_eval(config, tmp_path / "run", agent=agent_over(a.url, b.url), progress=False)
    assert results["summary"]["agent_errors"] == {} and results["summary"]["episodes"] == 4
    on_a, on_b = sessions(a), sessions(b)
    assert on_a and on_b, "both servers get episodes"
    assert not set(on_a) & set(on_b), "no episode's requests reach two servers"
    assert "" not in on_a and len(on_a) + len(on_b) == 4  # every request names its episode
    records = [json.loads(line) for line in (tmp_path / "run" / "episodes.jsonl").read_text().splitlines()]
    steps = sum(len(t["steps"]) for r in records for t in r["turns"])
    assert sum(on_a.values()) + sum(on_b.values()) == steps
    servers = results["servers"]
    assert [s["url"] for s in servers] == [a.url, b.url]
    assert [s["episodes"] for s in servers] == [len(on_a), len(on_b)]
    assert all(s["failures"] == 0 and s["down"] is False for s in servers)
    assert records[0]["agent"]["base_urls"] == [a.url, b.url]


def test_one_server_keeps_its_results_and_sends_the_header(stub, tmp_path):
    a = stub()
    agent = OpenAIAgent(OpenAIAgentConfig(model="m", base_url=a.url))
    config = EvalConfig(agent="openai", model="m", base_url=a.url, task_ids=TASKS[:1])
    results = run_eval(config, tmp_path / "run", agent=agent, progress=False)
    assert "servers" not in results and "base_urls" not in config.to_dict()  # as before: older runs resume
    assert list(sessions(a)) != [""]  # a router behind the one URL still sees the episode


def test_no_session_header_when_turned_off_or_without_an_episode(stub):
    a = stub()
    request = AgentRequest(observation={"messages": [{"role": "user", "content": "hi"}]}, seed=0, tool_format="python")
    OpenAIAgent(OpenAIAgentConfig(model="m", base_url=a.url)).generate([request], SAMPLING)
    agent = OpenAIAgent(OpenAIAgentConfig(model="m", base_url=a.url, session_header=None))
    agent.generate([dataclasses.replace(request, session="s1")], SAMPLING)
    assert sessions(a) == {"": 2}


def test_an_unreachable_server_among_several_loses_its_episodes_to_the_others(
    stub,
    refused_url,
    tmp_path,
):
    live = stub()
    config = EvalConfig(agent="openai", model="m", base_urls=(refused_url, live.url), task_ids=TASKS, num_envs=4)
    with pytest.warns(ServerDownWarning, match=f"model server {refused_url} failed .*move to {live.url}"):
        results = run_eval(config, tmp_path / "run", agent=agent_over(refused_url, live.url), progress=False)
    assert results["summary"]["agent_errors"] == {} and results["summary"]["episodes"] == 4
    dead, alive = results["servers"]
    assert dead["failures"] >= 1 and dead["down"] is True and "Connection" in dead["last_failure"]
    assert dead["moved_out"] == dead["failures"]  # each failed request's episode moved
    assert alive["episodes"] == 4 and len(sessions(live)) == 4


def test_a_server_that_stops_mid_run_has_its_episodes_moved_and_none_lost(stub):
    a, b = stub(), stub()
    agent = agent_over(a.url, b.url)
    jobs = [RolloutJob(t, s) for t in TASKS for s in (0, 1)]
    done = []

    def on_episode(episode):
        done.append(episode)
        if len(done) == 1:
            b.close()  # from now on every connection to b is refused

    def make():
        return gym.make("ToolUse-MultiTurn-v0", task_ids=list(TASKS))

    with pytest.warns(ServerDownWarning, match=f"model server {b.url} failed"):
        episodes = run_rollouts(make, agent, jobs, sampling=SAMPLING, num_envs=4, on_episode=on_episode)
    assert len(episodes) == len(jobs) and all(e.record.error is None for e in episodes)
    report = agent.server_report()
    assert report is not None and report[1]["failures"] >= 1 and report[1]["moved_out"] >= 1
    assert report[0]["episodes"] + report[1]["episodes"] - report[1]["moved_out"] == len(jobs)


def test_when_no_server_answers_the_episodes_fail_as_agent_errors_naming_each_server(tmp_path, stub):
    urls = []
    with socket.socket() as one, socket.socket() as two:
        for s in (one, two):
            s.bind(("127.0.0.1", 0))
            urls.append(f"http://127.0.0.1:{s.getsockname()[1]}/v1")
        config = EvalConfig(agent="openai", model="m", base_urls=tuple(urls), task_ids=TASKS[:2], num_envs=1)
        with pytest.warns(ServerDownWarning) as warned:
            results = run_eval(config, tmp_path / "run", agent=agent_over(*urls), progress=False)
    assert [str(w.message).split("; ")[-1] for w in warned] == [f"its episodes move to {urls[1]}", "no server is up"]
    assert results["summary"]["agent_errors"] == {"connection_error": 2}
    for line in (tmp_path / "run" / "episodes.jsonl").read_text().splitlines():
        error = json.loads(line)["error"]
        assert error["type"] == "connection_error" and error["message"].startswith("no server answered: ")
        assert all(url in error["message"] for url in urls)
    assert all(s["down"] for s in results["servers"])
    # not a score of 0: left out of the table, and the same run again plays them on a server that is up
    assert results["summary"]["unscored"] == {"connection_error": 2} and results["summary"]["categories"] == {}
    up = stub()
    again = dataclasses.replace(config, base_urls=(up.url,))
    resumed = run_eval(again, tmp_path / "run", agent=agent_over(up.url), progress=False)
    assert resumed["summary"]["episodes"] == 2 and resumed["summary"]["agent_errors"] == {}
    assert resumed["summary"]["categories"]["base"]["episodes"] == 2 and resumed["summary"]["unscored"] == {}


def test_bad_server_lists_are_refused():
    with pytest.raises(ValueError, match="not both"):
        OpenAIAgentConfig(model="m", base_url="http://127.0.0.1:1/v1", base_urls=("http://127.0.0.1:2/v1",))
    with pytest.raises(ValueError, match="given twice"):
        make_agent(BackendSpec(backend="openai", model="m", base_urls=("http://h/v1", "http://h/v1")))
    with pytest.raises(ValueError, match="openai backend"):
        BackendSpec(backend="vllm", model="m", base_urls=("http://h/v1",))


def test_the_command_line_takes_several_servers_and_says_how_each_fared(stub, tmp_path, capsys):
    a, b = stub(), stub()
    out = tmp_path / "run"
    args = ["run", "--agent", "openai", "--model", "m", "--task-ids", *TASKS[:2], "--num-envs", "2"]
    code = main([*args, "--base-urls", a.url, b.url, "--out", str(out), "--no-progress"])
    printed = capsys.readouterr().out
    assert code == 0 and "model servers (this session):" in printed
    assert f"  {a.url}: 1 episodes" in printed and f"  {b.url}: 1 episodes" in printed
    assert json.loads((out / "run.json").read_text())["base_urls"] == [a.url, b.url]
    bad = tmp_path / "bad"
    code = main([*args, "--base-urls", a.url, "localhost:8000", "--out", str(bad), "--no-progress"])
    assert code == 2 and "'localhost:8000' is not an http(s) URL" in capsys.readouterr().err and not bad.exists()


def test_train_prefilter_plays_over_several_servers_and_says_which_failed(stub, refused_url, tmp_path, capsys):
    from tests.tooluse_agents.train.grpo.test_prefilter import CHECK
    from tooluse_agents.cli.train import main as train

    live = stub()  # answers "hello": no prompt is solved
    out = tmp_path / "kept.yaml"
    args = ["prefilter", str(CHECK), "--agent", "openai", "--model", "m", "--samples", "2", "--out", str(out)]
    with pytest.warns(ServerDownWarning, match=f"model server {refused_url} failed"):
        assert train([*args, "--base-urls", refused_url, live.url]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["rollouts"] == 6
    assert (
        f"  {refused_url}: " in captured.err
        and "FAILED" in captured.err
        and f"  {live.url}: 6 episodes" in captured.err
    )
    assert "agent error" not in captured.err  # every rollout moved to the live server


def test_a_run_resumes_over_another_list_of_servers(stub, refused_url, tmp_path):
    a, b = stub(), stub()
    first = EvalConfig(agent="openai", model="m", base_urls=(refused_url, a.url), task_ids=TASKS[:1])
    with pytest.warns(ServerDownWarning):
        run_eval(first, tmp_path / "run", agent=agent_over(refused_url, a.url), progress=False)
    again = dataclasses.replace(first, base_urls=(a.url, b.url), task_ids=TASKS[:2])  # the dead server left out
    with pytest.raises(RunConflict):  # other tasks: another run
        run_eval(again, tmp_path / "run", agent=agent_over(a.url, b.url), progress=False)
    again = dataclasses.replace(first, base_urls=(a.url, b.url))
    results = run_eval(again, tmp_path / "run", agent=agent_over(a.url, b.url), progress=False)
    assert results["summary"]["episodes"] == 1 and results["summary"]["agent_errors"] == {}
