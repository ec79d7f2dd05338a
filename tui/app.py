"""`tooluse tui`: replay episodes, follow a training run, compare two runs.

tooluse tui runs/smollm2-135m              # replay a run's episodes.jsonl
tooluse tui path/to/episodes.jsonl         # the same, from the file
tooluse tui path/to/train_run              # live view of a run with a metrics.jsonl
tooluse tui runs/first-run                 # a folder of runs: choose one from a list
tooluse tui runs/run_a runs/run_b          # compare two evaluation runs
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from textual.app import App
from textual.binding import Binding, BindingType
from textual.screen import Screen

from tooluse_tui.compare import CompareScreen
from tooluse_tui.data import EpisodeStore, MetricsLog
from tooluse_tui.live import LiveScreen
from tooluse_tui.picker import RunListScreen
from tooluse_tui.replay import ReplayScreen
from tooluse_tui.runs import Target, TargetError, resolve


@dataclass(frozen=True)
class TuiConfig:
    """What the app opens and how often it polls growing files.

    Attributes:
        target: The mode and files (see `tooluse_tui.runs.resolve`).
        poll_s: Seconds between polls of a followed file (live view).
    """

    target: Target
    poll_s: float = 0.5

    def __post_init__(self) -> None:
        if self.poll_s <= 0:
            raise ValueError(f"poll_s must be > 0, got {self.poll_s}")


class ToolUseApp(App[None]):
    """Opens the screen of the configured mode; screens do the rest."""

    TITLE = "tooluse-tui"
    """Shown in the header."""
    CSS_PATH = "app.tcss"
    """The app's styles."""
    ENABLE_COMMAND_PALETTE = False
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("q", "quit", "quit"),
        Binding("question_mark", "toggle_keys", "keys"),
        Binding("backspace", "back", "runs"),
    ]
    """Quit and the key panel, on every screen; back to the run list from a run opened from it."""

    def __init__(self, config: TuiConfig) -> None:
        super().__init__()
        self.config = config

    def on_mount(self) -> None:
        """Open the first screen."""
        self.push_screen(self.first_screen())

    def first_screen(self) -> Screen[None]:
        """The screen the target opens on: replay, live, compare or the run list."""
        return self.screen_for(self.config.target)

    def screen_for(self, target: Target) -> Screen[None]:
        """The screen of `target`."""
        if target.mode == "pick":
            return RunListScreen(target.root or Path("."), target.runs)
        if target.mode == "compare":
            return CompareScreen((target.episodes[0].parent, target.episodes[1].parent))
        store = EpisodeStore(target.episodes[0])
        if target.mode == "live":
            assert target.metrics is not None
            return LiveScreen(MetricsLog(target.metrics), store, self.config.poll_s)
        return ReplayScreen(store)

    def on_run_list_screen_chosen(self, message: RunListScreen.Chosen) -> None:
        """Open the run chosen in the run list on top of it."""
        self.push_screen(self.screen_for(message.run.target))

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Backspace goes back only from a run opened from the run list."""
        if action == "back":
            return self.config.target.mode == "pick" and len(self.screen_stack) > 2
        return True

    async def action_back(self) -> None:
        """Close the run opened from the run list."""
        if self.check_action("back", ()):
            self.pop_screen()

    def action_toggle_keys(self) -> None:
        """Show or hide the key panel."""
        if self.screen.query("HelpPanel"):
            self.action_hide_help_panel()
        else:
            self.action_show_help_panel()


def build_parser() -> argparse.ArgumentParser:
    """The `tooluse tui` arguments."""
    parser = argparse.ArgumentParser(
        prog="tooluse tui", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("paths", nargs="*", help="a run folder, an episodes.jsonl or a metrics.jsonl; or two runs")
    parser.add_argument("--poll", type=float, default=0.5, help="seconds between polls of a followed file")
    return parser


def main(argv: list[str] | None = None) -> int:
    """The `tooluse tui` console script; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        target = resolve(args.paths)
    except TargetError as e:
        print(f"tooluse tui: {e}", file=sys.stderr)
        return 2
    ToolUseApp(TuiConfig(target, poll_s=args.poll)).run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
