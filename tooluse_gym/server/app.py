"""`tooluse serve-env`: The environments as an OpenEnv server (HTTP and WebSocket sessions), on loopback by default.

tooluse serve-env                                   # BFCL multi-turn and single-turn at http://127.0.0.1:8000
tooluse serve-env --scenarios scenarios/curriculum/train.yaml --tool-format json --port 8001
tooluse serve-env --port 0                          # any free port (the start line names it)
tooluse serve-env --workers 4 --max-sessions 2048   # 4 worker processes behind one port, 2048 sessions in all

A client opens a WebSocket session at /ws (one env per session), resets it with the episode it wants
and sends the assistant's messages:

    {"type": "reset", "data": {"seed": 0, "task_id": "multi_turn_base_0", "tool_format": "json"}}
    {"type": "step", "data": {"content": "[ls(a=True)]"}}

`tooluse_gym.server.client.ToolUseEnvClient` is that client in Python (an OpenEnv
EnvClient). A reset takes env_id, task_id, seed, episode_id and any knob but --tokenizer and
--chat-template (they name files on this machine: start flags only); the knob flags below set the
server's defaults, which a reset overrides. The reset's observation carries the protocol card, the
last step's the checker's verdict. Also served: POST /reset and /step (stateless in OpenEnv: a fresh
env per request), GET /state, /schema, /metadata, /health. The server has no authentication: keep it
on loopback unless the network is yours. `uvicorn tooluse_gym.server.app:app` serves the same app,
configured by these flags in $TOOLUSE_SERVE_ENV_ARGS. docs/integrations/openenv.md has the details.

--workers N runs N uvicorn worker processes on the one port (each loads the tasks; a WebSocket
session stays on the worker that accepted it). --max-sessions counts across all of them, and GET
/sessions and GET /ready (200 once every worker has loaded its tasks, else 503) answer for the whole
server. A worker that dies is restarted by uvicorn: its sessions end (the client's SessionLost), the
others carry on, and its sessions stop counting. The start line comes once every worker is ready.
Each serving process runs Python's full garbage collection once a minute (--full-gc-every), not
when CPython would: a full collection walks every session's objects, and at a thousand sessions its
pause was the tail of the step latency. docs/deploy.md: that, and several servers behind a load balancer.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import shlex
import socket
import sys
import tempfile
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tooluse_gym.envs import MULTI_TURN_ID, SCENARIO_ID, SINGLE_TURN_ID
from tooluse_gym.envs.flags import add_knob_flags, given_knobs
from tooluse_gym.server.heap import FULL_EVERY_S, settle_heap

if TYPE_CHECKING:
    from tooluse_gym.server.capacity import SharedCapacity
    from tooluse_gym.server.server import ServeEnvConfig

ENV_IDS = (MULTI_TURN_ID, SINGLE_TURN_ID, SCENARIO_ID)
ARGS_VARIABLE = "TOOLUSE_SERVE_ENV_ARGS"
"""The environment variable holding this command's flags for `app` (``uvicorn tooluse_gym.server.app:app``)."""
APP = "tooluse_gym.server.app:app"
"""The import string of `app`: what each worker process of ``--workers N`` serves."""


def positive_int(text: str) -> int:
    """An argparse type: a whole number >= 1 (`--workers`)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number >= 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def seconds(text: str) -> float:
    """An argparse type: a finite number of seconds >= 0 (`--full-gc-every`)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number of seconds, got {text!r}") from None
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be >= 0 seconds, got {text}")
    return value


