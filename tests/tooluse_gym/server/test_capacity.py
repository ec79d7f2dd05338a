"""The session cap shared by a server's worker processes: real processes, real fcntl locks, one SIGKILLed.

Each "worker" here is a Python subprocess that claims a slot of the capacity file, takes sessions
when told to on stdin and answers with what happened; the test process is the parent (and sometimes
a worker itself).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import pytest

from tooluse_gym.server.capacity import (
    CapacityError,
    CapacityReached,
    LocalCapacity,
    SharedCapacity,
)

WORKER = textwrap.dedent(
    """
    import sys
    from tooluse_gym.server.capacity import CapacityReached, SharedCapacity

    capacity = SharedCapacity.claim(sys.argv[1])
    print("slot", capacity.index, flush=True)
    for line in sys.stdin:
        command = line.split()
        if command[0] == "admit":
            taken = 0
            for _ in range(int(command[1])):
                try:
                    capacity.admit()
                    taken += 1
                except CapacityReached:
                    pass
            print("took", taken, flush=True)
        elif command[0] == "release":
            capacity.release()
            print("released", flush=True)
        elif command[0] == "ready":
            capacity.mark_ready()
            print("ready", flush=True)
    """
)


class Worker:
    """A subprocess holding one slot of the capacity file at `path`."""

    def __init__(self, path: str):
        self.process = subprocess.Popen(
            [sys.executable, "-c", WORKER, path],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        )
        self.slot = int(self.ask(None).split()[1])

    def ask(self, command: str | None) -> str:
        assert self.process.stdin is not None and self.process.stdout is not None
        if command is not None:
            self.process.stdin.write(command + "\n")
            self.process.stdin.flush()
        line = self.process.stdout.readline()
        assert line, self.process.stderr.read() if self.process.stderr else "the worker ended"
        return line.strip()

    def kill(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(30)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.kill()


@pytest.fixture
def workers():
    started: list[Worker] = []
    yield started
    for worker in started:
        worker.stop()


def test_local_capacity_refuses_past_the_cap_until_one_is_given_back():
    capacity = LocalCapacity(2)
    capacity.admit()
    capacity.admit()
    with pytest.raises(CapacityReached) as full:
        capacity.admit()
    assert (full.value.active_sessions, full.value.max_sessions) == (2, 2)
    capacity.release()
    capacity.admit()
    assert not capacity.status().ready
    capacity.mark_ready()
    status = capacity.status()
    assert status.ready and status.sessions == 2 and status.to_dict(0)["worker"]["pid"] == os.getpid()


def test_the_cap_counts_every_worker_and_a_dead_one_stops_counting(tmp_path, workers):
    path = str(tmp_path / "capacity")
    parent = SharedCapacity.create(path, workers=2, max_sessions=5)
    assert parent.status().live == () and not parent.status().ready
    workers += [Worker(path), Worker(path)]
    a, b = workers
    assert {a.slot, b.slot} == {0, 1}
    assert a.ask("admit 3") == "took 3"
    assert b.ask("admit 3") == "took 2"  # 5 in all: the third is refused though b holds only two
    status = parent.status()
    assert status.sessions == 5 and {w.pid: w.sessions for w in status.live} == {
        a.process.pid: 3,
        b.process.pid: 2,
    }
    assert not status.ready  # no worker has loaded its catalog yet
    assert a.ask("ready") == "ready" and b.ask("ready") == "ready"
    assert parent.status().ready

    a.kill()  # its three sessions died with it: they stop counting at once, and readiness says so
    status = parent.status()
    assert [w.pid for w in status.live] == [b.process.pid] and status.sessions == 2 and not status.ready
    assert status.to_dict()["workers"] == {"count": 2, "up": 1, "ready": 1}
    assert b.ask("admit 5") == "took 3"

    replacement = Worker(path)  # uvicorn's new worker takes the free slot: nothing of the dead one is left
    workers.append(replacement)
    assert replacement.slot == a.slot
    assert replacement.ask("admit 1") == "took 0" and replacement.ask("ready") == "ready"
    assert b.ask("release") == "released" and replacement.ask("admit 2") == "took 1"
    assert parent.status().ready and parent.status().sessions == 5


def test_workers_admitting_at_once_never_pass_the_cap(tmp_path, workers):
    path = str(tmp_path / "capacity")
    SharedCapacity.create(path, workers=4, max_sessions=37)
    workers += [Worker(path) for _ in range(4)]
    for worker in workers:  # all four race for the same slots
        assert worker.process.stdin is not None
        worker.process.stdin.write("admit 20\n")
        worker.process.stdin.flush()
    taken = [int(worker.ask(None).split()[1]) for worker in workers]
    assert sum(taken) == 37, taken


def test_the_test_process_as_a_worker_and_bad_files(tmp_path):
    path = tmp_path / "capacity"
    SharedCapacity.create(path, workers=1, max_sessions=1)
    with pytest.raises(FileExistsError):
        SharedCapacity.create(path, workers=1, max_sessions=1)
    me = SharedCapacity.claim(path)
    me.admit()
    with pytest.raises(CapacityReached):
        me.admit()
    me.set_open(3)
    assert me.status().open == 3 and me.status().to_dict(me.index)["worker"]["open"] == 3
    me.close()
    with pytest.raises(CapacityError, match="cannot open the capacity file"):
        SharedCapacity.claim(tmp_path / "missing")
    for size in (64, 3):
        (tmp_path / "other").write_bytes(b"x" * size)
        with pytest.raises(CapacityError, match="not a tooluse serve-env capacity file"):
            SharedCapacity.observe(tmp_path / "other")
    with pytest.raises(ValueError, match="must be >= 1"):
        SharedCapacity.create(tmp_path / "zero", workers=0, max_sessions=1)
    with pytest.raises(CapacityError, match="holds no worker slot"):
        _ = SharedCapacity.observe(path).index


def test_a_full_file_refuses_one_more_worker(tmp_path, workers):
    path = str(tmp_path / "capacity")
    slots = SharedCapacity.create(path, workers=1, max_sessions=1).slots
    workers += [Worker(path) for _ in range(slots)]
    with pytest.raises(CapacityError, match="no free worker slot"):
        SharedCapacity.claim(path)
