"""`TranscriptView`: one episode's transcript, revealed step by step, with playback.

Each screen holds one view, hidden until an episode is opened, so opening one costs a
redraw rather than a new screen. The transcript is a single widget: its pieces (user
messages, assistant steps, verdicts) are drawn once (again when a fold changes) and the
ones the cursor has reached are shown.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from rich import box
from rich.console import Group, RenderableType
from rich.padding import Padding
from rich.panel import Panel
from rich.rule import Rule
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.reactive import reactive
from textual.timer import Timer
from textual.widgets import Static

from tooluse_agents.runs.records import EpisodeRecord, TurnEntry
from tooluse_tui import transcript as tx
from tooluse_tui.widgets import KeyBar

SPEEDS = (0.5, 1.0, 2.0, 4.0, 8.0)
"""Playback speeds in steps per second."""

Draw = Callable[[bool, bool], Text]
"""(show_reasoning, show_full) -> the text of one piece of the transcript."""


def _piece(kind: str, text: Text, current: bool) -> RenderableType:
    """A piece laid out by kind; assistant steps are boxed, the current one highlighted."""
    if kind == "step":
        return Panel(
            text,
            box=box.ROUNDED,
            border_style="bold yellow" if current else "grey42",
            padding=(0, 1),
            title="▶ current" if current else None,
            title_align="left",
        )
    if kind == "header":
        return Group(text, Rule(style="grey42"))
    if kind in ("user", "ending"):
        return Padding(text, (1, 0, 0, 0))
    return Padding(text, (0, 0, 0, 1))


def _draw_user(turn: TurnEntry) -> Draw:
    return lambda r, f: tx.user_text(turn)


def _draw_step(frame: tx.Frame) -> Draw:
    return lambda r, f: tx.step_text(frame, show_reasoning=r, show_full=f)


def _draw_verdict(turn: TurnEntry) -> Draw:
    return lambda r, f: tx.verdict_text(turn, show_full=f)


def layout(record: EpisodeRecord, frames: list[tx.Frame]) -> list[tuple[int, str, Draw]]:
    """(frame that reveals it, kind, draw) for every piece of an episode's transcript, in order."""
    last_frame = max(len(frames) - 1, 0)
    pieces: list[tuple[int, str, Draw]] = [(0, "header", lambda r, f: tx.header(record))]
    previous = 0
    for turn in record.turns:
        mine = [f for f in frames if f.turn == turn.turn]
        first = mine[0].index if mine else previous
        last = mine[-1].index if mine else previous
        pieces.append((first, "user", _draw_user(turn)))
        for frame in mine:
            pieces.append((frame.index, "step", _draw_step(frame)))
        pieces.append((last, "verdict", _draw_verdict(turn)))
        previous = last
    pieces.append((last_frame, "ending", lambda r, f: tx.ending_text(record)))
    return pieces


