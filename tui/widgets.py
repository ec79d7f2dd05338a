"""Widgets and messages shared by the screens."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from rich.text import Text
from textual.binding import Binding, BindingType
from textual.widgets import Static

from tooluse_tui.data import EpisodeSummary, known_issue
from tooluse_tui.table import Column

EPISODE_COLUMNS = (
    Column("task id", 27),
    Column("category", 12),
    Column("seed", 10, "right"),  # a training rollout's derived seed has up to 10 digits
    Column("reward", 6, "right"),
    Column("turns", 5, "right"),
    Column("steps", 5, "right"),
    Column("error type", 27),
    Column("tokens", 7, "right"),
    Column("known issue", 11),
)
"""The episode table's columns (replay, live)."""

ISSUE_MARK = "⚑"
"""Marks a task that the BFCL known-issues registry lists."""


def issue_cell(task_id: str) -> Text:
    """``⚑ date`` / ``⚑ wrong gt`` for a task the known-issues registry lists, else empty."""
    entry = known_issue(task_id)
    return Text(f"{ISSUE_MARK} {entry.label}", style="bold yellow") if entry is not None else Text("")


def short_error(error_type: str | None) -> str:
    """An error type without BFCL's ``multi_turn:`` prefix."""
    if not error_type:
        return ""
    return error_type.removeprefix("multi_turn:")


def episode_cells(s: EpisodeSummary) -> list[str | Text]:
    """One row of the episode table."""
    reward = Text(f"{s.reward:g}", style="green" if not s.failed else "red")
    return [
        s.task_id,
        s.category,
        str(s.seed),
        reward,
        f"{s.turns}/{s.num_turns}",
        str(s.steps),
        Text(short_error(s.error_type), style="red" if s.error_type else ""),
        f"{s.tokens:,}",
        issue_cell(s.task_id) if s.known_issue else "",
    ]


class KeyBar(Static):
    """One line of the keys that work now.

    A light stand-in for Textual's `Footer`, which mounts a widget per key again whenever
    the bindings change (most of the cost of opening an episode).
    """

    def show(self, *groups: Iterable[BindingType]) -> None:
        """List the shown bindings of `groups`, in order (less those the app turns off, `App.check_action`)."""
        text = Text()
        for bindings in groups:
            for b in bindings:
                if not isinstance(b, Binding) or not b.show or self.app.check_action(b.action, ()) is False:
                    continue
                key = self.app.get_key_display(dataclasses.replace(b, key=b.key.split(",")[0]))
                text.append("  " if text else "")
                text.append(key, style="bold")
                text.append(f" {b.description}")
        self.update(text)
