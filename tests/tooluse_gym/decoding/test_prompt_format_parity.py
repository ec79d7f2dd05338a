"""The ``prompt_format`` knob against bfcl_eval's format-sensitivity grid: prompts, verdicts and the oracle.

For every one of BFCL's 26 configurations: (a) the messages `ToolUse-SingleTurn-v0` shows equal
what BFCL's own prompt builder makes of the same entry (``system_prompt_pre_processing_chat_model``
with the grid's entry id); (b) our decoding and checking of the reference answer written in the
configuration's return format, and of perturbations of it, gives the verdict bfcl_eval's eval
runner gives (its handler's ``decode_ast`` and ``ast_checker``, as ``format_sensitivity_runner``
calls them); (c) the oracle scores 1.0 through ``gym.make``. The entries are the grid's 200;
the differential test gives each configuration a different slice of them, so all 200 are used.
"""

from __future__ import annotations

import collections
import copy

import gymnasium as gym
import pytest

import tooluse_gym  # noqa: F401  (registers the env ids)
from tests._reference.prompt_format_cases import format_cases, official_format_verdict, write
from tooluse_gym.checking.single_turn import verdict
from tooluse_gym.decoding.bfcl_format import decode_format_action
from tooluse_gym.prompt_formats import PromptFormat, default_prompt_format, grid_task_ids, prompt_formats
from tooluse_gym.tasks import bfcl
from tooluse_gym.tasks.bfcl_single_turn import SingleTurnTask, load_single_turn_tasks

pytest.importorskip("tree_sitter", reason="bfcl_eval's prompt builder and handlers need tree_sitter (the dev extra)")

PER_CONFIG = 8
"""Entries per configuration in the differential test (26 x 8 = 208 slots: every one of the 200 grid entries)."""


def grid_ids() -> list[str]:
    """The 200 entry ids of BFCL's grid, from its own id file."""
    return list(grid_task_ids())


def grid_tasks() -> list[SingleTurnTask]:
    by_id = {t.task_id: t for t in load_single_turn_tasks("single_turn", grid_ids())}
    return [by_id[i] for i in grid_ids()]


def test_the_grid_is_bfcls():
    configs = prompt_formats()
    assert len(configs) == 26 == len(set(configs))
    assert default_prompt_format() in configs
    parsed = [PromptFormat.parse(c) for c in configs]
    assert {p.return_format for p in parsed} == {"python", "json", "verbose_xml", "concise_xml"}
    assert len(grid_ids()) == 200 == len(grid_tasks())
    bfcl.backend_classes()
    from bfcl_eval.constants.eval_config import FORMAT_SENSITIVITY_IDS_PATH
    from bfcl_eval.utils import load_test_entries_from_id_file

    _, entries = load_test_entries_from_id_file(FORMAT_SENSITIVITY_IDS_PATH)
    assert sorted(grid_ids()) == sorted(e["id"] for e in entries)  # the ids BFCL's own loader asks


@pytest.mark.parametrize("config", prompt_formats())
def test_prompt_equals_bfcls_builder(config):
    """(a) Every grid entry: the env's messages are the ones BFCL's pre-processing makes for this configuration."""
    bfcl.backend_classes()
    from bfcl_eval.constants.eval_config import FORMAT_SENSITIVITY_IDS_PATH
    from bfcl_eval.model_handler.utils import system_prompt_pre_processing_chat_model
    from bfcl_eval.utils import load_test_entries_from_id_file

    _, entries = load_test_entries_from_id_file(FORMAT_SENSITIVITY_IDS_PATH)
    env = gym.make("ToolUse-SingleTurn-v0", category="single_turn", task_ids=grid_ids(), prompt_format=config)
    shas = set()
    for entry in entries:
        obs, info = env.reset(options={"task_id": entry["id"]})
        expected = system_prompt_pre_processing_chat_model(
            copy.deepcopy(entry["question"][0]), entry["function"], f"format_sensitivity_0:{config}:{entry['id']}"
        )
        assert obs["messages"] == expected, entry["id"]
        assert obs["tools"] == []
        shas.add(info["protocol"]["system_prompt_sha256"])
        assert info["protocol"]["extra"]["prompt_format"] == config
    assert len(shas) == 1  # the card's hash is the configuration's, not the task's


