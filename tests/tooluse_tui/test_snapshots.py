"""Snapshot tests: each mode at 120x40 on the fixture files (SVGs in ``__snapshots__/``).

Approve a change with ``pytest tests/tooluse_tui/test_snapshots.py --snapshot-update`` after looking at it.
Nothing on screen depends on the clock: no clock in the header, no spinner, fixed fixture data.
"""

from __future__ import annotations

from tests.tooluse_tui.conftest import DATA, live_fixture_shown, make_app, settle

SIZE = (120, 40)


def test_replay_table(snap_compare):
    """The episode table of run A, failed episodes only, sorted by task id."""
    assert snap_compare(make_app(DATA / "run_a"), press=["x", "s"], terminal_size=SIZE, run_before=settle)


def test_episode_at_first_failing_turn(snap_compare):
    """An episode with a wrong argument, at its first failing turn: the verdict and the state diff."""

    async def run_before(pilot):
        await settle(pilot)
        await pilot.press("slash", *"document_old", "enter")
        await settle(pilot)
        await pilot.press("enter", "f")

    assert snap_compare(make_app(DATA / "run_a"), terminal_size=SIZE, run_before=run_before)


def test_live_view(snap_compare):
    """The training run's plots and its latest rollouts."""

    assert snap_compare(make_app(DATA / "train_run"), terminal_size=SIZE, run_before=live_fixture_shown)


def test_compare_view(snap_compare):
    """Runs A and B: protocol differences, accuracy with CIs, disagreeing tasks."""
    assert snap_compare(make_app(DATA / "run_a", DATA / "run_b"), terminal_size=SIZE, run_before=settle)
