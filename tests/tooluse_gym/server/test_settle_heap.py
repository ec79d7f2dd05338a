"""The serving process freezes its startup heap, so a full garbage collection walks only the sessions' objects."""

from __future__ import annotations

import subprocess
import sys

SCRIPT = """
import gc
from tooluse_gym.server.app import settle_heap
from tooluse_gym.server.models import ToolUseAction
from tooluse_gym.server.server import Catalog, ServeEnvConfig, ToolUseEnvironment

catalog = Catalog(ServeEnvConfig(env_ids=("ToolUse-MultiTurn-v0",)))
before = len(gc.get_objects())
settle_heap()
session = ToolUseEnvironment(catalog)
session.reset(seed=0, task_id="multi_turn_base_0")
session.step(ToolUseAction.of("[ls(a=True)]"))
print(before, len(gc.get_objects()), gc.get_freeze_count(), session.state.step_count)
"""


def test_the_startup_heap_is_frozen_out_of_the_collector():
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=300, check=True)
    before, after, frozen, steps = map(int, done.stdout.split())
    assert steps == 1 and frozen >= before * 0.9  # the catalog and the modules, frozen
    assert after < before / 5  # what a full collection walks now: the session's objects and little else
