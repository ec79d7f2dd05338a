"""A run's BFCL web-search episodes (``ToolUse-WebSearch-v0``) as BFCL result files, scored by `bfcl evaluate`.

`FORMAT` is how `tooluse_agents.export.pipeline.export_bfcl` writes a web-search run: one BFCL
project root per seed, laid out as `bfcl generate` leaves it::

    OUT/seed_<seed>/result/<model dir>/agentic/BFCL_v4_web_search_base_result.json
    OUT/seed_<seed>/result/<model dir>/agentic/BFCL_v4_web_search_no_snippet_result.json
    OUT/export.json

Each episode is one question: a line ``{"id": "web_search_base_3", "result": [[step, ...]]}`` (one turn
of step payloads, as BFCL's handler writes an agentic entry); an episode that ended in an agent error is
BFCL's failed inference. `bfcl evaluate` checks only the answers, never searches: it scores the run as
it was played, on the search backend the run used (a warning names it; a score on a replay or on the
synthetic gold hops is not one on BFCL's live search). The self-check is the memory export's: every
written step decoded again, every question re-checked with BFCL's rule (`tooluse_agents.export.memory`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tooluse_agents.export.base import TARGETS, StepMismatch, Target, bfcl_folder, check_steps, encoding_of
from tooluse_agents.export.folders import ExportError
from tooluse_agents.export.memory import (
    agentic_warnings,
    played_segments,
    question_result,
    verdict_warnings,
    write_lines,
)
from tooluse_agents.runs.records import EpisodeRecord
from tooluse_gym.envs import WEB_SEARCH_ID
from tooluse_gym.tasks import bfcl
from tooluse_gym.tasks.bfcl_web_search import CATEGORIES, WebSearchTask, load_web_search_tasks

__all__ = ["FORMAT", "is_web_search_episode"]


def is_web_search_episode(record: EpisodeRecord) -> bool:
    """Whether an episode plays a BFCL web-search question."""
    return record.protocol.get("env_id") == WEB_SEARCH_ID and record.category in CATEGORIES


def _tasks(records: Sequence[EpisodeRecord]) -> dict[str, WebSearchTask]:
    """Task id -> task; refuses ids BFCL lacks and a (task, seed) played twice."""
    seen: set[tuple[str, int]] = set()
    for r in records:
        if (r.task_id, r.seed) in seen:
            raise ExportError(f"{r.task_id} seed {r.seed} appears twice in episodes.jsonl; BFCL scores one line per id")
        seen.add((r.task_id, r.seed))
    ids = sorted({r.task_id for r in records})
    try:
        return {t.task_id: t for t in load_web_search_tasks(list(CATEGORIES), ids)}
    except ValueError as e:
        raise ExportError(f"{e} (the installed bfcl-eval is {bfcl.bfcl_version()})") from None


def _backend_warnings(records: Sequence[EpisodeRecord]) -> list[str]:
    backends = set()
    for r in records:
        extra: Mapping[str, Any] = r.protocol["extra"] if isinstance(r.protocol.get("extra"), Mapping) else {}
        backends.add((extra.get("search_backend"), extra.get("recording"), extra.get("recorded")))
    if backends == {("serpapi", None, None)}:
        return []
    named = "; ".join(f"{b}" + (f" recording {d}" if d else "") + (f" of {w}" if w else "") for b, d, w in backends)
    return [
        f"the run searched with {named}: bfcl evaluate checks only the answers, so its score is the run's on that "
        "backend, comparable only with runs on the same backend and recording (gold-hops is not the web at all)"
    ]


def _write_root(root: Path, target: Target, records: Sequence[EpisodeRecord]) -> tuple[str, ...]:
    tasks = _tasks(records)
    lines: dict[str, list[tuple[str, Any]]] = defaultdict(list)
    for r in records:
        (played,) = played_segments(r, tasks[r.task_id])
        lines[r.category].append((r.task_id, question_result(r, played, target.encoding)))
    categories = [c for c in CATEGORIES if c in lines]
    for category in categories:
        folder = root / "result" / target.directory / bfcl_folder(category)
        folder.mkdir(parents=True, exist_ok=True)
        write_lines(folder / f"BFCL_v4_{category}_result.json", lines[category])
    return tuple(categories)


class _WebSearch:
    """The web-search `ExportFormat`."""

    name = "web_search"

    def claims(self, records: Sequence[EpisodeRecord]) -> bool:
        return any(r.protocol.get("env_id") == WEB_SEARCH_ID for r in records)

    def select(self, records: Sequence[EpisodeRecord]) -> list[EpisodeRecord]:
        return [r for r in records if is_web_search_episode(r)]

    def plan(self, episodes: Sequence[EpisodeRecord], fc_run: bool) -> tuple[Target, list[str]]:
        tasks = _tasks(episodes)
        target = TARGETS["fc" if fc_run else encoding_of(episodes)]
        warnings = agentic_warnings(episodes) + _backend_warnings(episodes)
        return target, warnings + verdict_warnings(episodes, lambda r: tasks[r.task_id], target.encoding)

    def write_root(self, root: Path, target: Target, records: Sequence[EpisodeRecord]) -> tuple[str, ...]:
        return _write_root(root, target, records)

    def self_check(self, records: Sequence[EpisodeRecord], encoding: str) -> tuple[int, list[StepMismatch]]:
        return check_steps(records, encoding)


FORMAT = _WebSearch()
"""BFCL web-search result files (`tooluse_agents.export.pipeline.export_bfcl` picks it by the run's episodes)."""
