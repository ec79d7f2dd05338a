"""Episode summaries and metrics rows of a run, read lazily as the run grows (no Textual import).

Both files go through the one JSONL reader (`tooluse_agents.runs.jsonl.JsonlFile`): indexed by the byte
offsets of their complete lines, a line parsed only when it is asked for, a corrupt or torn line
skipped and counted, never raised. Files may grow while they are read: `refresh` indexes the
lines appended since the last call, and a torn fragment is read again until its writer finishes it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from tooluse_agents.runs.jsonl import FileHealth, JsonlFile, parse_object
from tooluse_agents.runs.records import MetricsRecord, RecordError
from tooluse_gym.envs.ids import MULTI_TURN_ID
from tooluse_gym.tasks.known_issues import KnownIssues, load_known_issues

__all__ = ["EpisodeFilter", "EpisodeStore", "EpisodeSummary", "FileHealth", "JsonlFile", "MetricsLog", "select"]


@cache
def known_issues() -> KnownIssues | None:
    """The BFCL known-issues registry, or None when it cannot be read (no task is marked then)."""
    try:
        return load_known_issues()
    except (OSError, ValueError):
        return None


def is_bfcl_run(protocol: Mapping[str, Any]) -> bool:
    """Whether a protocol card is a run of the BFCL env (`tooluse_gym.envs.MULTI_TURN_ID`), whose clean subset shows."""
    return protocol.get("env_id") == MULTI_TURN_ID


def known_issue(task_id: str) -> Any:
    """The registry entry of `task_id` (``kind``, ``label``, ``summary``, ``source``), or None."""
    registry = known_issues()
    return registry.get(task_id) if registry is not None else None


@dataclass(frozen=True)
class EpisodeSummary:
    """One row of the episode table: what the record says, without its transcript."""

    line: int
    task_id: str
    category: str
    seed: int
    reward: float
    turns: int
    num_turns: int
    steps: int
    error_type: str | None
    tokens: int
    known_issue: str | None = None
    """The kind of known BFCL issue the task has (`known_issue`), or None."""

    @property
    def failed(self) -> bool:
        """True when the episode did not pass."""
        return self.reward < 1.0

    @classmethod
    def of(cls, record: Mapping[str, Any], line: int) -> EpisodeSummary | None:
        """The summary of an episode record, or None when it is not one."""
        if "task_id" not in record or "reward" not in record:
            return None
        try:
            turns = record.get("turns") or []
            tokens = record.get("tokens") or {}
            return cls(
                line=line,
                task_id=str(record["task_id"]),
                category=str(record.get("category", "")),
                seed=int(record.get("seed", 0)),
                reward=float(record["reward"]),
                turns=len(turns),
                num_turns=int(record.get("num_turns", len(turns))),
                steps=sum(len(t.get("steps") or []) for t in turns),
                error_type=error_type(record),
                tokens=int(tokens.get("prompt", 0)) + int(tokens.get("completion", 0)),
                known_issue=getattr(known_issue(str(record["task_id"])), "kind", None),
            )
        except (TypeError, ValueError, AttributeError):
            return None


def error_type(record: Mapping[str, Any]) -> str | None:
    """The agent's error type, else the checker's, else None."""
    error = record.get("error")
    if isinstance(error, Mapping) and error.get("type"):
        return str(error["type"])
    checker = record.get("checker")
    if isinstance(checker, Mapping) and checker.get("error_type"):
        return str(checker["error_type"])
    return None


class EpisodeStore:
    """Episode summaries of an ``episodes.jsonl``, built in batches; full records read on demand."""

    def __init__(self, path: str | os.PathLike[str]):
        self.file = JsonlFile(path)
        self.summaries: list[EpisodeSummary] = []
        self._summarized = 0
        self._not_episodes = 0

    @property
    def path(self) -> Path:
        """The episodes file."""
        return self.file.path

    @property
    def health(self) -> FileHealth:
        """The file's unreadable lines, records that are not episodes included."""
        health = self.file.health
        return FileHealth(health.corrupt_lines + self._not_episodes, health.torn_last_line)

    def scan(self, batch: int = 500) -> Iterator[list[EpisodeSummary]]:
        """Index new lines and summarize them, `batch` at a time (appended to `summaries` too)."""
        self.file.refresh()
        while self._summarized < len(self.file):
            lines = range(self._summarized, min(self._summarized + batch, len(self.file)))
            new = []
            for line, raw in self.file.iter_raw(lines):
                record = parse_object(raw)
                summary = EpisodeSummary.of(record, line) if record is not None else None
                if record is None:
                    self.file.mark_corrupt(line)
                elif summary is None:
                    self._not_episodes += 1
                else:
                    new.append(summary)
            self._summarized = lines.stop
            self.summaries.extend(new)
            yield new

    def record(self, line: int) -> dict[str, Any] | None:
        """The full record on line `line`."""
        return self.file.read(line)

    def search(self, text: str, lines: list[int]) -> set[int]:
        """Of `lines`, those whose raw JSON contains `text` (case-insensitive)."""
        needle = text.lower().encode()
        found = set()
        for line in sorted(lines):
            if needle in self.file.raw(line).lower():
                found.add(line)
        return found