def build_parser() -> argparse.ArgumentParser:
    """The `tooluse serve-env` arguments."""
    p = argparse.ArgumentParser(
        prog="tooluse serve-env", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default: loopback only)")
    p.add_argument("--port", type=int, default=8000, help="port to listen on (0: any free port)")
    p.add_argument(
        "--env",
        dest="env_ids",
        nargs="+",
        choices=ENV_IDS,
        help=f"env ids to serve, the first a reset's default (default: {MULTI_TURN_ID} {SINGLE_TURN_ID}, "
        f"and {SCENARIO_ID} with --scenarios)",
    )
    p.add_argument("--category", default="all", help=f"the BFCL category {MULTI_TURN_ID} plays (default: all)")
    p.add_argument(
        "--single-turn-category",
        default="single_turn",
        help=f"the BFCL category or group {SINGLE_TURN_ID} plays (default: single_turn)",
    )
    p.add_argument(
        "--scenarios", nargs="+", default=[], metavar="PATH", help=f"scenario files or folders ({SCENARIO_ID})"
    )
    p.add_argument(
        "--workers",
        type=positive_int,
        default=1,
        metavar="N",
        help="worker processes serving the one port; each loads the tasks (default: 1)",
    )
    p.add_argument(
        "--max-sessions", type=int, default=64, help="concurrent WebSocket sessions, across all workers (default: 64)"
    )
    p.add_argument(
        "--idle-timeout",
        type=float,
        default=300.0,
        help="seconds a session may stay silent before its env is freed; 0: never (default: 300)",
    )
    p.add_argument(
        "--max-request-bytes",
        type=int,
        default=4 * 1024 * 1024,
        help="the largest HTTP body or WebSocket message accepted (default: 4 MiB)",
    )
    p.add_argument(
        "--full-gc-every",
        type=seconds,
        default=FULL_EVERY_S,
        metavar="SECONDS",
        help="run Python's full garbage collection on this clock in each serving process, not when CPython "
        f"decides (its pauses are the step latency's tail under load); 0: CPython's own (default: {FULL_EVERY_S:g})",
    )
    add_knob_flags(p.add_argument_group("knobs (the server's defaults; a reset overrides all but the last two)"))
    return p


def full_gc_every(args: argparse.Namespace) -> float | None:
    """`--full-gc-every` for `settle_heap`: seconds, or None for CPython's own schedule (0)."""
    return args.full_gc_every or None


def serve_config(args: argparse.Namespace) -> ServeEnvConfig:
    """The server's configuration from parsed flags (`ValueError` for a bad combination)."""
    from tooluse_gym.server.server import ServeEnvConfig

    return ServeEnvConfig(
        env_ids=tuple(args.env_ids or (MULTI_TURN_ID, SINGLE_TURN_ID)),
        multi_turn_category=args.category,
        single_turn_category=args.single_turn_category,
        scenarios=tuple(args.scenarios),
        knobs=given_knobs(args),
        max_sessions=args.max_sessions,
        idle_timeout=args.idle_timeout or None,
        max_request_bytes=args.max_request_bytes,
    )


class _AppFromEnviron:
    """The ASGI app of `app`: built on first use (uvicorn's startup) from `ARGS_VARIABLE`, so importing stays light."""

    def __init__(self) -> None:
        self._app: Any = None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if self._app is None:
            from tooluse_gym.server.capacity import CAPACITY_VARIABLE, SharedCapacity
            from tooluse_gym.server.server import make_app

            args = build_parser().parse_args(shlex.split(os.environ.get(ARGS_VARIABLE, "")))
            shared = os.environ.get(CAPACITY_VARIABLE)  # a worker of `tooluse serve-env --workers N`
            self._app = make_app(serve_config(args), capacity=SharedCapacity.claim(shared) if shared else None)
            settle_heap(full_gc_every(args))
        await self._app(scope, receive, send)


app = _AppFromEnviron()
"""``uvicorn tooluse_gym.server.app:app`` (openenv.yaml's ``app``): the server `ARGS_VARIABLE`'s flags describe."""


