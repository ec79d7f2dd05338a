"""The tool-use envs as an OpenEnv server: openenv-core's ``Environment`` over the Gymnasium envs, and its app.

    from tooluse_gym.server.server import ServeEnvConfig, make_app

    app = make_app(ServeEnvConfig(max_sessions=8))     # a FastAPI app; `tooluse serve-env` runs it

Routes (openenv-core 0.3.0's ``create_fastapi_app``): ``/ws`` (a WebSocket session: its own env
instance, messages ``reset``, ``step``, ``state``, ``close``; what openenv's ``EnvClient`` and our
`tooluse_gym.server.client.ToolUseEnvClient` speak), ``POST /reset`` and
``POST /step`` (stateless in openenv: each request gets a fresh env, so a whole episode needs
``/ws``; ``/reset`` shows an episode's first observation and card), ``GET /state``, ``/schema``,
``/metadata``, ``/health`` (this worker answers); and ours, ``GET /sessions`` (``{"open": n,
"max_sessions": m, ...}``: the session envs open now, so a client or a load test sees that closed and
dropped sessions were freed, with the WebSocket sessions, readiness and workers across the whole
server: `tooluse_gym.server.capacity.CapacityStatus.to_dict`) and ``GET /ready`` (the same body; 200
once every worker has loaded its catalog, else 503: what a load balancer's readiness check reads).
Every response, and a WebSocket's handshake, carries ``X-Tooluse-Worker`` (the answering worker's
index). `--max-sessions` counts across the workers (`tooluse_gym.server.capacity`): one session more
is refused with openenv's own ``CAPACITY_REACHED`` error, then the connection closes.

One server serves several env ids (`Catalog`): BFCL multi-turn and single-turn, and
``ToolUse-Scenario-v0`` over the scenario files it was started with. A reset names the episode:

    {"type": "reset", "data": {"seed": 0, "task_id": "multi_turn_base_0", "tool_format": "json"}}

``env_id`` (default: the env id that has ``task_id``, else the first served), ``task_id`` (else one
drawn with the seed, as in-process), ``seed``, ``episode_id`` (openenv's), ``observation`` (``"full"``,
the default, or ``"delta"``: the episode's steps send only what changed, `tooluse_gym.server.wire`;
a wire setting, not a knob), and any knob of
`tooluse_gym.envs.knobs.Knobs` but ``tokenizer`` and ``chat_template`` (they name files on the
server: start flags only). The knobs given at reset override the server's (its start flags), which
override the env id's defaults; the protocol card in the reset's observation records the result.
Anything else is refused with a message naming what is accepted.

Errors never end the server or another session: a bad request gets an error message (WebSocket:
``{"type": "error", "data": {"message", "code"}}``; HTTP: a 4xx JSON body) and the session carries
on; requests over `ServeEnvConfig.max_request_bytes` are refused (HTTP 413; a WebSocket frame
over it closes that connection with code 1009 and a reason naming the limit). A client that leaves
(a close, a dropped connection) frees its session without a traceback in the server's log.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from fastapi.websockets import WebSocket, WebSocketDisconnect
from openenv.core.env_server import ConcurrencyConfig, Environment, create_fastapi_app
from openenv.core.env_server.exceptions import SessionCapacityError
from openenv.core.env_server.types import EnvironmentMetadata, WSErrorCode, WSErrorResponse

from tooluse_gym import __version__
from tooluse_gym.envs import MULTI_TURN_ID, SCENARIO_ID, SINGLE_TURN_ID
from tooluse_gym.envs.knobs import Knobs, env_defaults
from tooluse_gym.envs.settings import EnvSettings
from tooluse_gym.envs.tool_env import task_ids
from tooluse_gym.errors import ToolUseGymError
from tooluse_gym.server.capacity import Capacity, CapacityReached, LocalCapacity
from tooluse_gym.server.models import ToolUseAction, ToolUseObservation, ToolUseState
from tooluse_gym.server.wire import OBSERVATION_MODES, WIRE_KEYS, DeltaEncoder

SERVER_ONLY_KNOBS = ("tokenizer", "chat_template")
"""Knobs a reset cannot set: they name files (a tokenizer folder, a template file) on the server's machine."""
RESET_KNOBS = tuple(k for k in Knobs.names() if k not in SERVER_ONLY_KNOBS)
"""The knobs a reset may set."""
RESET_KEYS = ("seed", "episode_id", "env_id", "task_id", *WIRE_KEYS)
"""The reset arguments other than knobs (``observation``: the wire's, `tooluse_gym.server.wire`)."""
ENVS_PER_SESSION = 4
"""Built envs a session keeps (one per env id and knobs it reset with), least recently used dropped first."""
WORKER_HEADER = "x-tooluse-worker"
"""The response header (and WebSocket handshake header) naming the worker that answered: its slot index."""
_INFO_PROMOTED = frozenset({"task", "task_id", "turn", "steps_in_turn", "protocol", "checker", "env_messages"})

