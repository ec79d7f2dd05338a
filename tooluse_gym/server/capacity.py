"""A server's session capacity and readiness across its worker processes: `--max-sessions` means the whole server.

    capacity = SharedCapacity.create(tmp / "capacity", workers=2, max_sessions=64)  # the parent, before the workers
    mine = SharedCapacity.claim(capacity.path)   # a worker, at start: takes a slot
    mine.admit()                                  # a session opens (`CapacityReached` past the cap) ...
    mine.release()                                # ... and ends
    mine.status().ready                           # every worker up and its catalog loaded

`tooluse serve-env --workers N` runs N uvicorn worker processes behind one port; a WebSocket session
lives on the worker that accepted it. What they must agree on lives in a small file that the parent
creates under a temporary folder and names to the workers (`CAPACITY_VARIABLE`): a header (the
worker count and the cap) and one slot per worker process (its pid, whether its catalog is loaded,
its sessions, its open envs). Every read and write happens under an fcntl lock on the file, so
"count the sessions, then take one" is one step across processes.

A worker holds an fcntl lock on its own slot for its whole life. The kernel drops that lock when the
process ends, however it ends (SIGKILL included), so a slot whose lock is free belongs to no live
worker: its sessions stop counting at once (they died with it: capacity does not leak) and uvicorn's
replacement worker takes a free slot. `LocalCapacity` is the same interface for one process.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import struct
import threading
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol

from tooluse_gym.errors import ToolUseGymError

__all__ = [
    "CAPACITY_VARIABLE",
    "Capacity",
    "CapacityError",
    "CapacityReached",
    "CapacityStatus",
    "LocalCapacity",
    "SharedCapacity",
    "WorkerStatus",
]

CAPACITY_VARIABLE = "TOOLUSE_SERVE_ENV_CAPACITY"
"""The environment variable naming the shared capacity file to a worker process (set by the parent)."""

_MAGIC = b"TUCAP001"
_HEADER = struct.Struct("<8sqqq")  # magic, workers, max_sessions, slots
_SLOT = struct.Struct("<qqqq")  # pid, ready, sessions, open
_LOCKS = 1 << 20  # lock bytes live past the data: the file lock at _LOCKS, slot i's at _LOCKS + 1 + i


class CapacityError(ToolUseGymError, RuntimeError):
    """The shared capacity file is missing, not ours, or has no free slot for one more worker."""


class CapacityReached(ToolUseGymError, RuntimeError):
    """One session more than the server's cap: the session is refused (openenv's ``CAPACITY_REACHED``)."""

    def __init__(self, active_sessions: int, max_sessions: int):
        super().__init__(f"{active_sessions} of {max_sessions} sessions open")
        self.active_sessions = active_sessions
        self.max_sessions = max_sessions


@dataclass(frozen=True)
class WorkerStatus:
    """One live worker process.

    Attributes:
        index: Its slot (a replacement worker may take another slot than the one it replaces).
        pid: Its process id.
        ready: Its catalog is loaded (it serves once uvicorn's startup is done).
        sessions: Its WebSocket sessions (what the cap counts).
        open: Its session envs open now (WebSocket sessions', and stateless HTTP requests' while they run).
    """

    index: int
    pid: int
    ready: bool
    sessions: int
    open: int


@dataclass(frozen=True)
class CapacityStatus:
    """The whole server's sessions and workers, as ``GET /sessions`` and ``GET /ready`` report them.

    Attributes:
        max_sessions: The cap on WebSocket sessions, across all workers.
        workers: The worker count the server was started with.
        live: The worker processes alive now (a dead one is absent; its sessions died with it).
    """

    max_sessions: int
    workers: int
    live: tuple[WorkerStatus, ...]

    @property
    def sessions(self) -> int:
        """WebSocket sessions open across the live workers."""
        return sum(w.sessions for w in self.live)

    @property
    def open(self) -> int:
        """Session envs open across the live workers."""
        return sum(w.open for w in self.live)

    @property
    def ready(self) -> bool:
        """As many workers up with their catalogs loaded as the server was started with."""
        return sum(w.ready for w in self.live) >= self.workers

    def to_dict(self, worker: int | None = None) -> dict[str, Any]:
        """The JSON of ``/sessions`` and ``/ready``; `worker` is the index of the worker answering."""
        ready = sum(w.ready for w in self.live)
        answered = {"worker": next((asdict(w) for w in self.live if w.index == worker), None)}
        return {
            "open": self.open,
            "max_sessions": self.max_sessions,
            "sessions": self.sessions,
            "ready": self.ready,
            "workers": {"count": self.workers, "up": len(self.live), "ready": ready},
            **(answered if worker is not None else {}),
            "per_worker": [asdict(w) for w in self.live],
        }


class Capacity(Protocol):
    """What a server process needs of the capacity it shares (`LocalCapacity`, `SharedCapacity`)."""

    @property
    def index(self) -> int:
        """This worker's slot."""
        ...

    def admit(self) -> None:
        """Take one session (`CapacityReached` when the server is full)."""

    def release(self) -> None:
        """Give one session back."""

    def set_open(self, open_envs: int) -> None:
        """Record this worker's open envs."""

    def mark_ready(self) -> None:
        """This worker has loaded its catalog."""

    def status(self) -> CapacityStatus:
        """The whole server now."""
        ...


class LocalCapacity:
    """The capacity of a server that is one process (`tooluse serve-env`, one worker; the in-process app)."""

    def __init__(self, max_sessions: int):
        self._lock = threading.Lock()
        self._max = max_sessions
        self._sessions = 0
        self._open = 0
        self._ready = False

    @property
    def index(self) -> int:
        """Always 0."""
        return 0

    def admit(self) -> None:
        """Take one session (`CapacityReached` when all are taken)."""
        with self._lock:
            if self._sessions >= self._max:
                raise CapacityReached(self._sessions, self._max)
            self._sessions += 1

    def release(self) -> None:
        """Give one session back."""
        with self._lock:
            self._sessions -= 1

    def set_open(self, open_envs: int) -> None:
        """Record the open envs."""
        self._open = open_envs

    def mark_ready(self) -> None:
        """The catalog is loaded."""
        self._ready = True

    def status(self) -> CapacityStatus:
        """This process's sessions, as one worker."""
        me = WorkerStatus(0, os.getpid(), self._ready, self._sessions, self._open)
        return CapacityStatus(max_sessions=self._max, workers=1, live=(me,))


class SharedCapacity:
    """The capacity file of one multi-worker server: created by the parent, a slot claimed by each worker.

    Keep one object per process: POSIX record locks belong to the process, and closing any descriptor
    of the file would drop the slot lock. Methods are safe from several threads.
    """

    def __init__(self, path: Path, fd: int, index: int | None):
        self.path = path
        self._fd = fd
        self._index = index
        self._thread_lock = threading.Lock()
        header = os.pread(fd, _HEADER.size, 0)
        magic, self.workers, self.max_sessions, self.slots = (
            _HEADER.unpack(header) if len(header) == _HEADER.size else (b"", 0, 0, 0)
        )
        if magic != _MAGIC:
            os.close(fd)
            raise CapacityError(f"{path} is not a tooluse serve-env capacity file")

    @classmethod
    def create(cls, path: str | os.PathLike[str], *, workers: int, max_sessions: int) -> SharedCapacity:
        """Write a new capacity file for `workers` processes (the parent's side; it claims no slot).

        Slots are twice the workers (at least four more): uvicorn starts a replacement before the
        old worker is gone on SIGHUP, and SIGTTIN adds workers.
        """
        if workers < 1 or max_sessions < 1:
            raise ValueError(f"workers and max_sessions must be >= 1, got {workers} and {max_sessions}")
        slots = max(2 * workers, workers + 4)
        target = Path(path)
        data = _HEADER.pack(_MAGIC, workers, max_sessions, slots) + bytes(_SLOT.size * slots)
        fd = os.open(target, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        os.pwrite(fd, data, 0)
        return cls(target, fd, None)

    @classmethod
    def observe(cls, path: str | os.PathLike[str]) -> SharedCapacity:
        """Open an existing capacity file without taking a slot (the parent watching its workers)."""
        return cls(Path(path), _open(path), None)

    @classmethod
    def claim(cls, path: str | os.PathLike[str]) -> SharedCapacity:
        """Open an existing capacity file and take a free slot for this process (a worker, at its start)."""
        fd = _open(path)
        shared = cls(Path(path), fd, None)
        with shared._locked():
            for index in range(shared.slots):
                if _try_lock(fd, _LOCKS + 1 + index):  # free, or its worker has died: ours now, for our life
                    os.pwrite(fd, _SLOT.pack(os.getpid(), 0, 0, 0), shared._offset(index))
                    shared._index = index
                    return shared
        os.close(fd)
        raise CapacityError(f"no free worker slot in {path} ({shared.slots} slots, all held by live workers)")

    @property
    def index(self) -> int:
        """This worker's slot (`CapacityError` for the parent's observing handle)."""
        if self._index is None:
            raise CapacityError("this handle observes the capacity file and holds no worker slot")
        return self._index

    def admit(self) -> None:
        """Take one session if the live workers' sessions are under the cap, else `CapacityReached`."""
        with self._locked():
            status = self._read()
            if status.sessions >= self.max_sessions:
                raise CapacityReached(status.sessions, self.max_sessions)
            self._add(sessions=1)

    def release(self) -> None:
        """Give one of this worker's sessions back."""
        with self._locked():
            self._add(sessions=-1)

    def set_open(self, open_envs: int) -> None:
        """Record this worker's open envs."""
        with self._locked():
            pid, ready, sessions, _ = self._slot(self.index)
            os.pwrite(self._fd, _SLOT.pack(pid, ready, sessions, open_envs), self._offset(self.index))

    def mark_ready(self) -> None:
        """This worker has loaded its catalog."""
        with self._locked():
            pid, _, sessions, open_envs = self._slot(self.index)
            os.pwrite(self._fd, _SLOT.pack(pid, 1, sessions, open_envs), self._offset(self.index))

    def status(self) -> CapacityStatus:
        """The live workers and their sessions now."""
        with self._locked():
            return self._read()

    def close(self) -> None:
        """Close the file (a worker's slot is free from then on)."""
        with self._thread_lock:
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1

    # --- internals (callers hold the file lock) -------------------------------------------------

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        with self._thread_lock:
            if self._fd < 0:
                raise CapacityError(f"{self.path} was closed")
            fcntl.lockf(self._fd, fcntl.LOCK_EX, 1, _LOCKS)
            try:
                yield
            finally:
                fcntl.lockf(self._fd, fcntl.LOCK_UN, 1, _LOCKS)

    def _offset(self, index: int) -> int:
        return _HEADER.size + index * _SLOT.size

    def _slot(self, index: int) -> tuple[int, int, int, int]:
        pid, ready, sessions, open_envs = _SLOT.unpack(os.pread(self._fd, _SLOT.size, self._offset(index)))
        return pid, ready, sessions, open_envs

    def _add(self, *, sessions: int) -> None:
        pid, ready, held, open_envs = self._slot(self.index)
        os.pwrite(self._fd, _SLOT.pack(pid, ready, held + sessions, open_envs), self._offset(self.index))

    def _alive(self, index: int) -> bool:
        if index == self._index:
            return True  # our own lock: testing it would release it
        if _try_lock(self._fd, _LOCKS + 1 + index):
            fcntl.lockf(self._fd, fcntl.LOCK_UN, 1, _LOCKS + 1 + index)
            return False
        return True

    def _read(self) -> CapacityStatus:
        live = []
        for index in range(self.slots):
            if self._alive(index):
                pid, ready, sessions, open_envs = self._slot(index)
                live.append(WorkerStatus(index, pid, bool(ready), sessions, open_envs))
        return CapacityStatus(max_sessions=self.max_sessions, workers=self.workers, live=tuple(live))


def _open(path: str | os.PathLike[str]) -> int:
    try:
        return os.open(path, os.O_RDWR)
    except OSError as e:
        raise CapacityError(f"cannot open the capacity file {path}: {e}") from None


def _try_lock(fd: int, offset: int) -> bool:
    """Take the lock byte at `offset` if no other process holds it."""
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, offset)
    except OSError as e:
        if e.errno in (errno.EACCES, errno.EAGAIN):
            return False
        raise
    return True
