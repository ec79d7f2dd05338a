"""`LiveScreen`: a training run's ``metrics.jsonl`` as plots that follow the file as it grows.

A thread worker polls the metrics file and the run's ``episodes.jsonl`` and posts
`RunUpdated` when either grew; the UI thread only redraws. The latest rollouts are listed
newest first and open in the episode view.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Grid, Vertical
from textual.message import Message
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Header, Static
from textual.worker import get_current_worker

from tooluse_tui.data import EpisodeStore, MetricsLog
from tooluse_tui.plots import range_line, series_line, split_bar
from tooluse_tui.runs import short_name
from tooluse_tui.table import RowTable
from tooluse_tui.transcript_view import EpisodeHost, TranscriptView
from tooluse_tui.widgets import EPISODE_COLUMNS, KeyBar, episode_cells

LATEST = 50
"""How many of the newest rollouts the list keeps."""


@dataclass(frozen=True)
class Series:
    """A metric drawn as one sparkline."""

    label: str
    key: str
    style: str


@dataclass(frozen=True)
class PanelSpec:
    """A plot panel: its series share one scale (`lo`/`hi` fixed when given).

    `latest` are metrics on another scale, shown by their latest value on one line (when the run
    writes them).
    """

    title: str
    series: tuple[Series, ...]
    lo: float | None = None
    hi: float | None = None
    split: bool = False
    latest: tuple[Series, ...] = ()


TIME = (
    Series("rollout", "time/rollout_s", "cyan"),
    Series("update", "time/update_s", "magenta"),
    Series("sync", "time/sync_s", "yellow"),
)

PANELS = (
    PanelSpec(
        "reward",
        (Series("reward", "rollout/reward_mean", "green"), Series("held-out", "eval/heldout_reward", "cyan")),
    ),
    PanelSpec(
        "groups",
        (
            Series("all right", "groups/all_correct_frac", "green"),
            Series("all wrong", "groups/all_wrong_frac", "red"),
            Series("mixed", "groups/mixed_frac", "yellow"),
        ),
        lo=0.0,
        hi=1.0,
    ),
    PanelSpec(
        "prompts skipped / screened",
        (
            Series("skipped", "filter/skipped_prompts", "magenta"),
            Series("skip wrong", "filter/skipped_all_wrong", "red"),
            Series("screened", "screen/screened_prompts", "yellow"),
        ),
        lo=0.0,
        latest=(Series("p right", "filter/p_correct", "green"), Series("p wrong", "filter/p_wrong", "red")),
    ),
    PanelSpec(
        "rollouts",
        (
            Series("generated", "subsample/generated", "blue"),
            Series("used", "subsample/used", "green"),
            Series("saved", "screen/rollouts_saved", "yellow"),
        ),
        0.0,
    ),
    PanelSpec("time split (s)", TIME, lo=0.0, split=True),
    PanelSpec("throughput", (Series("tokens/s", "perf/tokens_per_s", "cyan"),)),
)
"""The plots of the live view."""


class MetricPanel(Widget):
    """Sparklines of some metrics of a `MetricsLog`, drawn to the panel's width."""

    def __init__(self, spec: PanelSpec, log: MetricsLog) -> None:
        super().__init__(classes="panel")
        self.spec = spec
        self.metrics = log
        self.border_title = spec.title

    def render(self) -> Text:
        """The panel: one row per series, the step range, the last step's split and the latest values."""
        width = max(self.content_size.width - 19, 4)
        data = [self.metrics.series(s.key) for s in self.spec.series]
        values = [v for points in data for _, v in points[-width:]]
        lo = self.spec.lo if self.spec.lo is not None else (min(values) if values else None)
        hi = self.spec.hi if self.spec.hi is not None else (max(values) if values else None)
        lines = [
            series_line(s.label, [v for _, v in points], width, s.style, lo, hi)
            for s, points in zip(self.spec.series, data, strict=True)
        ]
        first = next((points for points in data if points), [])
        lines.append(range_line(lo, hi, [step for step, _ in first[-width:]]))
        if self.spec.split:
            lines.append(self._split([points[-1][1] if points else 0.0 for points in data]))
        latest = self._latest()
        if latest is not None:
            lines.append(latest)
        text = Text("\n").join(lines)
        text.no_wrap, text.overflow = True, "ellipsis"
        return text

    def _latest(self) -> Text | None:
        """``label value`` of each `latest` metric the run writes (None when it writes none)."""
        followed = [(s, self.metrics.series(s.key)) for s in self.spec.latest]
        values = [(s, points[-1][1]) for s, points in followed if points]
        if not values:
            return None
        text = Text()
        for i, (series, value) in enumerate(values):
            text.append(" · " if i else "", style="dim")
            text.append(f"{series.label} ", style="dim")
            text.append(f"{value:.2f}", style=series.style)
        return text

    def _split(self, last: Sequence[float]) -> Text:
        text = Text(f"{'last step':<10} ", style="dim")
        total = sum(last) or 1.0
        for series, cells in zip(self.spec.series, split_bar(last, max(self.content_size.width - 11, 4)), strict=True):
            text.append("█" * cells, style=series.style)
        text.append("\n" + " " * 11)
        for i, (series, value) in enumerate(zip(self.spec.series, last, strict=True)):
            text.append(" / " if i else "", style="dim")
            text.append(f"{100 * value / total:.0f}%", style=series.style)
        return text