__all__ = [
    "RESET_KEYS",
    "RESET_KNOBS",
    "SERVER_ONLY_KNOBS",
    "WORKER_HEADER",
    "Catalog",
    "EpisodeError",
    "OpenSessions",
    "RequestError",
    "ServeEnvConfig",
    "ToolUseEnvironment",
    "make_app",
]


class RequestError(ToolUseGymError, ValueError):
    """A reset or step the server refuses (an unknown key, knob value, env id or task id): HTTP 400."""


class EpisodeError(ToolUseGymError, RuntimeError):
    """A step with no episode in progress (before a reset, after the end, after the session closed): HTTP 409."""


@dataclass(frozen=True, kw_only=True)
class ServeEnvConfig:
    """What `tooluse serve-env` serves, and its limits.

    Attributes:
        env_ids: The env ids served; the first is a reset's default. ``ToolUse-Scenario-v0`` needs
            `scenarios`.
        multi_turn_category: The BFCL multi-turn category ``ToolUse-MultiTurn-v0`` plays (as ``gym.make``'s).
        single_turn_category: The BFCL single-turn category or group ``ToolUse-SingleTurn-v0`` plays.
        scenarios: Scenario files or folders for ``ToolUse-Scenario-v0``.
        knobs: The server's knobs (its start flags), over each env id's defaults; a reset's override them.
        max_sessions: Concurrent WebSocket sessions; one more is refused (``CAPACITY_REACHED``).
        idle_timeout: Seconds a session may stay silent before its env is freed (None: never).
        max_request_bytes: The largest HTTP body or WebSocket frame accepted.
    """

    env_ids: tuple[str, ...] = (MULTI_TURN_ID, SINGLE_TURN_ID)
    multi_turn_category: str = "all"
    single_turn_category: str = "single_turn"
    scenarios: tuple[str, ...] = ()
    knobs: Mapping[str, Any] = field(default_factory=dict)
    max_sessions: int = 64
    idle_timeout: float | None = 300.0
    max_request_bytes: int = 4 * 1024 * 1024

    def __post_init__(self) -> None:
        known = (MULTI_TURN_ID, SINGLE_TURN_ID, SCENARIO_ID)
        if not self.env_ids or any(e not in known for e in self.env_ids):
            raise ValueError(f"env_ids must be some of {', '.join(known)}; got {list(self.env_ids)}")
        if SCENARIO_ID in self.env_ids and not self.scenarios:
            raise ValueError(f"{SCENARIO_ID} needs scenario files (--scenarios PATH)")
        if self.scenarios and SCENARIO_ID not in self.env_ids:
            object.__setattr__(self, "env_ids", (*self.env_ids, SCENARIO_ID))
        if self.max_sessions < 1:
            raise ValueError(f"max_sessions must be >= 1, got {self.max_sessions}")
        if self.idle_timeout is not None and self.idle_timeout <= 0:
            raise ValueError(f"idle_timeout must be > 0 seconds (or None), got {self.idle_timeout}")
        Knobs().with_defaults(**self.knobs)  # unknown names and bad values fail here, before serving


