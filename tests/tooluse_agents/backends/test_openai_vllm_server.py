"""OpenAIAgent against a real vLLM OpenAI-compatible server (SmolLM2 on the CPU), started by `tooluse-serve`."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.tooluse_agents.backends.test_hf_agent import TASKS, _episodes
from tooluse_agents.backends.base import SamplingConfig
from tooluse_agents.backends.openai_compat import OpenAIAgent, OpenAIAgentConfig
from tooluse_agents.eval.run import EvalConfig, run_eval
from tooluse_gym.envs.knobs import Knobs

pytestmark = pytest.mark.slow  # a server start (~30-90 s on 2 cores) and ~6k-token prefills


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _serve_command() -> list[str]:
    """`tooluse-serve`: $TOOLUSE_SERVE (a server from another venv: `make test-verifiers`), or this venv's."""
    if os.environ.get("TOOLUSE_SERVE"):
        return [os.environ["TOOLUSE_SERVE"]]
    script = Path(sys.executable).with_name("tooluse-serve")  # the console script, as a user runs it
    return [str(script)] if script.exists() else [sys.executable, "-m", "tooluse_agents.backends.serve"]


@dataclass(frozen=True)
class Served:
    """A `tooluse-serve` process and its base URL (``.../v1``)."""

    process: subprocess.Popen
    url: str
    log: Path

    def kill(self) -> None:
        """SIGKILL the server's whole process group (vLLM's engine process included), as a crash would."""
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=60)


@contextlib.contextmanager
def served(folder: Path, count: int = 1) -> Iterator[list[Served]]:
    """`count` servers of `tooluse-serve smollm2-135m` on free loopback ports, started at once, stopped on exit.

    Each with its CPU defaults and a 1 GiB KV cache (a shared CPU); float32 on every machine: its
    logits do not depend on the batch (bf16's do), which the schedule and routing tests need.
    """
    env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": "1"}  # an explicit setting wins over the free-memory default
    servers = []
    try:
        for n in range(count):
            port = _free_port()
            command = [*_serve_command(), "smollm2-135m", "--served-model-name", "smollm2", "--port", str(port)]
            command += ["--dtype", "float32"]
            log = folder / f"server{n}.log"
            with log.open("w") as out:
                process = subprocess.Popen(
                    command, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True
                )
            servers.append(Served(process, f"http://127.0.0.1:{port}/v1", log))
        for server in servers:
            _wait_ready(server)
        yield servers
    finally:
        for server in servers:
            _stop(server.process)


def _wait_ready(server: Served, wait_s: float = 300) -> None:
    deadline = time.monotonic() + wait_s
    while True:
        if server.process.poll() is not None:
            pytest.fail(f"tooluse-serve exited with {server.process.returncode}:\n{server.log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(server.url + "/models", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        if time.monotonic() > deadline:
            pytest.fail(f"tooluse-serve not ready after {wait_s:.0f} s:\n{server.log.read_text()[-3000:]}")
        time.sleep(2)


def _stop(process: subprocess.Popen) -> None:
    with contextlib.suppress(ProcessLookupError):  # the group: vLLM's engine process too
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=60)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """One `tooluse-serve smollm2-135m` (`served`); its base URL."""
    with served(tmp_path_factory.mktemp("vllm-server")) as (one,):
        yield one.url


def test_serves_the_model_under_its_name(server):
    with urllib.request.urlopen(server + "/models", timeout=10) as response:
        models = json.load(response)["data"]
    assert [m["id"] for m in models] == ["smollm2"]


def test_seeded_episode_with_a_long_prompt(server, tmp_path):
    """BFCL prompts (~6k tokens) with per-request seeds: the request that chunked prefill crashes on a CPU."""
    agent = OpenAIAgent(OpenAIAgentConfig(model="smollm2", base_url=server, timeout_s=300, max_attempts=1))
    config = EvalConfig(
        agent="openai",
        model="smollm2",
        base_url=server,
        task_ids=("multi_turn_base_0",),
        seeds=(0,),
        sampling=SamplingConfig(temperature=0.7, max_tokens=16),
        protocol=Knobs(system_prompt="strong", tool_format="json"),
    )
    results = run_eval(config, tmp_path / "run", agent=agent, progress=False)
    assert results["summary"]["agent_errors"] == {}
    (record,) = _episodes(tmp_path / "run" / "episodes.jsonl")
    steps = [s for t in record["turns"] for s in t["steps"]]
    assert steps[0]["prompt_tokens"] > 2048  # longer than vLLM's default token budget: it would be chunked


def test_real_server_episodes(server, tmp_path):
    agent = OpenAIAgent(OpenAIAgentConfig(model="smollm2", base_url=server, timeout_s=120, max_attempts=2))
    config = EvalConfig(
        agent="openai",
        model="smollm2",
        base_url=server,
        task_ids=TASKS,
        seeds=(0,),
        sampling=SamplingConfig(temperature=1.0, max_tokens=16),
        num_envs=3,
        protocol=Knobs(system_prompt="none"),
    )
    results = run_eval(config, tmp_path / "run", agent=agent, progress=False)
    records = _episodes(tmp_path / "run" / "episodes.jsonl")
    assert len(records) == 3 and results["summary"]["agent_errors"] == {}
    steps = [s for r in records for t in r["turns"] for s in t["steps"]]
    assert steps and all(s["prompt_tokens"] > 0 and s["completion_tokens"] > 0 for s in steps)
    assert all(r["agent"]["name"] == "openai" and r["agent"]["base_url"] == server for r in records)
    json.dumps(records)


def test_async_and_lockstep_give_the_same_episodes_from_a_real_server(server, tmp_path):
    # The server runs float32 (the fixture pins it), whose logits do not depend on the batch; each request
    # carries its own seed. Only arrival order differs.
    agent = OpenAIAgent(OpenAIAgentConfig(model="smollm2", base_url=server, timeout_s=120, max_attempts=2))
    base = dict(
        agent="openai",
        model="smollm2",
        base_url=server,
        task_ids=TASKS,
        seeds=(0, 1),
        sampling=SamplingConfig(temperature=1.0, max_tokens=16),
        num_envs=2,
        protocol=Knobs(system_prompt="none"),
    )
    for schedule in ("lockstep", "async"):
        results = run_eval(EvalConfig(**base, schedule=schedule), tmp_path / schedule, agent=agent, progress=False)
        assert results["schedule"] == schedule and results["summary"]["agent_errors"] == {}
    lockstep, streamed = (_episodes(tmp_path / s / "episodes.jsonl") for s in ("lockstep", "async"))
    assert len(lockstep) == 6 and lockstep == streamed