class RunUpdated(Message, bubble=False):
    """The metrics or episodes file grew (coalesced: only the latest matters)."""

    def can_replace(self, message: Message) -> bool:
        """A newer update replaces one still queued."""
        return isinstance(message, RunUpdated)


class LiveScreen(EpisodeHost, Screen[None]):
    """Plots of a training run, following its files.

    Args:
        metrics: The run's metrics.
        store: The run's episodes (may not exist yet).
        poll_s: Seconds between polls of the files.
    """

    BINDINGS: ClassVar[list[BindingType]] = []

    def __init__(self, metrics: MetricsLog, store: EpisodeStore, poll_s: float = 0.5) -> None:
        super().__init__()
        self.metrics = metrics
        self.store = store
        self.poll_s = poll_s
        self._wake = threading.Event()

    def compose(self) -> ComposeResult:
        """The layout: the metric panels over the latest rollouts."""
        yield Header()
        with Vertical(id="main"):
            with Grid(id="plots"):
                for spec in PANELS:
                    yield MetricPanel(spec, self.metrics)
            yield Static("latest rollouts (newest first, Enter opens)", classes="section")
            yield RowTable(EPISODE_COLUMNS, episode_cells, empty="no rollouts yet", id="rollouts")
        yield TranscriptView()
        yield Static(id="live-status", classes="status", markup=False)
        yield KeyBar(classes="keys")

    def on_mount(self) -> None:
        """Title the screen, show the keys and start following the run."""
        self.sub_title = short_name(self.metrics.file.path)
        self.show_keys()
        self.query_one("#rollouts", RowTable).focus()
        self._describe()
        self.follow()

    def on_unmount(self) -> None:
        """Wake the follower so that it stops."""
        self._wake.set()

    @work(thread=True, exclusive=True, group="follow")
    def follow(self) -> None:
        """Poll the run's files in a worker thread and post an update when they grow."""
        worker = get_current_worker()
        first = True
        while not worker.is_cancelled:
            grew = self.metrics.poll() > 0
            for batch in self.store.scan():
                grew = grew or bool(batch)
            if grew or first:
                self.post_message(RunUpdated())
            first = False
            if self._wake.wait(self.poll_s):
                return

    def on_run_updated(self, message: RunUpdated) -> None:
        """Redraw the panels and the latest rollouts.

        A panel can grow (its ``latest`` line appears once the run writes that metric), so the layout is
        recomputed too: a plain refresh would clip the new line.
        """
        for panel in self.query(MetricPanel):
            panel.refresh(layout=True)
        table = self.query_one("#rollouts", RowTable)
        table.set_items(self.store.summaries[-LATEST:][::-1], keep=table.current)
        self._describe()

    def _describe(self) -> None:
        rows = self.metrics.rows
        parts = []
        if rows:
            last = rows[-1]
            parts.append(f"step {last.step}")
            if "epoch" in last:
                parts.append(f"epoch {last['epoch']}")
        parts.append(f"{len(rows)} row{'s' if len(rows) != 1 else ''}" if rows else "waiting for the first metrics row")
        parts.append(f"{len(self.store.summaries)} rollouts")
        for name, health in (("metrics", self.metrics.health), ("episodes", self.store.health)):
            if health.describe():
                parts.append(f"{name}: {health.describe()}")
        parts.append(f"polls every {self.poll_s:g} s")
        self.query_one("#live-status", Static).update(" · ".join(parts))

    @on(RowTable.Selected, "#rollouts")
    def _open(self, message: RowTable.Selected) -> None:
        record = self.store.record(message.item.line)
        if record is None:
            self.notify(f"line {message.item.line + 1} cannot be read", severity="error", markup=False)
            return
        self.open_episode(record, f"{short_name(self.store.path)} line {message.item.line + 1}")

    def main_keys(self) -> tuple[list[BindingType], ...]:
        """The key groups the key panel shows."""
        return (RowTable.BINDINGS, self.BINDINGS)

    def focus_main(self) -> None:
        """Focus the rollouts table."""
        self.query_one("#rollouts", RowTable).focus()