class Catalog:
    """The env ids a server serves: how to build each with given knobs, and which task ids each has.

    Building it loads every served env's tasks once (seconds for BFCL), so sessions build theirs
    from cached data in milliseconds, and a bad category, scenario path or server knob fails at start.
    """

    def __init__(self, config: ServeEnvConfig):
        self.config = config
        self.env_ids = config.env_ids
        categories = {MULTI_TURN_ID: config.multi_turn_category, SINGLE_TURN_ID: config.single_turn_category}
        self._settings = {
            env_id: EnvSettings(
                env_id,
                category=categories.get(env_id),
                scenario_path=tuple(config.scenarios) if env_id == SCENARIO_ID else (),
                knobs=config.knobs,
            )
            for env_id in self.env_ids
        }
        self.task_ids: dict[str, frozenset[str]] = {}
        for env_id in self.env_ids:
            env = self.make(env_id, {})
            self.task_ids[env_id] = frozenset(task_ids(env))
            env.close()

    def make(self, env_id: str, knobs: Mapping[str, Any]) -> gym.Env:
        """A new env of `env_id` with the server's knobs, then `knobs`, over its defaults."""
        return self._settings[env_id].make(**knobs)

    def route(self, env_id: Any, task_id: Any) -> str:
        """The env id a reset plays: the one given, else the one serving `task_id`, else the first served."""
        if env_id is not None:
            if env_id not in self.env_ids:
                raise RequestError(f"env_id {env_id!r} is not served here; served: {', '.join(self.env_ids)}")
            return str(env_id)
        if task_id is None:
            return self.env_ids[0]
        if not isinstance(task_id, str):
            raise RequestError(f"task_id must be a string, got {type(task_id).__name__}")
        having = [e for e in self.env_ids if task_id in self.task_ids[e]]
        if not having:
            raise RequestError(f"unknown task_id {task_id!r}: no served env ({', '.join(self.env_ids)}) has it")
        if len(having) > 1:
            raise RequestError(f"task_id {task_id!r} is in {', '.join(having)}: name one with env_id")
        return having[0]


class OpenSessions:
    """How many session envs are open now (built and not yet closed): what ``GET /sessions`` reports.

    Every env openenv builds counts while it is open: a WebSocket session's for the session's life,
    a stateless HTTP request's for the request's. With `capacity`, each change is recorded there too
    (the count of this worker, which ``/sessions`` adds up over the workers).
    """

    def __init__(self, capacity: Capacity | None = None) -> None:
        self._lock = threading.Lock()
        self._open = 0
        self._capacity = capacity

    @property
    def open(self) -> int:
        """The envs open now."""
        return self._open

    def opened(self) -> None:
        """One env more."""
        with self._lock:
            self._open += 1
            if self._capacity is not None:
                self._capacity.set_open(self._open)

    def closed(self) -> None:
        """One env fewer."""
        with self._lock:
            self._open -= 1
            if self._capacity is not None:
                self._capacity.set_open(self._open)


