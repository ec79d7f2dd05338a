"""deploy/nginx.conf for real: two `tooluse serve-env` replicas on loopback behind nginx, one replica SIGKILLed.

The committed config runs as it is, with only its addresses (the replicas', the listening port), its
pid file and nginx's temporary folders swapped for this machine's: `render` asserts each of those
appears exactly once, so a config that changes shape fails here instead of passing untested. Each
replica's own ``GET /sessions`` shows where nginx put the sessions; oracle episodes through nginx
must give the in-process verdicts. The images and the compose file themselves are not run here.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("openenv.core")

import httpx
from websockets.asyncio.client import connect

from benchmarks.env_server_episodes import in_process, oracle_episodes, play_wire, request, verdict
from benchmarks.env_server_process import ServedEnv
from tooluse_gym.server.client import SessionLost, ToolUseEnvClient

ROOT = Path(__file__).resolve().parents[3]
CONFIG = ROOT / "deploy" / "nginx.conf"
NGINX = shutil.which("nginx") or next((p for p in ("/usr/sbin/nginx",) if os.access(p, os.X_OK)), None)
CATEGORY = "base"
REPLICAS = 2

pytestmark = pytest.mark.skipif(
    NGINX is None,
    reason="no nginx binary on PATH or in /usr/sbin (as root on Debian or Ubuntu, `make setup` installs nginx-light)",
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def swap(text: str, pattern: str, replacement: str) -> str:
    """`text` with the one match of `pattern` replaced (an assertion error unless there is exactly one)."""
    found = re.findall(pattern, text, flags=re.MULTILINE)
    assert len(found) == 1, f"deploy/nginx.conf: expected one match of {pattern!r}, found {found}"
    return re.sub(pattern, replacement, text, flags=re.MULTILINE)


def render(config: str, replicas: list[int], port: int, prefix: Path) -> str:
    """The committed config with this machine's addresses, pid file and temporary folders."""
    server = re.search(r"^(\s*)server env-server:8000( [^;]*)?;$", config, flags=re.MULTILINE)
    assert server is not None, "deploy/nginx.conf: no `server env-server:8000 ...;` line in its upstream"
    indent, params = server.group(1), server.group(2) or ""
    upstream = "\n".join(f"{indent}server 127.0.0.1:{p}{params};" for p in replicas)
    text = swap(config, r"^\s*server env-server:8000( [^;]*)?;$", upstream)
    text = swap(text, r"^(\s*)listen 8080;$", rf"\g<1>listen 127.0.0.1:{port};")
    text = swap(text, r"^pid /tmp/nginx\.pid;$", f"pid {prefix / 'nginx.pid'};")
    kinds = ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    temp = "".join(f"    {kind}_temp_path {prefix / kind};\n" for kind in kinds)
    return swap(text, r"^http \{\n", "http {\n" + temp)


@pytest.fixture(scope="module")
def episodes():
    played = oracle_episodes(8, CATEGORY)
    expected, _ = in_process(played, CATEGORY)
    assert all(reward == 1.0 for reward, _, _ in expected.values())
    return played, expected


@pytest.fixture(scope="module")
def replicas():
    args = ["--env", "ToolUse-MultiTurn-v0", "--category", CATEGORY, "--max-sessions", "8", "--idle-timeout", "0"]
    started = [ServedEnv(args) for _ in range(REPLICAS)]
    try:
        for replica in started:
            replica.start()
        yield started
    finally:
        for replica in started:
            replica.stop()


@pytest.fixture(scope="module")
def balancer(replicas, tmp_path_factory):
    prefix = tmp_path_factory.mktemp("nginx")
    port = free_port()
    conf = prefix / "nginx.conf"
    conf.write_text(render(CONFIG.read_text(encoding="utf-8"), [r.port for r in replicas], port, prefix))
    # as root, nginx's workers switch to the `user` directive's account (default nobody); they run here as root
    # so they can use the temporary folders under this test's root-owned tmp_path
    extra = " user root;" if os.geteuid() == 0 else ""
    assert NGINX is not None
    command = [NGINX, "-p", str(prefix), "-c", str(conf), "-g", f"daemon off;{extra}"]
    check = subprocess.run([*command, "-t"], capture_output=True, text=True, timeout=60)
    assert check.returncode == 0, check.stderr
    log = (prefix / "stderr").open("w")
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            assert process.poll() is None, (prefix / "stderr").read_text()
            try:
                if httpx.get(url + "/health", timeout=5).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, (prefix / "stderr").read_text()
            time.sleep(0.1)
        yield url, prefix
    finally:
        process.send_signal(signal.SIGTERM)  # fast shutdown: a graceful one waits for open WebSocket sessions
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(15)
        log.close()


