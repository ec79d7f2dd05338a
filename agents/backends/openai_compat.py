"""`OpenAIAgent`: any OpenAI-compatible chat-completions endpoint, or several, with bounded, jittered retries.

Over several servers (`OpenAIAgentConfig.base_urls`) every request of an episode goes to one of them,
chosen least-loaded when the episode starts, and a server that cannot be reached has its episodes
moved to the others (`tooluse_agents.backends.server_pool`). Each request names its episode in a
session header (``X-Session-ID``) for a router that keeps sessions together behind one URL.
"""

from __future__ import annotations

import json
import os
import time
import warnings
from collections.abc import Callable, Hashable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import asdict, dataclass
from typing import Any

from tooluse_agents.backends.base import AgentError, AgentRequest, Generation, SamplingConfig
from tooluse_agents.backends.server_pool import Route, ServerPool, check_urls
from tooluse_gym.errors import DependencyNotInstalled

_MAX_THREADS = 256  # the pool's size when `concurrency` is None; the rollout loop keeps num_envs in flight
_HINT = 'OpenAIAgent needs openai and tenacity: pip install "tooluse-gym[openai]"'
TEXT_REPLIES = ("decode", "fc")
"""`OpenAIAgentConfig.text_replies`: how a text reply to a request with ``tools`` reaches the env."""
_SERVER_DOWN = "connection_error"
"""The failure (after every retry) that takes a server out of the pool: it could not be reached."""


class ServerDownWarning(UserWarning):
    """One of several model servers could not be reached: its episodes move to the others."""


@dataclass(frozen=True, kw_only=True)
class OpenAIAgentConfig:
    """Settings of the OpenAI-compatible backend.

    Attributes:
        model: The served model name.
        base_url: Endpoint, e.g. a local vLLM server's ``http://127.0.0.1:8000/v1``.
        base_urls: Several endpoints serving the same model, instead of `base_url`: each episode's
            requests go to one of them (the least loaded when it starts); a server that cannot be
            reached has its episodes moved to the others (`tooluse_agents.backends.server_pool`).
        session_header: The HTTP header that carries each request's episode id, for routers that
            keep a session on one server (None: no header).
        down_s: With several servers, how long one that could not be reached is left out before it
            is tried again.
        api_key_env: Environment variable holding the key (``EMPTY`` when unset, as local servers accept).
        timeout_s: Per-request timeout.
        max_attempts: Attempts per request (retries on 429, 5xx, timeouts and connection errors).
        backoff_s: First backoff; it grows exponentially with full jitter up to `backoff_max_s`.
        backoff_max_s: Longest single wait.
        concurrency: Most requests in flight at once (None: as many as the rollout loop has,
            i.e. its ``num_envs``, one per episode).
        text_replies: What a reply without structured ``tool_calls`` is when the request carried
            ``tools`` (function-calling mode). ``decode`` (default): its text goes to the env, which
            reads calls in it in the protocol's tool format, as from a prompting-mode model.
            ``fc``: it is a function-calling response with no calls, as BFCL's FC handlers read
            one: under the env's ``bfcl`` decoder nothing is executed and the turn ends (the
            ``lenient`` decoder still reads the text). Requests without ``tools`` are unaffected.
    """

    model: str
    base_url: str | None = None
    base_urls: tuple[str, ...] = ()
    session_header: str | None = "X-Session-ID"
    down_s: float = 30.0
    api_key_env: str = "OPENAI_API_KEY"
    timeout_s: float = 60.0
    max_attempts: int = 5
    backoff_s: float = 0.5
    backoff_max_s: float = 20.0
    concurrency: int | None = None
    text_replies: str = "decode"

    def __post_init__(self) -> None:
        if self.text_replies not in TEXT_REPLIES:
            raise ValueError(f"text_replies must be one of {', '.join(TEXT_REPLIES)}, got {self.text_replies!r}")
        object.__setattr__(self, "base_urls", tuple(self.base_urls))  # a list, from a config file
        if self.base_urls:
            if self.base_url is not None:
                raise ValueError("give base_url (one server) or base_urls (several), not both")
            check_urls(self.base_urls)


