"""Helpers for the TUI tests: fixture paths, running a pilot script, reading the screen as text."""

from __future__ import annotations

import asyncio
import io
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from rich.console import Console
from textual.pilot import Pilot

from tooluse_tui.app import ToolUseApp, TuiConfig
from tooluse_tui.runs import resolve

DATA = Path(__file__).resolve().parent / "data"


def make_app(*paths: str | Path, poll_s: float = 0.05) -> ToolUseApp:
    return ToolUseApp(TuiConfig(resolve([str(p) for p in paths]), poll_s=poll_s))


def screen_text(app: ToolUseApp) -> str:
    """What the terminal shows, as plain text (the same render as a screenshot)."""
    width, height = app.size
    console = Console(width=width, height=height, file=io.StringIO(), force_terminal=True, record=True)
    console.print(app.screen._compositor.render_update(full=True, screen_stack=app._background_screens))
    return console.export_text()


def drive(
    app: ToolUseApp,
    script: Callable[[Pilot], Awaitable[None]],
    size: tuple[int, int] = (120, 40),
    *,
    loaded: bool = True,
) -> None:
    """Run `script` against `app` in a headless terminal of `size`.

    With `loaded` the script starts once the app's workers have read its files; a live view
    follows its files for ever, so its tests pass ``loaded=False`` and wait for what they need.
    """

    async def main() -> None:
        async with app.run_test(size=size, notifications=True) as pilot:
            if loaded:
                await settle(pilot)
            await script(pilot)

    asyncio.run(main())


async def settle(pilot: Pilot) -> None:
    """Let the workers finish and the screen catch up."""
    await pilot.pause()
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()


async def wait_for(pilot: Pilot, condition: Callable[[], bool], timeout: float = 10.0) -> None:
    """Pause until `condition()` holds (a followed file was read); fails after `timeout` seconds."""
    for _ in range(int(timeout / 0.05)):
        if condition():
            await pilot.pause()
            return
        await pilot.pause(0.05)
    raise AssertionError(f"condition not met within {timeout} s")


async def shown(pilot: Pilot, *snippets: str, absent: tuple[str, ...] = (), timeout: float = 10.0) -> str:
    """The screen text once it shows every snippet and none of `absent`.

    A key press returns before the screen repaints; on a loaded machine the repaint can lag by
    more than one `pause()`, so assertions on what is shown poll instead of reading once.
    """
    text = ""
    for _ in range(int(timeout / 0.05)):
        text = screen_text(pilot.app)
        if all(s in text for s in snippets) and not any(s in text for s in absent):
            return text
        await pilot.pause(0.05)
    missing = [s for s in snippets if s not in text]
    present = [s for s in absent if s in text]
    raise AssertionError(f"after {timeout} s the screen lacks {missing} and shows {present}:\n{text}")


async def live_fixture_shown(pilot: Pilot) -> None:
    """Wait until the live view of ``DATA / "train_run"`` shows the whole fixture.

    The follower thread reads the files before the UI thread redraws, so waiting for the read
    alone can catch the screen in between on a loaded machine: wait for the redrawn status too.
    """
    screen = pilot.app.screen
    await wait_for(pilot, lambda: len(screen.metrics.rows) == 12 and len(screen.store.summaries) == 10)
    await shown(pilot, "step 12", "12 rows · 10 rollouts")
    await pilot.pause()


@pytest.fixture
def data() -> Path:
    return DATA
