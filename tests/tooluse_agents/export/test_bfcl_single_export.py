"""`tooluse-eval export --format bfcl` on single-turn runs, scored by BFCL's own `bfcl evaluate`.

The unit tests build episodes by hand. The differential test plays four runs of every single-turn
category with a scripted agent that answers each entry its own way (the ground truth, a wrong
value, a call dropped, a call on an irrelevance entry, undecodable text, parameters that are not
an object, chatter, reasoning before the calls, an agent error), one run per step encoding and function-name convention
(Python text, ``<tool_call>`` text, structured calls with and without dotted names), exports
them and scores all four with ONE real `bfcl evaluate` (its start imports every model handler and
takes most of its time): BFCL must give every entry the verdict and error type of episodes.jsonl,
and every category the accuracy of results.json, except where the export says BFCL differs (an
agent error on an irrelevance entry, which BFCL counts as an abstention).
"""

from __future__ import annotations

import csv
import dataclasses
import importlib
import json
import os
import shlex
import shutil
import subprocess

import pytest

from tests.tooluse_agents.export.test_bfcl_export import BFCL_ENV, THINK, VALID, changed, message, record, step
from tests.tooluse_agents.export.test_bfcl_export import bfcl_evaluate as bfcl_evaluate  # the fixture, shared
from tooluse_agents.backends.base import AgentError, Generation
from tooluse_agents.cli.eval import main
from tooluse_agents.eval.run import EvalConfig, eval_task_ids, run_eval
from tooluse_agents.export.base import failed_inference
from tooluse_agents.export.folders import ExportError
from tooluse_agents.export.pipeline import export_bfcl
from tooluse_agents.export.single_turn import (
    SINGLE_TURN_TARGETS,
    decode_response,
    expects_underscores,
    result_folder,
    single_turn_result,
)
from tooluse_agents.runs.bfcl_scores import bfcl_scores
from tooluse_agents.runs.records import read_episodes
from tooluse_gym.decoding.bfcl_ast import decode_ast_action
from tooluse_gym.envs.knobs import Knobs
from tooluse_gym.tasks.bfcl_single_turn import CATEGORIES
from tooluse_gym.types import ToolCall

SINGLE = {**BFCL_ENV, "env_id": "ToolUse-SingleTurn-v0", "system_prompt": "bfcl"}


def entry(assistant, *calls, task_id="simple_python_0", checker=VALID, error=None, protocol=SINGLE, failure=None):
    episode = record([step(assistant, *calls)], task_id=task_id, checker=checker, error=error, protocol=protocol)
    steps = tuple(dataclasses.replace(s, parse_failure=failure) for s in episode.turns[0].steps)
    category = task_id.rsplit("_", 1)[0]
    return dataclasses.replace(episode, category=category, turns=(dataclasses.replace(episode.turns[0], steps=steps),))


def structured(name, arguments, call_id="call_0", error=None):
    out = {"name": name, "arguments": arguments, "id": call_id}
    return {**out, "error": error} if error else out


# --- hand-built episodes -------------------------------------------------------------------


def test_text_responses_are_the_message_after_the_reasoning():
    thought = entry("<think>the area</think>\n[calculate_triangle_area(base=10, height=5)]")
    assert single_turn_result(thought, "python") == "[calculate_triangle_area(base=10, height=5)]"
    assert decode_response("[calculate_triangle_area(base=10, height=5)]", "python", "simple_python") == (
        "calculate_triangle_area(base=10, height=5)",
    )
    assert decode_response("I cannot.", "python", "irrelevance") == ("<not decodable>",)
    assert decode_response("[]", "python", "irrelevance") == ()


