"""BFCL's agentic scoring, for differential tests: its checker, its runner's last-message rule, its gold answers.

* `bfcl_valid(message, answers)`: ``agentic_checker(...)["valid"]``
  (``bfcl_eval/eval_checker/agentic_eval/agentic_checker.py``).
* `runner_verdict(steps, answers)`: ``_evaluate_single_agentic_entry`` of ``eval_runner.py`` on one
  entry whose model result is `steps` (the raw message of each step), decoded by BFCL's own Qwen
  prompting handler: it picks the last message that does not decode to calls, and answers
  ``agentic:no_last_message`` when there is none (or it is empty).
* `gold(category)`: BFCL's id -> gold answers, from ``data/possible_answer/BFCL_v4_{category}.json``.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from tests._reference.bfcl_reference import handler
from tooluse_gym.tasks.bfcl import _import

__all__ = ["bfcl_valid", "gold", "runner_verdict"]


def bfcl_valid(message: Any, answers: list[str]) -> bool:
    """BFCL's agentic checker's ``valid`` flag."""
    checker = _import("bfcl_eval.eval_checker.agentic_eval.agentic_checker").agentic_checker
    return bool(checker(message, list(answers))["valid"])


def runner_verdict(steps: list[str], answers: list[str]) -> tuple[bool, str | None]:
    """(valid, error_type) of BFCL's eval runner on one agentic entry whose steps answered `steps`."""
    runner = _import("bfcl_eval.eval_checker.eval_runner")
    result = runner._evaluate_single_agentic_entry(
        handler("python"), "memory_0-customer-0", [list(steps)], list(answers), {"question": []}, "m", "memory"
    )
    error = result.get("error")
    return bool(result["valid"]), (error or {}).get("error_type") if isinstance(error, dict) else None


@cache
def gold(category: str) -> dict[str, list[str]]:
    """BFCL's gold answers of ``memory`` or ``web_search``, by entry id, in its file's order."""
    folder = _import("bfcl_eval.constants.eval_config").POSSIBLE_ANSWER_PATH
    with open(folder / f"BFCL_v4_{category}.json", encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    return {row["id"]: list(row["ground_truth"]) for row in rows}
