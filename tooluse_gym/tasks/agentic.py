"""BFCL v4's agentic tasks (memory, web search): conversations in segments, questions scored by their answer.

An agentic task is one `Task` whose turns run over one or more *segments*, each its own conversation
with its own system message: sessions (memory's prerequisite conversations: what the model writes is
kept, nothing is scored) and questions (one user turn; the last message without calls is checked
against gold answers by BFCL's agentic checker). `tooluse_gym.envs.agentic_env.AgenticEnv` plays them;
`tooluse_gym.tasks.bfcl_memory` and `tooluse_gym.tasks.bfcl_web_search` load them from bfcl-eval's data.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tooluse_gym.tasks.task import Task

__all__ = ["AgenticTask", "Question", "Segment", "answer_message"]


@dataclass(frozen=True)
class Question:
    """One scored question: BFCL's id (``memory_kv_0-customer-0``, ``web_search_base_3``), its text and gold answers."""

    task_id: str
    content: str
    answers: tuple[str, ...]
    index: int


@dataclass(frozen=True)
class Segment:
    """One conversation of an agentic task: turns ``first_turn`` .. ``first_turn + num_turns - 1``.

    Attributes:
        kind: ``session`` (a memory prerequisite session: writes memory, not scored) | ``question``.
        entry_id: BFCL's id of the entry (``memory_kv_prereq_0-customer-0`` or a question's id).
        first_turn: The task turn the segment starts at.
        num_turns: Its user turns.
        question: The question (``question`` segments).
    """

    kind: str
    entry_id: str
    first_turn: int
    num_turns: int
    question: Question | None = None


@dataclass(frozen=True)
class AgenticTask(Task):
    """An agentic task: its segments over the task's turns and the one backend (BFCL's class name) they use."""

    backend: str = ""
    segments: tuple[Segment, ...] = ()

    @property
    def questions(self) -> tuple[Question, ...]:
        """The scored questions, in order."""
        return tuple(s.question for s in self.segments if s.question is not None)

    def segment_at(self, turn: int) -> int:
        """The index of the segment that holds `turn`."""
        for i, s in enumerate(self.segments):
            if s.first_turn <= turn < s.first_turn + s.num_turns:
                return i
        raise ValueError(f"task {self.task_id} has no turn {turn}")

    def system_message(self, segment: Segment, backend: Any) -> str:
        """The system message a segment's conversation starts with (`backend`: the loaded instance)."""
        raise NotImplementedError

    def reference_reply(self, turn: int, steps_in_turn: int, tool_format: str, messages: Sequence[Mapping]) -> str:
        """The scripted reference's next message (what the oracle agent sends)."""
        return self.reference_message(turn, steps_in_turn, tool_format)


def answer_message(answer: str | None, context: str) -> str:
    """A final reply in BFCL's agentic answer format (``I do not know`` when `answer` is None)."""
    if answer is None:
        return "{'answer': 'I do not know', 'context': 'I do not know'}"
    return json.dumps({"answer": answer, "context": context}, ensure_ascii=False)
