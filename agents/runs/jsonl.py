"""The one JSONL reader: byte-offset indexed lines, parsed on demand, bad lines counted and never raised.

Every tool reads ``episodes.jsonl``, ``metrics.jsonl`` and ``eval.jsonl`` through `JsonlFile`
(the TUI, incrementally, as a run grows) or `read_jsonl` (everything at once, with a warning per
skipped line). A corrupt line, or a torn last line (a fragment without its newline that is not
a JSON object: a writer killed mid-line), is skipped and counted in one `FileHealth`.
Standard library only.
"""

from __future__ import annotations

import json
import os
import threading
import warnings
from array import array
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["FileHealth", "JsonlFile", "JsonlWriter", "append_jsonl", "parse_object", "read_jsonl"]

_CHUNK = 1 << 22


def parse_object(raw: bytes) -> dict[str, Any] | None:
    """A line as a JSON object, or None when it is not one."""
    try:
        obj = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return None
    return obj if isinstance(obj, dict) else None


@dataclass(frozen=True)
class FileHealth:
    """What could not be read in a file so far."""

    corrupt_lines: int = 0
    torn_last_line: bool = False

    @property
    def skipped(self) -> int:
        """Lines not read: the corrupt ones and a torn last one."""
        return self.corrupt_lines + int(self.torn_last_line)

    def describe(self) -> str:
        """What was skipped, in words for a warning or a status bar (empty when nothing was)."""
        parts = []
        if self.corrupt_lines:
            parts.append(f"{self.corrupt_lines} corrupt line{'s' if self.corrupt_lines != 1 else ''} skipped")
        if self.torn_last_line:
            parts.append("torn last line skipped")
        return ", ".join(parts)


class JsonlFile:
    """Byte offsets of the lines of a JSONL file, grown by `refresh`; lines parsed on demand.

    Args:
        path: The file. It may not exist yet (a run that has not written it).
    """

    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path)
        self._starts = array("q")
        self._ends = array("q")
        self._scanned = 0
        self._torn = False
        self._corrupt: set[int] = set()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._starts)

    @property
    def health(self) -> FileHealth:
        """The corrupt lines and torn last line seen so far."""
        return FileHealth(len(self._corrupt), self._torn)

    def refresh(self) -> range:
        """Index the complete lines written since the last call; returns their line numbers."""
        with self._lock:
            first = len(self._starts)
            try:
                size = self.path.stat().st_size
            except FileNotFoundError:
                return range(first, first)
            if size < self._scanned:  # the file was replaced: start over
                self._starts, self._ends, self._scanned, self._corrupt = array("q"), array("q"), 0, set()
                first = 0
            with self.path.open("rb") as f:
                f.seek(self._scanned)
                position, carry = self._scanned, b""
                while chunk := f.read(_CHUNK):
                    data = carry + chunk
                    base = position - len(carry)
                    start = 0
                    while (end := data.find(b"\n", start)) >= 0:
                        if data[start:end].strip():
                            self._starts.append(base + start)
                            self._ends.append(base + end)
                        start = end + 1
                    carry = data[start:]
                    position += len(chunk)
                self._scanned = position - len(carry)
                self._torn = False
                if carry.strip():
                    if parse_object(carry) is not None:  # a whole object without its newline
                        self._starts.append(self._scanned)
                        self._ends.append(position)
                        self._scanned = position
                    else:
                        self._torn = True
            return range(first, len(self._starts))

    def raw(self, line: int) -> bytes:
        """The bytes of line `line` (0-based over the non-blank lines)."""
        with self.path.open("rb") as f:
            f.seek(self._starts[line])
            return f.read(self._ends[line] - self._starts[line])

    def read(self, line: int) -> dict[str, Any] | None:
        """Line `line` parsed, or None (and counted) when it is not a JSON object."""
        obj = parse_object(self.raw(line))
        if obj is None:
            self.mark_corrupt(line)
        return obj

    def mark_corrupt(self, line: int) -> None:
        """Count line `line` as unreadable (once)."""
        self._corrupt.add(line)

    def iter_raw(self, lines: range) -> Iterator[tuple[int, bytes]]:
        """(line, bytes) for consecutive lines, read in one pass."""
        if not lines:
            return
        with self.path.open("rb") as f:
            for i in lines:
                f.seek(self._starts[i])
                yield i, f.read(self._ends[i] - self._starts[i])


def read_jsonl(path: str | os.PathLike[str]) -> tuple[list[dict[str, Any]], FileHealth]:
    """Every JSON object of a file, in order, and what was skipped (each skipped line with a warning)."""
    f = JsonlFile(path)
    f.refresh()
    out = []
    for line, raw in f.iter_raw(range(len(f))):
        obj = parse_object(raw)
        if obj is None:
            f.mark_corrupt(line)
            warnings.warn(f"{path}: skipped corrupt line {line + 1} (not a JSON object)", stacklevel=2)
            continue
        out.append(obj)
    if f.health.torn_last_line:
        warnings.warn(f"{path}: skipped torn last line (a fragment without its newline)", stacklevel=2)
    return out, f.health


def _last_byte(path: Path) -> bytes:
    with path.open("rb") as f:
        f.seek(-1, os.SEEK_END)
        return f.read(1)


class JsonlWriter:
    """Appends records to a JSONL file, one flushed line each; a killed run's torn last line is kept on its own line.

    Every run file is written through it (episodes, metrics, evaluations).
    """

    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        torn = self.path.exists() and self.path.stat().st_size > 0 and _last_byte(self.path) != b"\n"
        self._file = self.path.open("a", encoding="utf-8")
        if torn:  # a run killed mid-write: keep its fragment on a line of its own
            self._file.write("\n")

    def write(self, record: Mapping[str, Any]) -> None:
        """Append one record as a line, flushed and synced (a killed run loses at most that line)."""
        self._file.write(json.dumps(record, ensure_ascii=False) + "\n")
        self._file.flush()
        os.fsync(self._file.fileno())

    def close(self) -> None:
        """Close the file."""
        self._file.close()

    def __enter__(self) -> JsonlWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def append_jsonl(path: str | os.PathLike[str], record: Mapping[str, Any]) -> None:
    """Append one record to a JSONL file through `JsonlWriter` (opened and closed for this line)."""
    with JsonlWriter(path) as writer:
        writer.write(record)
