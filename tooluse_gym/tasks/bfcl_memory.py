"""BFCL v4's memory categories as tasks: the prerequisite sessions, the questions and their gold answers.

Read from bfcl-eval's own files at run time (``BFCL_v4_memory.json``, ``memory_prereq_conversation/``,
``possible_answer/BFCL_v4_memory.json`` and the backends' function docs). A memory task is a list of
*segments*, each its own conversation: a prerequisite session (the user tells the assistant things
over several turns; the memory the assistant writes is kept) or a question (one user turn, asked from
the memory the sessions left; scored by BFCL's agentic checker). Its turns are numbered across the
segments, so one task is one `Task` whose turns run session after session, then question after question.

Two episode units (the ``episode`` setting of ``ToolUse-Memory-v0``):

- ``scenario``: one of BFCL's five scenarios: its sessions in order, then its questions, each from the
  final memory the model itself wrote (what BFCL scores). Task id ``memory_kv-customer``.
- ``question``: one question, from a given memory snapshot (for RL on the read phase). Task id as
  BFCL's: ``memory_kv_0-customer-0``.

The scripted reference (`write_calls`, `reference_answer`): a write phase that stores each question's
gold answer under a key the question's turn can read back (``answer_3``), and a read phase that
retrieves it and answers in BFCL's format. The oracle agent plays it; the ``oracle`` snapshot is what it
leaves.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

from tooluse_gym.tasks.agentic import AgenticTask, Question, Segment, answer_message
from tooluse_gym.tasks.bfcl import _import
from tooluse_gym.types import ToolCall

BACKENDS = ("kv", "rec_sum", "vector")
"""BFCL's memory backends, as the categories name them (``memory_kv``)."""
CATEGORIES = tuple(f"memory_{b}" for b in BACKENDS)
SCENARIOS = ("customer", "finance", "healthcare", "notetaker", "student")
"""BFCL's scenarios, in the order its data lists them."""
EPISODE_UNITS = ("scenario", "question")

__all__ = [
    "BACKENDS",
    "CATEGORIES",
    "EPISODE_UNITS",
    "SCENARIOS",
    "MemoryQuestion",
    "MemoryTask",
    "Segment",
    "backend_name",
    "load_memory_tasks",
    "memory_system_prompt",
    "reference_answer",
    "write_calls",
]


MemoryQuestion = Question
"""One scored memory question (`tooluse_gym.tasks.agentic.Question`)."""


@dataclass(frozen=True)
class MemoryTask(AgenticTask):
    """A memory task: sessions then questions over BFCL's memory backend of its category, in one scenario.

    ``ground_truth`` holds the scripted reference's calls (the write phase on the first session turn,
    a read call on each question turn); the checker does not compare calls, only answers.
    """

    scenario: str = ""

    def system_message(self, segment: Segment, backend: Any) -> str:
        """BFCL's memory system message: the scenario, the memory's core content, and on questions the format."""
        dump = backend._dump_core_memory_to_context()
        return memory_system_prompt(self.category, self.scenario, dump, question=segment.kind == "question")

    def reference_reply(self, turn: int, steps_in_turn: int, tool_format: str, messages: Sequence[Mapping]) -> str:
        """The scripted reference's next message: its calls, then on a question the answer it read back."""
        segment = self.segments[self.segment_at(turn)]
        if segment.question is not None and steps_in_turn > 0:
            return reference_answer(self.backend, segment.question, messages)
        return self.reference_message(turn, steps_in_turn, tool_format)


def backend_name(category: str) -> str:
    """BFCL's class name for a memory category (``memory_kv`` -> ``MemoryAPI_kv``)."""
    if category not in CATEGORIES:
        raise ValueError(f"unknown memory category {category!r}; expected one of {', '.join(CATEGORIES)}")
    return "MemoryAPI_" + category.removeprefix("memory_")


def _data_path() -> Path:
    return Path(_import("bfcl_eval.constants.eval_config").PROMPT_PATH)


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


@lru_cache(maxsize=1)
def _raw() -> tuple[list[dict[str, Any]], dict[str, list[str]], dict[str, list[dict[str, Any]]]]:
    """(questions, gold answers by id, prerequisite entries by scenario), as bfcl-eval ships them."""
    data = _data_path()
    questions = _read_jsonl(data / "BFCL_v4_memory.json")
    answers = {a["id"]: list(a["ground_truth"]) for a in _read_jsonl(data / "possible_answer" / "BFCL_v4_memory.json")}
    prereqs = {s: _read_jsonl(data / "memory_prereq_conversation" / f"memory_{s}.json") for s in SCENARIOS}
    return questions, answers, prereqs


@cache
def function_docs(backend: str) -> tuple[Mapping[str, Any], ...]:
    """The published function docs of a memory backend (``MemoryAPI_kv``), from bfcl-eval's doc files."""
    config = _import("bfcl_eval.constants.executable_backend_config")
    folder = Path(_import("bfcl_eval.constants.eval_config").MULTI_TURN_FUNC_DOC_PATH)
    return tuple(_read_jsonl(folder / config.MULTI_TURN_FUNC_DOC_FILE_MAPPING[backend]))


def memory_system_prompt(category: str, scenario: str, memory_content: str, question: bool) -> str:
    """The system message BFCL puts before a memory entry: the scenario, the memory, and on questions the answer format.

    bfcl-eval's own text (``constants/default_prompts.py``), combined as its handler combines it
    (``model_handler/utils.py`` ``add_memory_instruction_system_prompt``).
    """
    prompts = _import("bfcl_eval.constants.default_prompts")
    template = (
        prompts.MEMORY_BACKEND_INSTRUCTION_UNIFIED
        if "rec_sum" in category
        else prompts.MEMORY_BACKEND_INSTRUCTION_CORE_ARCHIVAL
    )
    text = template.format(scenario_setting=prompts.MEMORY_AGENT_SETTINGS[scenario], memory_content=memory_content)
    if question:
        text += "\n\n" + prompts.ADDITIONAL_SYSTEM_PROMPT_FOR_AGENTIC_RESPONSE_FORMAT
    return text


