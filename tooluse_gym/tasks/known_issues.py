"""BFCL multi-turn entries whose ground truth is known to be wrong or time-dependent.

The registry is ``bfcl_known_issues.json`` next to this module: one entry per task id, each
with what was checked in the data and the public report it comes from. Scores over the tasks
it does not list are the *clean subset* that reports show beside the official score. Reports
that were checked and not taken (already fixed, or not borne out by the data) are kept under
``left_out`` with the reason.

Standard library only, and no import of the `tooluse_gym` package is needed to use it: the
reporting code and the TUI read it without gymnasium or torch.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

KINDS = ("wrong_ground_truth", "unstated_value", "time_dependent")
"""What can be wrong with an entry: its expected result cannot be produced; it needs a value
the user never gives and no tool returns; it depends on the date the model is run."""

DATA_FILE = "bfcl_known_issues.json"
_LABELS = {"wrong_ground_truth": "wrong gt", "unstated_value": "unstated", "time_dependent": "date"}
_REQUIRED = ("task_id", "kind", "summary", "evidence", "source")


@dataclass(frozen=True)
class KnownIssue:
    """One registry entry.

    Attributes:
        task_id: The BFCL id, e.g. ``multi_turn_base_4``.
        kind: One of `KINDS`.
        summary: What is wrong, in one sentence.
        evidence: What was checked in the installed data.
        source: The public report (a GitHub issue URL).
        check: The ground-truth call the evidence is about, for tests: ``turn``, ``function``,
            ``argument``, ``value``; for dates the ``quote`` the user wrote; for a value no
            tool returns, what the tools do return (``produced``).
    """

    task_id: str
    kind: str
    summary: str
    evidence: str
    source: str
    check: Mapping[str, Any] | None = None

    @property
    def label(self) -> str:
        """A short tag for tables: ``wrong gt``, ``unstated`` or ``date``."""
        return _LABELS[self.kind]

    def to_dict(self) -> dict[str, Any]:
        """The entry as it is written in the registry file; ``check`` only when set."""
        out = {k: getattr(self, k) for k in _REQUIRED}
        if self.check is not None:
            out["check"] = dict(self.check)
        return out


@dataclass(frozen=True)
class KnownIssues:
    """The registry: entries by task id, with the registry's version and the BFCL version it was checked on."""

    version: str
    bfcl_version: str
    entries: tuple[KnownIssue, ...]
    left_out: tuple[Mapping[str, str], ...] = ()
    _by_id: Mapping[str, KnownIssue] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        by_id: dict[str, KnownIssue] = {}
        for entry in self.entries:
            if entry.task_id in by_id:
                raise ValueError(f"known issues: {entry.task_id} is listed twice")
            by_id[entry.task_id] = entry
        object.__setattr__(self, "_by_id", by_id)

    @property
    def ids(self) -> frozenset[str]:
        """The task ids the registry lists."""
        return frozenset(self._by_id)

    def get(self, task_id: str) -> KnownIssue | None:
        """The entry for `task_id`, or None when the task is clean."""
        return self._by_id.get(task_id)

    def __contains__(self, task_id: object) -> bool:
        return task_id in self._by_id

    def __iter__(self) -> Iterator[KnownIssue]:
        return iter(self.entries)

    def __len__(self) -> int:
        return len(self.entries)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> KnownIssues:
        """Parse the JSON document; raises ValueError on a malformed one."""
        for key in ("version", "bfcl_version", "entries"):
            if key not in data:
                raise ValueError(f"known issues: the file has no {key!r}")
        entries = []
        for i, raw in enumerate(data["entries"]):
            missing = [k for k in _REQUIRED if not isinstance(raw.get(k), str) or not raw[k]]
            if missing:
                raise ValueError(f"known issues: entry {i} lacks {', '.join(missing)}")
            if raw["kind"] not in KINDS:
                raise ValueError(f"known issues: {raw['task_id']} has kind {raw['kind']!r}; expected one of {KINDS}")
            entries.append(KnownIssue(**{k: raw[k] for k in _REQUIRED}, check=raw.get("check")))
        return cls(
            version=str(data["version"]),
            bfcl_version=str(data["bfcl_version"]),
            entries=tuple(entries),
            left_out=tuple(data.get("left_out", ())),
        )


@cache
def load_known_issues() -> KnownIssues:
    """The registry shipped next to this module (read once).

    Read by path rather than through `importlib.resources`, so that a reader that loads this
    file on its own (the TUI, which must not import gymnasium) needs no package import.
    """
    text = Path(__file__).with_name(DATA_FILE).read_text(encoding="utf-8")
    return KnownIssues.from_dict(json.loads(text))


def registry_version() -> str:
    """The version of the shipped registry (date-based, e.g. ``2026.12.1``)."""
    return load_known_issues().version
