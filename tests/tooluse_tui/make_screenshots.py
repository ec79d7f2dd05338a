"""Write the README's screenshots of `tooluse-tui` (``docs/tui-*.svg``) from the fixture runs.

    python tests/tooluse_tui/make_screenshots.py

Each is exported by the app itself (`App.save_screenshot`) after a short pilot script.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from textual.pilot import Pilot  # noqa: E402

from tests.tooluse_tui.conftest import DATA, live_fixture_shown, make_app, settle  # noqa: E402

SIZE = (120, 40)


async def _episode(pilot: Pilot) -> None:
    await settle(pilot)
    await pilot.press("slash", *"document_old", "enter")
    await settle(pilot)
    await pilot.press("enter", "f")


async def _replay(pilot: Pilot) -> None:
    await settle(pilot)
    await pilot.press("x")


SHOTS: dict[str, tuple[tuple[Path, ...], Callable[[Pilot], Awaitable[None]]]] = {
    "tui-replay.svg": ((DATA / "run_a",), _replay),
    "tui-episode.svg": ((DATA / "run_a",), _episode),
    "tui-live.svg": ((DATA / "train_run",), live_fixture_shown),
    "tui-compare.svg": ((DATA / "run_a", DATA / "run_b"), settle),
}


async def shoot(name: str, paths: tuple[Path, ...], script: Callable[[Pilot], Awaitable[None]]) -> None:
    app = make_app(*paths)
    async with app.run_test(size=SIZE) as pilot:
        await script(pilot)
        await pilot.pause(0.2)
        app.save_screenshot(name, path=str(ROOT / "docs"))


def main() -> None:
    (ROOT / "docs").mkdir(exist_ok=True)
    for name, (paths, script) in SHOTS.items():
        asyncio.run(shoot(name, paths, script))
        print(f"docs/{name}")


if __name__ == "__main__":
    main()
