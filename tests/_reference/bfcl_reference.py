"""The official scoring path, for differential tests: bfcl_eval's own decoders, executor and checker.

Two entry points:

* `official_verdict(task_id, decoded)` takes call strings (turns -> steps -> calls) and
  applies the two rules BFCL's eval runner applies before calling the checker (a run cut
  short by force-quit has fewer turns than the ground truth and fails as
  ``multi_turn:force_terminated``; steps that decode to no call are dropped), then runs
  `multi_turn_checker`.
* `official_run(task_id, trajectory, response_format)` takes RAW model responses (turns ->
  messages the model would write, in order) and plays them as BFCL's inference loop
  (`BaseHandler.inference_multi_turn_prompting` / ``_FC``) does, with BFCL's own handlers:
  each response goes through the handler's ``_parse_query_response_*`` and is stored, then
  ``decode_execute``; a response that raises or decodes empty ends the turn (the turn's
  later messages are never sent); otherwise its calls run through
  `execute_multi_turn_func_call`, and a 21st executing step in a turn force-quits the run
  (later turns are never played). The stored responses are then scored as the eval runner
  does (`_evaluate_single_multi_turn_entry`: turn count, decode, drop undecodable steps,
  `multi_turn_checker`).

``response_format`` picks the handler: ``python`` (`QwenHandler`: text after the last
``</think>``, `default_decode_execute_prompting`), ``json`` (`QwenFCHandler`:
``<tool_call>`` blocks) or ``fc`` (`OpenAICompletionsHandler` in function-calling mode: an
OpenAI chat message with ``tool_calls``, decoded by `convert_to_function_call`).

Every run uses fresh uuid model names and frees the instances it left in bfcl_eval's
module globals. Callers must only pass responses that are safe for bfcl_eval to `eval`
(its decoder evaluates arithmetic, its executor evaluates every decoded call string).
"""

from __future__ import annotations

import copy
import uuid
from dataclasses import dataclass, field
from functools import cache
from types import SimpleNamespace
from typing import Any

from tooluse_gym.tasks import bfcl

END_TEXT = "Nothing more to do."
"""A reply without calls: it ends the turn under every response format."""
RESPONSE_FORMATS = ("python", "json", "fc")


def end_message(response_format: str) -> Any:
    """The turn-ending reply in `response_format` (an env action, and a raw response for BFCL)."""
    return {"content": END_TEXT, "tool_calls": None} if response_format == "fc" else END_TEXT


@cache
def _entries(category: str) -> dict:
    bfcl.backend_classes()  # makes sure BFCL_PROJECT_ROOT is set before bfcl_eval imports
    from bfcl_eval.utils import load_dataset_entry, load_ground_truth_entry

    name = f"multi_turn_{category}"
    entries = {e["id"]: e for e in load_dataset_entry(name, include_language_specific_hint=False)}
    truths = {g["id"]: g["ground_truth"] for g in load_ground_truth_entry(name)}
    return {i: (entries[i], truths[i]) for i in entries}


def _category(task_id: str) -> str:
    return task_id.removeprefix("multi_turn_").rsplit("_", 1)[0]


def ground_truth_strings(task_id: str) -> list[list[str]]:
    return copy.deepcopy(_entries(_category(task_id))[task_id][1])


def _free(prefix: str) -> None:
    from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_utils

    g = vars(multi_turn_utils)
    for key in [k for k in g if k.startswith(prefix)]:
        del g[key]


def _check(task_id: str, decoded: list[list[list[str]]], model: str) -> tuple[bool, str | None]:
    """The eval runner's rules in front of `multi_turn_checker` (decoded: already dropped)."""
    from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_checker import multi_turn_checker

    category = _category(task_id)
    entry, truth = _entries(category)[task_id]
    if len(decoded) != len(truth):
        return False, "multi_turn:force_terminated"
    result = multi_turn_checker(decoded, truth, copy.deepcopy(entry), f"multi_turn_{category}", model)
    return result["valid"], result.get("error_type")