def main(argv: list[str] | None = None) -> int:
    """The `tooluse serve-env` command; returns when the server stops."""
    args = build_parser().parse_args(argv)
    if importlib.util.find_spec("openenv") is None:
        print(
            'tooluse serve-env: error: openenv-core is not installed: pip install "tooluse-gym[openenv]" && '
            "pip install --no-deps openenv-core==0.3.0",
            file=sys.stderr,
        )
        return 2
    import uvicorn

    from tooluse_gym.server.server import Catalog, make_app

    try:
        config = serve_config(args)
        print("tooluse serve-env: loading the tasks ...", file=sys.stderr, flush=True)
        catalog = Catalog(config)
    except (ValueError, TypeError, OSError) as e:
        print(f"tooluse serve-env: error: {e}", file=sys.stderr)
        return 2
    served = make_app(config, catalog)
    sock = socket.socket(socket.AF_INET6 if ":" in args.host else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((args.host, args.port))
    except OSError as e:
        print(f"tooluse serve-env: error: cannot listen on {args.host}:{args.port}: {e}", file=sys.stderr)
        return 2
    sock.listen(2048)
    host, port = sock.getsockname()[:2]
    url = f"http://{f'[{host}]' if ':' in host else host}:{port}"
    tasks = ", ".join(f"{e} ({len(catalog.task_ids[e]):,} tasks)" for e in config.env_ids)
    workers = f"{args.workers} worker{'s' if args.workers > 1 else ''}, {config.max_sessions} sessions in all"
    line = f"tooluse serve-env: serving {tasks} at {url} (sessions: {url}/ws; {workers})"
    if args.workers > 1:
        del served, catalog  # each worker loads its own
        return _serve_workers(list(sys.argv[1:] if argv is None else argv), args.workers, config, sock, line)
    print(line, file=sys.stderr, flush=True)
    settle_heap(full_gc_every(args))
    server = uvicorn.Server(uvicorn.Config(served, log_level="warning", ws_max_size=config.max_request_bytes))
    server.run(sockets=[sock])
    return 0


def _serve_workers(argv: list[str], workers: int, config: ServeEnvConfig, sock: socket.socket, line: str) -> int:
    """Run `workers` uvicorn worker processes of `APP` on `sock` until SIGINT or SIGTERM (uvicorn's supervisor).

    The workers learn the flags from `ARGS_VARIABLE` and share the session capacity through a file
    named by `CAPACITY_VARIABLE` (`tooluse_gym.server.capacity`). uvicorn's supervisor restarts a
    worker that dies, and stops everything when one fails before it could serve.
    """
    import uvicorn
    from uvicorn.supervisors import Multiprocess

    from tooluse_gym.server.capacity import CAPACITY_VARIABLE, SharedCapacity

    with tempfile.TemporaryDirectory(prefix="tooluse-serve-env-") as folder:
        capacity = SharedCapacity.create(Path(folder) / "capacity", workers=workers, max_sessions=config.max_sessions)
        os.environ[ARGS_VARIABLE] = shlex.join(argv)
        os.environ[CAPACITY_VARIABLE] = str(capacity.path)
        supervisor = Multiprocess(
            uvicorn.Config(
                APP, workers=workers, log_level="warning", ws_max_size=config.max_request_bytes, lifespan="on"
            ),
            sockets=[sock],
        )
        watcher = _Watcher(capacity, line, supervisor.should_exit)
        watching = threading.Thread(target=watcher.run, name="tooluse-serve-env-watcher", daemon=True)
        watching.start()
        supervisor.run()
        supervisor.should_exit.set()
        watching.join(5)
        capacity.close()
    if not watcher.served:
        print("tooluse serve-env: error: the workers stopped before they were all ready", file=sys.stderr)
        return 1
    return 0


class _Watcher:
    """The parent's view of its workers: prints the start line once all are ready, and a line when one dies."""

    def __init__(self, capacity: SharedCapacity, line: str, stop: threading.Event):
        self.capacity, self.line, self.stop = capacity, line, stop
        self.served = False

    def run(self) -> None:
        seen: dict[int, int] = {}  # pid -> its sessions when last seen
        while not self.stop.wait(0.2):
            status = self.capacity.status()
            if status.ready and not self.served:
                print(self.line, file=sys.stderr, flush=True)
                self.served = True
            now = {w.pid: w.sessions for w in status.live}
            for pid in seen.keys() - now.keys():
                if not self.stop.is_set():
                    print(
                        f"tooluse serve-env: worker {pid} died with {seen[pid]} session(s); uvicorn starts another",
                        file=sys.stderr,
                        flush=True,
                    )
            seen = now


if __name__ == "__main__":
    sys.exit(main())
