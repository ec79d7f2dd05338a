"""Widgets and messages shared by the screens."""

from __future__ import annotations

from rich.text import Text

from tui.data import EpisodeSummary
from tui.table import Column

EPISODE_COLUMNS = (
    Column("task id", 28),
    Column("category", 12),
    Column("seed", 4, "right"),
    Column("reward", 6, "right"),
    Column("turns", 5, "right"),
    Column("steps", 5, "right"),
    Column("error type", 28),
    Column("tokens", 8, "right"),
)
"""The episode table's columns (replay, live)."""


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
    ]