def test_structured_calls_are_name_to_arguments_json():
    calls = (structured("math_factorial", {"n": 5}), structured("math_gcd", {"a": 1, "b": 2}, "call_1"))
    episode = entry("", *calls)
    assert single_turn_result(episode, "fc") == [{"math_factorial": '{"n": 5}'}, {"math_gcd": '{"a": 1, "b": 2}'}]
    assert decode_response(single_turn_result(episode, "fc"), "fc", "simple_python") == (
        "math_factorial(n=5)",
        "math_gcd(a=1, b=2)",
    )
    malformed = entry("", structured("f", {}, error="the parameters are not an object"))
    assert single_turn_result(malformed, "fc") == [{"f": "null"}]
    assert decode_response([{"f": "null"}], "fc", "simple_python") == ("f(<the parameters are not an object>)",)
    assert single_turn_result(entry("Sorry."), "fc") == "Sorry."  # a text reply: BFCL's FC handler stores the text
    bad = entry("", failure="arguments of f are not valid JSON")  # the record keeps no raw arguments
    assert single_turn_result(bad, "fc") == "Undecodable function calls: arguments of f are not valid JSON"
    assert decode_response(single_turn_result(bad, "fc"), "fc", "simple_python") == ("<not decodable>",)
    assert decode_response("Sorry.", "fc", "irrelevance") == ("<not decodable>",)
    assert decode_response("", "fc", "irrelevance") == ()


def test_the_single_turn_record_keeps_structured_ids_and_marks_parameters_that_are_not_an_object():
    raw = [
        {"id": "call_7", "type": "function", "function": {"name": "f", "arguments": '{"n": 5}'}},
        {"id": "call_8", "type": "function", "function": {"name": "g", "arguments": "[1]"}},
    ]
    parsed = decode_ast_action({"content": "", "tool_calls": raw}, "python").parsed()
    assert [c.to_dict() for c in parsed.calls] == [
        {"name": "f", "arguments": {"n": 5}, "id": "call_7"},
        {"name": "g", "arguments": {}, "id": "call_8", "error": "the parameters are not an object"},
    ]
    assert all(c.call_id is None for c in decode_ast_action("[f(n=5)]", "python").parsed().calls)


def test_an_agent_error_is_a_failed_inference():
    failed = entry("", checker=None, error={"type": "timeout", "message": "slow"})
    assert failed_inference(failed) and single_turn_result(failed, "python") == "Error during inference: timeout: slow"


def test_targets_follow_the_encoding_and_the_name_convention():
    assert expects_underscores({"system_prompt": "none", "tool_format": "python"})
    assert not expects_underscores({"system_prompt": "bfcl", "tool_format": "json"})
    assert SINGLE_TURN_TARGETS[("python", False)].model == "Qwen/Qwen3-8B"
    assert SINGLE_TURN_TARGETS[("fc", True)].model == "gpt-4o-2024-11-20-FC"
    assert SINGLE_TURN_TARGETS[("fc", False)].model == "qwen3-235b-a22b-instruct-2507-FC"
    assert result_folder("live_relevance") == "live" and result_folder("irrelevance") == "non_live"


def test_the_targets_are_registered_with_their_handlers_and_name_conventions():
    from tooluse_gym.tasks import bfcl

    bfcl.backend_classes()  # sets BFCL_PROJECT_ROOT before bfcl_eval imports
    config = pytest.importorskip("bfcl_eval.constants.model_config")
    for (encoding, underscores), target in SINGLE_TURN_TARGETS.items():
        registered = config.MODEL_CONFIG_MAPPING[target.model]
        assert registered.is_fc_model == (encoding != "python")
        assert registered.underscore_to_dot == underscores
        assert "_" not in target.model


def write_run(path, *episodes):
    path.mkdir()
    with (path / "episodes.jsonl").open("w", encoding="utf-8") as f:
        for e in episodes:
            f.write(json.dumps(e.to_dict()) + "\n")
    return path


def test_export_refuses_unknown_ids_and_duplicates(tmp_path):
    twice = write_run(tmp_path / "twice", entry("[]"), entry("[]"))
    with pytest.raises(ExportError, match="appears twice"):
        export_bfcl(twice, tmp_path / "out")
    unknown = write_run(tmp_path / "unknown", entry("[]", task_id="simple_python_100000"))
    with pytest.raises(ExportError, match="not a simple_python entry"):
        export_bfcl(unknown, tmp_path / "out")


