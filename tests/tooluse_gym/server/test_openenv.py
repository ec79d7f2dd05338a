"""`tooluse serve-env` on loopback: OpenEnv sessions give the in-process env's verdicts, bad input gets errors.

A real uvicorn server runs the app in a thread of this process; openenv's own client (`EnvClient`, through
our `ToolUseEnvClient`) and raw WebSocket / HTTP requests talk to it. The oracle plays from what the wire
says (turn, steps in turn) and the task's ground truth; the same episodes run in-process beside it.
"""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest

pytest.importorskip("openenv.core")

import httpx
import uvicorn
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from tooluse_gym.envs import MULTI_TURN_ID, SCENARIO_ID, SINGLE_TURN_ID
from tooluse_gym.envs.tool_env import task_env
from tooluse_gym.server.app import main as serve_env_main
from tooluse_gym.server.client import ToolUseEnvClient
from tooluse_gym.server.server import ServeEnvConfig, make_app
from tooluse_gym.tasks.task import END_OF_TURN

ROOT = Path(__file__).resolve().parents[3]
SCENARIOS = str(ROOT / "scenarios" / "checks" / "tiny_math.yaml")
MAX_SESSIONS = 4
MAX_BYTES = 256 * 1024
CATEGORY = {MULTI_TURN_ID: {"category": "all"}, SINGLE_TURN_ID: {"category": "single_turn"}}
CATEGORY[SCENARIO_ID] = {"path": [SCENARIOS]}


class Server:
    """A uvicorn server on 127.0.0.1, any free port, in a daemon thread."""

    def __init__(self, config: ServeEnvConfig):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.server = uvicorn.Server(
            uvicorn.Config(make_app(config), log_level="warning", ws_max_size=config.max_request_bytes)
        )
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.02)

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(10)


@pytest.fixture(scope="module")
def server():
    config = ServeEnvConfig(
        env_ids=(MULTI_TURN_ID, SINGLE_TURN_ID),
        scenarios=(SCENARIOS,),
        max_sessions=MAX_SESSIONS,
        idle_timeout=None,
        max_request_bytes=MAX_BYTES,
    )
    running = Server(config)
    yield running
    running.stop()


def ws_url(server: Server) -> str:
    return server.url.replace("http://", "ws://") + "/ws"


def send(ws: Any, message: Any) -> dict[str, Any]:
    ws.send(message if isinstance(message, str) else json.dumps(message))
    return json.loads(ws.recv(timeout=30))


def jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


# --- the same episodes in-process and over the wire ---------------------------------------------


def oracle_message(env: gym.Env, task_id: str, turn: int, steps_in_turn: int) -> str:
    base = task_env(env)
    task = base.tasks[[t.task_id for t in base.tasks].index(task_id)]
    return task.reference_message(turn, steps_in_turn, base.protocol.tool_format)


def play_both(client: Any, env_id: str, task_id: str | None, seed: int, knobs: dict[str, Any], script=None):
    """Play one episode in-process and over the wire, the oracle (or `script(turn)`) answering; compare each step."""
    env = gym.make(env_id, **CATEGORY[env_id], **knobs)
    options = None if task_id is None else {"task_id": task_id}
    obs, info = env.reset(seed=seed, options=options)
    wire = client.reset(seed=seed, **({} if task_id is None else {"task_id": task_id}), **knobs)
    task_id = info["task_id"]
    assert wire.observation.task_id == task_id and wire.observation.env_id == env_id
    assert wire.observation.protocol == jsonable(info["protocol"])
    assert wire.reward is None and not wire.done
    steps = 0
    while True:
        assert wire.observation.messages == jsonable(obs["messages"])
        assert wire.observation.tools == jsonable(obs["tools"])
        w = wire.observation
        message = script(w.turn) if script else oracle_message(env, task_id, w.turn, w.steps_in_turn)
        obs, reward, terminated, truncated, info = env.step(message)
        wire = client.step(message)
        steps += 1
        assert (wire.reward, wire.done, wire.observation.truncated) == (reward, terminated or truncated, truncated)
        assert wire.observation.env_messages == jsonable(info["env_messages"])
        assert wire.observation.info["step_record"] == jsonable(info["step_record"].to_dict())
        if terminated or truncated:
            assert wire.observation.checker == jsonable(info["checker"])
            state = client.state()
            assert state.done and state.step_count == steps and state.task_id == task_id
            return reward, wire.observation.checker


