"""What the command line points at, and the comparison of two evaluation runs (no Textual import).

A path is a run folder, an ``episodes.jsonl`` or a ``metrics.jsonl``. A folder with a
``metrics.jsonl`` is a training run (live view); one with an ``episodes.jsonl`` is replayed.
A folder with neither that holds run folders below it (``make run``'s ``runs/first-run``, a
sweep) opens as a list of those runs to choose from. Two folders are compared.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tooluse_agents.runs.records import UNSCORED_ERRORS
from tooluse_agents.runs.results import CategoryDiff, Disagreement, RunComparison, compare_results, summarize
from tooluse_gym.errors import ToolUseGymError
from tooluse_gym.protocol import data_version
from tooluse_tui.data import EpisodeStore, EpisodeSummary, is_bfcl_run, known_issues

EPISODES = "episodes.jsonl"
METRICS = "metrics.jsonl"
RESULTS = "results.json"


CategoryRow = CategoryDiff
"""Accuracy of one category in both runs (`tooluse_agents.runs.results.CategoryDiff`)."""
__all__ = [
    "CategoryRow",
    "Comparison",
    "Disagreement",
    "RunFolder",
    "Target",
    "TargetError",
    "compare",
    "find_runs",
    "load_results",
    "resolve",
]


class TargetError(ToolUseGymError, ValueError):
    """The paths given cannot be opened; the message says why, for the user."""


@dataclass(frozen=True)
class Target:
    """What to open.

    Attributes:
        mode: ``replay`` | ``live`` | ``compare`` | ``pick`` (a list of runs to choose from).
        episodes: The episodes file of each run (one, or two for ``compare``; none for ``pick``).
        metrics: The metrics file (``live``).
        runs: The run folders to choose from (``pick``), see `find_runs`.
        root: The folder they were found below (``pick``).
    """

    mode: str
    episodes: tuple[Path, ...]
    metrics: Path | None = None
    runs: tuple[RunFolder, ...] = field(default=())
    root: Path | None = None


@dataclass(frozen=True)
class RunFolder:
    """A run found below a folder: what `resolve` would open for it.

    Attributes:
        name: Its path relative to the folder searched (``smollm2-135m/bfcl/template=native``).
        target: The replay or live target of the run.
        size: Bytes of its episodes and metrics files.
    """

    name: str
    target: Target
    size: int

    @property
    def kind(self) -> str:
        """``replay`` (an evaluation run) or ``live`` (a training run)."""
        return self.target.mode


MAX_RUNS = 5000
"""`find_runs` stops after this many runs (a folder of many more is not a list to choose from)."""


def find_runs(root: str | os.PathLike[str], limit: int = MAX_RUNS) -> list[RunFolder]:
    """The run folders below `root` (those holding an ``episodes.jsonl`` or a ``metrics.jsonl``), by name.

    Hidden folders are skipped; a run folder's own subfolders are searched too (a training run's
    evaluations). `root` itself is not listed.
    """
    base = Path(root)
    found: list[RunFolder] = []
    for folder, dirs, files in os.walk(base):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != "__pycache__")
        here = Path(folder)
        if here == base or not (EPISODES in files or METRICS in files):
            continue
        target = _run_target(here)
        size = sum((here / f).stat().st_size for f in (EPISODES, METRICS) if f in files)
        found.append(RunFolder(here.relative_to(base).as_posix(), target, size))
        if len(found) >= limit:
            break
    return sorted(found, key=lambda r: r.name)


def _run_target(path: Path) -> Target:
    if (path / METRICS).exists():
        return Target("live", (path / EPISODES,), path / METRICS)
    return Target("replay", (path / EPISODES,))


def resolve(paths: Sequence[str | os.PathLike[str]]) -> Target:
    """The mode and files for the command-line paths; raises `TargetError` with a clear message."""
    if not paths:
        raise TargetError("give a run folder, an episodes.jsonl or a metrics.jsonl (or two run folders to compare)")
    if len(paths) > 2:
        raise TargetError(f"at most two paths (two runs to compare), got {len(paths)}")
    resolved = [_check(p) for p in paths]
    if len(resolved) == 2:
        for p in resolved:
            if not p.is_dir() or not ((p / RESULTS).exists() or (p / EPISODES).exists()):
                raise TargetError(f"{p}: to compare, give two run folders that hold results.json or episodes.jsonl")
        return Target("compare", tuple(p / EPISODES for p in resolved))
    path = resolved[0]
    if path.is_dir():
        if (path / METRICS).exists() or (path / EPISODES).exists():
            return _run_target(path)
        runs = find_runs(path)
        if not runs:
            raise TargetError(f"{path}: the folder holds neither {EPISODES} nor {METRICS}, nor a run folder below it")
        return Target("pick", (), runs=tuple(runs), root=path)
    if path.name == METRICS:  # may still be empty: a run that has just started
        return Target("live", (path.parent / EPISODES,), path)
    if path.stat().st_size == 0:
        raise TargetError(f"{path}: the file is empty")
    if _first_record_is_metrics(path):
        return Target("live", (path.parent / EPISODES,), path)
    return Target("replay", (path,))


def _check(given: str | os.PathLike[str]) -> Path:
    if not str(given).strip():
        raise TargetError("the path is empty")
    path = Path(given)
    if not path.exists():
        raise TargetError(f"{path}: no such file or folder")
    return path


def _first_record_is_metrics(path: Path) -> bool:
    with path.open("rb") as f:
        line = f.readline(1 << 20)
    try:
        first = json.loads(line)
    except ValueError:
        return False
    return isinstance(first, dict) and "step" in first and "task_id" not in first


def short_name(path: Path) -> str:
    """A file's name with its folder (``run_a/episodes.jsonl``): no machine-specific prefix."""
    return f"{path.parent.name}/{path.name}" if path.parent.name else path.name


