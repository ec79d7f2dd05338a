"""The serving process's heap: its startup objects frozen, and Python's full collections run on a clock.

A server holding a thousand sessions keeps hundreds of thousands of objects alive (the connection,
its coroutines and thread, the env and its episode). CPython starts a full ("generation 2")
collection whenever the objects promoted into the oldest generation since the last one exceed a
quarter of it. Under load that is every few seconds, since every step's records live long enough to
be promoted, and each full collection walks every live object while holding the GIL: at 1,024
sessions a worker answers no step for 0.1 to 0.4 s. Those pauses are the tail of the step latency
(``benchmarks/env_server_load.py``: p99 378 ms at 2,048 sessions on 2 workers; 19.7 ms with the
collector off).

`settle_heap` freezes what startup built out of the collector and hands the full collections to a
`ScheduledCollector`: one every ``every_s`` seconds (`FULL_EVERY_S`), started by a daemon thread,
and none started by allocation counts. The young generations are collected as before. Memory stays
bounded: cyclic garbage waits at most ``every_s`` seconds, and everything freed by reference
counting (most of a finished episode) is freed at once as always. The cycles an episode leaves are
few: about 8 objects, its BFCL file system's directories and files, which point at their parents.
``settle_heap(None)`` keeps CPython's own schedule.
"""

from __future__ import annotations

import gc
import threading

FULL_EVERY_S = 60.0
"""Seconds between the serving process's full collections (`tooluse serve-env --full-gc-every`).

A full collection pauses a worker holding 1,024 sessions for about 0.3 s. Once a minute, that is
0.5 % of its time, under the 1 % a p99 step latency can absorb; every 30 s, measured, the p99 at
2,048 sessions on 2 workers was still 240 ms. The garbage left waiting a minute is small: about
8 objects an episode."""
_NEVER = 2**31 - 1
"""A generation-2 threshold no count reaches: CPython starts no full collection of its own."""


class ScheduledCollector:
    """Runs a full garbage collection every `every_s` seconds, and stops CPython from starting its own.

    `start` raises the oldest generation's threshold out of reach (the young generations keep
    theirs) and starts the daemon thread; `stop` ends the thread and puts the threshold back.
    """

    def __init__(self, every_s: float):
        if not every_s > 0:
            raise ValueError(f"every_s must be > 0 seconds, got {every_s}")
        self.every_s = every_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._threshold: tuple[int, int, int] | None = None

    def start(self) -> ScheduledCollector:
        """Take the full collections over from CPython and start the clock; returns self."""
        if self._thread is not None:
            raise RuntimeError("this collector was already started")
        young, middle, oldest = gc.get_threshold()
        self._threshold = (young, middle, oldest)
        gc.set_threshold(young, middle, _NEVER)
        self._thread = threading.Thread(target=self._run, name="tooluse-full-gc", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """End the clock and give the full collections back to CPython (its threshold as it was)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
        if self._threshold is not None:
            gc.set_threshold(*self._threshold)
            self._threshold = None

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            gc.collect(2)  # its count and what it freed: gc.get_stats()[2]


def settle_heap(full_every_s: float | None = FULL_EVERY_S) -> ScheduledCollector | None:
    """Freeze what startup built (modules, the task catalog) out of the collector; schedule the full collections.

    The frozen objects live as long as the server; left in the collector, every full collection
    would walk them all (about 170,000 objects for BFCL, a tenth of a second here). Called once per
    serving process, after its app is built. Returns the running `ScheduledCollector`, or None
    when ``full_every_s`` is None (CPython's own schedule).
    """
    gc.collect()
    gc.freeze()
    return ScheduledCollector(full_every_s).start() if full_every_s is not None else None
