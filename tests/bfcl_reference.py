"""The official scoring path, for differential tests: bfcl_eval's own multi_turn_checker.

`official_verdict` applies the two rules BFCL's eval runner applies before calling the
checker (a run cut short by force-quit has fewer turns than the ground truth and fails as
``multi_turn:force_terminated``; steps that decode to no call are dropped), then runs
`multi_turn_checker` under a fresh model name and frees the instances it left in
bfcl_eval's module globals.
"""

from __future__ import annotations

import copy
import uuid
from functools import cache

from tooluse_gym.tasks import bfcl


@cache
def _entries(category: str) -> dict:
    from bfcl_eval.utils import load_dataset_entry, load_ground_truth_entry

    name = f"multi_turn_{category}"
    entries = {e["id"]: e for e in load_dataset_entry(name, include_language_specific_hint=False)}
    truths = {g["id"]: g["ground_truth"] for g in load_ground_truth_entry(name)}
    return {i: (entries[i], truths[i]) for i in entries}


def ground_truth_strings(task_id: str) -> list[list[str]]:
    category = task_id.removeprefix("multi_turn_").rsplit("_", 1)[0]
    return copy.deepcopy(_entries(category)[task_id][1])


def official_verdict(task_id: str, decoded: list[list[list[str]]]) -> tuple[bool, str | None]:
    """BFCL's verdict on a trajectory: turns -> steps -> call strings."""
    from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_utils
    from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker import multi_turn_checker

    bfcl.backend_classes()  # makes sure BFCL_PROJECT_ROOT is set before bfcl_eval imports
    category = task_id.removeprefix("multi_turn_").rsplit("_", 1)[0]
    entry, truth = _entries(category)[task_id]
    if len(decoded) != len(truth):
        return False, "multi_turn:force_terminated"
    decoded = [[step for step in turn if step] for turn in decoded]
    model = "ref_" + uuid.uuid4().hex
    try:
        result = multi_turn_checker(decoded, truth, copy.deepcopy(entry), f"multi_turn_{category}", model)
    finally:
        g = vars(multi_turn_utils)
        for key in [k for k in g if k.startswith(model)]:
            del g[key]
    return result["valid"], result.get("error_type")


def bfcl_persona() -> str:
    """The first sentence of BFCL's default system prompt, read from bfcl_eval."""
    bfcl.backend_classes()
    from bfcl_eval.constants.default_prompts import PROMPT_STYLE_TEMPLATES

    return PROMPT_STYLE_TEMPLATES["classic"]["persona"]
