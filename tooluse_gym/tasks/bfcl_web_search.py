"""BFCL v4's web-search categories as tasks: ``web_search_base`` and ``web_search_no_snippet``.

Read from bfcl-eval's own files at run time (``BFCL_v4_web_search.json``, its possible answers with
the gold hops, and the ``web_search.json`` function docs). Both categories ask the same 100 multi-hop
questions; ``no_snippet`` hides the search results' snippets (BFCL's ``show_snippet`` setting). A task
is one question, one conversation: BFCL's answer-format system message, then the user's question.

The scripted reference (the oracle agent): search each gold hop's subquestion and fetch its source,
then answer with the first gold answer in BFCL's format. It reaches every task whatever the backend
answers, because it knows the answer: it checks the env, not the web.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

from tooluse_gym.tasks.agentic import AgenticTask, Question, Segment, answer_message
from tooluse_gym.tasks.bfcl import _import
from tooluse_gym.types import ToolCall

CATEGORIES = ("web_search_base", "web_search_no_snippet")
GROUP = "web_search"
"""BFCL's name for both web-search categories."""
BACKEND = "WebSearchAPI"

__all__ = ["BACKEND", "CATEGORIES", "GROUP", "WebSearchTask", "expand_categories", "gold_hops", "load_web_search_tasks"]


@dataclass(frozen=True)
class WebSearchTask(AgenticTask):
    """One web-search question; `hops` are the gold file's steps (``subquestion``, ``answer``, ``source``)."""

    hops: tuple[Mapping[str, Any], ...] = ()

    def system_message(self, segment: Segment, backend: Any) -> str:
        """BFCL's answer-format system message (``ADDITIONAL_SYSTEM_PROMPT_FOR_AGENTIC_RESPONSE_FORMAT``)."""
        return str(_import("bfcl_eval.constants.default_prompts").ADDITIONAL_SYSTEM_PROMPT_FOR_AGENTIC_RESPONSE_FORMAT)

    def reference_reply(self, turn: int, steps_in_turn: int, tool_format: str, messages: Sequence[Mapping]) -> str:
        """The scripted reference: every hop's search and fetch in one message, then the gold answer."""
        if steps_in_turn == 0:
            return self.reference_message(turn, 0, tool_format)
        return answer_message(self.questions[0].answers[0], "found by following the gold hops")


def expand_categories(category: str | Sequence[str]) -> list[str]:
    """Web-search categories from a name, a list, or ``web_search`` (both).

    Raises:
        ValueError: An unknown name.
    """
    names = [category] if isinstance(category, str) else list(category)
    out: list[str] = []
    for name in names:
        if name == GROUP:
            out += CATEGORIES
        elif name in CATEGORIES:
            out.append(name)
        else:
            raise ValueError(f"unknown web-search category {name!r}; expected one of {', '.join(CATEGORIES)}, {GROUP}")
    return list(dict.fromkeys(out))


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


@lru_cache(maxsize=1)
def _raw() -> tuple[list[dict[str, Any]], dict[str, dict[str, Any]]]:
    """(questions, possible answers by id), as bfcl-eval ships them."""
    data = Path(_import("bfcl_eval.constants.eval_config").PROMPT_PATH)
    questions = _read_jsonl(data / "BFCL_v4_web_search.json")
    answers = {a["id"]: a for a in _read_jsonl(data / "possible_answer" / "BFCL_v4_web_search.json")}
    return questions, answers


@cache
def function_docs() -> tuple[Mapping[str, Any], ...]:
    """The published function docs of ``WebSearchAPI``, from bfcl-eval's doc files."""
    config = _import("bfcl_eval.constants.executable_backend_config")
    folder = Path(_import("bfcl_eval.constants.eval_config").MULTI_TURN_FUNC_DOC_PATH)
    return tuple(_read_jsonl(folder / config.MULTI_TURN_FUNC_DOC_FILE_MAPPING[BACKEND]))


def gold_hops() -> list[dict[str, Any]]:
    """Every gold hop of BFCL's web-search answers (``subquestion``, ``answer``, ``source``), in the file's order."""
    _, answers = _raw()
    return [dict(hop) for entry in answers.values() for hop in entry.get("source", [])]


def _task(category: str, entry: Mapping[str, Any], gold: Mapping[str, Any]) -> WebSearchTask:
    task_id = str(entry["id"]).replace("web_search", category, 1)
    index = int(task_id.rsplit("_", 1)[1])
    content = entry["question"][0][0]["content"]
    question = Question(task_id, content, tuple(str(a) for a in gold["ground_truth"]), index)
    hops = tuple(dict(h) for h in gold.get("source", []))
    calls = tuple(ToolCall("search_engine_query", {"keywords": h["subquestion"]}) for h in hops)
    calls += tuple(ToolCall("fetch_url_content", {"url": h["source"], "mode": "truncate"}) for h in hops)
    return WebSearchTask(
        task_id=task_id,
        category=category,
        turns=(({"role": "user", "content": content},),),
        ground_truth=(calls,),
        functions=function_docs(),
        backends=(BACKEND,),
        initial_config={BACKEND: {"show_snippet": category != "web_search_no_snippet"}},
        backend=BACKEND,
        segments=(Segment("question", task_id, 0, 1, question),),
        hops=hops,
    )


def load_web_search_tasks(categories: Sequence[str], task_ids: Sequence[str] | None = None) -> list[WebSearchTask]:
    """The web-search tasks of `categories` (names or ``web_search``), in BFCL's order.

    Raises:
        ValueError: An unknown category or task id.
    """
    questions, answers = _raw()
    tasks = [_task(c, e, answers[e["id"]]) for c in expand_categories(categories) for e in questions]
    if task_ids is not None:
        by_id = {t.task_id: t for t in tasks}
        unknown = [i for i in task_ids if i not in by_id]
        if unknown:
            raise ValueError(f"unknown web-search task ids {unknown[:5]} (ids look like web_search_base_0)")
        tasks = [by_id[i] for i in task_ids]
    return tasks