def test_export_warns_where_bfcl_reads_otherwise(tmp_path):
    no_prompt = {**SINGLE, "system_prompt": "none"}
    error = {"type": "timeout", "message": "slow"}
    run = write_run(
        tmp_path / "run",
        entry("[]", task_id="simple_python_2", protocol=no_prompt),  # math.factorial: a dotted name
        entry("", task_id="irrelevance_0", checker=None, error=error, protocol=no_prompt),
    )
    export = export_bfcl(run, tmp_path / "out")
    text = "\n".join(export.warnings)
    assert "Qwen/Qwen3-8B expects the dots: BFCL may fail 1 entries" in text
    assert "1 irrelevance entries ended in an agent error" in text
    assert export.inference_errors == 1 and export.exported == 2
    assert "decoder='lenient'" not in text
    lenient = {**SINGLE, "decoder": "lenient"}
    call = {"name": "calculate_triangle_area", "arguments": {"base": 10, "height": 5}}
    run = write_run(tmp_path / "lenient", entry("[calculate_triangle_area(10, 5)]", call, protocol=lenient))
    export = export_bfcl(run, tmp_path / "out_lenient")
    assert "1 episodes were decoded with decoder='lenient'" in "\n".join(export.warnings)
    assert len(export.mismatches) == 1  # BFCL drops the positional arguments: the self-check says so


# --- BFCL's own evaluator on played runs ------------------------------------------------------


class ScriptedSingleTurn:
    """Answers each entry as `kinds` says (task id -> kind), from its ground truth, in one step encoding."""

    name = "scripted-single-turn"

    def __init__(self, encoding, kinds):
        self.encoding, self.kinds = encoding, kinds
        self._done = []

    def generate(self, requests, sampling=None):
        return [self.reply(r) for r in requests]

    def submit(self, items, sampling=None):
        self._done.extend((key, self.reply(r)) for key, r in items)

    def collect(self):
        done, self._done = self._done, []
        return done

    def describe(self):
        return {"name": self.name, "encoding": self.encoding}

    def close(self):
        pass

    def reply(self, request):
        task, kind = request.task, self.kinds[request.task.task_id]
        calls = list(task.ground_truth[0])
        first = task.functions[0]["name"]
        first = first.replace(".", "_") if task.underscore_to_dot else first
        if kind == "agent_error":
            return Generation(error=AgentError("agent_exception", "a scripted failure"))
        if kind == "chatter":
            return Generation(text="I am not sure I can help with that.")
        if kind == "undecodable":
            return self.undecodable(first)
        if kind == "not_an_object":
            return self.not_an_object(first)
        if kind == "call_anyway":  # a call where none is wanted (or an extra one)
            calls = [*calls, ToolCall(name=first)]
        elif kind == "wrong_value" and calls:
            calls = [changed(calls[0]), *calls[1:]]
        elif kind == "drop_call":
            calls = calls[:-1]
        if not calls and kind == "oracle":
            return Generation(text="None of the functions fits this request.")
        action = message(calls, self.encoding)
        if kind == "think" and isinstance(action, str):
            action = THINK + action
        return Generation(text=action) if isinstance(action, str) else Generation(text="", message=action)

    def not_an_object(self, name):
        """Parameters that are not an object: decoded, but not function-calling output (or not decoded at all)."""
        if self.encoding == "python":
            return Generation(text=f"[{name}, 1]")
        if self.encoding == "json":
            return Generation(text=f'<tool_call>\n{{"name": "{name}", "arguments": [1]}}\n</tool_call>')
        call = {"id": "call_0", "type": "function", "function": {"name": name, "arguments": "[1]"}}
        return Generation(text="", message={"content": "", "tool_calls": [call]})

    def undecodable(self, name):
        if self.encoding == "python":
            return Generation(text=f"[{name}(x=")
        if self.encoding == "json":
            return Generation(text=f'<tool_call>\n{{"name": "{name}"}}\n</tool_call>')  # no arguments
        bad = {"id": "call_0", "type": "function", "function": {"name": name, "arguments": "{"}}
        return Generation(text="", message={"content": "", "tool_calls": [bad]})