def test_default_configuration_is_the_default_prompt():
    """BFCL's default configuration shows what the env shows without the knob; only the card records it."""
    ids = grid_ids()[::20]
    plain = gym.make("ToolUse-SingleTurn-v0", category="single_turn", task_ids=ids)
    knob = gym.make(
        "ToolUse-SingleTurn-v0", category="single_turn", task_ids=ids, prompt_format=default_prompt_format()
    )
    for task_id in ids:
        a, card_a = plain.reset(options={"task_id": task_id})
        b, card_b = knob.reset(options={"task_id": task_id})
        assert a == b
    assert "prompt_format" not in card_a["protocol"]["extra"]
    assert card_b["protocol"]["system_prompt_sha256"] != card_a["protocol"]["system_prompt_sha256"]


def _ours(task: SingleTurnTask, raw: str, fmt: PromptFormat) -> tuple[bool, str | None]:
    v = verdict(
        decode_format_action(raw, fmt.return_format, fmt.tool_call_tag),
        check=task.check,
        functions=task.checker_docs,
        answer=task.answer,
        test_category=task.category,
        underscore_to_dot=False,
    )
    return v.valid, v.error_type


def test_verdicts_equal_bfcls_for_every_configuration():
    """(b) Every configuration, a slice of the grid each: the oracle and its perturbations, scored both ways."""
    tasks = grid_tasks()
    counts: collections.Counter[str] = collections.Counter()
    for n, config in enumerate(prompt_formats()):
        fmt = PromptFormat.parse(config)
        for k in range(PER_CONFIG):
            task = tasks[(n * PER_CONFIG + k) % len(tasks)]
            for label, raw in format_cases(task, fmt):
                expected = official_format_verdict(task.task_id, raw, fmt)
                got = _ours(task, raw, fmt)
                assert got == expected, f"{config} {task.task_id} {label}: ours {got}, BFCL {expected}: {raw[:300]!r}"
                counts[f"{fmt.return_format}:{label.split(':')[0]}={expected[1] or 'valid'}"] += 1
    print(sum(counts.values()), "responses;", dict(sorted(counts.items())))
    per_format = collections.Counter(PromptFormat.parse(c).return_format for c in prompt_formats())
    for ret, n_configs in per_format.items():
        assert counts[f"{ret}:reference=valid"] == n_configs * PER_CONFIG  # every oracle answer, BFCL says so too
        failures = {k.split("=")[1] for k in counts if k.startswith(f"{ret}:") and not k.endswith("=valid")}
        assert {"ast_decoder:decoder_failed", "simple_function_checker:wrong_func_name"} <= failures, ret


@pytest.mark.parametrize("config", prompt_formats())
def test_oracle_scores_full_marks_through_gym_make(config):
    """(c) Every grid entry's reference answer, written as the configuration asks, scores 1.0 through ``gym.make``.

    Except where BFCL's own decoder loses it: its JSON pattern ends the call list at the first
    ``}`` followed by ``]``, so a parameter holding a list of objects cuts the list short and
    the text is no JSON (BFCL then reads no call). Those entries must be exactly the ones
    bfcl_eval's runner also fails, and there must be few.
    """
    fmt = PromptFormat.parse(config)
    tasks = grid_tasks()
    env = gym.make(
        "ToolUse-SingleTurn-v0", category="single_turn", task_ids=[t.task_id for t in tasks], prompt_format=config
    )
    lost = []
    for task in tasks:
        calls = [(c.name, dict(c.arguments)) for c in task.ground_truth[0]]
        env.reset(options={"task_id": task.task_id})
        _, agents_reward, _, _, _ = env.step(fmt.write(calls))  # the oracle agent's own writer
        env.reset(options={"task_id": task.task_id})
        raw = write(calls, fmt)
        _, reward, terminated, _, info = env.step(raw)
        assert terminated and agents_reward == reward, task.task_id
        if reward != 1.0:
            assert official_format_verdict(task.task_id, raw, fmt) == (False, info["checker"]["error_type"])
            lost.append(task.task_id)
    assert len(lost) <= (1 if fmt.return_format == "json" else 0), lost
    print(config, "oracle:", len(tasks) - len(lost), "of", len(tasks), "lost as BFCL loses them:", lost)
