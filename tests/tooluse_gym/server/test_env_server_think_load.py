"""`benchmarks/env_server_load.py` in its quick mode: sessions that think between steps, against a real server.

A few sessions, a 0.2 s think time and a 3 s window instead of 2,048 sessions, 5 s and a minute.
Nothing here is timed: the checks are that every episode played over the wire ends with the
in-process verdict (none lost, none crossed), that every session is held to the end and freed
after, that the think time paces the steps, and that the result file has what the results page reads.
"""

from __future__ import annotations

import json
import random
import sys

import pytest

pytest.importorskip("openenv.core")

from benchmarks.env_server_load import GOAL, Plan, Think, _meets_goal, main
from tests.test_docs import _generator

SESSIONS, WINDOW_S, THINK_S = 4, 3.0, 0.2


def test_quick_mode_holds_every_session_with_the_in_process_verdicts(tmp_path, monkeypatch):
    out, plot = tmp_path / "env_server_load.json", tmp_path / "load.png"
    argv = ["--sessions", str(SESSIONS), "--workers", "1", "--window", str(WINDOW_S), "--think", str(THINK_S)]
    assert main([*argv, "--episodes", "8", "--write", "--out", str(out), "--plot", str(plot)]) == 0
    result = json.loads(out.read_text(encoding="utf-8"))
    assert plot.stat().st_size > 0
    assert result["all_verdicts_equal"] and result["no_session_failed"]
    assert result["goal"]["met"] is None  # 4 sessions at 0.2 s do not test the goal
    assert result["settings"]["think_s"] == [THINK_S, THINK_S]
    (row,) = result["levels"]
    v = row["verdicts"]
    assert (v["lost"], v["crossed"], v["different"]) == (0, 0, 0) and v["equal"] == v["episodes"] > SESSIONS
    assert row["held"] == {
        "held_at_window_end": SESSIONS,
        "refused": 0,
        "never_answered": 0,
        "dropped_in_window": 0,
        "dropped_in_drain": 0,
        "server_open_at_window_end": SESSIONS,
    }
    assert row["open_sessions_after"] == 0 and row["session_errors"] == [] and row["server_log_tracebacks"] == 0
    # each step waits its think time first: a session sends at most one step per think time in the window
    assert 0 < row["steps_in_window"] <= SESSIONS * (WINDOW_S / THINK_S + 1)
    assert row["episodes_completed_in_window"] > 0
    lat = row["step_latency_ms"]
    assert 0 < lat["p50"] <= lat["p99"] <= lat["max"]
    memory = row["memory"]
    assert memory["server_processes"] >= 1 and memory["held_rss_mib"] >= memory["held_pss_mib"] > 0
    assert set(row["cpu_cores"]) == {"server", "client"} and row["cpu_cores"]["server"] > 0
    assert row["meets_goal"] is None
    # the results page's table reads this file
    gen = _generator()
    monkeypatch.setattr(sys.modules["pages_common"], "RESULTS", tmp_path)
    table = gen.BLOCKS["env-server-load"]()
    assert "not tested by this run" in table and f"| 1 | {SESSIONS} | {SESSIONS} |" in table, table
    assert f"{v['equal']} / {v['episodes']} (lost 0, crossed 0)" in table


def test_think_times_are_seeded_and_in_range():
    uniform = Think(1.0, 5.0)
    draws = [uniform.draw(random.Random(7)) for _ in range(2)]
    assert draws[0] == draws[1] and 1.0 <= draws[0] <= 5.0
    assert Think(5.0, 5.0).draw(random.Random(0)) == 5.0
    assert (uniform.describe(), Think(5.0, 5.0).describe()) == ("uniform 1-5 s", "fixed 5 s")


def test_the_goal_is_judged_only_at_its_load():
    at_goal = Plan(GOAL["sessions"], 1, Think(GOAL["think_s"], GOAL["think_s"]), 60, 100, 0)
    assert _meets_goal(at_goal, GOAL["sessions"], 0, 99.0, True) is True
    assert _meets_goal(at_goal, GOAL["sessions"], 0, 101.0, True) is False
    assert _meets_goal(at_goal, GOAL["sessions"] - 1, 1, 50.0, True) is False
    assert _meets_goal(at_goal, GOAL["sessions"], 0, 50.0, False) is False
    assert _meets_goal(Plan(256, 1, at_goal.think, 60, 100, 0), 256, 0, 50.0, True) is None
    assert _meets_goal(Plan(GOAL["sessions"], 2, Think(1.0, 5.0), 60, 100, 0), 2048, 0, 50.0, True) is None
