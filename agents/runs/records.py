"""The run files' formats as types, with a checked version.

`EpisodeRecord` is one line of ``episodes.jsonl``, `MetricsRecord` one line of a training run's
``metrics.jsonl``. The harness and the trainer write episodes (`rollout.episode.episode_record`), the trainer
writes metrics (`tooluse_agents.runs.runlog`); `tooluse eval`, the TUI and the benchmarks read both
through `read_episodes` and `read_metrics`. `from_dict` accepts every record written so far
(schema 1, keys added later defaulted, the trainer's ``train`` and ``eval_step`` kept in
`extra`) and refuses a record of a newer schema with a message that says so;
``to_dict(from_dict(d)) == d`` for any record a writer produced. Standard library only (the TUI
imports it).
"""

from __future__ import annotations

import dataclasses
import os
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tooluse_agents.runs.jsonl import FileHealth, read_jsonl
from tooluse_agents.runs.metrics import EVAL_KEY, METRIC_KEYS  # the keys' one declaration (standard library only)
from tooluse_gym.errors import ToolUseGymError

UNSCORED_ERRORS = frozenset({"connection_error", "timeout", "rate_limited", "server_error"})
"""Agent errors of a model server that failed, not of the model (`tooluse_agents.backends.base.FAILURE_CODES`).

An episode that ended in one is not a score of 0: results leave it out, banners count it, and a
resumed run plays it again.
"""

SCHEMA_VERSION = 1
"""The version this code writes, and the newest it reads."""

__all__ = [
    "EVAL_KEY",
    "METRIC_KEYS",
    "SCHEMA_VERSION",
    "UNSCORED_ERRORS",
    "EpisodeRecord",
    "MetricsRecord",
    "RecordError",
    "StepEntry",
    "TurnEntry",
    "as_records",
    "read_episodes",
    "read_metrics",
    "unique_episodes",
]

_STEP_KEYS = ("turn", "assistant", "calls", "results", "parse_failure", "index")
_STEP_COSTS = ("prompt_tokens", "completion_tokens", "latency_s")
_EPISODE_KEYS = (
    "schema_version",
    "questions",
    "protocol",
    "task_id",
    "category",
    "seed",
    "agent",
    "turns",
    "num_turns",
    "reward",
    "checker",
    "error",
    "tokens",
    "duration_s",
)


class RecordError(ToolUseGymError, ValueError):
    """A JSON object that is not an episode record this version can read."""