KINDS = (
    "oracle",
    "wrong_value",
    "drop_call",
    "call_anyway",
    "undecodable",
    "not_an_object",
    "chatter",
    "think",
    "agent_error",
)
RUNS = {  # name -> (encoding, system prompt, entries per category)
    "python": ("python", "bfcl", 3),
    "json": ("json", "bfcl", 2),
    "fc_underscores": ("fc", "none", 2),
    "fc_dots": ("fc", "bfcl", 2),
}
MODELS = {
    "python": "Qwen/Qwen3-8B",
    "json": "Qwen/Qwen3-8B-FC",
    "fc_underscores": "gpt-4o-2024-11-20-FC",
    "fc_dots": "qwen3-235b-a22b-instruct-2507-FC",
}


def scripted_run(path, encoding, system_prompt, limit, offset):
    """Every single-turn category, `limit` entries each; the kinds rotate over entries and categories."""
    config = EvalConfig(
        agent="oracle",
        categories=("single_turn",),
        limit=limit,
        protocol=Knobs(tool_format="json" if encoding == "json" else "python", system_prompt=system_prompt),
        num_envs=8,
    )
    ids = eval_task_ids(config.categories, limit)
    kinds = {task_id: KINDS[(i + offset) % len(KINDS)] for i, task_id in enumerate(ids)}
    for category, kind in (
        ("irrelevance", "call_anyway"),
        ("live_irrelevance", "call_anyway"),
        ("live_relevance", "chatter"),
    ):
        kinds[next(i for i in ids if i.startswith(f"{category}_"))] = kind  # each relevance rule fails once
    run_eval(config, path, agent=ScriptedSingleTurn(encoding, kinds), progress=False)
    return path, kinds


def score_folder(command, category):
    return command.root / "score" / command.target.directory / result_folder(category)


@pytest.fixture(scope="module")
def scored(tmp_path_factory, bfcl_evaluate):
    """The four runs, exported into one project root and scored by one `bfcl evaluate`.
    name -> (run, kinds, export, command)."""
    base = tmp_path_factory.mktemp("single_turn")
    root = base / "bfcl_root"
    runs = {}
    for offset, (name, (encoding, prompt, limit)) in enumerate(RUNS.items()):
        run, kinds = scripted_run(base / name, encoding, prompt, limit, offset)
        export = export_bfcl(run, base / f"export_{name}")
        (command,) = export.commands
        shutil.copytree(command.root / "result", root / "result", dirs_exist_ok=True)
        runs[name] = (run, kinds, export, dataclasses.replace(command, root=root))
    argv = [
        *bfcl_evaluate,
        "--model",
        ",".join(export.target.model for _, _, export, _ in runs.values()),
        "--test-category",
        ",".join(CATEGORIES),
        "--partial-eval",
    ]
    env = {k: v for k, v in os.environ.items() if k != "WANDB_BFCL_PROJECT"}
    for _, _, _, command in runs.values():
        env.update(command.environment())
    env["PYTHONIOENCODING"] = "utf-8"
    done = subprocess.run(argv, env=env, cwd=root, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"{shlex.join(argv)} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return runs


@pytest.mark.parametrize("name", list(RUNS))
def test_bfcl_gives_every_entry_the_runs_verdict(name, scored):
    run, kinds, export, command = scored[name]
    assert export.target.model == MODELS[name] and export.target.encoding == RUNS[name][0]
    assert not export.mismatches, [m.describe() for m in export.mismatches]
    assert command.categories == CATEGORIES
    records = {r.task_id: r for r in read_episodes(run / "episodes.jsonl")[0]}
    per_category = json.loads((run / "results.json").read_text())["summary"]["categories"]
    seen_kinds, differences, bfcl_accuracies, bfcl_errors = set(), 0, {}, set()
    for category in CATEGORIES:
        path = score_folder(command, category) / f"BFCL_v4_{category}_score.json"
        header, *failed = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]
        failed = {f["id"]: f["error_type"] for f in failed}
        bfcl_errors.update(failed.values())
        ids = [i for i, r in records.items() if r.category == category]
        assert header["total_count"] == len(ids) and set(failed) <= set(ids)
        expected_valid = 0
        for task_id in ids:
            ours, kind = records[task_id], kinds[task_id]
            seen_kinds.add(kind)
            if failed_inference(ours) and "irrelevance" in category:  # the documented difference
                assert task_id not in failed, f"{task_id}: BFCL should count the failed inference as an abstention"
                expected_valid += 1
                differences += 1
                continue
            expected = None if ours.reward >= 1.0 else ours.error_type
            if failed_inference(ours):
                assert task_id in failed, f"{task_id}: BFCL passed a failed inference"
                expected = failed[task_id]  # BFCL's decoder error on its error text; ours is an agent error
            assert failed.get(task_id) == expected, f"{task_id} ({kind}): BFCL {failed.get(task_id)}, ours {expected}"
            expected_valid += ours.reward >= 1.0
        assert header["accuracy"] == pytest.approx(expected_valid / len(ids))
        bfcl_accuracies[category] = (header["accuracy"], header["total_count"])
        if not any(failed_inference(records[i]) for i in ids) or "irrelevance" not in category:
            assert header["accuracy"] == pytest.approx(per_category[category]["per_seed"]["0"]), category
    assert seen_kinds == set(KINDS)
    assert {"irrelevance_error:decoder_success", "relevance_error:decoder_failed"} <= bfcl_errors
    assert "ast_decoder:decoder_failed" in bfcl_errors and any("checker" in e for e in bfcl_errors)
    verdicts = [r.reward >= 1.0 for r in records.values()]
    assert any(verdicts) and not all(verdicts)
    if differences:
        assert f"{differences} irrelevance entries ended in an agent error" in "\n".join(export.warnings)
    assert_score_tables_agree(run, export, command, bfcl_accuracies, differences)


