"""A run's BFCL memory episodes (``ToolUse-Memory-v0``) as BFCL result files, scored by BFCL's own `bfcl evaluate`.

`FORMAT` is how `tooluse_agents.export.pipeline.export_bfcl` writes a memory run: one BFCL project
root per seed, laid out as `bfcl generate` leaves it for the memory categories (``<backend>``: ``kv``,
``rec_sum``, ``vector``)::

    OUT/seed_<seed>/result/<model dir>/agentic/memory/<backend>/
        BFCL_v4_memory_<backend>_result.json          one line per question, in BFCL's id order
        BFCL_v4_memory_<backend>_prereq_result.json   one line per prerequisite session
        memory_snapshot/<scenario>_final.json         the memory the sessions left (what the questions read)
        memory_snapshot/prereq_checkpoints/<id>.json  the memory after each session
    OUT/export.json

A scenario episode (``episode="scenario"``, task id ``memory_kv-customer``) is split into BFCL's
entries by its segments: each prerequisite session (``memory_kv_prereq_0-customer-0``) is a line
``{"id": ..., "result": turns}``, every assistant message of each of its user turns, in order (as the
multi-turn export); each question (``memory_kv_0-customer-0``) is a line whose ``result`` is one turn,
``[[step, ...]]``, as BFCL's handler writes an agentic entry. The memory each session left is read from
its verdict (``{"session": id, "memory": ...}``) and written as BFCL's memory backend flushes it
(``memory_api_metaclass.py``). A question episode (``episode="question"``, one question from a given
snapshot) is written as its question's line alone: it played no session, so no prerequisite line or
snapshot comes from it.

`bfcl evaluate` reads only the question files: it skips the ``_prereq`` categories and never opens the
snapshots (they are there so that the folder is what `bfcl generate` writes, and for `ToolUse-Memory-v0`'s
``snapshot=`` setting, which reads ``memory_snapshot``). Per question it decodes every step with the
target handler's ``decode_execute`` and checks the last step that decodes to no call with its agentic
checker. An episode that ended in an agent error counts every question as failed here, so every
question of it is written as BFCL's failed inference (``agentic:inference_error``); its finished
sessions are written as played, the others as failed inferences too.

The registered names are those of the multi-turn export (`tooluse_agents.export.base.TARGETS`). The
self-check decodes every written step again (as the multi-turn export), and re-checks every question
with BFCL's rule on the written steps (`bfcl_verdict`): a question whose verdict differs (a run with
``answer_check="strict"``, an answer the env read with its reasoning) is named in a warning.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tooluse_agents.export.base import (
    TARGETS,
    Payload,
    StepMismatch,
    Target,
    bfcl_folder,
    check_steps,
    decode_payload,
    encoding_of,
    failed_inference,
    failed_inference_text,
    step_payload,
)
from tooluse_agents.export.folders import ExportError
from tooluse_agents.runs.records import EpisodeRecord, TurnEntry
from tooluse_gym.checking.agentic import AgenticVerdict, agentic_check
from tooluse_gym.envs import MEMORY_ID
from tooluse_gym.protocol import MAX_STEPS_PER_TURN
from tooluse_gym.tasks import bfcl
from tooluse_gym.tasks.agentic import AgenticTask, Segment
from tooluse_gym.tasks.bfcl_memory import CATEGORIES, MemoryTask, load_memory_tasks

__all__ = [
    "FORMAT",
    "agentic_warnings",
    "bfcl_verdict",
    "is_memory_episode",
    "played_segments",
    "question_result",
    "verdict_warnings",
    "write_lines",
]

_SHOWN = 5


def is_memory_episode(record: EpisodeRecord) -> bool:
    """Whether an episode plays BFCL memory entries (a scenario or one question)."""
    return record.protocol.get("env_id") == MEMORY_ID and record.category in CATEGORIES


def _episode_unit(record: EpisodeRecord) -> str:
    extra = record.protocol.get("extra")
    return str(extra.get("episode", "scenario")) if isinstance(extra, Mapping) else "scenario"


@dataclass(frozen=True)
class PlayedSegment:
    """One BFCL entry of an episode: its segment, the turns played for it and, for a session, the memory it left.

    ``turns`` is None when the segment did not end (the episode stopped before it).
    """

    segment: Segment
    turns: tuple[TurnEntry, ...] | None
    memory: Mapping[str, Any] | None = None


def played_segments(record: EpisodeRecord, task: AgenticTask) -> list[PlayedSegment]:
    """Each segment of the episode's task with the turns played for it (up to the turn of its verdict)."""
    ended: dict[str, Mapping[str, Any]] = {}
    for turn in record.turns:
        verdict = turn.verdict or {}
        entry = verdict.get("session") or verdict.get("question")
        if entry is not None:
            ended[str(entry)] = verdict
    out = []
    for segment in task.segments:
        found = ended.get(segment.entry_id)
        if found is None:
            out.append(PlayedSegment(segment, None))
            continue
        last = int(found.get("turn", segment.first_turn + segment.num_turns - 1))
        turns = tuple(t for t in record.turns if segment.first_turn <= t.turn <= last)
        memory = found.get("memory") if segment.kind == "session" else None
        out.append(PlayedSegment(segment, turns, memory if isinstance(memory, Mapping) else None))
    return out