def official_verdict(task_id: str, decoded: list[list[list[str]]]) -> tuple[bool, str | None]:
    """BFCL's verdict on a trajectory: turns -> steps -> call strings."""
    bfcl.backend_classes()
    decoded = [[step for step in turn if step] for turn in decoded]
    model = "ref_" + uuid.uuid4().hex
    try:
        return _check(task_id, decoded, model)
    finally:
        _free(model)


# --- raw responses, through BFCL's own handlers ------------------------------------------


@cache
def handler(response_format: str) -> Any:
    """The bfcl_eval handler whose parsing and decoding `official_run` uses for a format."""
    bfcl.backend_classes()
    if response_format == "python":
        from bfcl_eval.model_handler.local_inference.qwen import QwenHandler

        return QwenHandler("Qwen/Qwen3-8B", 0.001, "Qwen/Qwen3-8B", False)
    if response_format == "json":
        from bfcl_eval.model_handler.local_inference.qwen_fc import QwenFCHandler

        return QwenFCHandler("Qwen/Qwen3-8B", 0.001, "Qwen/Qwen3-8B-FC", True)
    if response_format == "fc":
        from bfcl_eval.model_handler.api_inference.openai_completion import OpenAICompletionsHandler

        # its __init__ only builds an OpenAI client (which wants an API key); parsing and
        # decoding read nothing but `is_fc_model`
        fc = OpenAICompletionsHandler.__new__(OpenAICompletionsHandler)
        fc.is_fc_model = True
        return fc
    raise ValueError(f"unknown response format {response_format!r}")


def _api_response(raw: Any, response_format: str) -> Any:
    """`raw` as the API response object BFCL's handler parses (completions text, or a chat message)."""
    usage = SimpleNamespace(prompt_tokens=0, completion_tokens=0)
    if response_format != "fc":
        return SimpleNamespace(choices=[SimpleNamespace(text=raw)], usage=usage)
    raw_calls = raw.get("tool_calls")
    calls = None
    if raw_calls is not None:
        calls = [
            SimpleNamespace(
                id=c.get("id"),
                type=c.get("type", "function"),
                function=SimpleNamespace(name=c["function"]["name"], arguments=c["function"].get("arguments")),
            )
            for c in raw_calls
        ]
    message = SimpleNamespace(role="assistant", content=raw.get("content"), tool_calls=calls)
    return SimpleNamespace(choices=[SimpleNamespace(message=message)], usage=usage)


def model_response(raw: Any, response_format: str) -> Any:
    """What BFCL's handler stores (and later decodes) for one raw response."""
    h = handler(response_format)
    api = _api_response(raw, response_format)
    if response_format == "fc":
        return h._parse_query_response_FC(api)["model_responses"]
    return h._parse_query_response_prompting(api)["model_responses"]


def decode(model_responses: Any, response_format: str) -> list[str]:
    """``handler.decode_execute``: call strings, or an exception."""
    return handler(response_format).decode_execute(model_responses, has_tool_call_tag=False)


@dataclass
class OfficialRun:
    """What BFCL made of a trajectory of raw responses."""

    valid: bool
    error_type: str | None
    responses: list[list[Any]] = field(default_factory=list)
    """The stored responses per turn (what the result file holds), including turn-ending ones."""
    decoded: list[list[list[str]]] = field(default_factory=list)
    """The eval runner's decoded steps (undecodable and empty ones dropped)."""
    executed: list[tuple[int, list[str], list[str]]] = field(default_factory=list)
    """``(turn, call strings, executor results)`` of every step the inference loop executed."""
    force_quit: bool = False

    @property
    def verdict(self) -> tuple[bool, str | None]:
        return self.valid, self.error_type