# Our summary score -> BFCL's data_overall.csv column
OVERALL_COLUMNS = {
    "non_live_simple": "Non-Live Simple AST",
    "non_live": "Non-Live AST Acc",
    "live": "Live Acc",
    "irrelevance_detection": "Irrelevance Detection",
    "relevance_detection": "Relevance Detection",
}


def assert_score_tables_agree(run, export, command, bfcl_accuracies, differences):
    """BFCL's own summary table over the exported files equals our formulas on BFCL's per-category accuracies,
    and, where BFCL gave every verdict the run gave, the run's results.json."""
    from tooluse_gym.tasks import bfcl

    bfcl.backend_classes()  # sets BFCL_PROJECT_ROOT before bfcl_eval imports
    display = importlib.import_module("bfcl_eval.constants.model_config").MODEL_CONFIG_MAPPING[export.target.model]
    with (command.root / "score" / "data_overall.csv").open(encoding="utf-8") as f:
        (row,) = [r for r in csv.DictReader(f) if r["Model"] == display.display_name]
    ours = bfcl_scores(bfcl_accuracies)
    summary = json.loads((run / "results.json").read_text())["summary"]["bfcl_scores"]
    for name, column in OVERALL_COLUMNS.items():
        assert row[column] == f"{100 * ours[name].value:.2f}%", (name, row[column], ours[name])
        if not differences:
            assert summary[name]["per_seed"]["0"] == pytest.approx(ours[name].value), name


def test_cli_exports_a_single_turn_run(tmp_path, capsys):
    run = tmp_path / "oracle"
    argv = ["run", "--agent", "oracle", "--categories", "simple_python", "live_irrelevance", "--limit", "2"]
    assert main([*argv, "--out", str(run), "--no-progress"]) == 0
    assert main(["export", "--format", "bfcl", str(run), str(tmp_path / "bfcl")]) == 0
    printed = capsys.readouterr().out
    assert "exported 4 BFCL episodes (seeds 0)" in printed and "--model Qwen/Qwen3-8B" in printed
    assert "--test-category simple_python,live_irrelevance --partial-eval" in printed
    root = tmp_path / "bfcl" / "seed_0" / "result" / "Qwen_Qwen3-8B"
    assert sorted(p.relative_to(root).as_posix() for p in root.rglob("*.json")) == [
        "live/BFCL_v4_live_irrelevance_result.json",
        "non_live/BFCL_v4_simple_python_result.json",
    ]
    lines = [json.loads(x) for x in (root / "non_live" / "BFCL_v4_simple_python_result.json").read_text().splitlines()]
    assert [set(x) for x in lines] == [{"id", "result"}] * 2 and all(isinstance(x["result"], str) for x in lines)
