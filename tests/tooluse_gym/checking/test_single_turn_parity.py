"""Single-turn parity with BFCL: our decoders and AST checker against bfcl_eval's own, verdict for verdict.

Every response (each entry's reference answer and its perturbations, `tests._reference.single_turn_cases`)
is scored twice: by `tooluse_gym.checking.single_turn.verdict` on `decode_ast_action`'s reading (what
`ToolUse-SingleTurn-v0` does in `step`), and by bfcl_eval's eval runner with its own handlers
(`tests._reference.bfcl_single_turn_reference`). Valid flag and error type must be equal. The fast tests
take a few entries of every category; the slow ones every entry.
"""

from __future__ import annotations

import collections
import itertools

import pytest

from tests._reference.bfcl_single_turn_reference import official_verdict
from tests._reference.single_turn_cases import FORMATS, UNWRITTEN_AS_JAVA_TEXT, cases, message
from tooluse_gym.checking.languages import language_of
from tooluse_gym.checking.single_turn import verdict
from tooluse_gym.decoding.bfcl_ast import decode_ast_action
from tooluse_gym.tasks.bfcl_single_turn import CATEGORIES, UNSATISFIABLE, SingleTurnTask, load_single_turn_tasks

pytest.importorskip("tree_sitter", reason="bfcl_eval's decoders need tree_sitter (the dev extra)")


def ours(task: SingleTurnTask, raw: object, response_format: str) -> tuple[bool, str | None]:
    fmt = "python" if response_format == "fc" else response_format
    v = verdict(
        decode_ast_action(raw, fmt, language_of(task.category)),
        check=task.check,
        functions=task.checker_docs,
        answer=task.answer,
        test_category=task.category,
        underscore_to_dot=task.underscore_to_dot,
    )
    return v.valid, v.error_type


def compare(tasks: list[SingleTurnTask], response_format: str, *, full: bool) -> collections.Counter[str]:
    """Score every case both ways; returns counts per outcome, fails on the first disagreement."""
    counts: collections.Counter[str] = collections.Counter()
    for task in tasks:
        for label, calls in cases(task, full=full):
            raw = message(calls, response_format, language_of(task.category))
            expected = official_verdict(task.task_id, raw, response_format, task.underscore_to_dot)
            got = ours(task, raw, response_format)
            assert got == expected, f"{task.task_id} {label} ({response_format}): ours {got}, BFCL {expected}: {raw!r}"
            counts[f"{label.split(':')[0].split('@')[0]}={expected[1] or 'valid'}"] += 1
    return counts


def _tasks(response_format: str, per_category: int | None) -> list[SingleTurnTask]:
    out = []
    for category in CATEGORIES:
        tasks = load_single_turn_tasks(category, underscore_to_dot=response_format == "fc")
        step = 1 if per_category is None else max(1, len(tasks) // per_category)
        out.extend(tasks[::step][: per_category or None])
    return out


@pytest.mark.parametrize("response_format", FORMATS)
def test_sample_of_every_category_agrees_with_bfcl(response_format):
    counts = compare(_tasks(response_format, 4), response_format, full=response_format == "python")
    assert counts["reference=valid"] >= 40
    # the perturbations reach the error types BFCL distinguishes
    kinds = {key.split("=")[1] for key in counts}
    assert {"irrelevance_error:decoder_success", "relevance_error:decoder_failed"} <= kinds
    if response_format != "json":  # text without <tool_call> blocks decodes to no call in JSON
        assert "ast_decoder:decoder_failed" in kinds
    if response_format == "python":
        assert {
            "simple_function_checker:wrong_func_name",
            "simple_function_checker:missing_required",
            "simple_function_checker:unexpected_param",
            "type_error:simple",
            "value_error:string",
            "parallel_function_checker_no_order:cannot_find_match",
        } <= kinds


def test_unsatisfiable_entries_fail_as_bfcl_says():
    """BFCL's own data: these possible answers reject every response, their reference answers included."""
    tasks = load_single_turn_tasks("single_turn", list(UNSATISFIABLE))
    for task in tasks:
        raw = message([(c.name, dict(c.arguments)) for c in task.ground_truth[0]], "python")
        expected = official_verdict(task.task_id, raw, "python", False)
        assert not expected[0]
        assert ours(task, raw, "python") == expected


@pytest.mark.slow
@pytest.mark.parametrize("response_format", FORMATS)
def test_every_entry_agrees_with_bfcl(response_format):
    """Every entry of every supported category: all perturbations in Python text, the main ones as JSON and FC."""
    tasks = _tasks(response_format, None)
    counts = compare(tasks, response_format, full=response_format == "python")
    valid = counts["reference=valid"]
    unwritten = len(UNWRITTEN_AS_JAVA_TEXT) if response_format == "python" else 0  # invalid on both sides
    assert valid == len(tasks) - len(UNSATISFIABLE) - unwritten
    print(response_format, sum(counts.values()), "responses;", dict(itertools.islice(sorted(counts.items()), 200)))
