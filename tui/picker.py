"""`RunListScreen`: the runs found below a folder, one a row; Enter opens one.

`tooluse tui runs/first-run` points at a folder that holds runs a few folders down (model,
benchmark, sweep cell); this screen lists them (`tooluse_tui.runs.find_runs`) and opens the chosen
run's replay or live view on top of the list; backspace comes back to it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Vertical
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Header, Static

from tooluse_tui.runs import RunFolder
from tooluse_tui.table import Column, RowTable
from tooluse_tui.widgets import KeyBar

RUN_COLUMNS = (
    Column("run", 64),
    Column("kind", 8),
    Column("size", 9, "right"),
)
"""The run list's columns."""

KIND_LABEL = {"replay": "episodes", "live": "training"}
"""How each kind of run is shown: an evaluation's episodes, or a training run's live view."""


def _size(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return f"{n} B"  # not reached


def run_cells(run: RunFolder) -> list[str | Text]:
    """One row of the run list."""
    kind = KIND_LABEL.get(run.kind, run.kind)
    return [run.name, Text(kind, style="cyan" if run.kind == "live" else ""), _size(run.size)]


class RunListScreen(Screen[None]):
    """The runs below `root`, to choose one from.

    Args:
        root: The folder given on the command line (the screen's title).
        runs: The runs found below it.
    """

    BINDINGS: ClassVar[list[BindingType]] = []

    def __init__(self, root: Path, runs: Sequence[RunFolder]) -> None:
        super().__init__()
        self.root = root
        self.runs = tuple(runs)

    def compose(self) -> ComposeResult:
        """The layout: a heading, the run table and its status line."""
        yield Header()
        with Vertical(id="main"):
            yield Static("runs below this folder (Enter opens one, backspace comes back)", classes="section")
            yield RowTable(RUN_COLUMNS, run_cells, empty="no runs", id="runs")
        yield Static(id="runs-status", classes="status", markup=False)
        yield KeyBar(classes="keys")

    def on_mount(self) -> None:
        """Title the screen and fill the table."""
        self.sub_title = self.root.name or str(self.root)
        table = self.query_one("#runs", RowTable)
        table.set_items(self.runs)
        table.focus()
        self.query_one(KeyBar).show(RowTable.BINDINGS, self.BINDINGS, self.app.BINDINGS)
        training = sum(r.kind == "live" for r in self.runs)
        parts = [f"{len(self.runs)} runs", f"{len(self.runs) - training} with episodes", f"{training} training"]
        self.query_one("#runs-status", Static).update(" · ".join(parts))

    def on_screen_resume(self) -> None:
        """Focus the table again when a run's screen is closed."""
        self.query_one("#runs", RowTable).focus()
        self.query_one(KeyBar).show(RowTable.BINDINGS, self.BINDINGS, self.app.BINDINGS)

    class Chosen(Message):
        """Enter on a run: the app opens its screen on top of the list."""

        def __init__(self, run: RunFolder) -> None:
            super().__init__()
            self.run = run

    @on(RowTable.Selected, "#runs")
    def _open(self, message: RowTable.Selected) -> None:
        self.post_message(self.Chosen(message.item))
