"""`EpisodeScreen`: one episode's transcript, revealed step by step, with playback.

Every part of the transcript (user message, assistant step, verdict) is mounted once and
shown when the cursor reaches its frame, so stepping and playing only toggle visibility.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.reactive import reactive, var
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Footer, Header, Static

from tui import transcript as tx

SPEEDS = (0.5, 1.0, 2.0, 4.0, 8.0)
"""Playback speeds in steps per second."""


class Part(Static):
    """A piece of the transcript, shown once the cursor reaches `frame`.

    Args:
        draw: (show_reasoning, show_full) -> its content; called again when a fold changes.
        frame: The frame that reveals it.
        classes: ``user`` | ``step`` | ``verdict`` | ``ending``.
    """

    def __init__(self, draw: Callable[[bool, bool], Any], frame: int, classes: str) -> None:
        super().__init__(classes=classes)
        self.draw = draw
        self.frame = frame

    def show(self, show_reasoning: bool, show_full: bool) -> None:
        self.update(self.draw(show_reasoning, show_full))


class EpisodeScreen(Screen[None]):
    """The transcript of one episode record.

    Args:
        record: The episode record (``episodes.jsonl`` line).
        source: Where it came from, for the status line.
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "app.pop_screen", "back"),
        Binding("right,n", "step(1)", "next step", priority=True),
        Binding("left,p", "step(-1)", "prev", priority=True),
        Binding("home", "go(0)", "first", show=False, priority=True),
        Binding("end", "go(-1)", "last", show=False, priority=True),
        Binding("f", "first_failure", "first failing turn"),
        Binding("space", "play", "play/pause"),
        Binding("plus,equals_sign", "speed(1)", "faster", show=False),
        Binding("minus", "speed(-1)", "slower", show=False),
        Binding("r", "toggle_reasoning", "reasoning"),
        Binding("o", "toggle_results", "long results"),
    ]
    """Step, jump, play and fold keys (arrows up/down and page keys scroll the transcript)."""

    cursor: reactive[int] = reactive(0, init=False)
    """Index of the current frame (step)."""
    show_reasoning: reactive[bool] = reactive(False, init=False)
    """Unfold ``<think>`` reasoning."""
    show_full: reactive[bool] = reactive(False, init=False)
    """Unfold long tool results."""
    playing: var[bool] = var(False)
    """Whether playback is advancing the cursor."""
    speed: var[int] = var(2)
    """Index into `SPEEDS`."""

    def __init__(self, record: Mapping[str, Any], source: str = "") -> None:
        super().__init__()
        self.record = record
        self.source = source
        self.frames = tx.frames(record)
        self.last = max(len(self.frames) - 1, 0)
        self._timer: Timer | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        with VerticalScroll(id="transcript"):
            yield Static(tx.header(self.record), classes="episode-header")
            previous = 0
            for turn in self.record.get("turns") or []:
                mine = [f for f in self.frames if f.turn == turn.get("turn")]
                first = mine[0].index if mine else previous
                last = mine[-1].index if mine else previous
                yield Part(lambda r, f, turn=turn: tx.user_text(turn), first, "user")
                for frame in mine:
                    draw = lambda r, f, frame=frame: tx.step_text(frame, show_reasoning=r, show_full=f)  # noqa: E731
                    yield Part(draw, frame.index, "step")
                yield Part(lambda r, f, turn=turn: tx.verdict_text(turn, show_full=f), last, "verdict")
                previous = last
            yield Part(lambda r, f: tx.ending_text(self.record), self.last, "ending")
        yield Static(id="episode-status", classes="status")
        yield Footer()

    def on_mount(self) -> None:
        self.sub_title = self.source
        self._render_steps()
        self.cursor = self.last

    def watch_cursor(self, cursor: int) -> None:
        for part in self.query(Part):
            part.display = part.frame <= cursor
            part.set_class(part.has_class("step") and part.frame == cursor, "-current")
        self.call_after_refresh(self.query_one("#transcript", VerticalScroll).scroll_end, animate=False)
        self._status()

    def watch_show_reasoning(self) -> None:
        self._render_steps()

    def watch_show_full(self) -> None:
        self._render_steps()

    def _render_steps(self) -> None:
        for part in self.query(Part):
            part.show(self.show_reasoning, self.show_full)
        self._status()

    def _status(self) -> None:
        turn = self.frames[self.cursor].turn if self.frames else 0
        state = "playing" if self.playing else "paused"
        state += f" · speed {SPEEDS[self.speed]:g} steps/s (+/-)"
        folds = f"reasoning {'shown' if self.show_reasoning else 'folded'}"
        folds += f" · long results {'shown' if self.show_full else 'folded'}"
        steps = f"step {self.cursor + 1}/{len(self.frames)} · turn {turn}" if self.frames else "no steps recorded"
        self.query_one("#episode-status", Static).update(f"{steps} · {state} · {folds}")

    def action_step(self, delta: int) -> None:
        self._stop()
        self.cursor = max(0, min(self.cursor + delta, self.last))

    def action_go(self, index: int) -> None:
        self._stop()
        self.cursor = self.last if index < 0 else index

    def action_first_failure(self) -> None:
        frame = tx.first_failing_frame(self.record)
        if frame is None:
            self.notify("no failing turn in this episode", timeout=3)
            return
        self._stop()
        self.cursor = frame

    def action_play(self) -> None:
        if self.playing:
            self._stop()
            return
        if self.cursor >= self.last:
            self.cursor = 0
        self.playing = True
        self._start_timer()

    def action_speed(self, delta: int) -> None:
        self.speed = max(0, min(self.speed + delta, len(SPEEDS) - 1))
        if self.playing:
            self._start_timer()
        self._status()

    def action_toggle_reasoning(self) -> None:
        self.show_reasoning = not self.show_reasoning

    def action_toggle_results(self) -> None:
        self.show_full = not self.show_full

    def _start_timer(self) -> None:
        if self._timer is not None:
            self._timer.stop()
        self._timer = self.set_interval(1 / SPEEDS[self.speed], self._tick)
        self._status()

    def _tick(self) -> None:
        if self.cursor >= self.last:
            self._stop()
            return
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