CASES = [
    (MULTI_TURN_ID, "multi_turn_base_0", {}),
    (MULTI_TURN_ID, "multi_turn_miss_func_3", {"tool_format": "json", "system_prompt": "strong"}),
    (MULTI_TURN_ID, "multi_turn_long_context_5", {"template": "context", "decoder": "lenient"}),
    (SINGLE_TURN_ID, "simple_python_1", {}),
    (SINGLE_TURN_ID, "parallel_multiple_2", {"tool_format": "json"}),
    (SINGLE_TURN_ID, "live_irrelevance_4-0-4", {}),
    (SCENARIO_ID, "add_2_3", {"tool_results": "user_message"}),
]


def test_oracle_episodes_give_the_in_process_verdicts(server):
    with ToolUseEnvClient(base_url=server.url).sync() as client:
        for env_id, task_id, knobs in CASES:
            reward, checker = play_both(client, env_id, task_id, 0, knobs)
            assert reward == 1.0 and checker["valid"], (task_id, checker)
        # a task drawn with the seed, and a failing episode: the same draw and the same invalid verdict
        for seed in (3, 11):
            reward, checker = play_both(client, MULTI_TURN_ID, None, seed, {}, script=lambda turn: END_OF_TURN)
            assert reward == 0.0 and not checker["valid"] and checker["error_type"]
        reward, checker = play_both(client, SINGLE_TURN_ID, "simple_python_2", 1, {}, script=lambda t: "[f(x=1)]")
        assert reward == 0.0 and checker["error_type"]


def test_two_sessions_at_once_do_not_cross(server):
    tasks = [("multi_turn_base_7", {}), ("multi_turn_base_9", {"tool_format": "json"})]
    expected = {}
    for task_id, knobs in tasks:
        env = gym.make(MULTI_TURN_ID, **CATEGORY[MULTI_TURN_ID], **knobs)
        env.reset(seed=0, options={"task_id": task_id})
        expected[task_id] = None
        while expected[task_id] is None:
            base = task_env(env)
            _, reward, done, _, info = env.step(oracle_message(env, task_id, base.turn, base.steps_in_turn))
            if done:
                expected[task_id] = (reward, jsonable(info["checker"]))

    async def episode(task_id: str, knobs: dict[str, Any]):
        env = gym.make(MULTI_TURN_ID, **CATEGORY[MULTI_TURN_ID], **knobs)
        async with ToolUseEnvClient(base_url=server.url) as client:
            result = await client.reset(seed=0, task_id=task_id, **knobs)
            while not result.done:
                await asyncio.sleep(0)  # let the other session's step in between
                o = result.observation
                assert o.task_id == task_id
                result = await client.step(oracle_message(env, task_id, o.turn, o.steps_in_turn))
            return result.reward, result.observation.checker

    async def both():
        return await asyncio.gather(*(episode(t, k) for t, k in tasks))

    got = asyncio.run(both())
    assert dict(zip([t for t, _ in tasks], got, strict=True)) == expected
    assert all(reward == 1.0 for reward, _ in got)


# --- bad input: an error each, and the session and the server carry on ------------------------------