class TranscriptView(Vertical):
    """The transcript of one episode record, with its own status line; Escape closes it."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "back"),
        Binding("right,n", "step(1)", "next step", priority=True),
        Binding("left,p", "step(-1)", "prev", priority=True),
        Binding("home", "go(0)", "first", show=False, priority=True),
        Binding("end", "go(-1)", "last", show=False, priority=True),
        Binding("f", "first_failure", "first failure"),
        Binding("space", "play", "play/pause"),
        Binding("plus,equals_sign", "speed(1)", "faster", show=False),
        Binding("minus", "speed(-1)", "slower", show=False),
        Binding("r", "toggle_reasoning", "reasoning"),
        Binding("o", "toggle_results", "long results"),
    ]
    """Step, jump, play and fold keys (up/down and the page keys scroll the transcript)."""

    cursor: reactive[int] = reactive(0, init=False, always_update=True)
    """Index of the current frame (step)."""
    show_reasoning: reactive[bool] = reactive(False, init=False)
    """Unfold ``<think>`` reasoning."""
    show_full: reactive[bool] = reactive(False, init=False)
    """Unfold long tool results."""

    class Closed(Message):
        """The view was closed (Escape)."""

    def __init__(self, id: str | None = "episode") -> None:
        super().__init__(id=id)
        self.record: EpisodeRecord | None = None
        """The episode shown."""
        self.source = ""
        self.frames: list[tx.Frame] = []
        self.last = 0
        self.playing = False
        self.speed = 2
        """Index into `SPEEDS`."""
        self._pieces: list[tuple[int, str, Draw]] = []
        self._texts: list[tuple[int, str, Text]] = []
        self._timer: Timer | None = None

    def compose(self) -> ComposeResult:
        """The layout: the transcript over its status line."""
        with VerticalScroll(id="transcript"):
            yield Static(id="transcript-body")
        yield Static(id="episode-status", classes="status", markup=False)

    def open(self, record: EpisodeRecord, source: str = "") -> None:
        """Show `record` (all of it: the cursor starts on the last step) and take the focus."""
        self._stop()
        self.record, self.source = record, source
        self.frames = tx.frames(record)
        self.last = max(len(self.frames) - 1, 0)
        self._pieces = layout(record, self.frames)
        self._draw_texts()
        self.display = True
        self.query_one("#transcript", VerticalScroll).focus()
        self.cursor = self.last

    def action_close(self) -> None:
        """Stop playing, hide the view and post `Closed`."""
        self._stop()
        self.display = False
        self.post_message(self.Closed())

    def watch_cursor(self) -> None:
        """Show the step under the cursor."""
        self._show()

    def watch_show_reasoning(self) -> None:
        """Redraw with reasoning shown or folded."""
        self._draw_texts()
        self._show()

    def watch_show_full(self) -> None:
        """Redraw with tool results in full or folded."""
        self._draw_texts()
        self._show()

    def _draw_texts(self) -> None:
        self._texts = [(frame, kind, draw(self.show_reasoning, self.show_full)) for frame, kind, draw in self._pieces]

    def _show(self) -> None:
        """Show the pieces up to the cursor and scroll to their end (the current step and its verdict)."""
        cursor = self.cursor
        shown = [_piece(k, text, k == "step" and frame == cursor) for frame, k, text in self._texts if frame <= cursor]
        self.query_one("#transcript-body", Static).update(Group(*shown))
        self.query_one("#transcript", VerticalScroll).anchor()  # stays at the end through the next layout
        self._status()

    def _status(self) -> None:
        turn = self.frames[self.cursor].turn if self.frames else 0
        state = "playing" if self.playing else "paused"
        state += f" at {SPEEDS[self.speed]:g} steps/s (+/-)"
        folds = f"reasoning {'shown' if self.show_reasoning else 'folded'} (r)"
        folds += f" · long results {'shown' if self.show_full else 'folded'} (o)"
        steps = f"step {self.cursor + 1}/{len(self.frames)} · turn {turn}" if self.frames else "no steps recorded"
        self.query_one("#episode-status", Static).update(f"{steps} · {state} · {folds}")

    def action_step(self, delta: int) -> None:
        """Step forward or back by `delta` steps."""
        self._stop()
        self.cursor = max(0, min(self.cursor + delta, self.last))

    def action_go(self, index: int) -> None:
        """Go to step `index` (-1: the last)."""
        self._stop()
        self.cursor = self.last if index < 0 else index

    def action_first_failure(self) -> None:
        """Go to the first step of the first failing turn."""
        frame = tx.first_failing_frame(self.record) if self.record is not None else None
        if frame is None:
            self.notify("no failing turn in this episode", timeout=3)
            return
        self._stop()
        self.cursor = frame

    def action_play(self) -> None:
        """Play the episode step by step, or pause."""
        if self.playing:
            self._stop()
            return
        if self.cursor >= self.last:
            self.cursor = 0
        self.playing = True
        self._start_timer()

    def action_speed(self, delta: int) -> None:
        """Play faster or slower."""
        self.speed = max(0, min(self.speed + delta, len(SPEEDS) - 1))
        if self.playing:
            self._start_timer()
        self._status()

    def action_toggle_reasoning(self) -> None:
        """Show or fold reasoning."""
        self.show_reasoning = not self.show_reasoning

    def action_toggle_results(self) -> None:
        """Show tool results in full or folded."""
        self.show_full = not self.show_full

    def _start_timer(self) -> None:
        if self._timer is not None:
            self._timer.stop()
        self._timer = self.set_interval(1 / SPEEDS[self.speed], self._tick)
        self._status()

    def _tick(self) -> None:
        if self.cursor < self.last:
            self.cursor += 1
        if self.cursor >= self.last:
            self._stop()

    def _stop(self) -> None:
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        if self.playing:
            self.playing = False
            self._status()


class EpisodeHost:
    """Mixin for screens that open episodes in their `TranscriptView` (over a ``#main`` container).

    While an episode is shown, the screen's own key bindings are off (`check_action`).
    """

    def open_episode(self, record: Mapping[str, Any], source: str) -> None:
        """Show `record`; a record whose transcript cannot be read is reported, not shown."""
        screen: Any = self
        try:
            episode = EpisodeRecord.from_dict(record)
            pieces = layout(episode, tx.frames(episode))
            for _, _, draw in pieces:
                draw(False, False)
        except (AttributeError, TypeError, ValueError, KeyError) as e:
            message = f"{source}: cannot show this episode ({type(e).__name__}: {e})"
            screen.notify(message, severity="error", markup=False)
            return
        self._main_title = screen.sub_title
        screen.sub_title = source
        screen.query_one("#main").display = False
        screen.query_one(TranscriptView).open(episode, source)
        self.show_keys()

    def show_keys(self) -> None:
        """Fill the key bar for what is shown: the episode's keys, or the main view's."""
        screen: Any = self
        groups = (TranscriptView.BINDINGS,) if self.viewing else self.main_keys()
        screen.query_one(KeyBar).show(*groups, screen.app.BINDINGS)

    def main_keys(self) -> tuple[list[BindingType], ...]:
        """The bindings of the main view, in the order they are listed."""
        return ()

    @property
    def viewing(self) -> bool:
        """Whether an episode is shown."""
        views = self.query(TranscriptView)  # type: ignore[attr-defined]
        return bool(views and views.first().display)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """The host's own keys work only while no episode is open."""
        return not self.viewing

    def on_transcript_view_closed(self, message: TranscriptView.Closed) -> None:
        """Show the host's main view again when the episode view closes."""
        screen: Any = self
        screen.sub_title = getattr(self, "_main_title", screen.sub_title)
        screen.query_one("#main").display = True
        self.show_keys()
        self.focus_main()

    def focus_main(self) -> None:
        """Give the focus back to the screen's main widget once the episode is closed."""