class ToolUseEnvironment(Environment[ToolUseAction, ToolUseObservation, ToolUseState]):
    """One session's env: resets build (or reuse) a Gymnasium env of the catalog; steps play the assistant's message.

    The verdict, reward and observation are the Gymnasium env's own: this class only moves them to
    and from JSON.
    """

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, catalog: Catalog, sessions: OpenSessions | None = None):
        super().__init__()
        self._catalog = catalog
        self._sessions = sessions
        self._envs: OrderedDict[tuple[str, tuple[tuple[str, Any], ...]], gym.Env] = OrderedDict()
        self._env: gym.Env | None = None
        self._state = ToolUseState()
        self._wire: DeltaEncoder | None = None
        self._closed = False
        if sessions is not None:
            sessions.opened()

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> ToolUseObservation:
        """Start an episode (module docstring: the arguments); `RequestError` for a bad one."""
        self._check_open()
        env_id, task_id = kwargs.pop("env_id", None), kwargs.pop("task_id", None)
        mode = kwargs.pop("observation", "full")
        unknown = sorted(set(kwargs) - set(RESET_KNOBS))
        if unknown:
            server_only = [k for k in unknown if k in SERVER_ONLY_KNOBS]
            hint = f" ({', '.join(server_only)}: a server start flag only)" if server_only else ""
            raise RequestError(
                f"unknown reset arguments {unknown}{hint}; a reset takes {', '.join(RESET_KEYS)} and the knobs "
                f"{', '.join(RESET_KNOBS)}"
            )
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
            raise RequestError(f"seed must be a non-negative integer, got {seed!r}")
        if episode_id is not None and not isinstance(episode_id, str):
            raise RequestError(f"episode_id must be a string, got {type(episode_id).__name__}")
        if mode not in OBSERVATION_MODES:
            raise RequestError(f"observation must be one of {', '.join(OBSERVATION_MODES)}, got {mode!r}")
        env_id = self._catalog.route(env_id, task_id)
        env = self._env_for(env_id, kwargs)
        options = None if task_id is None else {"task_id": task_id}
        try:
            obs, info = env.reset(seed=seed, options=options)
        except ValueError as e:  # an unknown task id for this env id
            raise RequestError(str(e)) from None
        self._env = env
        self._wire = DeltaEncoder() if mode == "delta" else None
        self._state = ToolUseState(
            episode_id=episode_id or f"{info['task_id']}:{seed}",
            env_id=env_id,
            task_id=info["task_id"],
            seed=seed,
            done=False,
            knobs=dict(kwargs),
        )
        whole = self._observation(obs, info, reward=None, done=False, truncated=False, env_id=env_id)
        return whole if self._wire is None else self._wire.encode(whole, reset=True)

    def step(self, action: ToolUseAction, timeout_s: float | None = None, **kwargs: Any) -> ToolUseObservation:
        """Play the assistant's message; `EpisodeError` when no episode is in progress."""
        self._check_open()
        if self._env is None:
            raise EpisodeError("no episode in progress: reset first")
        if self._state.done:
            raise EpisodeError(f"the episode on {self._state.task_id} has ended; a reset starts a new one")
        obs, reward, terminated, truncated, info = self._env.step(action.env_action())
        done = bool(terminated or truncated)
        self._state.step_count += 1
        self._state.done = done
        self._state.turn, self._state.steps_in_turn = info.get("turn", 0), info.get("steps_in_turn", 0)
        env_id = self._state.env_id or ""
        whole = self._observation(obs, info, reward=float(reward), done=done, truncated=bool(truncated), env_id=env_id)
        return whole if self._wire is None else self._wire.encode(whole, reset=False)

    @property
    def state(self) -> ToolUseState:
        """Where the session's episode stands."""
        return self._state

    def get_metadata(self) -> EnvironmentMetadata:
        """The server's name, description and version (``GET /metadata``)."""
        return EnvironmentMetadata(
            name="tooluse",
            description=(
                "BFCL tool calling (multi-turn and single-turn) and scenario files as OpenEnv environments, "
                f"scored exactly like BFCL; served: {', '.join(self._catalog.env_ids)}"
            ),
            version=__version__,
        )

    def close(self) -> None:
        """Free the session's envs; later calls get `EpisodeError` (the session was closed, e.g. when idle)."""
        if self._sessions is not None and not self._closed:
            self._sessions.closed()
        self._closed = True
        self._env = None
        for env in self._envs.values():
            env.close()
        self._envs.clear()

    # --- internals ---------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise EpisodeError("this session was closed (idle longer than the server's idle timeout): reconnect")

    def _env_for(self, env_id: str, knobs: Mapping[str, Any]) -> gym.Env:
        try:
            # the knobs' names, types and values, checked before they key the cache
            env_defaults(env_id).with_defaults(**{**self._catalog.config.knobs, **knobs})
            key = (env_id, tuple(sorted(knobs.items())))
            env = self._envs.get(key)
            if env is None:
                env = self._envs[key] = self._catalog.make(env_id, knobs)
                while len(self._envs) > ENVS_PER_SESSION:
                    self._envs.popitem(last=False)[1].close()
        except (ValueError, TypeError) as e:
            raise RequestError(str(e)) from None
        self._envs.move_to_end(key)
        return env

    @staticmethod
    def _observation(
        obs: Mapping[str, Any],
        info: Mapping[str, Any],
        *,
        reward: float | None,
        done: bool,
        truncated: bool,
        env_id: str,
    ) -> ToolUseObservation:
        rest = {k: v for k, v in info.items() if k not in _INFO_PROMOTED}
        if "step_record" in rest:
            rest["step_record"] = rest["step_record"].to_dict()
        return ToolUseObservation(
            messages=list(obs["messages"]),
            tools=list(obs["tools"]),
            prompt=obs.get("prompt"),
            env_id=env_id,
            task_id=info["task_id"],
            turn=info.get("turn", 0),
            steps_in_turn=info.get("steps_in_turn", 0),
            truncated=truncated,
            env_messages=list(info.get("env_messages", ())),
            protocol=info.get("protocol"),
            checker=info.get("checker"),
            info=json.loads(json.dumps(rest, default=str)),
            reward=reward,
            done=done,
        )


