"""`CompareScreen`: two evaluation runs side by side.

Accuracy per category with 95% CIs over the episodes both runs played (the same task and seed;
a warning says what either run holds beyond them), for BFCL runs also over the clean subset (the
tasks the known-issues registry does not list), the protocol cards with differing fields highlighted,
and the tasks the runs disagree on, marked when the registry lists them; `a`/`b` (or Enter
for A) open a task's episode.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from rich.table import Table
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Header, Static

from tooluse_agents.runs.results import coverage_lines
from tooluse_tui.data import EpisodeStore
from tooluse_tui.runs import CategoryRow, Comparison, Disagreement, compare, load_results, short_name
from tooluse_tui.table import Column, RowTable
from tooluse_tui.transcript_view import EpisodeHost, TranscriptView
from tooluse_tui.widgets import KeyBar, issue_cell

DISAGREEMENT_COLUMNS = (
    Column("task id", 30),
    Column("A reward", 8, "right"),
    Column("B reward", 8, "right"),
    Column("known issue", 11),
)


def _pct(mean: float | None, ci: float | None) -> str:
    if mean is None:
        return "-"
    return f"{100 * mean:5.1f}" + (f" ±{100 * ci:.1f}" if ci is not None else " ±n/a")


def _value(value: Any) -> str:
    text = str(value)
    return text if len(text) <= 18 else text[:12] + "…"


def card_table(comparison: Comparison) -> Table:
    """The protocol cards field by field; differing fields in bold red."""
    a, b = comparison.names
    table = Table(box=None, padding=(0, 1), expand=True)
    table.add_column("field", no_wrap=True)
    table.add_column(f"A {a}", no_wrap=True)
    table.add_column(f"B {b}", no_wrap=True)
    for row in comparison.card:
        style = "bold red" if row.differs else "dim"
        table.add_row(("≠ " if row.differs else "  ") + row.key, _value(row.a), _value(row.b), style=style)
    return table


def accuracy_table(comparison: Comparison) -> Table:
    """Accuracy (%) per category in both runs with 95% CIs across seeds, and B - A."""
    table = Table(box=None, padding=(0, 1), expand=True)
    for title in ("category", "A (%)", "B (%)", "B - A"):
        table.add_column(title, justify="left" if title == "category" else "right", no_wrap=True)
    for row in comparison.categories:
        table.add_row(*_accuracy_cells(row))
    if comparison.registry_version is not None:
        table.add_section()
        table.add_row(Text("clean subset", style="italic dim"))
        for row in comparison.clean:
            table.add_row(*_accuracy_cells(row))
    return table


def _accuracy_cells(row: CategoryRow) -> list[str | Text]:
    diff = row.diff
    style = "" if diff is None or diff == 0 else ("green" if diff > 0 else "red")
    return [
        Text(row.category, style="bold" if row.category == "overall" else ""),
        _pct(row.a, row.a_ci),
        _pct(row.b, row.b_ci),
        Text("-" if diff is None else f"{100 * diff:+.1f}", style=style),
    ]


def disagreement_cells(d: Disagreement) -> list[str | Text]:
    """One disagreement as table cells: task id, each run's mean (green at 0.5 or more), a known-issue mark."""
    return [
        d.task_id,
        Text(f"{d.a:.2f}", style="green" if d.a >= 0.5 else "red"),
        Text(f"{d.b:.2f}", style="green" if d.b >= 0.5 else "red"),
        issue_cell(d.task_id) if d.known_issue else "",
    ]


class Compared(Message, bubble=False):
    """Both runs were read."""

    def __init__(self, comparison: Comparison) -> None:
        super().__init__()
        self.comparison = comparison