def answer_key(question: MemoryQuestion) -> str:
    """The key the scripted write phase stores a question's answer under (snake_case, as the kv backend asks)."""
    return f"answer_{question.index}"


def write_calls(backend: str, questions: Sequence[MemoryQuestion]) -> tuple[ToolCall, ...]:
    """The scripted write phase: one call per question storing its first gold answer where the read phase finds it."""
    if backend == "MemoryAPI_rec_sum":
        return tuple(ToolCall("memory_append", {"text": f"{answer_key(q)}: {q.answers[0]}\n"}) for q in questions)
    return tuple(ToolCall("archival_memory_add", {"key": answer_key(q), "value": q.answers[0]}) for q in questions)


def read_call(backend: str, question: MemoryQuestion) -> ToolCall:
    """The scripted read phase's call for a question."""
    if backend == "MemoryAPI_rec_sum":
        return ToolCall("memory_retrieve", {})
    return ToolCall("archival_memory_retrieve", {"key": answer_key(question)})


def reference_answer(backend: str, question: MemoryQuestion, messages: Sequence[Mapping[str, Any]]) -> str:
    """The scripted read phase's answer, in BFCL's answer format, from what the last tool result returned.

    The answer comes from the memory the episode kept (the last tool message), never from the gold
    file: a memory that was lost gives ``I do not know``.
    """
    found = None
    for message in reversed(messages):
        content = str(message.get("content") or "")
        if message.get("role") == "user" and content == question.content:
            break  # nothing was read back in this turn
        found = _read_back(backend, question, content)
        if found is not None:
            break
    return answer_message(found, "read back from memory")


def _read_back(backend: str, question: MemoryQuestion, result: str) -> str | None:
    try:
        data = json.loads(result)
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    if backend == "MemoryAPI_rec_sum":
        match = re.search(rf"(?m)^{re.escape(answer_key(question))}: (.*)$", str(data.get("memory_content", "")))
        return match.group(1) if match else None
    value = data.get("value")
    return value if isinstance(value, str) else None


def _questions(category: str, scenario: str) -> list[MemoryQuestion]:
    raw, answers, _ = _raw()
    out = []
    for entry in raw:
        if entry["scenario"] != scenario:
            continue
        task_id = entry["id"].replace("memory", category, 1)
        index = int(entry["id"].split("_", 1)[1].split("-", 1)[0])
        content = entry["question"][0][0]["content"]
        out.append(MemoryQuestion(task_id, content, tuple(answers[entry["id"]]), index))
    return out


def _scenario_task(category: str, scenario: str) -> MemoryTask:
    backend = backend_name(category)
    questions = _questions(category, scenario)
    _, _, prereqs = _raw()
    segments: list[Segment] = []
    turns: list[tuple[dict[str, Any], ...]] = []
    truth: list[tuple[ToolCall, ...]] = []
    for entry in prereqs[scenario]:
        entry_id = entry["id"].replace("memory", category, 1)
        segments.append(Segment("session", entry_id, len(turns), len(entry["question"])))
        for messages in entry["question"]:
            turns.append(tuple(dict(m) for m in messages))
            truth.append(write_calls(backend, questions) if len(truth) == 0 else ())
    for q in questions:
        segments.append(Segment("question", q.task_id, len(turns), 1, q))
        turns.append(({"role": "user", "content": q.content},))
        truth.append((read_call(backend, q),))
    return MemoryTask(
        task_id=f"{category}-{scenario}",
        category=category,
        turns=tuple(turns),
        ground_truth=tuple(truth),
        functions=function_docs(backend),
        backends=(backend,),
        initial_config={},
        scenario=scenario,
        backend=backend,
        segments=tuple(segments),
    )


def _question_task(category: str, question: MemoryQuestion, scenario: str) -> MemoryTask:
    backend = backend_name(category)
    return MemoryTask(
        task_id=question.task_id,
        category=category,
        turns=(({"role": "user", "content": question.content},),),
        ground_truth=((read_call(backend, question),),),
        functions=function_docs(backend),
        backends=(backend,),
        initial_config={},
        scenario=scenario,
        backend=backend,
        segments=(Segment("question", question.task_id, 0, 1, question),),
    )


def load_memory_tasks(
    categories: Sequence[str], episode: str = "scenario", task_ids: Sequence[str] | None = None
) -> list[MemoryTask]:
    """The memory tasks of `categories` as episodes of the given unit (`EPISODE_UNITS`), in BFCL's order.

    Raises:
        ValueError: An unknown category, episode unit or task id.
    """
    if episode not in EPISODE_UNITS:
        raise ValueError(f"episode must be one of {', '.join(EPISODE_UNITS)}; got {episode!r}")
    tasks: list[MemoryTask] = []
    for category in categories:
        backend_name(category)
        for scenario in SCENARIOS:
            if episode == "scenario":
                tasks.append(_scenario_task(category, scenario))
            else:
                tasks.extend(_question_task(category, q, scenario) for q in _questions(category, scenario))
    if task_ids is not None:
        by_id = {t.task_id: t for t in tasks}
        unknown = [i for i in task_ids if i not in by_id]
        if unknown:
            example = ", ".join(t.task_id for t in tasks[:2])
            raise ValueError(f"unknown memory task ids {unknown[:5]} for episode={episode!r} (ids look like {example})")
        tasks = [by_id[i] for i in task_ids]
    return tasks