class _BodyLimit:
    """ASGI middleware: an HTTP body over `max_bytes` gets 413 (by its Content-Length, or as it streams in)."""

    def __init__(self, app: Any, max_bytes: int):
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or ()).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.max_bytes):
            await self._refuse(scope, receive, send)
            return
        seen = 0

        async def limited() -> Any:
            nonlocal seen
            message = await receive()
            seen += len(message.get("body", b""))
            if seen > self.max_bytes:
                raise _TooLarge
            return message

        try:
            await self.app(scope, limited, send)
        except _TooLarge:
            await self._refuse(scope, receive, send)

    async def _refuse(self, scope: Any, receive: Any, send: Any) -> None:
        detail = f"request body over {self.max_bytes} bytes (the server's --max-request-bytes)"
        await JSONResponse({"detail": detail, "code": "REQUEST_TOO_LARGE"}, status_code=413)(scope, receive, send)


class _TooLarge(Exception):
    pass


class _Admission:
    """ASGI middleware: a WebSocket session takes a slot of the server-wide cap for its life; responses name the worker.

    Past the cap the session is refused as openenv refuses one past its own (its ``CAPACITY_REACHED``
    error, then a close), but counted across every worker of the server (`Capacity`). openenv's own
    per-process cap is the same number, so it never refuses first.

    A session's life ends when its connection does, or when openenv's reaper closes its env for
    silence (the connection stays; its next message gets an error). The reaper gives no sign of that,
    so the slot is given back once the connection has been silent for `idle_timeout` plus the reaper's
    period (openenv-core 0.3.0 looks every max(timeout / 4, 5) s) and a second: by then the env is closed.
    """

    def __init__(self, app: Any, capacity: Capacity, idle_timeout: float | None):
        self.app = app
        self.capacity = capacity
        self.header = (WORKER_HEADER.encode(), str(capacity.index).encode())
        self.reaped_after = None if idle_timeout is None else idle_timeout + max(idle_timeout / 4, 5.0) + 1.0

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return

        async def named(message: Any) -> None:
            if message["type"] in ("http.response.start", "websocket.accept"):
                message = {**message, "headers": [*message.get("headers", ()), self.header]}
            await send(message)

        if scope["type"] == "http":
            await self.app(scope, receive, named)
            return
        try:
            self.capacity.admit()
        except CapacityReached as e:
            await self._refuse(scope, receive, named, e)
            return
        last = time.monotonic()

        async def heard() -> Any:
            nonlocal last
            message = await receive()
            last = time.monotonic()
            return message

        async def said(message: Any) -> None:
            nonlocal last
            await named(message)
            last = time.monotonic()

        held = True

        async def release_when_reaped(after: float) -> None:
            nonlocal held
            while (silent := time.monotonic() - last) < after:
                await asyncio.sleep(after - silent)
            held = False
            self.capacity.release()

        watch = None if self.reaped_after is None else asyncio.create_task(release_when_reaped(self.reaped_after))
        try:
            await self.app(scope, heard, said)
        finally:
            if watch is not None:
                watch.cancel()
            if held:
                self.capacity.release()

    @staticmethod
    async def _refuse(scope: Any, receive: Any, send: Any, full: CapacityReached) -> None:
        said = SessionCapacityError(active_sessions=full.active_sessions, max_sessions=full.max_sessions)
        error = WSErrorResponse(
            data={
                "message": str(said),
                "code": WSErrorCode.CAPACITY_REACHED,
                "active_sessions": said.active_sessions,
                "max_sessions": said.max_sessions,
            }
        )
        websocket = WebSocket(scope, receive, send)
        await websocket.accept()
        await websocket.send_text(error.model_dump_json())
        await websocket.close()


