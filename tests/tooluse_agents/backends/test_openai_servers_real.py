"""OpenAIAgent over two real `tooluse serve` model servers (SmolLM2 on the CPU), one of them killed mid-run.

Each request carries its own seed and both servers run float32, so an episode plays the same
whichever server answers it: the episodes equal one server's, with or without a server dying.
"""

from __future__ import annotations

import threading
import time

import pytest

from tests.tooluse_agents.backends.test_hf_agent import TASKS, _episodes
from tests.tooluse_agents.backends.test_openai_vllm_server import served
from tooluse_agents.backends.base import SamplingConfig
from tooluse_agents.backends.openai_compat import OpenAIAgent, OpenAIAgentConfig, ServerDownWarning
from tooluse_agents.eval.run import EvalConfig, run_eval
from tooluse_gym.envs.knobs import Knobs

pytestmark = pytest.mark.slow  # two server starts (~30-90 s each on 2 cores) and 18 short episodes

SEEDS = (0, 1)
RUN = dict(
    agent="openai",
    model="smollm2",
    task_ids=TASKS,
    seeds=SEEDS,
    sampling=SamplingConfig(temperature=1.0, max_tokens=16),
    num_envs=4,
    protocol=Knobs(system_prompt="none"),  # short prompts: SmolLM2's template does not render tools
)
SETTINGS = dict(model="smollm2", timeout_s=120, max_attempts=2, backoff_s=0.1, backoff_max_s=0.5)


@pytest.fixture(scope="module")
def two_servers(tmp_path_factory):
    with served(tmp_path_factory.mktemp("vllm-servers"), count=2) as servers:
        yield servers


@pytest.fixture(scope="module")
def reference(two_servers, tmp_path_factory):
    """The episodes played on the first server alone."""
    url = two_servers[0].url
    out = tmp_path_factory.mktemp("reference") / "run"
    agent = OpenAIAgent(OpenAIAgentConfig(base_url=url, **SETTINGS))
    results = run_eval(EvalConfig(**RUN, base_url=url), out, agent=agent, progress=False)
    assert results["summary"]["agent_errors"] == {}
    return _comparable(_episodes(out / "episodes.jsonl"))


def _comparable(records):
    """The records without the agent's settings (its URLs differ between the runs)."""
    return [{k: v for k, v in r.items() if k != "agent"} for r in records]


def _play(servers, out, during=None):
    agent = OpenAIAgent(OpenAIAgentConfig(base_urls=tuple(s.url for s in servers), **SETTINGS))
    config = EvalConfig(**RUN, base_urls=tuple(s.url for s in servers))
    thread = threading.Thread(target=during, args=(agent,), daemon=True) if during else None
    if thread:
        thread.start()
    results = run_eval(config, out, agent=agent, progress=False)
    if thread:
        thread.join(timeout=60)
    return results, _comparable(_episodes(out / "episodes.jsonl"))


def test_episodes_spread_over_two_servers_play_as_on_one(two_servers, reference, tmp_path):
    results, episodes = _play(two_servers, tmp_path / "run")
    assert results["summary"]["agent_errors"] == {} and len(episodes) == len(TASKS) * len(SEEDS)
    servers = results["servers"]
    assert all(s["episodes"] >= 1 and s["failures"] == 0 for s in servers), servers
    assert sum(s["episodes"] for s in servers) == len(episodes)  # sticky: no episode was placed twice
    steps = sum(len(t["steps"]) for r in episodes for t in r["turns"])
    assert sum(s["requests"] for s in servers) == steps
    assert episodes == reference


def test_a_server_killed_mid_run_loses_no_episode(two_servers, reference, tmp_path):
    """Run last in this module: it kills the second server."""
    victim = two_servers[1]

    def kill_once_it_has_work(agent):
        deadline = time.monotonic() + 300
        while agent.servers.report()[1]["requests"] < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        victim.kill()

    with pytest.warns(ServerDownWarning, match=f"model server {victim.url} failed"):
        results, episodes = _play(two_servers, tmp_path / "run", during=kill_once_it_has_work)
    assert victim.process.poll() is not None
    assert results["summary"]["agent_errors"] == {} and len(episodes) == len(TASKS) * len(SEEDS)
    first, second = results["servers"]
    assert second["failures"] >= 1 and second["down"] is True and second["moved_out"] >= 1, second
    assert "Connection" in second["last_failure"] and first["failures"] == 0
    assert episodes == reference  # the moved episodes carried on where they were, on the other server