class OpenAIAgent:
    """Sends each request as one chat completion; structured ``tool_calls`` become the env action.

    The observation's ``tools`` go in the ``tools`` field. Tool results that follow a text
    message (prompting-style protocols) are sent as one user message, because the API accepts
    ``tool`` messages only after an assistant message with those call ids.
    """

    name = "openai"

    def __init__(self, config: OpenAIAgentConfig):
        self.config = config
        try:
            import openai
            import tenacity
        except ImportError as e:
            raise DependencyNotInstalled(_HINT) from e
        self._openai = openai
        self._pool: ThreadPoolExecutor | None = None
        self._futures: dict[Future, Hashable] = {}
        key = os.environ.get(config.api_key_env) or "EMPTY"
        urls: Sequence[str | None] = config.base_urls or (config.base_url,)
        self._clients = [
            openai.OpenAI(base_url=url, api_key=key, timeout=config.timeout_s, max_retries=0) for url in urls
        ]
        self.client = self._clients[0]
        self.servers = ServerPool([str(c.base_url).rstrip("/") for c in self._clients], down_s=config.down_s)
        retryable = (
            openai.RateLimitError,
            openai.InternalServerError,
            openai.APITimeoutError,
            openai.APIConnectionError,
        )

        attempts = tenacity.stop_after_attempt(config.max_attempts)

        def stop(index: int) -> Callable[[tenacity.RetryCallState], bool]:
            """After the last attempt; with several servers, also once a request found this one down."""
            return lambda state: attempts(state) or (len(self._clients) > 1 and self.servers.is_down(index))

        self._creates = [
            tenacity.retry(
                retry=tenacity.retry_if_exception_type(retryable),
                stop=stop(i),
                wait=tenacity.wait_random_exponential(multiplier=config.backoff_s, max=config.backoff_max_s),
                reraise=True,
            )(client.chat.completions.create)
            for i, client in enumerate(self._clients)
        ]

    def describe(self) -> dict[str, Any]:
        """The agent's identity for result files."""
        return {"name": self.name, **asdict(self.config)}

    def generate(self, requests: Sequence[AgentRequest], sampling: SamplingConfig) -> list[Generation]:
        """Every request sent at once (up to `concurrency` threads), returned in order."""
        workers = max(1, min(self.config.concurrency or len(requests), len(requests)))
        with ThreadPoolExecutor(max_workers=workers) as pool:
            return list(pool.map(lambda r: self._one(r, sampling), requests))

    def submit(self, items: Sequence[tuple[Hashable, AgentRequest]], sampling: SamplingConfig) -> None:
        """Send each request from a worker thread (one per request in flight, up to `concurrency`)."""
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=self.config.concurrency or _MAX_THREADS)
        for key, request in items:
            self._futures[self._pool.submit(self._one, request, sampling)] = key

    def collect(self) -> list[tuple[Hashable, Generation]]:
        """Wait for at least one request in flight; returns every finished one."""
        if not self._futures:
            return []
        finished, _ = wait(self._futures, return_when=FIRST_COMPLETED)
        return [(self._futures.pop(f), f.result()) for f in finished]

    def server_report(self) -> list[dict[str, Any]] | None:
        """Each server's episodes, requests and failures (`ServerPool.report`); None with one server."""
        return self.servers.report() if len(self.servers) > 1 else None

    def _one(self, request: AgentRequest, sampling: SamplingConfig) -> Generation:
        obs = request.observation
        kwargs: dict[str, Any] = {
            "model": self.config.model,
            "messages": openai_messages(obs["messages"]),
            "temperature": sampling.temperature,
            "top_p": sampling.top_p,
            "max_tokens": sampling.max_tokens,
            "seed": request.seed,
        }
        if obs.get("tools"):
            kwargs["tools"] = list(obs["tools"])
        if self.config.session_header and request.session:
            kwargs["extra_headers"] = {self.config.session_header: request.session}
        start = time.perf_counter()
        tried: list[int] = []
        failures: list[AgentError] = []
        while (route := self.servers.acquire(request.session, tried=tried)) is not None:
            try:
                response = self._creates[route.index](**kwargs)
            except Exception as e:
                error = self._error(e)
                if error.type != _SERVER_DOWN:
                    self.servers.release(route)
                    return Generation(latency_s=time.perf_counter() - start, error=self._at(route, error))
                self._down(route, error)
                tried.append(route.index)
                failures.append(self._at(route, error))
                continue
            self.servers.release(route)
            fc_text = "tools" in kwargs and self.config.text_replies == "fc"
            return _generation(response, time.perf_counter() - start, fc_text=fc_text)
        message = (
            failures[0].message
            if len(failures) == 1
            else "no server answered: " + "; ".join(f.message for f in failures)
        )
        return Generation(latency_s=time.perf_counter() - start, error=AgentError(_SERVER_DOWN, message))

    def _at(self, route: Route, error: AgentError) -> AgentError:
        """The error, naming the server it came from when there are several."""
        if len(self.servers) == 1:
            return error
        return AgentError(error.type, f"{route.url}: {error.message}")

    def _down(self, route: Route, error: AgentError) -> None:
        """Take the server out of the pool; the first request to find it down says so (with several servers)."""
        if self.servers.fail(route, error.message) and len(self.servers) > 1:
            up = self.servers.up()
            where = f"its episodes move to {', '.join(up)}" if up else "no server is up"
            warnings.warn(f"model server {route.url} failed ({error.message}); {where}", ServerDownWarning, 2)

    def _error(self, e: Exception) -> AgentError:
        openai = self._openai
        kinds = [
            (openai.RateLimitError, "rate_limited"),
            (openai.APITimeoutError, "timeout"),
            (openai.InternalServerError, "server_error"),
            (openai.APIConnectionError, "connection_error"),
            (openai.BadRequestError, "bad_request"),
            (openai.APIStatusError, "api_error"),
        ]
        kind = next((name for cls, name in kinds if isinstance(e, cls)), "agent_exception")
        cause = f" ({type(e.__cause__).__name__}: {e.__cause__})" if e.__cause__ is not None else ""
        return AgentError(kind, f"{type(e).__name__}: {str(e)[:500]}{cause[:300]}")

    def close(self) -> None:
        """Stop the request threads and close the clients."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        for client in self._clients:
            client.close()


def openai_messages(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Messages in the chat-completions shape (tool results without a matching call become a user message)."""
    out: list[dict[str, Any]] = []
    call_ids: set[str] = set()
    orphans: list[dict[str, str]] = []
    for m in messages:
        role = m["role"]
        if role == "tool" and m.get("tool_call_id") in call_ids:
            out.append({"role": "tool", "tool_call_id": m["tool_call_id"], "content": m.get("content") or ""})
            continue
        if role == "tool":
            orphans.append({"role": "tool", "name": m.get("name", ""), "content": m.get("content") or ""})
            continue
        if orphans:
            out.append({"role": "user", "content": repr(orphans)})
            orphans = []
        message: dict[str, Any] = {"role": role, "content": m.get("content") or ""}
        if role == "assistant" and m.get("tool_calls"):
            message["tool_calls"] = [
                {
                    "id": c["id"],
                    "type": "function",
                    "function": {"name": c["function"]["name"], "arguments": _arguments(c["function"]["arguments"])},
                }
                for c in m["tool_calls"]
            ]
            call_ids = {c["id"] for c in m["tool_calls"]}
        elif role == "assistant":
            call_ids = set()
        out.append(message)
    if orphans:
        out.append({"role": "user", "content": repr(orphans)})
    return out


def _arguments(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _generation(response: Any, latency: float, *, fc_text: bool = False) -> Generation:
    """The response as a `Generation`; with `fc_text`, a reply without calls is an FC response with none."""
    choice = response.choices[0]
    message = choice.message
    action: dict[str, Any] | None = None
    if fc_text and not message.tool_calls:
        action = {"content": message.content or "", "tool_calls": []}
    elif message.tool_calls:
        action = {
            "content": message.content or "",
            "tool_calls": [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.function.name, "arguments": c.function.arguments},
                }
                for c in message.tool_calls
            ],
        }
    usage = response.usage
    return Generation(
        text=message.content or "",
        message=action,
        prompt_tokens=getattr(usage, "prompt_tokens", 0) or 0,
        completion_tokens=getattr(usage, "completion_tokens", 0) or 0,
        finish_reason=choice.finish_reason,
        latency_s=latency,
    )