def sessions_on(replicas: list[ServedEnv]) -> list[int]:
    """Each replica's WebSocket sessions, from its own ``GET /sessions``."""
    return [int(replica.get("/sessions")["sessions"]) for replica in replicas]


async def open_session(ws_url: str, replicas: list[ServedEnv], task_id: str) -> tuple[Any, int]:
    """A session through nginx, reset; and the replica it landed on (the one whose count went up)."""
    before = sessions_on(replicas)
    ws = await connect(ws_url, max_size=None)
    assert (await request(ws, {"type": "reset", "data": {"task_id": task_id}}))["type"] == "observation"
    after = sessions_on(replicas)
    grew = [i for i, (b, a) in enumerate(zip(before, after, strict=True)) if a == b + 1]
    assert len(grew) == 1 and sum(after) == sum(before) + 1, (before, after)
    return ws, grew[0]


def test_the_config_renders_with_only_addresses_and_paths_changed(tmp_path):
    committed = CONFIG.read_text(encoding="utf-8")
    rendered = render(committed, [8001, 8002], 9000, tmp_path)
    kept = ("zone tooluse_env", "least_conn;", "proxy_set_header Upgrade $http_upgrade;", "proxy_read_timeout 3600s;")
    for line in kept:
        assert line in committed and line in rendered
    assert rendered.count("max_fails=1 fail_timeout=10s;") == 2 and "env-server" not in rendered


def test_sessions_spread_over_the_replicas_and_stay_on_theirs(replicas, balancer, episodes):
    url, _ = balancer
    played, expected = episodes

    async def run() -> dict[int, Any]:
        held = [await open_session(url.replace("http", "ws") + "/ws", replicas, "multi_turn_base_0") for _ in range(4)]
        assert sorted(replica for _, replica in held) == [0, 0, 1, 1]  # least_conn: two each
        assert sessions_on(replicas) == [2, 2]
        got: dict[int, Any] = {}

        async def play(ws: Any, index: int) -> None:
            for episode in played[index :: len(held)]:
                got[episode.index] = await play_wire(ws, episode, [])

        await asyncio.gather(*(play(ws, i) for i, (ws, _) in enumerate(held)))  # interleaved on both replicas
        assert sessions_on(replicas) == [2, 2]  # no session moved: each episode played on its replica
        for ws, _ in held:
            await ws.close()
        return got

    assert asyncio.run(run()) == expected
    deadline = time.monotonic() + 10
    while sessions_on(replicas) != [0, 0]:
        assert time.monotonic() < deadline, sessions_on(replicas)
        time.sleep(0.05)


def test_a_killed_replica_ends_its_sessions_and_the_others_finish(replicas, balancer, episodes):
    url, prefix = balancer
    played, expected = episodes

    async def run() -> None:
        clients: list[tuple[ToolUseEnvClient, int, Any]] = []
        for episode in played[:4]:  # our client: a session each, mid-episode, two on each replica
            before = sessions_on(replicas)
            client = ToolUseEnvClient(base_url=url)
            await client.reset(seed=episode.seed, task_id=episode.task_id)
            await client.step(episode.messages[0])
            grew = [i for i, (b, a) in enumerate(zip(before, sessions_on(replicas), strict=True)) if a == b + 1]
            assert len(grew) == 1
            clients.append((client, grew[0], episode))
        assert sorted(replica for _, replica, _ in clients) == [0, 0, 1, 1]

        replicas[0].kill()  # SIGKILL: no goodbye to anyone
        for client, replica, episode in clients:
            if replica == 0:
                with pytest.raises(SessionLost) as lost:
                    await client.step(episode.messages[1])
                assert "its episode is lost" in str(lost.value)
                await client.close()
        for client, replica, episode in clients:
            if replica == 1:  # the survivor's sessions play their episodes to the in-process verdict
                steps, result = 1, None
                for message in episode.messages[1:]:
                    result = await client.step(message)
                    steps += 1
                    if result.done:
                        break
                assert result is not None and result.done
                assert verdict(result.reward or 0.0, steps, result.observation.checker) == expected[episode.index]
                await client.close()
        # new sessions go to the replica left (nginx skips the one that refuses connections)
        for episode in played[4:6]:
            async with connect(url.replace("http", "ws") + "/ws", max_size=None) as ws:
                assert await play_wire(ws, episode, []) == expected[episode.index]

    asyncio.run(run())
    assert "Traceback" not in "".join(replicas[1].log)
