"""The serving process's heap: its startup objects frozen, and its full collections on a clock (`heap`)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tooluse_gym.server.app import build_parser, full_gc_every
from tooluse_gym.server.heap import FULL_EVERY_S

SCRIPT = """
import gc
from tooluse_gym.server.heap import settle_heap
from tooluse_gym.server.models import ToolUseAction
from tooluse_gym.server.server import Catalog, ServeEnvConfig, ToolUseEnvironment

catalog = Catalog(ServeEnvConfig(env_ids=("ToolUse-MultiTurn-v0",)))
before = len(gc.get_objects())
collector = settle_heap(None)
session = ToolUseEnvironment(catalog)
session.reset(seed=0, task_id="multi_turn_base_0")
session.step(ToolUseAction.of("[ls(a=True)]"))
print(before, len(gc.get_objects()), gc.get_freeze_count(), session.state.step_count, collector)
"""

CLOCK = """
import gc, json, time, weakref
from tooluse_gym.server.heap import settle_heap

default = gc.get_threshold()
collector = settle_heap(0.05)
full_before = gc.get_stats()[2]["collections"]  # after settle_heap's own: only the clock's count
running = gc.get_threshold()


class Node:
    pass


# a reference cycle old enough to sit in the oldest generation, where only a full collection looks
a, b = Node(), Node()
a.other, b.other = b, a
gone = weakref.ref(a)
gc.collect(1)
gc.collect(1)  # twice: promoted to generation 2
del a, b
for _ in range(20_000):  # enough allocations for many young collections: none of them frees the cycle
    [[]]
young_only = gone() is not None
deadline = time.monotonic() + 30
while gone() is not None and time.monotonic() < deadline:
    time.sleep(0.01)
freed_on_the_clock = gone() is None
time.sleep(0.2)
collector.stop()
print(json.dumps({
    "default": default, "running": running, "restored": gc.get_threshold(), "young_only": young_only,
    "freed": freed_on_the_clock, "pauses": gc.get_stats()[2]["collections"] - full_before,
}))
"""


def test_the_startup_heap_is_frozen_out_of_the_collector():
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=300, check=True)
    before, after, frozen, steps, collector = done.stdout.split()
    assert collector == "None"  # settle_heap(None): CPython's own schedule, no clock
    before, after, frozen, steps = map(int, (before, after, frozen, steps))
    assert steps == 1 and frozen >= before * 0.9  # the catalog and the modules, frozen
    assert after < before / 5  # what a full collection walks now: the session's objects and little else


def test_full_collections_run_on_the_clock_and_only_there():
    done = subprocess.run([sys.executable, "-c", CLOCK], capture_output=True, text=True, timeout=120, check=True)
    seen = json.loads(done.stdout)
    default, running = seen["default"], seen["running"]
    assert running[:2] == default[:2] and running[2] > 10**9  # young generations as before; none of CPython's own
    assert seen["restored"] == default  # stop gives the schedule back
    assert seen["young_only"]  # the young collections left the old cycle alone ...
    assert seen["freed"]  # ... and the clock's full collection freed it
    assert seen["pauses"] >= 2


@pytest.mark.parametrize(
    ("flag", "expected"), [([], FULL_EVERY_S), (["--full-gc-every", "5"], 5.0), (["--full-gc-every", "0"], None)]
)
def test_the_flag(flag, expected):
    assert full_gc_every(build_parser().parse_args(flag)) == expected


@pytest.mark.parametrize("value", ["-1", "nan", "inf", "soon"])
def test_a_bad_interval_is_refused(value, capsys):
    with pytest.raises(SystemExit) as exit:
        build_parser().parse_args(["--full-gc-every", value])
    assert exit.value.code == 2
    assert "--full-gc-every" in capsys.readouterr().err
