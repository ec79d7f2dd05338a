"""OpenAIAgent against a real vLLM OpenAI-compatible server (SmolLM2 on the CPU) started on loopback."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request

import pytest

from agents.base import SamplingConfig
from agents.evaluate import EvalConfig, run_eval
from agents.openai_agent import OpenAIAgent, OpenAIAgentConfig
from tests.agents.test_hf_agent import TASKS, _episodes
from tooluse_gym.models import resolve_model


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    port = _free_port()
    log = tmp_path_factory.mktemp("vllm-server") / "server.log"
    env = {
        **os.environ,
        "VLLM_CPU_KVCACHE_SPACE": "1",
        "VLLM_NO_USAGE_STATS": "1",
        "HF_HUB_OFFLINE": "1",
        "VLLM_CPU_OMP_THREADS_BIND": f"0-{(os.cpu_count() or 1) - 1}",
    }
    command = [
        sys.executable,
        "-m",
        "vllm.entrypoints.openai.api_server",
        "--model",
        resolve_model("smollm2-135m"),
        "--served-model-name",
        "smollm2",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--dtype",
        "float32",
        "--max-model-len",
        "4096",
        "--max-num-batched-tokens",
        "4096",
        "--no-enable-chunked-prefill",
        "--enforce-eager",
        "--enable-auto-tool-choice",
        "--tool-call-parser",
        "hermes",
    ]
    with log.open("w") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 300
    try:
        while True:
            if process.poll() is not None:
                pytest.fail(f"vLLM server exited with {process.returncode}:\n{log.read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(url + "/health", timeout=2) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"vLLM server not healthy after 300 s:\n{log.read_text()[-3000:]}")
            time.sleep(2)
        yield url + "/v1"
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)


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
        protocol={"system_prompt": "none"},
    )
    results = run_eval(config, tmp_path / "run", agent=agent, progress=False)
    records = _episodes(tmp_path / "run" / "episodes.jsonl")
    assert len(records) == 3 and results["summary"]["agent_errors"] == {}
    steps = [s for r in records for t in r["turns"] for s in t["steps"]]
    assert steps and all(s["prompt_tokens"] > 0 and s["completion_tokens"] > 0 for s in steps)
    assert all(r["agent"]["name"] == "openai" and r["agent"]["base_url"] == server for r in records)
    json.dumps(records)