def official_run(task_id: str, trajectory: list[list[Any]], response_format: str) -> OfficialRun:
    """Play raw responses (turns -> messages) as BFCL's inference loop, then score as its eval runner.

    A turn whose messages run out before one ends it gets `end_message` appended.
    """
    from bfcl_eval.constants.default_prompts import MAXIMUM_STEP_LIMIT
    from bfcl_eval.eval_checker.multi_turn_eval.multi_turn_utils import (
        execute_multi_turn_func_call,
        is_empty_execute_response,
    )

    bfcl.backend_classes()
    category = _category(task_id)
    entry, truth = _entries(category)[task_id]
    if len(trajectory) != len(truth):
        raise ValueError(f"{task_id}: {len(trajectory)} turns given, the task has {len(truth)}")
    prefix = "ref_" + uuid.uuid4().hex
    run = OfficialRun(valid=False, error_type=None)
    test_category = entry["id"].rsplit("_", 1)[0]
    long_context = "long_context" in test_category or "composite" in test_category
    try:
        execute_multi_turn_func_call(  # instance creation, as the loop does first
            [], entry["initial_config"], entry["involved_classes"], prefix + "_inf", entry["id"], long_context
        )
        for turn_index, messages in enumerate(trajectory):
            stored: list[Any] = []
            count = 0  # executing steps in this turn
            for raw in [*messages, end_message(response_format)]:
                responses = model_response(copy.deepcopy(raw), response_format)
                stored.append(responses)
                try:
                    calls = decode(copy.deepcopy(responses), response_format)
                    if is_empty_execute_response(calls):
                        break
                except Exception:
                    break
                results, _ = execute_multi_turn_func_call(
                    calls,
                    entry["initial_config"],
                    entry["involved_classes"],
                    prefix + "_inf",
                    entry["id"],
                    long_context=long_context,
                    is_evaL_run=False,
                )
                run.executed.append((turn_index, list(calls), list(results)))
                count += 1  # noqa: SIM113 (only executing steps count)
                if count > MAXIMUM_STEP_LIMIT:
                    run.force_quit = True
                    break
            else:  # pragma: no cover - the end message always ends the turn
                raise AssertionError(f"{task_id} turn {turn_index}: the turn did not end")
            run.responses.append(stored)
            if run.force_quit:
                break
        for turn in run.responses:  # the eval runner's decoding: failures and empty steps dropped
            kept = []
            for responses in turn:
                try:
                    calls = decode(copy.deepcopy(responses), response_format)
                except Exception:
                    continue
                if not is_empty_execute_response(calls):
                    kept.append(calls)
            run.decoded.append(kept)
        run.valid, run.error_type = _check(task_id, run.decoded, prefix + "_ck")
    finally:
        _free(prefix)
    return run


def bfcl_persona() -> str:
    """The first sentence of BFCL's default system prompt, read from bfcl_eval."""
    bfcl.backend_classes()
    from bfcl_eval.constants.default_prompts import PROMPT_STYLE_TEMPLATES

    return PROMPT_STYLE_TEMPLATES["classic"]["persona"]


# --- the env side of the same trajectory -------------------------------------------------


def play_env(env: Any, task_id: str, trajectory: list[list[Any]], response_format: str) -> OfficialRun:
    """Play raw responses through our env exactly as `official_run` feeds them to BFCL.

    Each turn's messages are sent until one ends the turn (the rest are never sent), with
    `end_message` appended. Returns our verdict and, in ``executed``, the call strings and
    tool results of every step that executed (from the env's step log).
    """
    env.reset(seed=0, options={"task_id": task_id})
    for turn_index, messages in enumerate(trajectory):
        for raw in [*messages, end_message(response_format)]:
            _, _, terminated, truncated, info = env.step(copy.deepcopy(raw))
            if truncated:
                raise AssertionError(f"{task_id}: truncated")
            if terminated:
                steps = [
                    (r.turn, [c.source for c in r.calls], list(r.results)) for r in env.unwrapped.step_log if r.calls
                ]
                checker = info["checker"]
                return OfficialRun(checker["valid"], checker["error_type"], executed=steps)
            if info["turn"] != turn_index:
                break
        else:
            raise AssertionError(f"{task_id} turn {turn_index}: the turn did not end")
    raise AssertionError(f"{task_id}: the episode did not terminate after the last turn")