def test_bad_websocket_messages_get_errors_and_the_session_carries_on(server):
    with connect(ws_url(server)) as ws:
        errors = {
            "malformed JSON": send(ws, '{"type": "reset", "data": '),
            "unknown message type": send(ws, {"type": "jump"}),
            "step before a reset": send(ws, {"type": "step", "data": {"content": "[ls()]"}}),
            "unknown task id": send(ws, {"type": "reset", "data": {"task_id": "multi_turn_base_9999"}}),
            "unknown env id": send(ws, {"type": "reset", "data": {"env_id": "CartPole-v1"}}),
            "unknown reset key": send(ws, {"type": "reset", "data": {"options": {}}}),
            "server-only knob": send(ws, {"type": "reset", "data": {"tokenizer": "/etc"}}),
            "bad knob value": send(ws, {"type": "reset", "data": {"tool_format": "yaml"}}),
            "bad knob type": send(ws, {"type": "reset", "data": {"strict_tools": "yes"}}),
            "bad seed": send(ws, {"type": "reset", "data": {"seed": "zero"}}),
        }
        ok = send(ws, {"type": "reset", "data": {"seed": 0, "task_id": "multi_turn_base_0"}})
        assert ok["type"] == "observation", ok
        errors |= {
            "unknown action shape": send(ws, {"type": "step", "data": {"text": "[ls()]"}}),
            "action of the wrong type": send(ws, {"type": "step", "data": {"content": ["[ls()]"]}}),
            "oversize message": send(ws, {"type": "step", "data": {"content": "x" * 70_000}}),
        }
        for case, reply in errors.items():
            assert reply["type"] == "error" and reply["data"]["message"] and reply["data"]["code"], (case, reply)
        text = {case: reply["data"]["message"] for case, reply in errors.items()}
        assert "Invalid JSON" in text["malformed JSON"]
        assert "reset first" in text["step before a reset"]
        assert "unknown task_id 'multi_turn_base_9999'" in text["unknown task id"]
        assert "server start flag only" in text["server-only knob"]
        assert "tool_format must be one of" in text["bad knob value"]
        assert errors["oversize message"]["data"]["code"] == "VALIDATION_ERROR"
        assert "at most 65536 characters" in json.dumps(errors["oversize message"]["data"]["errors"])
        # the episode is where it was: the oracle finishes it, then a step after the end is refused
        env = gym.make(MULTI_TURN_ID, **CATEGORY[MULTI_TURN_ID])
        reply = ok
        while not reply["data"]["done"]:
            o = reply["data"]["observation"]
            message = oracle_message(env, "multi_turn_base_0", o["turn"], o["steps_in_turn"])
            reply = send(ws, {"type": "step", "data": {"content": message}})
            assert reply["type"] == "observation", reply
        assert reply["data"]["reward"] == 1.0
        after = send(ws, {"type": "step", "data": {"content": "[ls()]"}})
        assert after["type"] == "error" and "has ended" in after["data"]["message"]
        assert send(ws, {"type": "reset", "data": {"task_id": "simple_python_0"}})["type"] == "observation"


def test_a_frame_over_the_cap_closes_only_its_own_session(server):
    with connect(ws_url(server), max_size=None) as other:
        assert send(other, {"type": "reset", "data": {"task_id": "multi_turn_base_1"}})["type"] == "observation"
        with connect(ws_url(server), max_size=None) as ws:
            ws.send(json.dumps({"type": "step", "data": {"content": "x" * (MAX_BYTES + 1)}}))
            with pytest.raises(ConnectionClosed) as closed:
                ws.recv(timeout=30)
            assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009  # message too big
        assert send(other, {"type": "step", "data": {"content": "[pwd()]"}})["type"] == "observation"


def test_sessions_past_the_limit_are_refused_until_one_closes(server):
    client = httpx.Client(base_url=server.url)
    held = [connect(ws_url(server)) for _ in range(MAX_SESSIONS)]
    try:
        for ws in held:
            assert send(ws, {"type": "reset", "data": {"task_id": "simple_python_0"}})["type"] == "observation"
        with connect(ws_url(server)) as extra:
            refused = json.loads(extra.recv(timeout=30))
        assert refused["type"] == "error" and refused["data"]["code"] == "CAPACITY_REACHED"
        assert refused["data"]["max_sessions"] == MAX_SESSIONS
        assert client.get("/health").json() == {"status": "healthy"}
        assert send(held[0], {"type": "step", "data": {"content": "[f()]"}})["data"]["done"]
        held.pop().close()
        deadline = time.monotonic() + 10
        while True:  # the server frees the slot once it sees the close
            with connect(ws_url(server)) as again:
                reply = send(again, {"type": "reset", "data": {"task_id": "simple_python_0"}})
            if reply["type"] == "observation" or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert reply["type"] == "observation", reply
    finally:
        for ws in held:
            ws.close()
        client.close()


def test_an_idle_session_is_freed_and_told_so():
    # openenv's reaper looks every max(timeout / 4, 5) seconds: this test waits about 5 s
    idle = Server(
        ServeEnvConfig(
            env_ids=(SINGLE_TURN_ID,), single_turn_category="simple_python", max_sessions=1, idle_timeout=0.5
        )
    )
    try:
        with connect(ws_url(idle)) as ws:
            assert send(ws, {"type": "reset", "data": {"task_id": "simple_python_0"}})["type"] == "observation"
            deadline = time.monotonic() + 20
            while True:  # the one slot frees once the reaper has closed the silent session
                with connect(ws_url(idle)) as other:
                    try:
                        reply = send(other, {"type": "state"})
                    except ConnectionClosed:  # refused: the server sent its error and closed
                        reply = {"type": "closed"}
                if reply["type"] == "state" or time.monotonic() > deadline:
                    break
                time.sleep(0.25)
            assert reply["type"] == "state", reply
            late = send(ws, {"type": "step", "data": {"content": "[f()]"}})
            assert late["type"] == "error" and "idle longer than" in late["data"]["message"]
    finally:
        idle.stop()


