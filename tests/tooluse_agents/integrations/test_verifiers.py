"""verifiers 0.4 (`verifiers.v1`) over our envs: the verdict is the env's, whichever way an episode is played.

- The oracle's seeded episode is played into the env directly and through `ChatEpisode` (the glue the
  verifiers env runs): same reward, same checker verdict, same requests. No verifiers needed.
- With verifiers installed: the same episode through verifiers' own rollout code (`Env.run_episode`:
  its interception server, our harness, its scoring) against a loopback chat-completions endpoint
  that answers with the oracle's messages.
- Slow: SmolLM2 behind `tooluse-serve` (a real vLLM server) through verifiers; its recorded messages,
  replayed into a fresh env, give the verdict verifiers reported.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import subprocess
import sys
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest

from tests.tooluse_agents.backends.test_openai_vllm_server import server  # noqa: F401  (the slow test's real vLLM server)
from tooluse_agents.backends.openai_compat import openai_messages
from tooluse_agents.backends.oracle import END_OF_TURN, OracleAgent
from tooluse_agents.integrations.chat_episode import ChatEpisode, action_from_chat, task_ids_of
from tooluse_agents.rollout.loop import request_for
from tooluse_gym.envs.settings import make_env

SEED = 0
CASES = [
    ("multi_turn_base_0", {}),  # BFCL's protocol: the functions in the system prompt
    ("multi_turn_miss_func_0", {"system_prompt": "none"}),  # tools in the request; a reveal adds some
    ("multi_turn_miss_param_0", {"template": "context", "tool_format": "json", "decoder": "lenient"}),
]
CASE_IDS = [task_id for task_id, _ in CASES]


def _json(value: Any) -> Any:
    return json.loads(json.dumps(value))


def oracle_message(request: Any, structured: bool) -> dict[str, Any]:
    """The oracle's next message in the chat-completions shape: its text, or its calls as ``tool_calls``."""
    if not structured:
        return {"role": "assistant", "content": OracleAgent().message(request)}
    calls = request.task.ground_truth[request.turn] if request.steps_in_turn == 0 else ()
    if not calls:
        return {"role": "assistant", "content": END_OF_TURN}
    tool_calls = [
        {
            "id": f"call_{request.turn}_{i}",
            "type": "function",
            "function": {"name": c.name, "arguments": json.dumps(dict(c.arguments))},
        }
        for i, c in enumerate(calls)
    ]
    return {"role": "assistant", "content": "", "tool_calls": tool_calls}


@dataclass(frozen=True)
class Played:
    replies: list[dict[str, Any]]
    requests: list[tuple[Any, Any, int]]  # (chat, tools, seed) before each reply, JSON-normalized
    reward: float
    checker: dict[str, Any]


def play_direct(task_id: str, knobs: dict[str, Any], structured: bool) -> Played:
    """The oracle straight into the env, its actions as `OpenAIAgent` passes them (text, or a calls dict)."""
    env = gym.make("ToolUse-MultiTurn-v0", category="all", task_ids=[task_id], **knobs)
    obs, start = env.reset(seed=SEED, options={"task_id": task_id})
    info, replies, requests = start, [], []
    try:
        while True:
            request = request_for(obs, start, info, SEED)
            requests.append((_json(openai_messages(obs["messages"])), _json(obs["tools"]), request.seed))
            reply = oracle_message(request, structured)
            replies.append(reply)
            action = reply["content"]
            if "tool_calls" in reply:
                action = {"content": reply["content"], "tool_calls": reply["tool_calls"]}
            obs, reward, terminated, truncated, info = env.step(action)
            if terminated or truncated:
                return Played(replies, requests, float(reward), info["checker"])
    finally:
        env.close()


# --- the glue, without verifiers -------------------------------------------------------------------


@pytest.mark.parametrize("structured", [False, True], ids=["text", "tool_calls"])
@pytest.mark.parametrize(("task_id", "knobs"), CASES, ids=CASE_IDS)
def test_chat_episode_gives_the_env_verdict(task_id, knobs, structured):
    direct = play_direct(task_id, knobs, structured)
    if not structured:
        assert direct.reward == 1.0
    env = make_env(task_ids=[task_id], **knobs)
    episode = ChatEpisode(env, task_id, seed=SEED)
    view = episode.reset()
    assert view.new_messages == view.messages
    seen = []
    for reply in direct.replies:
        assert view is not None, "the episode ended before the oracle's last message"
        seen.append((_json(view.messages), _json(view.tools), view.seed))
        view = episode.step(reply)
    env.close()
    assert view is None and episode.done
    assert seen == direct.requests
    outcome = episode.outcome()
    assert (episode.reward, outcome["checker"]) == (direct.reward, direct.checker)
    assert outcome["finished"] and outcome["steps"] == len(direct.replies)
    assert outcome["protocol"]["seed"] == SEED
    json.dumps(outcome)