@dataclass(frozen=True)
class CardRow:
    """One protocol-card field in both runs."""

    key: str
    a: Any
    b: Any

    @property
    def differs(self) -> bool:
        return self.a != self.b


@dataclass(frozen=True)
class Comparison(RunComparison):
    """Two runs side by side: `tooluse_agents.runs.results.RunComparison`, with the runs' names and protocol cards."""

    names: tuple[str, str] = ("A", "B")
    card: tuple[CardRow, ...] = ()


def load_results(run: Path, summaries: Sequence[EpisodeSummary], store: EpisodeStore) -> dict[str, Any]:
    """The run's ``results.json``, or one computed from its episodes when the file is missing."""
    path = run / RESULTS
    if path.exists():
        try:
            results = json.loads(path.read_text())
            if isinstance(results, dict) and "summary" in results:
                return results
        except ValueError:
            pass
    episodes = [r for r in (store.record(s.line) for s in summaries) if r is not None]
    protocol = (episodes[0].get("protocol") or {}) if episodes else {}
    registry = known_issues() if is_bfcl_run(protocol) else None
    return {"protocol": protocol, "summary": summarize(episodes, registry)}


def compare(
    names: tuple[str, str],
    results: tuple[Mapping[str, Any], Mapping[str, Any]],
    summaries: tuple[Sequence[EpisodeSummary], Sequence[EpisodeSummary]],
) -> Comparison:
    """Per-category accuracy with CIs, protocol card fields, and the tasks the two runs disagree on.

    Scored over the (task, seed) pairs both runs played, from the episodes (`results` gives the
    protocol cards); what only one run holds is in ``left_out``. The numbers are
    `tooluse_agents.runs.results.compare_results`', the same as `tooluse eval compare`'s.
    """
    card_a, card_b = (dict(r.get("protocol") or {}) for r in results)
    if "task_data" in card_a or "task_data" in card_b:  # the data by their version's name, not file by file
        card_a["task_data"], card_b["task_data"] = (data_version(c.get("task_data")) for c in (card_a, card_b))
    keys = [*card_a, *(k for k in card_b if k not in card_a)]
    card = tuple(CardRow(k, card_a.get(k), card_b.get(k)) for k in keys if k != "seed")
    bfcl = all(is_bfcl_run(c) for c in (card_a, card_b))
    registry = known_issues() if bfcl else None
    episodes = ([_episode(s) for s in summaries[0]], [_episode(s) for s in summaries[1]])
    core = compare_results(episodes, registry)
    return Comparison(**{f.name: getattr(core, f.name) for f in dataclasses.fields(core)}, names=names, card=card)


def _episode(s: EpisodeSummary) -> dict[str, Any]:
    """The fields of an episode record that accuracy needs."""
    unscored = s.error_type in UNSCORED_ERRORS  # a failed model server's: no score (as the harness counts it)
    error = {"type": s.error_type} if unscored else None
    return {"task_id": s.task_id, "category": s.category, "seed": s.seed, "reward": s.reward, "error": error}