def _payloads(played: PlayedSegment, encoding: str) -> list[list[Payload]]:
    return [[step_payload(step, encoding) for step in turn.steps] for turn in played.turns or ()]


def question_result(record: EpisodeRecord, played: PlayedSegment, encoding: str) -> list[list[Payload]] | str:
    """A question's ``result``: its one turn of step payloads, or BFCL's failed inference (module docstring)."""
    if failed_inference(record) or played.turns is None:
        return failed_inference_text(record)
    steps = [payload for turn in _payloads(played, encoding) for payload in turn]
    return [steps]


def _session_result(record: EpisodeRecord, played: PlayedSegment, encoding: str) -> list[list[Payload]] | str:
    if played.turns is None:
        return failed_inference_text(record)
    return _payloads(played, encoding)


def bfcl_verdict(steps: Sequence[Payload], encoding: str, answers: Sequence[str]) -> AgenticVerdict:
    """BFCL's verdict on a question's written steps: its agentic checker on the last step that decodes to no call.

    As ``_evaluate_single_agentic_entry``: no such step, or an empty one, is ``agentic:no_last_message``;
    a list payload is read as its first item's text.
    """
    last: Payload | None = None
    for payload in steps:
        if not decode_payload(payload, encoding):
            last = payload
    if not last:
        return agentic_check(None, answers)
    text = last if isinstance(last, str) else str(last[0])
    return agentic_check(text, answers)


# --- checks on the run -------------------------------------------------------------------


def _tasks(records: Sequence[EpisodeRecord]) -> dict[tuple[str, str], MemoryTask]:
    """(episode unit, task id) -> the task each episode plays; refuses ids BFCL lacks and duplicates."""
    seen: set[tuple[str, int]] = set()
    questions: set[tuple[str, int]] = set()
    wanted: dict[tuple[str, str], set[str]] = defaultdict(set)
    for r in records:
        if (r.task_id, r.seed) in seen:
            raise ExportError(f"{r.task_id} seed {r.seed} appears twice in episodes.jsonl; BFCL scores one line per id")
        seen.add((r.task_id, r.seed))
        wanted[(r.category, _episode_unit(r))].add(r.task_id)
    tasks: dict[tuple[str, str], MemoryTask] = {}
    for (category, unit), ids in sorted(wanted.items()):
        try:
            found = load_memory_tasks([category], unit, sorted(ids))
        except ValueError as e:
            raise ExportError(f"{e} (the installed bfcl-eval is {bfcl.bfcl_version()})") from None
        tasks.update(((unit, t.task_id), t) for t in found)
    for r in records:
        for q in tasks[(_episode_unit(r), r.task_id)].questions:
            if (q.task_id, r.seed) in questions:
                raise ExportError(f"question {q.task_id} seed {r.seed} is played by two episodes; BFCL scores it once")
            questions.add((q.task_id, r.seed))
    return tasks


def _task_of(tasks: Mapping[tuple[str, str], MemoryTask], record: EpisodeRecord) -> MemoryTask:
    return tasks[(_episode_unit(record), record.task_id)]


def agentic_warnings(records: Sequence[EpisodeRecord]) -> list[str]:
    """What in an agentic run's protocol BFCL does otherwise: decoder, answer check, step limit, data version."""
    return list(_agentic_warnings(records).values())


def _protocol_warnings(records: Sequence[EpisodeRecord]) -> list[str]:
    found = _agentic_warnings(records)
    for r in records:
        if _episode_unit(r) == "question":
            extra: Mapping[str, Any] = r.protocol["extra"] if isinstance(r.protocol.get("extra"), Mapping) else {}
            found["question"] = (
                f"question episodes were asked from a given memory (snapshot={extra.get('snapshot')!r}), not from "
                "sessions the model played: their answers are exported alone, without prerequisite results or snapshots"
            )
    return list(found.values())


def _agentic_warnings(records: Sequence[EpisodeRecord]) -> dict[str, str]:
    found: dict[str, str] = {}
    installed = bfcl.bfcl_version()
    for r in records:
        p = r.protocol
        extra: Mapping[str, Any] = p["extra"] if isinstance(p.get("extra"), Mapping) else {}
        if p.get("decoder", "lenient") != "bfcl":
            found["decoder"] = (
                f"the run decoded messages with decoder={p.get('decoder', 'lenient')!r}, not 'bfcl': BFCL may read "
                "another step as a question's answer (the self-check lists the steps that decode otherwise)"
            )
        if extra.get("answer_check", "bfcl") != "bfcl":
            found["check"] = (
                f"the run checked answers with answer_check={extra.get('answer_check')!r}; BFCL uses its own "
                "substring check"
            )
        steps = p.get("max_steps_per_turn", MAX_STEPS_PER_TURN)
        if steps != MAX_STEPS_PER_TURN:
            found["steps"] = f"the run allowed {steps} steps per turn; BFCL force-quits after {MAX_STEPS_PER_TURN}"
        if p.get("bfcl_version") and p["bfcl_version"] != installed:
            found["version"] = f"the run used bfcl-eval {p['bfcl_version']}; BFCL here is {installed}"
    return found


