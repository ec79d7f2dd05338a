"""The episode file format as types: `EpisodeRecord` is one line of ``episodes.jsonl``, with a checked version.

The harness and the trainer write it (`agents.episode.episode_record`); `tooluse-eval`, the TUI
and the benchmarks read it. `EpisodeRecord.from_dict` accepts every record written so far
(schema 1, keys added later defaulted, the trainer's ``train`` and ``eval_step`` kept in
`extra`) and refuses a record of a newer schema with a message that says so;
``to_dict(from_dict(d)) == d`` for any record a writer produced. Standard library only (the TUI
imports it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

SCHEMA_VERSION = 1
"""The version this code writes, and the newest it reads."""

__all__ = ["SCHEMA_VERSION", "EpisodeRecord", "RecordError", "StepEntry", "TurnEntry"]

_STEP_KEYS = ("turn", "assistant", "calls", "results", "parse_failure", "index")
_STEP_COSTS = ("prompt_tokens", "completion_tokens", "latency_s")
_EPISODE_KEYS = (
    "schema_version",
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


class RecordError(ValueError):
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
        parse_failure: Why nothing could be decoded, when the text looked like an attempt.
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
        return {
            "turn": self.turn,
            "user": list(self.user),
            "held_out": self.held_out,
            "steps": [s.to_dict() for s in self.steps],
            "verdict": dict(self.verdict) if self.verdict is not None else None,
        }

    @classmethod
    def from_dict(cls, data: Any, turn: int = 0) -> TurnEntry:
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

    @property
    def steps(self) -> tuple[StepEntry, ...]:
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
        return {**out, **self.extra}

    @classmethod
    def from_dict(cls, data: Any) -> EpisodeRecord:
        """The record of a JSON object; `RecordError` when it is not one, or is of a newer schema."""
        data = _mapping(data, "an episode record")
        version = _number(data.get("schema_version", 1), "schema_version", int)
        if version > SCHEMA_VERSION:
            raise RecordError(
                f"episode record of schema {version}, written by a newer tooluse-gym (this one reads up to "
                f"{SCHEMA_VERSION}): upgrade to read it"
            )
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
        )
