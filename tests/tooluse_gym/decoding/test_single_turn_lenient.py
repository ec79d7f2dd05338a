"""The single-turn ``lenient`` decoder against BFCL's: the same verdicts where BFCL reads a text as written, 1.0 where
only the lenient decoder reads it, and the intended differences.

Every response of the parity tests (`single_turn_cases`: each entry's reference answer and its perturbations,
as Python text, ``<tool_call>`` JSON and OpenAI ``tool_calls``), as written, in a bare code fence and after a
``<think>`` block (three shapes BFCL's decoders read), is decoded twice: by BFCL's decoder
(`decode_ast_action`, equal to bfcl_eval's on these responses: `checking/test_single_turn_parity.py`) and by the
lenient one (`decode_lenient_action`), and both are judged by the same checker. Where BFCL's decoder reads the
text, the calls and the verdict (valid flag and error type) must be equal; where it does not, the valid flag. The
Java and JavaScript categories are left out: the lenient decoder refuses them.
"""

from __future__ import annotations

import collections
import json
from typing import Any

import gymnasium as gym
import pytest

import tooluse_gym  # noqa: F401  (registers the ids)
from tests._reference.single_turn_cases import FORMATS, cases, message
from tooluse_gym.checking.languages import language_of
from tooluse_gym.checking.single_turn import AstVerdict, verdict
from tooluse_gym.decoding.bfcl_ast import AstDecoded, decode_ast_action
from tooluse_gym.decoding.lenient_ast import decode_lenient_action
from tooluse_gym.envs.ids import SINGLE_TURN_ID
from tooluse_gym.envs.tool_env import protocol_card, task_ids
from tooluse_gym.tasks.bfcl_single_turn import CATEGORIES, UNSATISFIABLE, SingleTurnTask, load_single_turn_tasks

PYTHON_CATEGORIES = tuple(c for c in CATEGORIES if language_of(c) == "python")
THINK = "<think>The user asks for this; I will answer with the call.</think>\n"


def judged(task: SingleTurnTask, decoded: AstDecoded) -> AstVerdict:
    return verdict(
        decoded,
        check=task.check,
        functions=task.checker_docs,
        answer=task.answer,
        test_category=task.test_category,
        underscore_to_dot=task.underscore_to_dot,
    )


def bfcl(task: SingleTurnTask, raw: Any, tool_format: str) -> tuple[AstDecoded, AstVerdict]:
    decoded = decode_ast_action(raw, tool_format)
    return decoded, judged(task, decoded)


def lenient(task: SingleTurnTask, raw: Any, tool_format: str) -> tuple[AstDecoded, AstVerdict]:
    decoded = decode_lenient_action(raw, tool_format, task.checker_docs, underscore_to_dot=task.underscore_to_dot)
    return decoded, judged(task, decoded)


def shapes(raw: Any, response_format: str) -> list[tuple[str, Any]]:
    """The response as written, and in the other shapes BFCL's decoder reads the same way."""
    if response_format == "fc":
        return [("as_written", raw)]
    out = [("as_written", raw), ("after_think", THINK + raw)]
    if response_format == "python":
        out.append(("bare_fence", "```\n" + raw + "\n```"))
    return out


