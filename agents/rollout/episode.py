"""Episode records and the `episodes.jsonl` file: the only episode format tools read.

One JSON object per line, appended and flushed as each episode finishes. Readers (`tooluse_agents.runs.jsonl`)
skip a torn last line or a corrupt line with a warning and count it; they never crash on one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tooluse_agents.backends.base import AgentError, Generation
from tooluse_agents.runs.records import SCHEMA_VERSION, EpisodeRecord, StepEntry, TurnEntry, read_episodes

__all__ = ["SCHEMA_VERSION", "StepCost", "episode_record", "read_episodes"]


@dataclass(frozen=True)
class StepCost:
    """What one assistant message cost."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0

    @classmethod
    def of(cls, generation: Generation) -> StepCost:
        """The cost of one generation (latency rounded to 0.1 ms)."""
        return cls(generation.prompt_tokens, generation.completion_tokens, round(generation.latency_s, 4))


def episode_record(
    reset_info: Mapping[str, Any],
    step_infos: Sequence[Mapping[str, Any]],
    *,
    seed: int,
    agent: Mapping[str, Any],
    costs: Sequence[StepCost],
    error: AgentError | None = None,
    duration_s: float = 0.0,
) -> EpisodeRecord:
    """The typed record (`tooluse_agents.runs.records.EpisodeRecord`) of an episode, from what the env returned.

    ``to_dict()`` is the line ``episodes.jsonl`` holds.

    A pure function of the reset's `info` (the task and the protocol card), the `info` of each
    step in order (its ``step_record``, and ``checker`` at the end) and what each message cost,
    as Gymnasium's `RecordEpisodeStatistics` builds its statistics from what `step` returns.
    An episode the env did not end (an agent or env error) has no checker verdict.
    """
    task = reset_info["task"]
    final = step_infos[-1].get("checker") if step_infos else None
    verdicts = {v["turn"]: v for v in final["turns"]} if final is not None else {}
    steps: dict[int, list[StepEntry]] = {}
    padded = _pad(costs, len(step_infos))
    for index, (info, cost) in enumerate(zip(step_infos, padded, strict=True)):
        step = info["step_record"]
        entry = StepEntry(
            turn=step.turn,
            index=index,
            assistant=step.content,
            calls=tuple(c.to_dict() for c in step.calls),
            results=tuple(step.results),
            parse_failure=step.parse_failure,
            prompt_tokens=cost.prompt_tokens,
            completion_tokens=cost.completion_tokens,
            latency_s=cost.latency_s,
        )
        steps.setdefault(step.turn, []).append(entry)
    turns = tuple(
        TurnEntry(
            turn=t,
            user=tuple(m["content"] for m in task.turns[t]) if t < task.num_turns else (),
            held_out=t in task.held_out,
            steps=tuple(steps.get(t, ())),
            verdict=verdicts.get(t),
        )
        for t in range(max(steps) + 1 if steps else 0)
    )
    checker = None
    reward = 0.0
    if final is not None:
        checker = {k: final[k] for k in ("valid", "error_type", "error_message")}
        if error is None:
            reward = float(final["reward"]) if "reward" in final else 1.0 if final["valid"] else 0.0
    questions: tuple[dict[str, Any], ...] = ()
    if final is not None and "questions" in final:  # several scored questions (BFCL memory): each one's verdict
        questions = tuple(dict(q) for q in final["questions"])
    elif hasattr(task, "questions"):  # not reached: each counts as failed, with the episode's error
        failure = error.type if error is not None else "episode_not_finished"
        questions = tuple({"task_id": q.task_id, "valid": False, "error_type": failure} for q in task.questions)
    return EpisodeRecord(
        task_id=task.task_id,
        questions=questions,
        reward=reward,
        category=task.category,
        seed=seed,
        protocol=dict(reset_info["protocol"]),
        agent=dict(agent),
        turns=turns,
        num_turns=task.num_turns,
        checker=checker,
        error=error.to_dict() if error is not None else None,
        prompt_tokens=sum(c.prompt_tokens for c in costs),
        completion_tokens=sum(c.completion_tokens for c in costs),
        duration_s=round(duration_s, 4),
    )


def _pad(costs: Sequence[StepCost], n: int) -> list[StepCost]:
    return list(costs[:n]) + [StepCost()] * max(0, n - len(costs))
