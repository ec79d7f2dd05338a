"""`ReplayScreen`: the episodes of a file in a filterable, sortable table; Enter opens one.

The file is summarized in a thread worker, a batch at a time, so the first rows show while
the rest is read. A text search greps the raw lines, also in a worker.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Header, Input, Static

from tooluse_tui.data import SORT_COLUMNS, EpisodeFilter, EpisodeStore, select
from tooluse_tui.runs import short_name
from tooluse_tui.table import RowTable
from tooluse_tui.transcript_view import EpisodeHost, TranscriptView
from tooluse_tui.widgets import EPISODE_COLUMNS, ISSUE_MARK, KeyBar, episode_cells, short_error

_SORTS = list(SORT_COLUMNS)


class Loaded(Message, bubble=False):
    """A batch of summaries was added to the store (`done` after the last one)."""

    def __init__(self, done: bool) -> None:
        super().__init__()
        self.done = done


class Searched(Message, bubble=False):
    """The lines that contain `text`."""

    def __init__(self, text: str, lines: frozenset[int]) -> None:
        super().__init__()
        self.text = text
        self.lines = lines


class ReplayScreen(EpisodeHost, Screen[None]):
    """The episode table of one ``episodes.jsonl``.

    Args:
        store: The episodes (read in a worker once the screen is mounted).
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("slash", "search", "search"),
        Binding("x", "failed_only", "failed only"),
        Binding("c", "category", "category"),
        Binding("e", "error_type", "error type"),
        Binding("s", "sort", "sort"),
        Binding("d", "reverse", "reverse"),
        Binding("escape", "focus_table", "table", show=False),
    ]
    """Filter and sort keys (the table handles the cursor and Enter)."""

    def __init__(self, store: EpisodeStore) -> None:
        super().__init__()
        self.store = store
        self.where = EpisodeFilter()
        """The current filter."""
        self.search_text = ""
        self.sort = "file order"
        self.reverse = False
        self.loaded = False
        self._shown = 0

    def compose(self) -> ComposeResult:
        """The layout: search box, filters, the episode table and its status line."""
        yield Header()
        with Vertical(id="main"):
            yield Input(placeholder="/ search: task id or any text in the episode, Enter to apply", id="search")
            yield Static(id="filters", classes="filters")
            yield RowTable(EPISODE_COLUMNS, episode_cells, empty="reading…", id="episodes")
        yield TranscriptView()
        yield Static(id="replay-status", classes="status", markup=False)
        yield KeyBar(classes="keys")

    def on_mount(self) -> None:
        """Title the screen, show the keys and start loading the episodes."""
        self.sub_title = short_name(self.store.path)
        self.show_keys()
        self.query_one(RowTable).focus()
        self._describe()
        self.load()

    @work(thread=True, exclusive=True, group="scan")
    def load(self) -> None:
        """Read the episodes in a worker, posting each batch."""
        for _ in self.store.scan():
            self.post_message(Loaded(done=False))
        self.post_message(Loaded(done=True))

    def on_loaded(self, message: Loaded) -> None:
        """Add the newly read episodes to the table."""
        table = self.query_one(RowTable)
        self.loaded = message.done
        new = self.store.summaries[self._shown :]
        self._shown += len(new)
        if self.sort == "file order" and not self.reverse:
            table.append_items([s for s in new if self.where.matches(s)])
        else:
            self._apply()
        if message.done:
            table.empty = "no episodes match the filter" if self.store.summaries else self._empty_reason()
            if self.search_text:
                self._search(self.search_text)
        self._describe()

    def _empty_reason(self) -> str:
        health = self.store.health.describe()
        return f"no episodes in {short_name(self.store.path)}" + (f" ({health})" if health else " (the file is empty)")

    def _apply(self) -> None:
        table = self.query_one(RowTable)
        table.set_items(select(self.store.summaries, self.where, self.sort, self.reverse), keep=table.current)
        self._describe()

    def _describe(self) -> None:
        summaries = self.store.summaries
        failed = sum(s.failed for s in summaries)
        w = self.where
        arrow = "↓" if self.reverse else "↑"
        filters = Text()
        for i, (name, value, keys) in enumerate(
            [
                ("failed only", "on" if w.failed_only else "off", "x"),
                ("category", w.category or "all", "c"),
                ("error", short_error(w.error_type) or "all", "e"),
                ("search", self.search_text or "-", "/"),
                ("sort", f"{self.sort} {arrow}", "s, d"),
            ]
        ):
            filters.append(f"{' · ' if i else ''}{name} ")
            filters.append(value, style="bold")
            filters.append(f" ({keys})")
        self.query_one("#filters", Static).update(filters)
        shown = len(self.query_one(RowTable).items)
        parts = [f"{len(summaries)} episodes", f"{failed} failed", f"{shown} shown"]
        flagged = sum(s.known_issue is not None for s in summaries)
        if flagged:
            parts.append(f"{flagged} on known-issue tasks ({ISSUE_MARK})")
        if not self.loaded:
            parts.append(f"reading {len(self.store.file)} lines…")
        health = self.store.health.describe()
        if health:
            parts.append(health)
        self.query_one("#replay-status", Static).update(" · ".join(parts))

    def _cycle(self, current: str | None, values: list[str]) -> str | None:
        options: list[str | None] = [None, *values]
        return options[(options.index(current) + 1) % len(options)] if current in options else None

    def action_failed_only(self) -> None:
        """Toggle showing failed episodes only."""
        self._set_filter(failed_only=not self.where.failed_only)

    def action_category(self) -> None:
        """Filter by the next category (all, then each in turn)."""
        values = sorted({s.category for s in self.store.summaries})
        self._set_filter(category=self._cycle(self.where.category, values))

    def action_error_type(self) -> None:
        """Filter by the next error type (all, then each in turn)."""
        values = sorted({s.error_type for s in self.store.summaries if s.error_type})
        self._set_filter(error_type=self._cycle(self.where.error_type, values))

    def action_sort(self) -> None:
        """Sort by the next column."""
        self.sort = _SORTS[(_SORTS.index(self.sort) + 1) % len(_SORTS)]
        self._apply()

    def action_reverse(self) -> None:
        """Reverse the sort order."""
        self.reverse = not self.reverse
        self._apply()

    def action_focus_table(self) -> None:
        """Focus the episode table."""
        self.query_one(RowTable).focus()

    def action_search(self) -> None:
        """Focus the search box."""
        self.query_one("#search", Input).focus()

    def _set_filter(self, **changes: Any) -> None:
        self.where = dataclasses.replace(self.where, **changes)
        self._apply()

    @on(RowTable.HeaderClicked)
    def _sort_by_column(self, message: RowTable.HeaderClicked) -> None:
        name = _SORTS[message.column + 1]
        self.reverse = not self.reverse if self.sort == name else False
        self.sort = name
        self._apply()

    @on(Input.Submitted, "#search")
    def _submit_search(self, message: Input.Submitted) -> None:
        self.search_text = message.value.strip()
        self.query_one(RowTable).focus()
        if not self.search_text:
            self._set_filter(lines=None)
            return
        self._search(self.search_text)

    @work(thread=True, exclusive=True, group="search")
    def _search(self, text: str) -> None:
        lines = self.store.search(text, [s.line for s in self.store.summaries])
        self.post_message(Searched(text, frozenset(lines)))

    def on_searched(self, message: Searched) -> None:
        """Apply a finished search when it is still the current one."""
        if message.text == self.search_text:
            self._set_filter(lines=message.lines)

    @on(RowTable.Selected, "#episodes")
    def _open(self, message: RowTable.Selected) -> None:
        line = message.item.line
        record = self.store.record(line)
        if record is None:
            self.notify(f"line {line + 1} cannot be read", severity="error", markup=False)
            self._describe()
            return
        self.open_episode(record, f"{short_name(self.store.path)} line {line + 1}")

    def main_keys(self) -> tuple[list[BindingType], ...]:
        """The key groups the key panel shows."""
        return (RowTable.BINDINGS, self.BINDINGS)

    def focus_main(self) -> None:
        """Focus the episode table."""
        self.query_one(RowTable).focus()