class CompareScreen(EpisodeHost, Screen[None]):
    """Two run folders compared.

    Args:
        runs: The two run folders (A, B).
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("a", "open(0)", "open A's episode"),
        Binding("b", "open(1)", "open B's episode"),
    ]
    """Open the highlighted task's episode in run A or B."""

    def __init__(self, runs: tuple[Path, Path]) -> None:
        super().__init__()
        self.runs = runs
        self.stores = tuple(EpisodeStore(run / "episodes.jsonl") for run in runs)
        names = tuple(run.name for run in runs)
        if names[0] == names[1]:
            names = tuple(short_name(run) for run in runs)
        self.names: tuple[str, str] = (names[0], names[1])
        self.comparison: Comparison | None = None

    def compose(self) -> ComposeResult:
        """The layout: warning, protocol cards and accuracy side by side, disagreeing tasks."""
        yield Header()
        with Vertical(id="main"):
            yield Static(id="warning", markup=False)
            with Horizontal(id="compare-top"):
                yield Static(id="card", classes="panel")
                yield Static(id="accuracy", classes="panel")
            yield Static("reading…", id="disagree-title", classes="section", markup=False)
            yield RowTable(DISAGREEMENT_COLUMNS, disagreement_cells, empty="no disagreements", id="disagreements")
        yield TranscriptView()
        yield Static(id="compare-status", classes="status", markup=False)
        yield KeyBar(classes="keys")

    def on_mount(self) -> None:
        """Title the panels, show the keys and start loading both runs."""
        self.sub_title = f"A {self.names[0]}  vs  B {self.names[1]}"
        self.show_keys()
        self.query_one("#card").border_title = "protocol cards"
        self.query_one("#accuracy").border_title = "accuracy per category (95% CI over seeds)"
        self.query_one(RowTable).focus()
        self.load()

    @work(thread=True, exclusive=True, group="compare")
    def load(self) -> None:
        """Read both runs in a worker and post their comparison."""
        for store in self.stores:
            for _ in store.scan():
                pass
        results = tuple(load_results(run, s.summaries, s) for run, s in zip(self.runs, self.stores, strict=True))
        summaries = (self.stores[0].summaries, self.stores[1].summaries)
        self.post_message(Compared(compare(self.names, (results[0], results[1]), summaries)))

    def on_compared(self, message: Compared) -> None:
        """Fill the panels from the comparison, with a warning when the protocol cards differ."""
        c = self.comparison = message.comparison
        differing = [row.key for row in c.card if row.differs]
        warnings = []
        if differing:
            warnings.append(
                f"⚠ the protocol cards differ in {', '.join(differing)}: these results are NOT directly comparable"
            )
        if not c.same_episodes:
            warnings.append("⚠ " + " ".join(coverage_lines(c)))
        warning = self.query_one("#warning", Static)
        warning.display = bool(warnings)
        warning.update("\n".join(warnings))
        self.query_one("#card", Static).update(card_table(c))
        accuracy = self.query_one("#accuracy", Static)
        accuracy.update(accuracy_table(c))
        if c.registry_version is not None:
            accuracy.border_subtitle = (
                f"clean: known-issues registry {c.registry_version}, {len(c.excluded_tasks)} tasks out"
            )
        self.query_one("#disagree-title", Static).update(
            f"{len(c.disagreements)} of {c.shared_tasks} shared tasks disagree"
            " (mean reward over seeds >= 0.5 in one run only) · Enter/a opens A's episode, b opens B's"
        )
        self.query_one(RowTable).set_items(c.disagreements)
        parts = [f"A {short_name(self.stores[0].path)}", f"B {short_name(self.stores[1].path)}"]
        for name, store in zip("AB", self.stores, strict=True):
            parts.append(f"{name}: {len(store.summaries)} episodes")
            if store.health.describe():
                parts.append(f"{name}: {store.health.describe()}")
        self.query_one("#compare-status", Static).update(" · ".join(parts))

    @on(RowTable.Selected, "#disagreements")
    def _open_a(self) -> None:
        self.action_open(0)

    def action_open(self, run: int) -> None:
        """Open the selected task's episode from run `run` (0: A, 1: B)."""
        d = self.query_one(RowTable).current
        if d is None:
            return
        store = self.stores[run]
        mean = d.a if run == 0 else d.b
        mine = [s for s in store.summaries if s.task_id == d.task_id]
        pick = next((s for s in mine if s.failed == (mean < 0.5)), mine[0] if mine else None)
        record = store.record(pick.line) if pick is not None else None
        if pick is None or record is None:
            self.notify(f"no readable episode of {d.task_id} in run {'AB'[run]}", severity="error", markup=False)
            return
        self.open_episode(record, f"run {'AB'[run]} {self.names[run]} line {pick.line + 1}")

    def main_keys(self) -> tuple[list[BindingType], ...]:
        """The key groups the key panel shows."""
        return (RowTable.BINDINGS, self.BINDINGS)

    def focus_main(self) -> None:
        """Focus the disagreements table."""
        self.query_one(RowTable).focus()
