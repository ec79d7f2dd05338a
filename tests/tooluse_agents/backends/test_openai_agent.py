"""OpenAIAgent retries against a local server that injects 429/500/timeouts, then recovers."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tooluse_agents.backends.base import AgentRequest, SamplingConfig
from tooluse_agents.backends.openai_compat import OpenAIAgent, OpenAIAgentConfig, openai_messages
from tooluse_agents.eval.run import EvalConfig, run_eval

OK_BODY = {
    "id": "c1",
    "object": "chat.completion",
    "created": 0,
    "model": "m",
    "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "hello"}}],
    "usage": {"prompt_tokens": 5, "completion_tokens": 1, "total_tokens": 6},
}


TIMEOUT_S = 2.0
"""The agent's timeout: wide enough that a loaded machine answers the other requests in time."""
HANG_S = 2 * TIMEOUT_S
"""How long a 'hang' holds its answer: past the timeout, so the agent gives up first."""


class FaultyServer:
    """Answers POST /v1/chat/completions following a script: 429, 500, 400, 'hang', or 'ok'."""

    def __init__(self, script, default="ok", body=OK_BODY):
        self.script = list(script)
        self.default = default
        self.body = body
        self.requests: list[dict] = []
        self.headers: list[dict[str, str]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append(body)
                server.headers.append(dict(self.headers))
                action = server.script.pop(0) if server.script else server.default
                if action == "hang":
                    time.sleep(HANG_S)
                    action = "ok"
                if action == "ok":
                    status, payload = 200, server.body
                else:
                    status, payload = int(action), {"error": {"message": action}}
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server_factory():
    servers = []

    def make(script, default="ok", body=OK_BODY):
        servers.append(FaultyServer(script, default, body))
        return servers[-1]

    yield make
    for s in servers:
        s.close()


def agent_for(server, attempts=5):
    return OpenAIAgent(
        OpenAIAgentConfig(
            model="m",
            base_url=server.url,
            timeout_s=TIMEOUT_S,
            max_attempts=attempts,
            backoff_s=0.01,
            backoff_max_s=0.05,
        )
    )


REQUEST = AgentRequest(
    observation={"messages": [{"role": "user", "content": "hi"}], "tools": []}, seed=7, tool_format="python"
)


def test_recovers_after_429_500_and_a_timeout(server_factory):
    server = server_factory(["429", "500", "hang", "ok"])
    (gen,) = agent_for(server).generate([REQUEST], SamplingConfig(max_tokens=4))
    assert gen.error is None and gen.text == "hello" and gen.completion_tokens == 1
    assert len(server.requests) == 4
    assert server.requests[0]["seed"] == 7 and server.requests[0]["max_tokens"] == 4


@pytest.mark.parametrize(
    ("status", "kind", "calls"), [("500", "server_error", 3), ("429", "rate_limited", 3), ("400", "bad_request", 1)]
)
def test_exhausted_or_fatal_errors_become_generation_errors(server_factory, status, kind, calls):
    server = server_factory([], default=status)
    (gen,) = agent_for(server, attempts=3).generate([REQUEST], SamplingConfig())
    assert gen.error is not None and gen.error.type == kind
    assert len(server.requests) == calls


def test_timeouts_exhausted(server_factory):
    server = server_factory([], default="hang")
    (gen,) = agent_for(server, attempts=2).generate([REQUEST], SamplingConfig())
    assert gen.error.type == "timeout" and len(server.requests) == 2


def test_failures_are_recorded_on_episodes(server_factory, tmp_path):
    server = server_factory([], default="500")
    config = EvalConfig(agent="openai", model="m", base_url=server.url, task_ids=("multi_turn_base_0",), seeds=(0,))
    results = run_eval(config, tmp_path / "run", agent=agent_for(server, attempts=2), progress=False)
    assert results["summary"]["agent_errors"] == {"server_error": 1}
    record = json.loads((tmp_path / "run" / "episodes.jsonl").read_text())
    assert record["error"]["type"] == "server_error" and record["reward"] == 0.0


CALL_TEXT = "[cd(folder='document')]"
CALL_TEXT_BODY = {
    **OK_BODY,
    "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": CALL_TEXT}}],
}
CD_TOOL = {"type": "function", "function": {"name": "cd", "parameters": {"type": "object", "properties": {}}}}


@pytest.mark.parametrize(
    ("text_replies", "tools", "fc"), [("decode", True, False), ("fc", True, True), ("fc", False, False)]
)
def test_text_replies_to_requests_with_tools(server_factory, text_replies, tools, fc):
    server = server_factory([], body=CALL_TEXT_BODY)
    agent = OpenAIAgent(OpenAIAgentConfig(model="m", base_url=server.url, text_replies=text_replies))
    observation = {"messages": [{"role": "user", "content": "hi"}], "tools": [CD_TOOL] if tools else []}
    (gen,) = agent.generate([AgentRequest(observation=observation, seed=0, tool_format="python")], SamplingConfig())
    assert ("tools" in server.requests[0]) is tools
    assert gen.action == ({"content": CALL_TEXT, "tool_calls": []} if fc else CALL_TEXT)


def test_text_replies_must_be_known():
    with pytest.raises(ValueError, match="text_replies"):
        OpenAIAgentConfig(model="m", text_replies="end_turn")
    with pytest.raises(ValueError, match="text-replies"):
        EvalConfig(agent="vllm", model="m", text_replies="fc")
    assert "text_replies" not in EvalConfig(agent="openai", model="m").to_dict()  # older run.json files resume
    assert EvalConfig(agent="openai", model="m", text_replies="fc").to_dict()["text_replies"] == "fc"


def test_bfcl_env_executes_a_text_reply_but_not_an_fc_response_without_calls():
    import gymnasium as gym

    import tooluse_gym  # noqa: F401

    executed = {}
    for name, action in (("text", CALL_TEXT), ("fc", {"content": CALL_TEXT, "tool_calls": []})):
        env = gym.make("ToolUse-MultiTurn-v0", category="base", system_prompt="none")
        env.reset(seed=0, options={"task_id": "multi_turn_base_0"})
        _, _, _, _, info = env.step(action)
        executed[name] = ("step" in info, "turn_verdict" in info)
        env.close()
    assert executed == {"text": (True, False), "fc": (False, True)}  # BFCL's FC handlers end the turn on text


def test_message_conversion():
    messages = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "u"},
        {"role": "assistant", "content": "[ls()]"},
        {"role": "tool", "tool_call_id": "call_0_1_0", "name": "ls", "content": "r1"},
        {
            "role": "assistant",
            "content": "",
            "reasoning_content": "x",
            "tool_calls": [
                {"id": "t1", "type": "function", "function": {"name": "cd", "arguments": '{"folder": "a"}'}}
            ],
        },
        {"role": "tool", "tool_call_id": "t1", "name": "cd", "content": "r2"},
    ]
    out = openai_messages(messages)
    assert [m["role"] for m in out] == ["system", "user", "assistant", "user", "assistant", "tool"]
    assert out[3]["content"] == repr([{"role": "tool", "name": "ls", "content": "r1"}])
    assert "reasoning_content" not in out[4] and out[5] == {"role": "tool", "tool_call_id": "t1", "content": "r2"}
