"""The official single-turn scoring path, for differential tests: bfcl_eval's handlers, decoders and eval runner.

`official_verdict(task_id, raw, response_format, underscore_to_dot)` stores a raw response as
BFCL's handler stores it (`tests._reference.bfcl_reference.model_response`: ``python`` is `QwenHandler`'s
prompting path, ``json`` `QwenFCHandler`'s ``<tool_call>`` blocks, ``fc`` the OpenAI
function-calling handler) and scores it with the eval runner's own per-entry functions
(``_evaluate_single_ast_entry`` / ``_evaluate_single_relevance_entry``), which call the
handler's ``decode_ast`` and ``ast_checker``. `stored_verdict` scores a response already in
the stored form (a result file's ``result``). The model name picks ``underscore_to_dot``.

Importing bfcl_eval's eval runner takes seconds (its model registry imports every handler).
Callers must only pass responses that are safe for bfcl_eval to `eval` (its Python decoder
evaluates arithmetic).
"""

from __future__ import annotations

import copy
from functools import cache
from typing import Any

from tests._reference.bfcl_reference import model_response
from tooluse_gym.tasks import bfcl
from tooluse_gym.tasks.bfcl_single_turn import CATEGORIES, check_of

MODEL_NAMES = {False: "Qwen_Qwen3-8B", True: "gpt-4o-2024-11-20-FC"}
"""A model whose config has ``underscore_to_dot`` False / True (the eval runner's file-name form)."""


@cache
def _entries(category: str) -> dict[str, tuple[dict[str, Any], Any]]:
    bfcl.backend_classes()  # sets BFCL_PROJECT_ROOT before bfcl_eval imports
    from bfcl_eval.utils import load_dataset_entry, load_ground_truth_entry

    entries = load_dataset_entry(category, include_prereq=False, include_language_specific_hint=False)
    if check_of(category) != "ast":
        return {e["id"]: (e, None) for e in entries}
    truths = {g["id"]: g["ground_truth"] for g in load_ground_truth_entry(category)}
    return {e["id"]: (e, truths[e["id"]]) for e in entries}


def category_of(task_id: str) -> str:
    return max((c for c in CATEGORIES if task_id.startswith(c + "_")), key=len)


@cache
def _runner() -> Any:
    bfcl.backend_classes()
    from bfcl_eval.eval_checker import eval_runner

    return eval_runner


def official_verdict(task_id: str, raw: Any, response_format: str, underscore_to_dot: bool) -> tuple[bool, str | None]:
    """BFCL's verdict on one raw response to a single-turn entry: (valid, error_type)."""
    stored = model_response(copy.deepcopy(raw), response_format)
    return stored_verdict(task_id, stored, response_format, underscore_to_dot)


def stored_verdict(task_id: str, stored: Any, response_format: str, underscore_to_dot: bool) -> tuple[bool, str | None]:
    """BFCL's verdict on a response as its handler stored it (a result file's ``result``): (valid, error_type)."""
    from tests._reference.bfcl_reference import handler

    runner = _runner()
    category = category_of(task_id)
    entry, answer = _entries(category)[task_id]
    h = handler(response_format)
    model = MODEL_NAMES[underscore_to_dot]
    stored = copy.deepcopy(stored)
    if check_of(category) != "ast":
        result = runner._evaluate_single_relevance_entry(h, task_id, stored, copy.deepcopy(entry), model, category)
    else:
        language, return_format = _language(category)
        result = runner._evaluate_single_ast_entry(
            h,
            task_id,
            stored,
            copy.deepcopy(answer),
            copy.deepcopy(entry),
            model,
            category,
            language=language,
            return_format=return_format,
            has_tool_call_tag=False,
        )
    return result["valid"], result.get("error_type")


def _language(category: str) -> tuple[Any, Any]:
    """The eval runner's language and return format for a category (``ast_file_runner``)."""
    from bfcl_eval.constants.enums import Language, ReturnFormat

    if "javascript" in category:
        return Language.JAVASCRIPT, ReturnFormat.JAVASCRIPT
    if "java" in category:
        return Language.JAVA, ReturnFormat.JAVA
    return Language.PYTHON, ReturnFormat.PYTHON