def _mapping(value: Any, what: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise RecordError(f"{what} must be an object, got {type(value).__name__}")
    return value


def _optional_mapping(value: Any, what: str) -> dict[str, Any] | None:
    return None if value is None else dict(_mapping(value, what))


def _number(value: Any, what: str, kind: type = float) -> Any:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise RecordError(f"{what} must be a number, got {value!r}")
    try:
        return kind(value)
    except ValueError:
        raise RecordError(f"{what} must be a number, got {value!r}") from None


def _version(data: Mapping[str, Any], what: str) -> int:
    version = _number(data.get("schema_version", 1), "schema_version", int)
    if version > SCHEMA_VERSION:
        raise RecordError(
            f"{what} of schema {version}, written by a newer tooluse-gym (this one reads up to "
            f"{SCHEMA_VERSION}): upgrade to read it"
        )
    return version


def _sequence(value: Any, what: str) -> Sequence[Any]:
    if value is None:
        return ()
    if isinstance(value, str | bytes | Mapping) or not isinstance(value, Sequence):
        raise RecordError(f"{what} must be a list, got {type(value).__name__}")
    return value


@dataclass(frozen=True)
class StepEntry:
    """One assistant message: what it said, the calls decoded from it, their results and its cost.

    Attributes:
        turn: The user turn it answers.
        index: Its position among the episode's steps.
        assistant: The message text.
        calls: The decoded calls (``name``, ``arguments``, and ``source``, ``error``, ... when set).
        results: One result string per call.
        parse_failure: Why no call was decoded (the message then ended its turn): under the ``bfcl``
            decoder BFCL's decoding error, for any message it fails on (a text reply too, which is how
            BFCL ends a turn); under ``lenient`` only when the text looked like an attempted call.
        prompt_tokens, completion_tokens, latency_s: What the message cost.
        extra: Any other keys, kept as written.
    """

    turn: int
    index: int
    assistant: str = ""
    calls: tuple[Mapping[str, Any], ...] = ()
    results: tuple[str, ...] = ()
    parse_failure: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    extra: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The step as it is written in a turn's ``steps``."""
        out: dict[str, Any] = {
            "turn": self.turn,
            "assistant": self.assistant,
            "calls": [dict(c) for c in self.calls],
            "results": list(self.results),
        }
        if self.parse_failure:
            out["parse_failure"] = self.parse_failure
        out.update(
            index=self.index,
            prompt_tokens=self.prompt_tokens,
            completion_tokens=self.completion_tokens,
            latency_s=self.latency_s,
        )
        return {**out, **self.extra}

    @classmethod
    def from_dict(cls, data: Any, index: int = 0) -> StepEntry:
        """A written step; `index` is its position when the record predates the ``index`` key."""
        data = _mapping(data, "a step")
        known = (*_STEP_KEYS, *_STEP_COSTS)
        return cls(
            turn=_number(data.get("turn", 0), "step.turn", int),
            index=_number(data.get("index", index), "step.index", int),
            assistant=str(data.get("assistant", "")),
            calls=tuple(dict(_mapping(c, "a call")) for c in _sequence(data.get("calls"), "step.calls")),
            results=tuple(str(r) for r in _sequence(data.get("results"), "step.results")),
            parse_failure=data.get("parse_failure") or None,
            prompt_tokens=_number(data.get("prompt_tokens", 0), "step.prompt_tokens", int),
            completion_tokens=_number(data.get("completion_tokens", 0), "step.completion_tokens", int),
            latency_s=_number(data.get("latency_s", 0.0), "step.latency_s"),
            extra={k: v for k, v in data.items() if k not in known},
        )


@dataclass(frozen=True)
class TurnEntry:
    """One user turn: the user's messages, the assistant's steps and the checker's verdict on the turn."""

    turn: int
    user: tuple[str, ...] = ()
    held_out: bool = False
    steps: tuple[StepEntry, ...] = ()
    verdict: Mapping[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        """The turn as it is written in a record's ``turns``."""
        return {
            "turn": self.turn,
            "user": list(self.user),
            "held_out": self.held_out,
            "steps": [s.to_dict() for s in self.steps],
            "verdict": dict(self.verdict) if self.verdict is not None else None,
        }

    @classmethod
    def from_dict(cls, data: Any, turn: int = 0) -> TurnEntry:
        """A written turn; `turn` is its position when the record predates the ``turn`` key."""
        data = _mapping(data, "a turn")
        steps = _sequence(data.get("steps"), "turn.steps")
        return cls(
            turn=_number(data.get("turn", turn), "turn.turn", int),
            user=tuple(str(m) for m in _sequence(data.get("user"), "turn.user")),
            held_out=bool(data.get("held_out", False)),
            steps=tuple(StepEntry.from_dict(s, i) for i, s in enumerate(steps)),
            verdict=_optional_mapping(data.get("verdict"), "turn.verdict"),
        )


@dataclass(frozen=True)
class EpisodeRecord:
    """One episode as the files hold it.

    Attributes:
        task_id, category, seed: Which task, and the seed that fixed its sampling.
        reward: Terminal reward (1.0: the checker marked the episode valid and no agent error).
        protocol: The protocol card of the episode's reset (`tooluse_gym.protocol.ProtocolCard.to_dict`).
        agent: The agent's identity (`Agent.describe`).
        turns: The turns played, in order.
        num_turns: The task's turn count (more than ``len(turns)`` when the episode ended early).
        checker: ``valid``, ``error_type`` and ``error_message`` of the episode, or None.
        error: The agent's error (``type``, ``message``), or None.
        prompt_tokens, completion_tokens: Summed over the steps.
        duration_s: Wall time of the episode.
        schema_version: The file format version it was written in.
        extra: Any other keys (the trainer's ``train`` and ``eval_step``), kept as written.
        questions: An episode of several scored questions (BFCL memory scenarios): each one's BFCL id
            (``task_id``), ``valid`` and ``error_type``; results count these, not the episode. Empty otherwise.
    """

    task_id: str
    reward: float
    category: str = ""
    seed: int = 0
    protocol: Mapping[str, Any] = field(default_factory=dict)
    agent: Mapping[str, Any] = field(default_factory=dict)
    turns: tuple[TurnEntry, ...] = ()
    num_turns: int = 0
    checker: Mapping[str, Any] | None = None
    error: Mapping[str, Any] | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    duration_s: float = 0.0
    schema_version: int = SCHEMA_VERSION
    extra: Mapping[str, Any] = field(default_factory=dict)
    questions: tuple[Mapping[str, Any], ...] = ()

    def scored(self) -> list[tuple[str, float]]:
        """What results count: (task id, reward) of the episode, or of each of its `questions`; none if `unscored`."""
        if self.unscored:
            return []
        if not self.questions:
            return [(self.task_id, self.reward)]
        right = self.error is None
        return [(str(q["task_id"]), 1.0 if right and q.get("valid") else 0.0) for q in self.questions]

    @property
    def unscored(self) -> bool:
        """The episode ended because the model's server failed (`UNSCORED_ERRORS`): results leave it out."""
        return self.error is not None and self.error.get("type") in UNSCORED_ERRORS

    @property
    def steps(self) -> tuple[StepEntry, ...]:
        """Every step of every turn, in order."""
        return tuple(s for t in self.turns for s in t.steps)

    @property
    def error_type(self) -> str | None:
        """The agent's error type, else the checker's, else None."""
        if self.error and self.error.get("type"):
            return str(self.error["type"])
        if self.checker and self.checker.get("error_type"):
            return str(self.checker["error_type"])
        return None

    def to_dict(self) -> dict[str, Any]:
        """The record as one line of ``episodes.jsonl`` holds it (`extra` keys included)."""
        out = {
            "schema_version": self.schema_version,
            "protocol": dict(self.protocol),
            "task_id": self.task_id,
            "category": self.category,
            "seed": self.seed,
            "agent": dict(self.agent),
            "turns": [t.to_dict() for t in self.turns],
            "num_turns": self.num_turns,
            "reward": self.reward,
            "checker": dict(self.checker) if self.checker is not None else None,
            "error": dict(self.error) if self.error is not None else None,
            "tokens": {"prompt": self.prompt_tokens, "completion": self.completion_tokens},
            "duration_s": self.duration_s,
        }
        if self.questions:
            out["questions"] = [dict(q) for q in self.questions]
        return {**out, **self.extra}

    @classmethod
    def from_dict(cls, data: Any) -> EpisodeRecord:
        """The record of a JSON object; `RecordError` when it is not one, or is of a newer schema."""
        data = _mapping(data, "an episode record")
        version = _version(data, "episode record")
        if "task_id" not in data or "reward" not in data:
            raise RecordError("not an episode record (no task_id or reward)")
        turns = tuple(TurnEntry.from_dict(t, i) for i, t in enumerate(_sequence(data.get("turns"), "turns")))
        tokens = _mapping(data.get("tokens") or {}, "tokens")
        return cls(
            task_id=str(data["task_id"]),
            reward=_number(data["reward"], "reward"),
            category=str(data.get("category", "")),
            seed=_number(data.get("seed", 0), "seed", int),
            protocol=dict(_mapping(data.get("protocol") or {}, "protocol")),
            agent=dict(_mapping(data.get("agent") or {}, "agent")),
            turns=turns,
            num_turns=_number(data.get("num_turns", len(turns)), "num_turns", int),
            checker=_optional_mapping(data.get("checker"), "checker"),
            error=_optional_mapping(data.get("error"), "error"),
            prompt_tokens=_number(tokens.get("prompt", 0), "tokens.prompt", int),
            completion_tokens=_number(tokens.get("completion", 0), "tokens.completion", int),
            duration_s=_number(data.get("duration_s", 0.0), "duration_s"),
            schema_version=version,
            extra={k: v for k, v in data.items() if k not in _EPISODE_KEYS},
            questions=tuple(dict(_mapping(q, "question")) for q in _sequence(data.get("questions") or [], "questions")),
        )

    @classmethod
    def of(cls, episode: EpisodeRecord | Mapping[str, Any]) -> EpisodeRecord:
        """`episode` itself, or the record of a JSON object (`from_dict`)."""
        return episode if isinstance(episode, EpisodeRecord) else cls.from_dict(episode)


def as_records(episodes: Iterable[EpisodeRecord | Mapping[str, Any]]) -> list[EpisodeRecord]:
    """Episode records of records or JSON objects (`RecordError` on one that is neither)."""
    return [EpisodeRecord.of(e) for e in episodes]


@dataclass(frozen=True)
class MetricsRecord:
    """One line of ``metrics.jsonl``: one training step's numbers by name (``rollout/reward_mean``, ...).

    Reads like the JSON object it is (``record["time/train_s"]``, ``record.get(EVAL_KEY)``).

    Attributes:
        step: The training step (from 1).
        values: Every other key as written (`METRIC_KEYS` but ``step``, `EVAL_KEY` on evaluated
            steps, ``update/...``).
        schema_version: The file format version it was written in.
    """

    step: int
    values: Mapping[str, Any] = field(default_factory=dict)
    schema_version: int = SCHEMA_VERSION

    def __getitem__(self, key: str) -> Any:
        return self.step if key == "step" else self.values[key]

    def __contains__(self, key: object) -> bool:
        return key == "step" or key in self.values

    def get(self, key: str, default: Any = None) -> Any:
        """The value under `key` (``step`` included), else `default`."""
        return self.step if key == "step" else self.values.get(key, default)

    def number(self, key: str) -> float | None:
        """The value under `key` when it is a number (not a bool), else None."""
        value = self.get(key)
        return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None

    @property
    def missing(self) -> tuple[str, ...]:
        """The `METRIC_KEYS` this record lacks (a trainer's line lacks none)."""
        return tuple(k for k in METRIC_KEYS if k not in self)

    def to_dict(self) -> dict[str, Any]:
        """The record as one line of ``metrics.jsonl`` holds it."""
        return {"schema_version": self.schema_version, "step": self.step, **self.values}

    @classmethod
    def from_dict(cls, data: Any) -> MetricsRecord:
        """The record of a JSON object; `RecordError` when it has no step, or is of a newer schema."""
        data = _mapping(data, "a metrics record")
        version = _version(data, "metrics record")
        if "step" not in data:
            raise RecordError("no step")
        values = {k: v for k, v in data.items() if k not in ("schema_version", "step")}
        return cls(step=_number(data["step"], "step", int), values=values, schema_version=version)


def _read(
    path: str | os.PathLike[str], kind: type[EpisodeRecord] | type[MetricsRecord], wanted: Any
) -> tuple[list[Any], FileHealth]:
    objects, health = read_jsonl(path)
    records, unreadable = [], 0
    for obj in objects:
        if not wanted(obj):
            continue
        try:
            records.append(kind.from_dict(obj))
        except RecordError as e:
            unreadable += 1
            what = "an episode record" if kind is EpisodeRecord else "a metrics record"
            warnings.warn(f"{path}: skipped {what} ({e})", stacklevel=3)
    return records, dataclasses.replace(health, corrupt_lines=health.corrupt_lines + unreadable)


def read_episodes(path: str | os.PathLike[str], *, unique: bool = False) -> tuple[list[EpisodeRecord], FileHealth]:
    """All readable episode records of a file, and what was skipped (`tooluse_agents.runs.jsonl.read_jsonl`).

    Objects that are not episode records are left out; an episode record this version cannot
    read (malformed, or of a newer schema) is skipped with a warning and counted as corrupt.
    With `unique` (an evaluation run's file, where a (task, seed) is played once) only the first
    record of each (task, seed) is kept (`unique_episodes`).
    """
    records, health = _read(path, EpisodeRecord, lambda obj: "task_id" in obj and "reward" in obj)
    return (unique_episodes(records, path) if unique else records), health


def unique_episodes(records: Sequence[EpisodeRecord], where: object = "episodes") -> list[EpisodeRecord]:
    """The first record of each (task, seed), in order; a warning says how many later repeats were left out.

    An evaluation plays each (task, seed) once; a file holding one twice (two processes that wrote
    into one run folder, before run folders were locked) must not count it twice. An `unscored`
    record is the exception: a resumed run plays its episode again, and the later record takes its place.
    """
    kept: dict[tuple[str, int], EpisodeRecord] = {}
    repeats = 0
    for record in records:
        key = (record.task_id, record.seed)
        if key not in kept or kept[key].unscored:
            kept[key] = record
        else:
            repeats += 1
    if repeats:
        warnings.warn(
            f"{where}: left out {repeats} repeated episode{'s' if repeats != 1 else ''} of a (task, seed) "
            "already read (the first is kept)",
            stacklevel=3,
        )
    return list(kept.values())


def read_metrics(path: str | os.PathLike[str]) -> tuple[list[MetricsRecord], FileHealth]:
    """All readable lines of a ``metrics.jsonl``, and what was skipped; the same rules as `read_episodes`."""
    return _read(path, MetricsRecord, lambda obj: True)