def test_http_routes_answer_and_refuse_clearly(server):
    with httpx.Client(base_url=server.url, timeout=30) as client:
        reset = client.post("/reset", json={"seed": 0, "task_id": "multi_turn_base_0", "tool_format": "json"})
        assert reset.status_code == 200
        body = reset.json()
        assert body["observation"]["protocol"]["tool_format"] == "json" and body["done"] is False
        schema = client.get("/schema").json()
        assert set(schema["action"]["properties"]) >= {"content", "tool_calls"}
        assert "checker" in schema["observation"]["properties"]
        refused = {
            "malformed JSON": client.post("/reset", content=b'{"seed": ', headers={"content-type": "application/json"}),
            "unknown task id": client.post("/reset", json={"task_id": "nope"}),
            "server-only knob": client.post("/reset", json={"chat_template": "/etc/passwd"}),
            "unknown action shape": client.post("/step", json={"action": {"text": "hi"}}),
            "oversize body": client.post("/step", json={"action": {"content": "x" * (MAX_BYTES + 1)}}),
            "step without an episode": client.post("/step", json={"action": {"content": "[ls()]"}}),
        }
        codes = {case: r.status_code for case, r in refused.items()}
        assert codes == {
            "malformed JSON": 422,
            "unknown task id": 400,
            "server-only knob": 400,
            "unknown action shape": 422,
            "oversize body": 413,
            "step without an episode": 409,
        }
        assert all(r.json()["detail"] for r in refused.values())
        assert client.get("/health").status_code == 200


def test_openenv_validate_passes_the_running_server(server):
    from openenv.cli._validation import validate_running_environment

    report = validate_running_environment(server.url, timeout_s=30)
    failed = [c for c in report["criteria"] if not c["passed"]]
    assert report["passed"] and not failed, failed
    assert report["standard_profile"] == "openenv-http/1.x" and report["mode"] == "simulation"


def test_openenv_validate_of_the_repository_refuses_only_the_documented_layout_items():
    from openenv.cli._validation import validate_multi_mode_deployment

    ok, issues = validate_multi_mode_deployment(ROOT)
    documented = (ROOT / "docs" / "integrations" / "openenv.md").read_text(encoding="utf-8")
    assert not ok and len(issues) == 4, issues
    assert all(f"`{issue}`" in documented for issue in issues), issues


# --- the command -------------------------------------------------------------------------------------


def test_the_command_refuses_bad_settings_before_loading(capsys):
    assert serve_env_main(["--env", SCENARIO_ID]) == 2
    assert "needs scenario files" in capsys.readouterr().err
    assert serve_env_main(["--max-sessions", "0"]) == 2
    assert "max_sessions must be >= 1" in capsys.readouterr().err


def test_the_command_serves_on_loopback():
    command = [sys.executable, "-m", "tooluse_gym.server.app", "--port", "0", "--env", SCENARIO_ID]
    process = subprocess.Popen([*command, "--scenarios", SCENARIOS], stderr=subprocess.PIPE, text=True)
    try:
        line = ""
        deadline = time.monotonic() + 120
        while "serving" not in line:
            assert time.monotonic() < deadline and process.poll() is None, line
            line = process.stderr.readline()
        url = line.split(" at ")[1].split()[0]
        assert url.startswith("http://127.0.0.1:") and "ToolUse-Scenario-v0 (3 tasks)" in line
        with ToolUseEnvClient(base_url=url).sync() as client:
            result = client.reset(seed=0)
            assert result.observation.env_id == SCENARIO_ID and result.observation.protocol["decoder"] == "lenient"
    finally:
        process.terminate()
        process.wait(30)


def test_the_docs_client_example_runs_as_written(server, capsys):
    """docs/integrations/openenv.md's client block is self-contained: it plays an episode against a live server."""
    page = (ROOT / "docs" / "integrations" / "openenv.md").read_text(encoding="utf-8")
    start = page.index("```python\nfrom tooluse_gym.server.client import ToolUseEnvClient")
    block = page[start + len("```python\n") : page.index("```", start + 10)]
    assert "http://127.0.0.1:8000" in block
    exec(compile(block.replace("http://127.0.0.1:8000", server.url), "openenv.md", "exec"), {})  # our own docs
    printed = capsys.readouterr().out.splitlines()
    assert printed[-1].split()[0] in ("0.0", "1.0") and len(printed) == 2