def verdict_warnings(
    records: Sequence[EpisodeRecord], task_of: Callable[[EpisodeRecord], AgenticTask], encoding: str
) -> list[str]:
    """The questions whose verdict under BFCL's rule, on the written steps, differs from the run's (any agentic run)."""
    differ = []
    for r in records:
        if failed_inference(r):
            continue
        ours = {str(q.get("task_id")): bool(q.get("valid")) for q in r.questions}
        for played in played_segments(r, task_of(r)):
            question = played.segment.question
            if question is None or played.turns is None:
                continue
            result = question_result(r, played, encoding)
            theirs = bfcl_verdict(result[0] if isinstance(result, list) else [], encoding, question.answers)
            if theirs.valid != ours.get(question.task_id, False):
                differ.append(f"{question.task_id} seed {r.seed} (BFCL: {theirs.error_type or 'valid'})")
    if not differ:
        return []
    shown = ", ".join(differ[:_SHOWN]) + (f" and {len(differ) - _SHOWN} more" if len(differ) > _SHOWN else "")
    return [f"BFCL's checker on the written steps gives {len(differ)} questions another verdict than the run: {shown}"]


# --- writing -------------------------------------------------------------------------------


def _order(entry_id: str) -> int:
    """BFCL's order within a category: the entry's index (``memory_kv_12-customer-3``: 12)."""
    return int(entry_id.rsplit("_", 1)[-1].split("-", 1)[0])


def write_lines(path: Path, lines: list[tuple[str, Any]]) -> None:
    """One BFCL result file: ``{"id", "result"}`` lines in BFCL's order of the ids."""
    # ASCII JSON (json.dumps' default): BFCL opens the files in the locale's encoding
    text = "\n".join(json.dumps({"id": i, "result": r}) for i, r in sorted(lines, key=lambda x: _order(x[0])))
    path.write_text(text + "\n", encoding="utf-8")


def _write_snapshot(path: Path, memory: Mapping[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(dict(memory), indent=4), encoding="utf-8")  # as BFCL's backends flush it


def _write_root(root: Path, target: Target, records: Sequence[EpisodeRecord]) -> tuple[str, ...]:
    """One project root's result files and snapshots; returns BFCL's test categories in it, in BFCL's order."""
    tasks = _tasks(records)
    questions: dict[str, list[tuple[str, Any]]] = defaultdict(list)
    sessions: dict[str, list[tuple[str, Any]]] = defaultdict(list)
    for r in records:
        task = _task_of(tasks, r)
        folder = root / "result" / target.directory / bfcl_folder(r.category)
        final = None
        for played in played_segments(r, task):
            entry = played.segment.entry_id
            if played.segment.question is not None:
                questions[r.category].append((entry, question_result(r, played, target.encoding)))
                continue
            sessions[r.category].append((entry, _session_result(r, played, target.encoding)))
            if played.memory is not None:
                final = played.memory
                _write_snapshot(folder / "memory_snapshot" / "prereq_checkpoints" / f"{entry}.json", played.memory)
        if final is not None:
            _write_snapshot(folder / "memory_snapshot" / f"{task.scenario}_final.json", final)
    categories = [c for c in CATEGORIES if c in questions]
    for category in categories:
        folder = root / "result" / target.directory / bfcl_folder(category)
        folder.mkdir(parents=True, exist_ok=True)
        write_lines(folder / f"BFCL_v4_{category}_result.json", questions[category])
        if sessions[category]:
            write_lines(folder / f"BFCL_v4_{category}_prereq_result.json", sessions[category])
    return tuple(categories)


class _Memory:
    """The memory `ExportFormat`."""

    name = "memory"

    def claims(self, records: Sequence[EpisodeRecord]) -> bool:
        return any(r.protocol.get("env_id") == MEMORY_ID for r in records)

    def select(self, records: Sequence[EpisodeRecord]) -> list[EpisodeRecord]:
        return [r for r in records if is_memory_episode(r)]

    def plan(self, episodes: Sequence[EpisodeRecord], fc_run: bool) -> tuple[Target, list[str]]:
        tasks = _tasks(episodes)
        target = TARGETS["fc" if fc_run else encoding_of(episodes)]
        warnings = verdict_warnings(episodes, lambda r: _task_of(tasks, r), target.encoding)
        return target, _protocol_warnings(episodes) + warnings

    def write_root(self, root: Path, target: Target, records: Sequence[EpisodeRecord]) -> tuple[str, ...]:
        return _write_root(root, target, records)

    def self_check(self, records: Sequence[EpisodeRecord], encoding: str) -> tuple[int, list[StepMismatch]]:
        return check_steps(records, encoding)


FORMAT = _Memory()
"""BFCL memory result files (`tooluse_agents.export.pipeline.export_bfcl` picks it by the run's episodes)."""
