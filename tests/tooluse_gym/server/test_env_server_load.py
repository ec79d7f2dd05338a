"""`benchmarks/env_server.py` at small N: a real `tooluse serve-env` subprocess on loopback, under load and faults.

The same code as the benchmark (`benchmarks.env_server`, `benchmarks.env_server_faults`), with 8
oracle episodes, 4 sessions and a dozen disconnecting clients instead of 512, 256 and 1,000. Nothing
here is timed: the checks are that every verdict equals the in-process one (none lost, none crossed
between sessions), that each fault gets its clear error while the server and the other sessions
carry on, and that closed and dropped sessions are freed.
"""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("openenv.core")

from benchmarks.env_server import MAX_REQUEST_BYTES, level
from benchmarks.env_server_episodes import in_process, oracle_episodes
from benchmarks.env_server_faults import judge, run_faults
from benchmarks.env_server_process import ServedEnv, server_args

SESSIONS = 4
FLOOD_EXTRA = 2


@pytest.fixture(scope="module")
def episodes():
    played = oracle_episodes(8)
    expected, _ = in_process(played)
    assert all(reward == 1.0 for reward, _, _ in expected.values())  # the oracle's episodes are valid
    return played, expected


def test_concurrent_sessions_give_the_in_process_verdicts(episodes):
    played, expected = episodes
    row = level(SESSIONS, played, expected)
    assert row["verdicts"]["all_equal"], row["verdicts"]
    assert (row["verdicts"]["lost"], row["verdicts"]["crossed"], row["verdicts"]["equal"]) == (0, 0, len(played))
    assert row["steps"] == sum(len(e.messages) for e in played)
    assert row["open_sessions_after"] == {"held_and_closed": 0, "load": 0}
    assert row["session_errors"] == [] and row["server_log_tracebacks"] == 0


def test_faults_get_clear_errors_and_everything_else_carries_on(episodes):
    played, expected = episodes
    with ServedEnv(server_args(max_sessions=SESSIONS, max_request_bytes=MAX_REQUEST_BYTES)) as server:
        faults = asyncio.run(
            run_faults(
                server,
                played,
                expected,
                max_sessions=SESSIONS,
                max_bytes=MAX_REQUEST_BYTES,
                disconnects=12,
                flood_extra=FLOOD_EXTRA,
            )
        )
    checks = judge(faults, max_sessions=SESSIONS, flood_extra=FLOOD_EXTRA)
    # a dozen clients are too few to tell a leak from the allocator's warm-up: the benchmark judges memory at 1,000
    checks.pop("disconnects_no_memory_growth")
    assert all(checks.values()), ({k: v for k, v in checks.items() if not v}, faults)
    bad = faults["bad_input"]
    assert "Invalid JSON" in bad["malformed_json"]["message"]
    assert "text: Extra inputs are not permitted" in bad["unknown_action_shape"]["message"]
    assert "unknown task_id 'multi_turn_base_99999'" in bad["unknown_task_id"]["message"]
    assert str(MAX_REQUEST_BYTES) in bad["frame_over_size_cap"]["message"]
    assert faults["disconnects"]["open_sessions_after_each_wave"] == [1]  # the bystander alone
    lost = faults["kill_restart"]["step_after_kill"]["message"]
    assert "ended this session" in lost and "a reset starts a new session" in lost
    assert "Failed to connect" in faults["kill_restart"]["connect_while_down"]["message"]