class _QuietDisconnect:
    """ASGI middleware: a WebSocket whose client left first ends quietly.

    openenv-core 0.3.0 closes the socket after the session ends (having freed the session); when
    the client has already gone (it closed, or its connection dropped) that close raises, and
    uvicorn logged "Exception in ASGI application" with a traceback for every such session.
    """

    def __init__(self, app: Any):
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "websocket":
            await self.app(scope, receive, send)
            return
        with contextlib.suppress(WebSocketDisconnect):
            await self.app(scope, receive, send)


def make_app(config: ServeEnvConfig, catalog: Catalog | None = None, capacity: Capacity | None = None) -> FastAPI:
    """The FastAPI app serving `config` (openenv-core's app factory, plus size caps and 4xx for bad requests).

    Args:
        config: What to serve and the limits.
        catalog: The env catalog, if already built (else built here: loads the tasks).
        capacity: The sessions this process shares with the server's other workers (a worker of
            ``tooluse serve-env --workers N``); default: this process alone (`LocalCapacity`).
            Marked ready here, once the catalog is loaded.
    """
    catalog = catalog or Catalog(config)
    capacity = capacity or LocalCapacity(config.max_sessions)
    sessions = OpenSessions(capacity)
    app = create_fastapi_app(
        functools.partial(ToolUseEnvironment, catalog, sessions),
        ToolUseAction,
        ToolUseObservation,
        concurrency_config=ConcurrencyConfig(
            max_concurrent_envs=config.max_sessions, session_timeout=config.idle_timeout
        ),
    )
    app.title = "tooluse-gym OpenEnv server"  # app.version stays openenv's: the HTTP API version (openenv-http/1.x)

    async def request_error(request: Request, exc: Exception) -> JSONResponse:
        return JSONResponse({"detail": str(exc), "code": "BAD_REQUEST"}, status_code=400)

    async def episode_error(request: Request, exc: Exception) -> JSONResponse:
        return JSONResponse({"detail": str(exc), "code": "NO_EPISODE"}, status_code=409)

    @app.get("/sessions", tags=["Health"], summary="Sessions and envs open now, the cap, the workers")
    async def open_sessions() -> dict[str, Any]:
        return capacity.status().to_dict(capacity.index)

    @app.get("/ready", tags=["Health"], summary="200 once every worker has loaded its catalog, else 503")
    async def ready() -> JSONResponse:
        status = capacity.status()
        return JSONResponse(status.to_dict(capacity.index), status_code=200 if status.ready else 503)

    app.add_exception_handler(RequestError, request_error)
    app.add_exception_handler(EpisodeError, episode_error)
    app.add_middleware(_BodyLimit, max_bytes=config.max_request_bytes)
    # outside the body limit: its 413 names the worker too
    app.add_middleware(_Admission, capacity=capacity, idle_timeout=config.idle_timeout)
    app.add_middleware(_QuietDisconnect)
    capacity.mark_ready()
    return app
