"""The TUI on a real single-turn run: BFCL single-turn episodes listed, filtered by category and error, opened."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from tests.tooluse_tui.conftest import drive, make_app, settle, shown
from tooluse_agents.backends.base import AgentRequest, Generation, SamplingConfig
from tooluse_agents.backends.oracle import OracleAgent
from tooluse_agents.eval.run import EvalConfig, run_eval
from tooluse_tui.replay import ReplayScreen
from tooluse_tui.table import RowTable
from tooluse_tui.transcript_view import TranscriptView

TASKS = ("simple_python_0", "simple_python_1", "irrelevance_0", "irrelevance_1", "live_simple_0-0-0")
NO_CALL = "I can't do that with these functions."


class NoCallOnOddTasks:
    """The oracle, except that it answers without a call on every other task (a real, scored failure)."""

    name = "no-call-on-odd"

    def __init__(self) -> None:
        self.oracle = OracleAgent()

    def generate(self, requests: Sequence[AgentRequest], sampling: SamplingConfig | None = None) -> list[Generation]:
        return [
            Generation(text=NO_CALL if TASKS.index(r.task.task_id) % 2 else self.oracle.message(r)) for r in requests
        ]

    def describe(self) -> dict[str, object]:
        return {"backend": self.name}

    def close(self) -> None:
        pass


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    out = tmp_path_factory.mktemp("single_turn") / "run"
    config = EvalConfig(agent="oracle", task_ids=TASKS, categories=("single_turn",), num_envs=2)
    results = run_eval(config, out, agent=NoCallOnOddTasks(), progress=False)
    assert results["summary"]["episodes"] == 5
    return out


def test_single_turn_episodes_are_listed_filtered_and_opened(run):
    app = make_app(run)

    async def script(pilot):
        assert isinstance(app.screen, ReplayScreen)
        await shown(pilot, "5 episodes · 1 failed · 5 shown", "live_simple_0-0-0", "simple_python_1")
        rows = app.screen.query_one(RowTable).items
        assert {s.category for s in rows} == {"simple_python", "irrelevance", "live_simple"}
        # no call fails where a call was due (simple_python_1); on irrelevance_1 no call is right
        failed = {s.task_id: s.error_type for s in rows if s.failed}
        assert list(failed) == ["simple_python_1"] and failed["simple_python_1"]
        await shown(pilot, failed["simple_python_1"])
        await pilot.press("x")  # failed only
        assert [s.task_id for s in app.screen.query_one(RowTable).items] == ["simple_python_1"]
        await pilot.press("x")
        await pilot.press("c")  # the first category in sorted order
        assert {s.category for s in app.screen.query_one(RowTable).items} == {"irrelevance"}
        await pilot.press("c", "c", "c")  # back to all
        await pilot.press("slash", *"simple_python_1", "enter")
        await settle(pilot)
        await pilot.press("enter")
        view = app.screen.query_one(TranscriptView)
        assert view.display
        await shown(pilot, "simple_python_1  category simple_python", NO_CALL, "episode failed")

    drive(app, script)
