"""A real `tooluse serve-env` in a subprocess on 127.0.0.1, for the server benchmark and its tests.

    with ServedEnv(["--env", "ToolUse-MultiTurn-v0", "--max-sessions", "8"]) as server:
        server.url, server.ws_url          # http://127.0.0.1:PORT, ws://127.0.0.1:PORT/ws
        server.rss_bytes()                 # the server's resident memory (Linux: /proc)
        server.tree_rss_bytes(), server.tree_cpu_seconds()   # summed over it and its worker processes
        server.open_sessions()             # GET /sessions: the session envs open now
        server.kill(); server.start()      # SIGKILL, then a new server on the same port

The server's stderr is read by a thread (so its pipe never fills); `log_errors` counts the lines
that show a traceback or an "Exception in ASGI application" since the server started.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections import deque
from typing import Any

HOST = "127.0.0.1"
"""Loopback only: the benchmark and its tests never listen anywhere else."""


class ServedEnv:
    """One `tooluse serve-env` process (`start` again after `kill` serves on the same port)."""

    def __init__(self, args: list[str], *, start_timeout_s: float = 300.0):
        self.args = list(args)
        self.start_timeout_s = start_timeout_s
        self.port = 0
        self.process: subprocess.Popen[str] | None = None
        self.log: deque[str] = deque(maxlen=200)
        self.log_errors = 0

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"

    @property
    def ws_url(self) -> str:
        return f"ws://{HOST}:{self.port}/ws"

    def start(self) -> ServedEnv:
        """Start the server (on the last port, after a kill) and wait for its "serving ... at URL" line."""
        command = [sys.executable, "-m", "tooluse_gym.server.app", "--host", HOST, "--port", str(self.port)]
        self.process = subprocess.Popen(
            [*command, *self.args],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        self.log_errors = 0
        assert self.process.stderr is not None
        deadline = time.monotonic() + self.start_timeout_s
        while True:
            line = self.process.stderr.readline()
            self.log.append(line)
            if " at http://" in line:
                self.port = int(line.split(" at http://")[1].split()[0].rsplit(":", 1)[1])
                break
            if not line or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("the server did not start:\n" + "".join(self.log))
        threading.Thread(target=self._drain, args=(self.process.stderr,), daemon=True).start()
        return self

    def _drain(self, stream: Any) -> None:
        for line in stream:
            self.log.append(line)
            if "Traceback" in line or "Exception in ASGI application" in line:
                self.log_errors += 1

    def rss_bytes(self) -> int:
        """The server process's resident set size (VmRSS), in bytes."""
        assert self.process is not None
        with open(f"/proc/{self.process.pid}/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
        raise RuntimeError("no VmRSS in /proc/PID/status")

    def tree_pids(self) -> list[int]:
        """The server process and its descendants (its workers, when it runs several), from /proc."""
        assert self.process is not None
        children: dict[int, list[int]] = {}
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                try:
                    with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as f:
                        ppid = int(f.read().rsplit(")", 1)[1].split()[1])
                except (OSError, IndexError, ValueError):
                    continue  # gone meanwhile
                children.setdefault(ppid, []).append(int(entry))
        tree, todo = [], [self.process.pid]
        while todo:
            pid = todo.pop()
            tree.append(pid)
            todo.extend(children.get(pid, []))
        return tree

    def tree_rss_bytes(self, pids: list[int] | None = None, *, proportional: bool = False) -> int:
        """VmRSS summed over the server's process tree (`pids`: the processes to sum, default `tree_pids`).

        With `proportional`, the PSS instead: each shared page split among the processes that map it, so
        that workers forked from one parent are not counted once each for the pages they share.
        """
        name, key = ("smaps_rollup", "Pss:") if proportional else ("status", "VmRSS:")
        total = 0
        for pid in self.tree_pids() if pids is None else pids:
            with contextlib.suppress(OSError), open(f"/proc/{pid}/{name}", encoding="ascii") as f:
                total += next((int(line.split()[1]) * 1024 for line in f if line.startswith(key)), 0)
        return total

    def tree_cpu_seconds(self, pids: list[int] | None = None) -> float:
        """User + system CPU seconds the server's process tree has used so far."""
        ticks = 0
        for pid in self.tree_pids() if pids is None else pids:
            with contextlib.suppress(OSError), open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
                fields = f.read().rsplit(")", 1)[1].split()
                ticks += int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of proc(5))
        return ticks / os.sysconf("SC_CLK_TCK")

    def get(self, path: str) -> dict[str, Any]:
        with urllib.request.urlopen(self.url + path, timeout=30) as r:
            return dict(json.loads(r.read()))

    def open_sessions(self) -> int:
        """The session envs open on the server now (``GET /sessions``)."""
        return int(self.get("/sessions")["open"])

    def wait_sessions(self, expected: int, timeout_s: float = 30.0) -> int:
        """Poll ``/sessions`` until `expected` are open (the server frees a session once it sees the close)."""
        deadline = time.monotonic() + timeout_s
        while True:
            n = self.open_sessions()
            if n == expected or time.monotonic() > deadline:
                return n
            time.sleep(0.02)

    def alive(self) -> bool:
        """The process runs and ``/health`` answers healthy."""
        if self.process is None or self.process.poll() is not None:
            return False
        try:
            return self.get("/health").get("status") == "healthy"
        except OSError:
            return False

    def kill(self) -> None:
        """SIGKILL: no goodbye to any client."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(30)

    def stop(self) -> None:
        """SIGTERM, then SIGKILL if it lingers."""
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.kill()

    def __enter__(self) -> ServedEnv:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def server_args(
    *, max_sessions: int, max_request_bytes: int, category: str = "all", idle_timeout: float = 0
) -> list[str]:
    """The flags the benchmark serves with: BFCL multi-turn only, no idle timeout unless given (0: never)."""
    return [
        "--env",
        "ToolUse-MultiTurn-v0",
        "--category",
        category,
        "--max-sessions",
        str(max_sessions),
        "--idle-timeout",
        str(idle_timeout),
        "--max-request-bytes",
        str(max_request_bytes),
    ]