def test_chat_view_offers_the_tools_of_the_moment():
    task_id, knobs = CASES[1]
    direct = play_direct(task_id, knobs, structured=False)
    tool_sets = [tuple(t["function"]["name"] for t in tools) for _, tools, _ in direct.requests]
    assert len(set(tool_sets)) > 1  # the held-out turn's reveal is in the request's tools


def test_chat_view_new_messages_are_the_env_answer():
    env = make_env(task_ids=["multi_turn_base_0"], system_prompt="none")
    episode = ChatEpisode(env, "multi_turn_base_0")
    episode.reset()
    call = {"id": "call_x", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
    view = episode.step({"role": "assistant", "content": "", "tool_calls": [call]})
    assert view is not None and [m["role"] for m in view.new_messages] == ["tool"]
    assert view.new_messages[0]["tool_call_id"] == "call_x" and view.seed is None
    view = episode.step({"role": "assistant", "content": "Done."})
    assert view is not None and [m["role"] for m in view.new_messages] == ["user"]  # the next turn
    env.close()


def test_action_from_chat_is_what_openai_agent_passes():
    assert action_from_chat({"role": "assistant", "content": "[ls()]", "reasoning_content": "hm"}) == "[ls()]"
    assert action_from_chat({"role": "assistant", "content": None}) == ""
    call = {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": '{"a": 1}'}}
    assert action_from_chat({"role": "assistant", "content": None, "tool_calls": [call]}) == {
        "content": "",
        "tool_calls": [call],
    }


def test_chat_env_ids_are_checked():
    with pytest.raises(ValueError, match="ToolUse-Scenario-v0 needs scenario_path"):
        make_env("ToolUse-Scenario-v0")
    with pytest.raises(ValueError, match="env_id must be one of"):
        make_env("ToolUse-Tasks-v0")


# --- through verifiers' own rollout code --------------------------------------------------------------


class ScriptedEndpoint:
    """A loopback chat-completions endpoint answering with given assistant messages in order; it keeps the bodies."""

    def __init__(self, replies: list[dict[str, Any]]) -> None:
        self.replies = replies
        self.bodies: list[dict[str, Any]] = []
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                endpoint.bodies.append(body)
                n = len(endpoint.bodies)
                if self.path != "/v1/chat/completions" or n > len(endpoint.replies):
                    self.send_error(500, f"unexpected request {n} to {self.path}")
                    return
                message = endpoint.replies[n - 1]
                completion = {
                    "id": f"chatcmpl-{n}",
                    "object": "chat.completion",
                    "created": 0,
                    "model": body["model"],
                    "choices": [
                        {
                            "index": 0,
                            "message": message,
                            "finish_reason": "tool_calls" if message.get("tool_calls") else "stop",
                        }
                    ],
                    "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
                }
                payload = json.dumps(completion).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self) -> ScriptedEndpoint:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def run_one(env, task, base_url: str, model: str, **sampling: Any):
    """One verifiers episode of `task`, as verifiers' eval runner plays a slot: `serving()`, then `run_episode`."""
    import verifiers.v1 as vf

    client = vf.EvalClientConfig(base_url=base_url, api_key_var="TOOLUSE_TEST_UNSET_KEY")
    ctx = vf.ModelContext(model=model, client=client, sampling=vf.SamplingConfig(**sampling))

    async def play():
        async with env.serving():
            return await env.run_episode(task, ctx)

    return asyncio.run(play())


def test_load_environment_is_a_verifiers_plugin():
    vf = pytest.importorskip("verifiers.v1")
    from tooluse_agents.integrations import verifiers as integration

    env = integration.load_environment(category="miss_param", limit=2, seed=SEED, tool_format="json")
    assert isinstance(env, integration.ToolUseVerifiersEnv)
    assert vf.environment_class(integration.PLUGIN_ID) is integration.ToolUseVerifiersEnv
    assert vf.default_harness_id(integration.PLUGIN_ID) == integration.PLUGIN_ID
    tasks = list(env.taskset)
    first_two = task_ids_of(make_env(category="miss_param"))[:2]
    assert [t.data.id for t in tasks] == first_two
    assert all(t.data.prompt is None and t.key == t.data.id for t in tasks)
    assert env.config.taskset.knobs.given() == {"tool_format": "json"}


def test_load_environment_rejects_what_the_env_does_not_take():
    pydantic = pytest.importorskip("pydantic")
    pytest.importorskip("verifiers.v1")
    from tooluse_agents.integrations.verifiers import load_environment

    with pytest.raises(pydantic.ValidationError, match="no_such_knob"):
        load_environment(no_such_knob=1)
    with pytest.raises(pydantic.ValidationError, match="template"):
        load_environment(template="sideways")
    with pytest.raises(pydantic.ValidationError, match="tokenizer"):
        load_environment(tokenizer="smollm2-135m")  # the server applies its own chat template


@pytest.mark.parametrize("structured", [False, True], ids=["text", "tool_calls"])
@pytest.mark.parametrize(("task_id", "knobs"), CASES, ids=CASE_IDS)
def test_verifiers_rollout_gives_the_env_verdict(task_id, knobs, structured):
    pytest.importorskip("verifiers.v1")
    from tooluse_agents.integrations.verifiers import INFO_KEY, load_environment

    direct = play_direct(task_id, knobs, structured)
    env = load_environment(task_ids=[task_id], seed=SEED, **knobs)
    (task,) = list(env.taskset)
    with ScriptedEndpoint(direct.replies) as endpoint:
        episode = run_one(env, task, endpoint.url, model="oracle")
    assert episode.ok, episode.errors
    (trace,) = episode.traces
    assert trace.ok, trace.errors
    outcome = trace.info[INFO_KEY]
    assert (trace.reward, outcome["checker"]) == (direct.reward, direct.checker)
    assert outcome["finished"] and outcome["steps"] == trace.num_turns == len(direct.replies)
    # each request carried the env's chat, the tools it offered then, and tooluse-eval's seed
    assert [(b["messages"], b.get("tools", []), b.get("seed")) for b in endpoint.bodies] == direct.requests


@pytest.mark.slow
@pytest.mark.skipif(importlib.util.find_spec("verifiers") is None, reason="needs verifiers 0.4 (make test-verifiers)")
def test_smollm2_through_verifiers_replays_to_the_same_verdict(server):  # noqa: F811  (no server without verifiers)
    from tooluse_agents.integrations.verifiers import INFO_KEY, load_environment, to_chat_message

    task_id, knobs = "multi_turn_base_0", {"system_prompt": "strong", "tool_format": "json"}
    env = load_environment(task_ids=[task_id], seed=SEED, **knobs)
    (task,) = list(env.taskset)
    episode = run_one(env, task, server, model="smollm2", temperature=0.7, max_tokens=16)
    assert episode.ok, episode.errors
    (trace,) = episode.traces
    outcome = trace.info[INFO_KEY]
    assert outcome["finished"] and outcome["steps"] == trace.num_turns
    direct = gym.make("ToolUse-MultiTurn-v0", task_ids=[task_id], **knobs)
    direct.reset(seed=SEED, options={"task_id": task_id})
    messages = trace.assistant_messages
    for i, message in enumerate(messages):
        _, reward, terminated, truncated, info = direct.step(action_from_chat(to_chat_message(message)))
        if terminated or truncated:
            assert i == len(messages) - 1
            break
    else:
        raise AssertionError("the replay did not end")
    direct.close()
    assert (reward, info["checker"]) == (trace.reward, outcome["checker"])


# --- single-turn, and the packages named for the env ids (environments/) ---------------------------------

SINGLE_TURN_CASES = [
    ("simple_python_0", "[calculate_triangle_area(base=10, height=5)]", 1.0),
    ("simple_python_0", "[calculate_triangle_area(base=11, height=5)]", 0.0),  # a wrong value
    ("irrelevance_0", "None of these functions can do that.", 1.0),  # no call where none is relevant
]
HUB_PACKAGES = Path(__file__).parents[3] / "environments"


def single_turn_direct(task_id: str, text: str) -> tuple[float, dict[str, Any]]:
    env = gym.make("ToolUse-SingleTurn-v0", category="single_turn", task_ids=[task_id])
    env.reset(seed=SEED, options={"task_id": task_id})
    _, reward, terminated, _, info = env.step(text)
    env.close()
    assert terminated
    return float(reward), info["checker"]


@pytest.mark.parametrize(("task_id", "text", "expected"), SINGLE_TURN_CASES)
def test_chat_episode_plays_single_turn_entries(task_id, text, expected):
    reward, checker = single_turn_direct(task_id, text)
    assert reward == expected
    env = make_env("ToolUse-SingleTurn-v0", task_ids=[task_id])
    episode = ChatEpisode(env, task_id, seed=SEED)
    view = episode.reset()
    assert view.messages[-1]["role"] == "user" and view.tools == []  # BFCL's prompt carries the functions
    assert episode.step({"role": "assistant", "content": text}) is None and episode.done
    assert (episode.reward, episode.outcome()["checker"]) == (reward, checker)
    env.close()


@pytest.mark.parametrize("env_id", ["ToolUse-MultiTurn-v0", "ToolUse-SingleTurn-v0"])
def test_each_env_id_has_a_hub_shaped_package(env_id):
    """The Environments Hub lists a package's name, version, description and tags, and shows its README."""
    import tomllib

    import tooluse_gym

    module = env_id.replace("-", "_").lower()  # what verifiers imports for the id
    folder = HUB_PACKAGES / module
    project = tomllib.loads((folder / "pyproject.toml").read_text())["project"]
    assert project["name"] == module.replace("_", "-")
    assert project["version"] == tooluse_gym.__version__
    assert "BFCL" in project["description"] and "tooluse-gym" in project["description"]
    assert {"tool-use", "bfcl"} <= set(project["tags"])
    assert project["dependencies"] == [f"tooluse-gym[verifiers]>={tooluse_gym.__version__}"]
    readme = (folder / project["readme"]).read_text()
    assert f"vf-eval {env_id}" in readme
    source = (folder / f"{module}.py").read_text()
    assert f'ENV_ID = "{env_id}"' in source


@pytest.mark.parametrize(
    ("taskset_id", "settings", "env_id", "first_ids"),
    [
        ("ToolUse-MultiTurn-v0", {"category": "miss_param", "limit": 2}, "ToolUse-MultiTurn-v0", None),
        ("tooluse-singleturn-v0", {"category": "live_simple", "limit": 3}, "ToolUse-SingleTurn-v0", None),
        ("someone/ToolUse-SingleTurn-v0@0.1.0", {"task_ids": ["irrelevance_3"]}, "ToolUse-SingleTurn-v0", 1),
    ],
)
def test_verifiers_loader_finds_the_package_by_env_id(taskset_id, settings, env_id, first_ids):
    vf = pytest.importorskip("verifiers.v1")
    if importlib.util.find_spec(env_id.replace("-", "_").lower()) is None:
        pytest.skip("the packages under environments/ are not installed (make test-verifiers installs them)")
    from verifiers.v1.utils.loaders import harness_class

    from tooluse_agents.integrations.verifiers import ToolUseHarness, ToolUseVerifiersEnv

    config = vf.resolve_env_config({"taskset": {"id": taskset_id, **settings}})
    env = vf.load_environment(config)
    assert isinstance(env, ToolUseVerifiersEnv)
    assert harness_class(vf.default_harness_id(taskset_id)) is ToolUseHarness  # its own harness, not bash
    assert config.taskset.env_id == env_id  # the package's own default, nothing passed
    expected = settings.get("task_ids") or task_ids_of(make_env(env_id, category=settings["category"]))
    assert [t.data.id for t in env.taskset] == expected[: settings.get("limit")]


@pytest.mark.parametrize(("task_id", "text", "expected"), SINGLE_TURN_CASES)
def test_vf_eval_by_env_id_gives_the_env_verdict(task_id, text, expected, tmp_path):
    """verifiers' own command, given only the env id, plays the entry against a loopback endpoint."""
    pytest.importorskip("verifiers.v1")
    vf_eval = Path(sys.executable).with_name("vf-eval")
    if importlib.util.find_spec("tooluse_singleturn_v0") is None or not vf_eval.exists():
        pytest.skip("needs vf-eval and the packages under environments/ (make test-verifiers)")
    reward, checker = single_turn_direct(task_id, text)
    category = task_id.rsplit("_", 1)[0]
    with ScriptedEndpoint([{"role": "assistant", "content": text}]) as endpoint:
        done = subprocess.run(
            [str(vf_eval), "ToolUse-SingleTurn-v0", "-n", "1", "--no-push", "--model", "oracle", "-o", str(tmp_path),
             "--client.base-url", endpoint.url, "--client.api-key-var", "TOOLUSE_TEST_KEY",
             "--env.taskset.category", category, "--env.taskset.seed", str(SEED)],
            env={**os.environ, "TOOLUSE_TEST_KEY": "unused"}, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    (traces,) = tmp_path.glob("*/traces.jsonl")
    (row,) = [json.loads(line) for line in traces.read_text().splitlines()]
    (trace,) = row["traces"]
    assert row["task"]["data"]["id"] == task_id
    assert trace["rewards"]["valid"]["score"] == reward == expected
    assert trace["info"]["tooluse"]["checker"] == checker
    assert endpoint.bodies[0]["messages"][-1]["role"] == "user"
