"""Which of several model servers an episode's requests go to: session-sticky, least-loaded, with failover.

`ServerPool` keeps no connections, only the choice and the counts (the OpenAI-compatible agent,
`tooluse_agents.backends.openai_compat`, holds one client per server and asks the pool where each
request goes):

* **Session-sticky.** Every request of an episode (its `AgentRequest.session`) goes to the server
  its first request went to, so that server's prefix cache holds the conversation so far.
* **Least-loaded.** An episode's first request goes to the server with the fewest requests in
  flight (ties: the fewest episodes so far, then the first listed).
* **Failover.** A server that cannot be reached is marked down for `down_s` seconds: its episodes
  move to another server on their next request (the conversation travels in every request, so
  nothing is lost) and the request that failed is sent again there. A request no server answers
  fails as the agent error it got, naming every server tried. A down server is tried again after
  `down_s`, or when every other server is down too.

Thread-safe: the agent's request threads share one pool.

    pool = ServerPool(["http://127.0.0.1:8000/v1", "http://127.0.0.1:8001/v1"])
    route = pool.acquire("run-7", tried=())        # the server for this request, counted in flight
    ...                                            # send it to route.url
    pool.release(route)                            # or pool.fail(route, "APIConnectionError: ...")
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any

import httpx

__all__ = ["Route", "ServerPool", "check_urls", "server_lines"]

STICKY_SESSIONS = 65_536
"""Sessions whose server the pool remembers (the least recently used one is forgotten first)."""


def check_urls(urls: Sequence[str], what: str = "base_urls") -> None:
    """Refuse a list of base URLs that is empty, repeats one, or holds one that is not an http(s) URL.

    Raises:
        ValueError: One line naming `what` and the URL at fault.
    """
    if not urls:
        raise ValueError(f"{what}: give at least one URL")
    for url in urls:
        try:
            parsed = httpx.URL(url)
        except (httpx.InvalidURL, TypeError) as e:
            raise ValueError(f"{what}: {url!r} is not a URL ({e})") from None
        if parsed.scheme not in ("http", "https") or not parsed.host:
            raise ValueError(f"{what}: {url!r} is not an http(s) URL with a host, e.g. http://127.0.0.1:8000/v1")
    repeated = sorted({u for u in urls if list(urls).count(u) > 1})
    if repeated:
        raise ValueError(f"{what}: {repeated[0]} is given twice; give each server once")


@dataclass(frozen=True)
class Route:
    """Where one request goes: the server's place in the pool and its URL."""

    index: int
    url: str


@dataclass
class _Server:
    url: str
    in_flight: int = 0
    episodes: int = 0
    requests: int = 0
    moved_out: int = 0
    failures: int = 0
    last_failure: str | None = None
    failing: bool = False  # its last request failed to reach it (until one gets through)
    down_until: float | None = None  # left out until then

    def down(self, now: float) -> bool:
        return self.down_until is not None and now < self.down_until


