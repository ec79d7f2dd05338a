"""`RowTable`: a keyboard-driven table that renders only the rows on screen (Line API).

Textual's `DataTable` builds every row up front (seconds for 10,000 episodes); this one keeps
a list of items and formats a row when it is drawn, so filling, filtering and sorting cost
no more than building the list.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

Cell = str | Text


@dataclass(frozen=True)
class Column:
    """A column: its title, width in cells and alignment (``left`` or ``right``)."""

    title: str
    width: int
    justify: str = "left"


class RowTable(ScrollView, can_focus=True):
    """Rows of `items`, formatted by `format_row` when drawn; a header line; a row cursor.

    Args:
        columns: The columns.
        format_row: Item -> one cell per column.
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up,k", "move(-1)", "up", show=False),
        Binding("down,j", "move(1)", "down", show=False),
        Binding("pageup", "page(-1)", "page up", show=False),
        Binding("pagedown", "page(1)", "page down", show=False),
        Binding("home", "jump(0)", "first", show=False),
        Binding("end", "jump(-1)", "last", show=False),
        Binding("enter", "select", "open"),
    ]
    """Cursor keys; Enter posts `RowTable.Selected`."""

    COMPONENT_CLASSES: ClassVar[set[str]] = {"row-table--header", "row-table--cursor", "row-table--empty"}
    """Styles of the header line, the cursor row and the message shown when there are no rows."""

    DEFAULT_CSS = """
    RowTable { height: 1fr; }
    RowTable > .row-table--header { text-style: bold; background: $panel; }
    RowTable > .row-table--cursor { background: $accent 40%; }
    RowTable:focus > .row-table--cursor { background: $accent; color: $text; }
    RowTable > .row-table--empty { color: $text-muted; text-style: italic; }
    """

    cursor: reactive[int] = reactive(0, init=False, always_update=True)
    """Index of the highlighted row in `items`."""

    class Selected(Message):
        """Enter (or a click on the highlighted row) on an item."""

        def __init__(self, table: RowTable, item: Any) -> None:
            super().__init__()
            self.table = table
            self.item = item

        @property
        def control(self) -> RowTable:
            """The table that sent the message."""
            return self.table

    class HeaderClicked(Message):
        """A click on a column title."""

        def __init__(self, table: RowTable, column: int) -> None:
            super().__init__()
            self.table = table
            self.column = column

    def __init__(
        self,
        columns: Sequence[Column],
        format_row: Callable[[Any], Sequence[Cell]],
        *,
        empty: str = "no rows",
        id: str | None = None,
        classes: str | None = None,
    ):
        super().__init__(id=id, classes=classes)
        self.columns = tuple(columns)
        self.format_row = format_row
        self.empty = empty
        """Shown in place of the rows when there are none."""
        self.items: list[Any] = []
        self.titles: list[str] = [c.title for c in self.columns]
        """Column titles as drawn (a screen may mark the sort column)."""

    @property
    def row_width(self) -> int:
        """The width of a row: every column and its gap."""
        return sum(c.width + 1 for c in self.columns)

    def set_items(self, items: Sequence[Any], keep: Any = None) -> None:
        """Show `items`; the cursor stays on `keep` (an item) when it is still there, else on the first row."""
        self.items = list(items)
        self.virtual_size = Size(self.row_width, len(self.items) + 1)
        index = self.items.index(keep) if keep is not None and keep in self.items else 0
        self.cursor = index
        self.refresh()

    def append_items(self, items: Sequence[Any]) -> None:
        """Add rows at the end (the cursor stays where it is)."""
        self.items.extend(items)
        self.virtual_size = Size(self.row_width, len(self.items) + 1)
        self.refresh()

    @property
    def current(self) -> Any:
        """The item under the cursor, or None."""
        return self.items[self.cursor] if 0 <= self.cursor < len(self.items) else None

    def watch_cursor(self, cursor: int) -> None:
        """Keep the cursor on a row and in view."""
        clamped = max(0, min(cursor, len(self.items) - 1))
        if clamped != cursor:
            self.cursor = clamped
            return
        page = max(self.size.height - 1, 1)
        top = round(self.scroll_offset.y)
        if cursor < top:
            self.scroll_to(y=cursor, animate=False)
        elif cursor >= top + page:
            self.scroll_to(y=cursor - page + 1, animate=False)
        self.refresh()

    def action_move(self, delta: int) -> None:
        """Move the cursor by `delta` rows."""
        self.cursor = self.cursor + delta

    def action_page(self, direction: int) -> None:
        """Move the cursor by a page up (-1) or down (1)."""
        self.cursor = self.cursor + direction * max(self.size.height - 2, 1)

    def action_jump(self, index: int) -> None:
        """Move the cursor to row `index` (-1: the last)."""
        self.cursor = index if index >= 0 else len(self.items) - 1

    def action_select(self) -> None:
        """Post `Selected` for the row under the cursor."""
        if self.current is not None:
            self.post_message(self.Selected(self, self.current))

    def on_click(self, event: events.Click) -> None:
        """A click on a title posts `HeaderClicked`; on a row it moves the cursor there (or selects it)."""
        if event.y == 0:
            x = event.x + round(self.scroll_offset.x)
            for i, column in enumerate(self.columns):
                x -= column.width + 1
                if x < 0:
                    self.post_message(self.HeaderClicked(self, i))
                    return
            return
        index = round(self.scroll_offset.y) + event.y - 1
        if 0 <= index < len(self.items):
            if index == self.cursor:
                self.action_select()
            self.cursor = index

    def render_line(self, y: int) -> Strip:
        """Row `y` of the view: the titles, a row, the empty message or a blank."""
        width = self.size.width
        scroll_x = round(self.scroll_offset.x)
        base = self.rich_style
        cells: Sequence[Cell]
        if y == 0:
            cells = self.titles
            style = self.get_component_rich_style("row-table--header")
        else:
            index = round(self.scroll_offset.y) + y - 1
            if not self.items and y == 1:
                style = self.get_component_rich_style("row-table--empty")
                return Strip([Segment(f" {self.empty}", style)]).adjust_cell_length(width, base)
            if index >= len(self.items):
                return Strip.blank(width, base)
            cells = self.format_row(self.items[index])
            style = self.get_component_rich_style("row-table--cursor") if index == self.cursor else Style()
        line = Text(no_wrap=True, overflow="ellipsis")
        for column, cell in zip(self.columns, cells, strict=False):
            text = cell.copy() if isinstance(cell, Text) else Text(str(cell))
            text.truncate(column.width, overflow="ellipsis", pad=False)
            pad = " " * (column.width - text.cell_len)
            if column.justify == "right":
                line.append(pad)
                line.append_text(text)
            else:
                line.append_text(text)
                line.append(pad)
            line.append(" ")
        line.stylize(style)
        segments = list(line.render(self.app.console))
        strip = Strip(segments).crop_extend(scroll_x, scroll_x + width, base + style)
        return strip.apply_style(base)
