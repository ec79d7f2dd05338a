"""Episode records and the `episodes.jsonl` file (DESIGN §6): the only episode format tools read.

One JSON object per line, appended and flushed as each episode finishes. Readers skip a
torn last line or a corrupt line with a warning and count it; they never crash on one.
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agents.base import AgentError, Generation

SCHEMA_VERSION = 1


@dataclass(frozen=True)
class StepCost:
    """What one assistant message cost."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0

    @classmethod
    def of(cls, generation: Generation) -> StepCost:
        return cls(generation.prompt_tokens, generation.completion_tokens, round(generation.latency_s, 4))


def episode_record(
    env: Any,
    *,
    protocol: Mapping[str, Any],
    seed: int,
    agent: Mapping[str, Any],
    costs: Sequence[StepCost],
    error: AgentError | None = None,
    duration_s: float = 0.0,
) -> dict[str, Any]:
    """Build the JSON record of the episode that just ended in `env` (an unwrapped `ToolUseEnv`)."""
    task = env.task
    result = env.result
    verdicts = {v.turn: v.to_dict() for v in result.turns} if result is not None else {}
    turns: list[dict[str, Any]] = []
    for index, (step, cost) in enumerate(zip(env.step_log, _pad(costs, len(env.step_log)), strict=True)):
        while len(turns) <= step.turn:
            t = len(turns)
            user = [m["content"] for m in task.turns[t]] if t < task.num_turns else []
            turns.append({"turn": t, "user": user, "held_out": t in task.held_out, "steps": [], "verdict": None})
        turns[step.turn]["steps"].append(
            {
                **step.to_dict(),
                "index": index,
                "prompt_tokens": cost.prompt_tokens,
                "completion_tokens": cost.completion_tokens,
                "latency_s": cost.latency_s,
            }
        )
    for turn in turns:
        turn["verdict"] = verdicts.get(turn["turn"])
    checker = None
    if result is not None:
        checker = {"valid": result.valid, "error_type": result.error_type, "error_message": result.error_message}
    return {
        "schema_version": SCHEMA_VERSION,
        "protocol": dict(protocol),
        "task_id": task.task_id,
        "category": task.category,
        "seed": seed,
        "agent": dict(agent),
        "turns": turns,
        "num_turns": task.num_turns,
        "reward": 1.0 if result is not None and result.valid and error is None else 0.0,
        "checker": checker,
        "error": error.to_dict() if error is not None else None,
        "tokens": {
            "prompt": sum(c.prompt_tokens for c in costs),
            "completion": sum(c.completion_tokens for c in costs),
        },
        "duration_s": round(duration_s, 4),
    }


def _pad(costs: Sequence[StepCost], n: int) -> list[StepCost]:
    return list(costs[:n]) + [StepCost()] * max(0, n - len(costs))


def _last_byte(path: Path) -> bytes:
    with path.open("rb") as f:
        f.seek(-1, os.SEEK_END)
        return f.read(1)


class EpisodeWriter:
    """Appends episode records to a JSONL file, one flushed line per episode."""

    def __init__(self, path: str | os.PathLike[str]):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        torn = self.path.exists() and self.path.stat().st_size > 0 and _last_byte(self.path) != b"\n"
        self._file = self.path.open("a", encoding="utf-8")
        if torn:  # a run killed mid-write: keep its fragment on a line of its own
            self._file.write("\n")

    def write(self, record: Mapping[str, Any]) -> None:
        self._file.write(json.dumps(record, ensure_ascii=False) + "\n")
        self._file.flush()
        os.fsync(self._file.fileno())

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> EpisodeWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


@dataclass
class ReadStats:
    """Lines of a JSONL file that could not be read."""

    skipped: int = 0
    torn_last_line: bool = False


def iter_jsonl(path: str | os.PathLike[str], stats: ReadStats | None = None) -> Iterator[dict[str, Any]]:
    """Objects of a JSONL file; bad lines are skipped with a warning and counted in `stats`."""
    stats = stats if stats is not None else ReadStats()
    with Path(path).open("rb") as f:
        lines = f.read().split(b"\n")
    last = len(lines) - 1
    for i, raw in enumerate(lines):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw.decode("utf-8"))
            if not isinstance(obj, dict):
                raise ValueError("not a JSON object")
        except (ValueError, UnicodeDecodeError) as e:
            stats.skipped += 1
            torn = i == last
            stats.torn_last_line = stats.torn_last_line or torn
            warnings.warn(f"{path}:{i + 1}: skipped {'torn last' if torn else 'corrupt'} line ({e})", stacklevel=2)
            continue
        yield obj


def read_episodes(path: str | os.PathLike[str]) -> tuple[list[dict[str, Any]], ReadStats]:
    """All readable episode records of a file, and what was skipped."""
    stats = ReadStats()
    records = [r for r in iter_jsonl(path, stats) if "task_id" in r and "reward" in r]
    return records, stats