def tasks_of(response_format: str, per_category: int | None) -> list[SingleTurnTask]:
    out = []
    for category in PYTHON_CATEGORIES:
        tasks = load_single_turn_tasks(category, underscore_to_dot=response_format == "fc")
        step = 1 if per_category is None else max(1, len(tasks) // per_category)
        out.extend(tasks[::step][: per_category or None])
    return out


def compare(tasks: list[SingleTurnTask], response_format: str) -> collections.Counter[str]:
    """Both decoders on every case; fails on the first difference. Counts per outcome."""
    tool_format = "json" if response_format == "json" else "python"
    counts: collections.Counter[str] = collections.Counter()
    for task in tasks:
        for label, calls in cases(task):
            for shape, raw in shapes(message(calls, response_format), response_format):
                ours, expected = lenient(task, raw, tool_format), bfcl(task, raw, tool_format)
                where = f"{task.task_id} {label} {shape} ({response_format}): {raw!r:.300}"
                assert ours[1].valid == expected[1].valid, f"{where}: lenient {ours[1]}, bfcl {expected[1]}"
                if expected[0].calls is None:
                    counts["bfcl_does_not_decode"] += 1
                    continue
                assert ours[0].calls == expected[0].calls, f"{where}: {ours[0]} != {expected[0]}"
                assert ours[1].error_type == expected[1].error_type, f"{where}: lenient {ours[1]}, bfcl {expected[1]}"
                counts[expected[1].error_type or "valid"] += 1
    return counts


@pytest.mark.parametrize("response_format", FORMATS)
def test_a_sample_of_every_category_gets_bfcls_verdicts(response_format):
    counts = compare(tasks_of(response_format, 5), response_format)
    assert counts["valid"] >= 100
    kinds = set(counts)
    assert {"irrelevance_error:decoder_success", "relevance_error:decoder_failed"} <= kinds
    assert {
        "simple_function_checker:wrong_func_name",
        "simple_function_checker:missing_required",
        "simple_function_checker:unexpected_param",
        "type_error:simple",
        "value_error:string",
        "parallel_function_checker_no_order:cannot_find_match",
        "multiple_function_checker:wrong_count",
    } <= kinds


@pytest.mark.slow
@pytest.mark.parametrize("response_format", FORMATS)
def test_every_python_entry_gets_bfcls_verdicts(response_format):
    tasks = tasks_of(response_format, None)
    counts = compare(tasks, response_format)
    print(response_format, len(tasks), "entries,", sum(counts.values()), "responses:", dict(sorted(counts.items())))


# --- texts only the lenient decoder reads -------------------------------------------------------------------


def by_position(task: SingleTurnTask, call: tuple[str, dict[str, Any]]) -> list[str]:
    """The call's leading parameters in the schema's order that it gives: those a positional call passes by position."""
    name, args = call
    doc = next(d for d in task.checker_docs if d["name"].replace(".", "_") == name.replace(".", "_"))
    leading = []
    for param in doc["parameters"]["properties"]:
        if param not in args:
            break
        leading.append(param)
    return leading


def positional(task: SingleTurnTask, call: tuple[str, dict[str, Any]]) -> str:
    """The call with its leading arguments (`by_position`) passed by position."""
    name, args = call
    leading = by_position(task, call)
    parts = [repr(args[p]) for p in leading] + [f"{k}={v!r}" for k, v in args.items() if k not in leading]
    return f"{name}({', '.join(parts)})"


def _required_by_position(task: SingleTurnTask) -> bool:
    """Whether a required parameter of an expected call goes by position (BFCL drops it, so BFCL fails)."""
    for c in task.ground_truth[0]:
        doc = next(d for d in task.checker_docs if d["name"].replace(".", "_") == c.name.replace(".", "_"))
        if set(by_position(task, (c.name, dict(c.arguments)))) & set(doc["parameters"].get("required", [])):
            return True
    return False


def lenient_only(task: SingleTurnTask) -> list[tuple[str, Any, str]]:
    """(label, response, tool format) for texts BFCL's decoders do not read as written and the lenient one does."""
    reference = [(c.name, dict(c.arguments)) for c in task.ground_truth[0]]
    text = message(reference, "python")
    blocks = "".join(f"<tool_call>{json.dumps({'name': n, 'arguments': a})}</tool_call>" for n, a in reference)
    out = [
        ("python_fence", f"```python\n{text}\n```", "python"),
        ("prose_before", f"Sure, here is the call you asked for:\n{text}", "python"),
        ("prose_after", f"{text}\nLet me know if you need anything else.", "python"),
        ("think_and_prose", f"<think>The user wants this.</think>\nI'll call it now: {text}", "python"),
        ("unclosed_think_after", f"{text}\n<think>Let me double-check", "python"),
        ("tool_call_without_newlines", blocks, "json"),
        (
            "fc_arguments_as_object",
            {"content": None, "tool_calls": [{"function": {"name": n, "arguments": a}} for n, a in reference]},
            "python",
        ),
    ]
    if any(by_position(task, c) for c in reference):
        out.append(("positional", "[" + ", ".join(positional(task, c) for c in reference) + "]", "python"))
    return out


def test_texts_only_the_lenient_decoder_reads_score_1_and_fail_under_bfcl():
    counts: collections.Counter[str] = collections.Counter()
    for task in tasks_of("python", 20):
        if task.check != "ast" or task.task_id in UNSATISFIABLE:
            continue
        for label, raw, tool_format in lenient_only(task):
            ours, theirs = lenient(task, raw, tool_format)[1], bfcl(task, raw, tool_format)[1]
            assert ours.valid, (task.task_id, label, raw, ours)
            if label != "positional" or _required_by_position(task):
                assert not theirs.valid, (task.task_id, label, raw, theirs)
            counts[label] += 1
    assert min(counts.values()) >= 20 and len(counts) == 8, counts


def test_the_intended_differences():
    """Where BFCL's decoder reads a text and the lenient one reads it otherwise, on purpose."""
    (area,) = load_single_turn_tasks("simple_python", ["simple_python_0"])  # calculate_triangle_area(base, height)
    # positional arguments: bound by the schema here, dropped by BFCL
    assert lenient(area, "[calculate_triangle_area(10, 5)]", "python")[1].valid
    assert bfcl(area, "[calculate_triangle_area(10, 5)]", "python")[1].error_type.endswith("missing_required")
    # values that are not literals: computed or written as strings by BFCL, a malformed call here
    for text in ["[calculate_triangle_area(base=5+5, height=5)]", "[calculate_triangle_area(base=ten, height=5)]"]:
        decoded, result = lenient(area, text, "python")
        assert decoded.calls is None and result.error_type == "ast_decoder:decoder_failed"
    assert bfcl(area, "[calculate_triangle_area(base=5+5, height=5)]", "python")[1].valid
    # prose: no call (a count error) here, undecodable there
    assert lenient(area, "I cannot.", "python")[1].error_type == "simple_function_checker:wrong_count"
    assert bfcl(area, "I cannot.", "python")[1].error_type == "ast_decoder:decoder_failed"
    # an irrelevance entry: a call list inside prose is a call here; BFCL fails to decode the text, so no call
    (irrelevant,) = load_single_turn_tasks("irrelevance", ["irrelevance_0"])
    name = irrelevant.functions[0]["name"]
    text = f"I could call [{name}(x=1)], but it does not answer the question."
    assert lenient(irrelevant, text, "python")[1].error_type == "irrelevance_error:decoder_success"
    assert bfcl(irrelevant, text, "python")[1].valid
    # a malformed call makes the whole message undecodable: on an irrelevance entry that is no call, as in BFCL
    assert lenient(irrelevant, f"[{name}(x=1), {name}(x=open('f'))]", "python")[1].valid


# --- through gym.make ---------------------------------------------------------------------------------------

MODES = [({}, "python"), ({"tool_format": "json"}, "json"), ({"system_prompt": "none"}, "fc")]


def play_references(env: gym.Env, ids: list[str], response_format: str) -> collections.Counter[str]:
    """Each entry's reference answer (a text reply on irrelevance entries) through the env; counts of outcomes."""
    counts: collections.Counter[str] = collections.Counter()
    for task_id in ids:
        _, info = env.reset(options={"task_id": task_id})
        task = info["task"]
        calls = [(c.name, dict(c.arguments)) for c in task.ground_truth[0]]
        raw = message("I cannot help with that." if task.check == "irrelevance" else calls, response_format)
        _, reward, terminated, _, info = env.step(raw)
        assert terminated and reward == (0.0 if task_id in UNSATISFIABLE else 1.0), (task_id, info["checker"])
        counts["unsatisfiable" if task_id in UNSATISFIABLE else "valid"] += 1
    return counts


@pytest.mark.parametrize(("knobs", "response_format"), MODES)
def test_the_reference_answers_score_100_percent_under_lenient(knobs, response_format):
    env = gym.make(SINGLE_TURN_ID, category="live", decoder="lenient", **knobs)
    assert protocol_card(env).decoder == "lenient" and protocol_card(env).validate_args is False
    ids = [*task_ids(env)[::23], "simple_python_3", "multiple_5", "parallel_7", "parallel_multiple_9", "irrelevance_1"]
    env = gym.make(SINGLE_TURN_ID, category="single_turn", task_ids=ids, decoder="lenient", **knobs)
    assert sum(play_references(env, ids, response_format).values()) == len(ids) >= 90


@pytest.mark.slow
@pytest.mark.parametrize(("knobs", "response_format"), MODES)
def test_the_reference_answers_score_100_percent_under_lenient_in_every_python_category(knobs, response_format):
    counts: collections.Counter[str] = collections.Counter()
    for category in PYTHON_CATEGORIES:
        env = gym.make(SINGLE_TURN_ID, category=category, decoder="lenient", **knobs)
        counts += play_references(env, task_ids(env), response_format)
    assert counts == {"valid": 3491 - 5, "unsatisfiable": 5}


def test_java_and_javascript_refuse_lenient():
    for category in ("simple_java", "simple_javascript", "single_turn", "non_live"):
        with pytest.raises(ValueError, match="decoder='lenient' reads Python call syntax"):
            gym.make(SINGLE_TURN_ID, category=category, decoder="lenient")
    gym.make(SINGLE_TURN_ID, category="simple_java", decoder="bfcl")