class ServerPool:
    """Session-sticky, least-loaded choice among servers, with failover (module docstring).

    Args:
        urls: The servers' base URLs, in order.
        down_s: How long a server that failed is left out before it is tried again.
        clock: Monotonic seconds (tests pass their own).
    """

    def __init__(self, urls: Sequence[str], *, down_s: float = 30.0, clock: Callable[[], float] = time.monotonic):
        if not urls:
            raise ValueError("a server pool needs at least one URL")
        if down_s < 0:
            raise ValueError(f"down_s must be >= 0, got {down_s}")
        self._servers = [_Server(url) for url in urls]
        self._down_s = down_s
        self._clock = clock
        self._lock = threading.Lock()
        self._sticky: OrderedDict[str, int] = OrderedDict()

    def __len__(self) -> int:
        return len(self._servers)

    def acquire(self, session: str | None, *, tried: Collection[int] = ()) -> Route | None:
        """The server for a request of `session` (None: no episode to keep together), counted in flight.

        The session's server when it has one that is up and not in `tried`; else the least-loaded
        server that is up and not tried (the session now belongs to it); else the tried-again-soonest
        down server not tried. None when every server is in `tried`.
        """
        with self._lock:
            now = self._clock()
            index = self._sticky.get(session) if session is not None else None
            if index is not None and index not in tried and not self._servers[index].down(now):
                self._sticky.move_to_end(session)  # type: ignore[arg-type]  # a session is a str here
            else:
                choice = self._choose(now, tried)
                if choice is None:
                    return None
                if index is not None and index != choice:
                    self._servers[index].moved_out += 1
                self._servers[choice].episodes += 1
                if session is not None:
                    self._remember(session, choice)
                index = choice
            server = self._servers[index]
            server.in_flight += 1
            server.requests += 1
            return Route(index, server.url)

    def release(self, route: Route) -> None:
        """The request sent to `route` is done (answered, or failed without the server being at fault)."""
        with self._lock:
            server = self._servers[route.index]
            server.in_flight -= 1
            server.failing, server.down_until = False, None  # it answered: up again

    def fail(self, route: Route, reason: str) -> bool:
        """The request sent to `route` could not reach the server: it is down for `down_s` seconds.

        Returns:
            True when the server was up until now (the caller says so once).
        """
        with self._lock:
            server = self._servers[route.index]
            server.in_flight -= 1
            server.failures += 1
            server.last_failure = reason
            server.failing = True
            now = self._clock()
            was_up = not server.down(now)
            server.down_until = now + self._down_s
            return was_up

    def is_down(self, index: int) -> bool:
        """Whether server `index` is left out now (a retry loop stops sending it requests)."""
        with self._lock:
            return self._servers[index].down(self._clock())

    def up(self) -> list[str]:
        """The URLs of the servers that are up now."""
        with self._lock:
            now = self._clock()
            return [s.url for s in self._servers if not s.down(now)]

    def report(self) -> list[dict[str, Any]]:
        """Each server's counts and health, for the run's results.

        Per server: its URL, ``episodes`` (started there or moved there), ``requests``, ``moved_out``
        (episodes moved away after it failed), ``failures``, ``last_failure`` and ``down`` (its last
        request failed to reach it: no request got through since).
        """
        with self._lock:
            return [
                {
                    "url": s.url,
                    "episodes": s.episodes,
                    "requests": s.requests,
                    "moved_out": s.moved_out,
                    "failures": s.failures,
                    "last_failure": s.last_failure,
                    "down": s.failing,
                }
                for s in self._servers
            ]

    def _choose(self, now: float, tried: Collection[int]) -> int | None:
        candidates = [i for i in range(len(self._servers)) if i not in tried]
        up = [i for i in candidates if not self._servers[i].down(now)]
        if up:
            return min(up, key=lambda i: (self._servers[i].in_flight, self._servers[i].episodes, i))
        if candidates:  # every untried server is down: try the one that is due back first
            return min(candidates, key=lambda i: (self._servers[i].down_until or 0.0, i))
        return None

    def _remember(self, session: str, index: int) -> None:
        self._sticky[session] = index
        self._sticky.move_to_end(session)
        while len(self._sticky) > STICKY_SESSIONS:
            self._sticky.popitem(last=False)


def server_lines(report: Sequence[dict[str, Any]]) -> list[str]:
    """A run's servers as lines for a terminal: each one's episodes and requests, and why one failed."""
    lines = []
    for s in report:
        line = f"  {s['url']}: {s['episodes']} episodes, {s['requests']} requests"
        if s["failures"]:
            moved = f", {s['moved_out']} episodes moved to other servers" if s["moved_out"] else ""
            state = "down at the end" if s["down"] else "up again at the end"
            line += f"; FAILED {s['failures']}x ({s['last_failure']}){moved}; {state}"
        lines.append(line)
    return lines