class MetricsLog:
    """The rows of a ``metrics.jsonl`` read so far (`MetricsRecord`); `poll` adds the ones appended since.

    A line that is not a metrics record this version reads (no step, a newer schema) counts as corrupt.
    """

    def __init__(self, path: str | os.PathLike[str]):
        self.file = JsonlFile(path)
        self.rows: list[MetricsRecord] = []

    @property
    def health(self) -> FileHealth:
        """The file's unreadable lines."""
        return self.file.health

    def poll(self) -> int:
        """Read new lines; returns how many rows were added."""
        added = 0
        for line, raw in self.file.iter_raw(self.file.refresh()):
            try:
                row = MetricsRecord.from_dict(parse_object(raw))
            except RecordError:
                self.file.mark_corrupt(line)
                continue
            self.rows.append(row)
            added += 1
        return added

    def series(self, key: str) -> list[tuple[float, float]]:
        """(step, value) for every row that has a number under `key`."""
        points = ((row.step, row.number(key)) for row in list(self.rows))
        return [(float(step), value) for step, value in points if value is not None]


SORT_COLUMNS: dict[str, Callable[[EpisodeSummary], Any] | None] = {
    "file order": None,
    "task id": lambda s: _natural(s.task_id),
    "category": lambda s: s.category,
    "seed": lambda s: s.seed,
    "reward": lambda s: s.reward,
    "turns": lambda s: s.turns,
    "steps": lambda s: s.steps,
    "error type": lambda s: s.error_type or "",
    "tokens": lambda s: s.tokens,
    "known issue": lambda s: s.known_issue or "",
}
"""Ways to sort the episode table: name -> key (None keeps the file's order)."""


def _natural(task_id: str) -> tuple[str, int]:
    """``multi_turn_base_10`` after ``multi_turn_base_9``."""
    head, _, tail = task_id.rpartition("_")
    return (head, int(tail)) if tail.isdigit() else (task_id, -1)


@dataclass(frozen=True)
class EpisodeFilter:
    """Which episodes the table shows.

    Attributes:
        failed_only: Only episodes with reward < 1.
        category: Only this category (None: all).
        error_type: Only this error type (None: all).
        lines: Only these lines (the hits of a text search; None: no search).
    """

    failed_only: bool = False
    category: str | None = None
    error_type: str | None = None
    lines: frozenset[int] | None = None

    def matches(self, s: EpisodeSummary) -> bool:
        """Whether an episode passes every filter."""
        return (
            (not self.failed_only or s.failed)
            and (self.category is None or s.category == self.category)
            and (self.error_type is None or s.error_type == self.error_type)
            and (self.lines is None or s.line in self.lines)
        )


def select(
    summaries: Sequence[EpisodeSummary], where: EpisodeFilter, sort: str = "file order", reverse: bool = False
) -> list[EpisodeSummary]:
    """The summaries that pass the filter, in the sort order."""
    rows = [s for s in summaries if where.matches(s)]
    key = SORT_COLUMNS[sort]
    if key is not None:
        rows.sort(key=key, reverse=reverse)
    elif reverse:
        rows.reverse()
    return rows
