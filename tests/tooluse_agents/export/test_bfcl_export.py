"""`tooluse-eval export --format bfcl`: BFCL result files from a run, and BFCL's own evaluator on them.

The unit tests build episodes by hand: each kind of step in each encoding, and each turn structure
(turn-ending and undecodable messages, the held-out-function turn, force-quit, agent errors). The
differential tests play runs (the oracle through the CLI, perturbed ground truth in each step
encoding, and a SmolLM2 run, slow), export them, and score the files with BFCL's real `bfcl
evaluate` (as the export prints it: this environment's ``bfcl`` script by its full path) in a
subprocess whose ``BFCL_PROJECT_ROOT`` is a temporary folder; the three perturbed runs share one call (BFCL scores
several registered names at once) to keep the number of these slow calls down. BFCL must give every
task the verdict (and error type) of episodes.jsonl, and every category and seed the accuracy of
results.json. They are skipped while BFCL's evaluator dependencies are not installed (the ``bfcl``
extra, `tooluse_agents.export.evaluator.BFCL_EVALUATOR_PACKAGES`; ``make setup`` installs it).
"""

from __future__ import annotations

import dataclasses
import json
import os
import shlex
import shutil
import subprocess

import pytest

from tooluse_agents.backends.base import AgentError, Generation, SamplingConfig
from tooluse_agents.cli.eval import main
from tooluse_agents.eval.run import EvalConfig, eval_task_ids, run_eval
from tooluse_agents.export.base import encoding_of, failed_inference, step_payload
from tooluse_agents.export.evaluator import evaluator_program, missing_evaluator_packages
from tooluse_agents.export.folders import ExportError
from tooluse_agents.export.multi_turn import bfcl_result, decode_payload, is_bfcl_episode, step_mismatch
from tooluse_agents.export.pipeline import export_bfcl
from tooluse_agents.rollout.seeding import derive_seed
from tooluse_agents.runs.records import EpisodeRecord, StepEntry, TurnEntry, read_episodes
from tooluse_gym.envs.knobs import Knobs
from tooluse_gym.prompts import json_call_block
from tooluse_gym.types import ToolCall

BFCL_ENV = {"env_id": "ToolUse-MultiTurn-v0", "tool_format": "python", "decoder": "bfcl", "validate_args": False}
VALID = {"valid": True, "error_type": None, "error_message": None}
FORCE_TERMINATED = "multi_turn:force_terminated"
INFERENCE_ERROR = "multi_turn:inference_error"
BFCL = shlex.join(evaluator_program())


# --- hand-built episodes -------------------------------------------------------------------


def call(call_string, /, *, call_id=None, **arguments):
    out = {"name": call_string.split("(", 1)[0], "arguments": arguments, "source": call_string}
    if call_id is not None:
        out["id"] = call_id
    return out


def step(assistant="", *calls, turn=0, index=0):
    return StepEntry(turn=turn, index=index, assistant=assistant, calls=calls, results=tuple("ok" for _ in calls))


def record(*turns, task_id="multi_turn_base_0", seed=0, checker=VALID, error=None, protocol=BFCL_ENV, held_out=()):
    entries = tuple(TurnEntry(turn=t, held_out=t in held_out, steps=tuple(s)) for t, s in enumerate(turns))
    reward = 1.0 if checker and checker["valid"] and error is None else 0.0
    category = task_id.removeprefix("multi_turn_").rsplit("_", 1)[0]
    return EpisodeRecord(
        task_id=task_id,
        reward=reward,
        category=category,
        seed=seed,
        protocol=dict(protocol),
        turns=entries,
        num_turns=len(turns),
        checker=checker,
        error=error,
    )


CD = "cd(folder='docs')"


def test_python_steps_are_the_text_after_the_reasoning():
    thought = step("<think>\nThe user wants docs.\n</think>\n\n[cd(folder='docs')]", call(CD, folder="docs"))
    assert step_payload(thought, "python") == "[cd(folder='docs')]"
    assert step_payload(step("Done."), "python") == "Done."
    assert decode_payload("[cd(folder='docs')]", "python") == (CD,)
    assert decode_payload("cd(folder='docs')", "python") == (CD,)  # BFCL adds the brackets
    assert decode_payload("```\n[cd(folder='docs')]\n```", "python") == (CD,)  # and strips bare fences
    assert decode_payload("```python\n[cd(folder='docs')]\n```", "python") == ()  # a tagged fence: dropped
    assert decode_payload("Done.", "python") == ()
    assert decode_payload("[cd('docs')]", "python") == ("cd()",)  # positional arguments are dropped


def test_json_steps_are_the_text_after_the_reasoning():
    blocks = json_call_block("cd", {"folder": "docs"})
    assert step_payload(step("<think>hm</think>\n" + blocks, call(CD, folder="docs")), "json") == blocks
    assert decode_payload(blocks, "json") == (CD,)
    assert decode_payload("<tool_call>\n{not json}\n</tool_call>\n" + blocks, "json") == (CD,)  # skipped block
    assert decode_payload("Done.", "json") == ()


def test_function_calling_steps_are_name_to_arguments_json():
    calls = (
        call(CD, call_id="call_0", folder="docs"),
        call("mv(source='a',destination='b')", call_id="call_1", source="a", destination="b"),
    )
    payload = step_payload(step("Moving it.", *calls), "fc")
    assert payload == [{"cd": '{"folder": "docs"}'}, {"mv": '{"source": "a", "destination": "b"}'}]
    assert decode_payload(payload, "fc") == (CD, "mv(source='a',destination='b')")
    assert step_payload(step("All done."), "fc") == "All done."  # no structured calls: the text
    assert decode_payload("All done.", "fc") == () and decode_payload("", "fc") == ()


def test_function_calling_arguments_the_record_does_not_show_come_from_the_call_string():
    source = "post(content={'text': 'hi', 'tags': ['a']},n=2)"
    payload = step_payload(step("", call(source, call_id="c0", n=2)), "fc")  # nested values are not shown
    assert json.loads(payload[0]["post"]) == {"content": {"text": "hi", "tags": ["a"]}, "n": 2}
    assert decode_payload(payload, "fc") == (source,)


def test_turns_hold_every_message_the_env_received_in_order():
    episode = record(
        [step("[cd(folder='docs')]", call(CD, folder="docs")), step("Done.", index=1)],
        [step("[ls(]", turn=1, index=2)],  # did not decode: it ended the turn, BFCL drops it
        [step("[touch(file_name='a')]", call("touch(file_name='a')", file_name="a"), turn=2), step("ok", turn=2)],
        task_id="multi_turn_miss_func_3",
        held_out=(2,),  # the held-out-function turn is a turn like the others
    )
    assert bfcl_result(episode, "python") == [
        ["[cd(folder='docs')]", "Done."],
        ["[ls(]"],
        ["[touch(file_name='a')]", "ok"],
    ]


def test_a_force_quit_episode_has_only_the_turns_played():
    looping = [step("[ls()]", call("ls()"), turn=1, index=i) for i in range(21)]
    episode = record(
        [step("[cd(folder='docs')]", call(CD, folder="docs")), step("Done.")],
        looping,
        checker={"valid": False, "error_type": FORCE_TERMINATED, "error_message": "step limit"},
    )
    result = bfcl_result(episode, "python")
    assert [len(turn) for turn in result] == [2, 21] and result[1][-1] == "[ls()]"


def test_an_agent_error_is_a_failed_inference():
    failed = record([step("[cd(folder='docs')]", call(CD, folder="docs"))], checker=None, error={"type": "timeout"})
    assert failed_inference(failed)
    assert bfcl_result(failed, "python") == "Error during inference: timeout: "
    failed = dataclasses.replace(failed, error={"type": "rate_limited", "message": "429"})
    assert bfcl_result(failed, "fc") == "Error during inference: rate_limited: 429"
    unfinished = record([step("Done.")], checker=None)
    assert bfcl_result(unfinished, "python") == "Error during inference: the episode ended without a checker verdict"


def test_the_encoding_follows_the_steps_then_the_tool_format():
    text = record([step("[cd(folder='docs')]", call(CD, folder="docs"))])
    structured = record([step("", call(CD, call_id="call_0", folder="docs"))])
    as_json = record([step("Done.")], protocol={**BFCL_ENV, "tool_format": "json"})
    assert encoding_of([text]) == "python" and encoding_of([as_json]) == "json"
    assert encoding_of([text, structured]) == "fc"
    with pytest.raises(ExportError, match="mix tool formats"):
        encoding_of([text, as_json])


def test_only_bfcl_tasks_are_exported():
    assert is_bfcl_episode(record([step("Done.")], task_id="multi_turn_long_context_199"))
    assert not is_bfcl_episode(record([step("Done.")], task_id="multi_turn_composite_1"))
    assert not is_bfcl_episode(record([step("Done.")], task_id="greet_the_user"))
    scenario = {**BFCL_ENV, "env_id": "ToolUse-Scenario-v0"}
    assert not is_bfcl_episode(record([step("Done.")], task_id="multi_turn_base_0", protocol=scenario))


def test_self_check_flags_what_the_target_handler_reads_otherwise():
    structured = step("", call(CD, call_id="call_0", folder="docs"))
    text_the_env_ran = step("[cd(folder='docs')]", call(CD, folder="docs"), index=1)
    episode = record([structured, text_the_env_ran, step("Done.", index=2)])
    assert step_mismatch(episode, 0, 0, "fc") is None and step_mismatch(episode, 0, 2, "fc") is None
    mismatch = step_mismatch(episode, 0, 1, "fc")  # an OpenAI handler drops text
    assert mismatch is not None and mismatch.executed == (CD,) and mismatch.decoded == ()
    assert "turn 0 step 1" in mismatch.describe()
    lenient = {**BFCL_ENV, "decoder": "lenient"}
    bound = {"name": "cd", "arguments": {}, "positional": ["docs"]}  # the lenient parser binds it
    episode = record([step("[cd('docs')]", bound)], protocol=lenient)
    mismatch = step_mismatch(episode, 0, 0, "python")
    assert mismatch is not None and mismatch.executed == ("cd('docs')",) and mismatch.decoded == ("cd()",)


# --- export_bfcl and the CLI on real runs ---------------------------------------------------

TASKS = ("multi_turn_base_0", "multi_turn_base_1", "multi_turn_miss_func_0")


def oracle_run(path, task_ids=TASKS, seeds=(0, 1), **protocol):
    config = EvalConfig(
        agent="oracle", task_ids=tuple(task_ids), seeds=tuple(seeds), protocol=Knobs(**protocol), num_envs=4
    )
    run_eval(config, path, progress=False)
    return path


def append(path, *records):
    with (path / "episodes.jsonl").open("a", encoding="utf-8") as f:
        for r in records:
            f.write(json.dumps(r.to_dict()) + "\n")


def scenario_episode():
    protocol = {"env_id": "ToolUse-Scenario-v0", "tool_format": "python"}
    return record([step("Done.")], task_id="greet_0", protocol=protocol)


def test_export_writes_one_bfcl_root_per_seed(tmp_path):
    run = oracle_run(tmp_path / "run")
    append(run, scenario_episode())
    export = export_bfcl(run, tmp_path / "bfcl")
    assert (export.exported, export.skipped_scenario, export.inference_errors) == (6, 1, 0)
    assert export.target.model == "Qwen/Qwen3-8B" and export.target.encoding == "python"
    assert not export.mismatches and not export.warnings and export.steps_checked > 0
    records = {(r.task_id, r.seed): r for r in read_episodes(run / "episodes.jsonl")[0]}
    assert [c.root.name for c in export.commands] == ["seed_0", "seed_1"]
    for command in export.commands:
        seed = int(command.root.name.removeprefix("seed_"))
        assert command.root == (tmp_path / "bfcl" / f"seed_{seed}").resolve()
        assert command.categories == ("multi_turn_base", "multi_turn_miss_func")
        folder = command.root / "result" / "Qwen_Qwen3-8B" / "multi_turn"
        assert sorted(p.name for p in folder.iterdir()) == [
            "BFCL_v4_multi_turn_base_result.json",
            "BFCL_v4_multi_turn_miss_func_result.json",
        ]
        lines = [json.loads(x) for x in (folder / "BFCL_v4_multi_turn_base_result.json").read_text().splitlines()]
        assert [x["id"] for x in lines] == ["multi_turn_base_0", "multi_turn_base_1"]
        for line in lines:
            assert set(line) == {"id", "result"}  # no token counts or latencies: BFCL would price them
            ours = records[(line["id"], seed)]
            assert len(line["result"]) == ours.num_turns
            assert all(turn[-1] == "Done." for turn in line["result"])  # the oracle's turn-ending message
        assert command.shell() == (
            f"BFCL_PROJECT_ROOT={shlex.quote(str(command.root))} {BFCL} evaluate --model Qwen/Qwen3-8B "
            "--test-category multi_turn_base,multi_turn_miss_func --partial-eval"
        )
    manifest = json.loads((tmp_path / "bfcl" / "export.json").read_text())
    assert manifest == json.loads(json.dumps(export.to_dict()))
    assert manifest["exported"] == 6 and manifest["skipped_scenario"] == 1


def test_export_says_why_it_chose_its_target(tmp_path, capsys):
    """An oracle run filed under Qwen/Qwen3-8B says why: the name picks BFCL's decoder, not who played."""
    run = oracle_run(tmp_path / "run")
    export = export_bfcl(run, tmp_path / "bfcl")
    reason = export.target_reason
    assert "Qwen/Qwen3-8B's (QwenHandler: prompting decoder) reads Python call lists in text" in reason
    assert "tool_format=python" in reason and "(oracle played them)" in reason
    assert "not the model that played the episodes" in reason
    assert json.loads((tmp_path / "bfcl" / "export.json").read_text())["target_reason"] == reason
    assert f"why Qwen/Qwen3-8B: {reason}" in export.report()
    assert main(["export", "--format", "bfcl", str(run), str(tmp_path / "again")]) == 0
    assert "why Qwen/Qwen3-8B: BFCL decodes a result file" in capsys.readouterr().out


def test_export_refuses_what_bfcl_cannot_score(tmp_path):
    with pytest.raises(ExportError, match="no such run folder"):
        export_bfcl(tmp_path / "missing", tmp_path / "out")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ExportError, match=r"no episodes\.jsonl"):
        export_bfcl(tmp_path / "empty", tmp_path / "out")
    only_scenarios = tmp_path / "scenarios"
    only_scenarios.mkdir()
    append(only_scenarios, scenario_episode())
    with pytest.raises(ExportError, match=r"no BFCL multi-turn episodes to export \(1 other episodes skipped\)"):
        export_bfcl(only_scenarios, tmp_path / "out")
    twice = tmp_path / "twice"
    twice.mkdir()
    append(twice, record([step("Done.")]), record([step("Done.")]))
    with pytest.raises(ExportError, match="appears twice"):
        export_bfcl(twice, tmp_path / "out")
    unknown = tmp_path / "unknown"
    unknown.mkdir()
    append(unknown, record([step("Done.")], task_id="multi_turn_base_100000"))
    with pytest.raises(ExportError, match="not a task of the installed bfcl-eval"):
        export_bfcl(unknown, tmp_path / "out")


def test_export_keeps_what_out_holds_unless_forced(tmp_path):
    run = oracle_run(tmp_path / "run", task_ids=TASKS[:1], seeds=(0,))
    with pytest.raises(ExportError, match="holds the run itself"):
        export_bfcl(run, run)
    with pytest.raises(ExportError, match="holds the run itself"):
        export_bfcl(run, tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    with pytest.raises(ExportError, match="not empty"):
        export_bfcl(run, out)
    assert (out / "notes.txt").exists()
    export_bfcl(run, out, force=True)
    assert not (out / "notes.txt").exists() and (out / "seed_0").is_dir()


def test_a_run_with_fc_text_replies_is_exported_as_function_calling(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    # The env executed nothing for the text (an FC response without calls): BFCL's FC handler agrees,
    # its prompting handler would not.
    append(run, record([step("[cd(folder='docs')]"), step("Done.", index=1)]))
    assert export_bfcl(run, tmp_path / "as_text").target.encoding == "python"
    assert len(export_bfcl(run, tmp_path / "as_text", force=True).mismatches) == 1
    (run / "run.json").write_text(json.dumps({"agent": "openai", "text_replies": "fc"}))
    export = export_bfcl(run, tmp_path / "as_fc")
    assert export.target.encoding == "fc" and not export.mismatches


def test_export_warns_when_the_run_played_by_other_rules(tmp_path):
    run = oracle_run(tmp_path / "run", task_ids=TASKS[:1], seeds=(0,), decoder="lenient", max_steps_per_turn=5)
    export = export_bfcl(run, tmp_path / "out")
    text = "\n".join(export.warnings)
    assert "decoder='lenient'" in text and "BFCL force-quits after 20" in text and "validate_args" in text
    assert not export.mismatches  # the oracle's calls read the same under both decoders


def test_cli_prints_the_counts_and_the_bfcl_command(tmp_path, capsys):
    run = oracle_run(tmp_path / "run", task_ids=TASKS[:2], seeds=(0,))
    append(run, scenario_episode())
    out = tmp_path / "bfcl"
    assert main(["export", "--format", "bfcl", str(run), str(out)]) == 0
    printed = capsys.readouterr().out
    assert "exported 2 BFCL episodes (seeds 0)" in printed and "skipped 1 scenario episodes" in printed
    assert "self-check: all" in printed
    root = shlex.quote(str((out / "seed_0").resolve()))
    expected = f"BFCL_PROJECT_ROOT={root} {BFCL} evaluate --model Qwen/Qwen3-8B --test-category multi_turn_base"
    assert f"  {expected} --partial-eval" in printed.splitlines()
    assert main(["export", "--format", "bfcl", str(run), str(out)]) == 2  # not empty
    assert "not empty" in capsys.readouterr().err
    assert main(["export", "--format", "bfcl", str(tmp_path / "nothing"), str(tmp_path / "o")]) == 2
    assert "no such run folder" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["export", str(run), str(tmp_path / "o")])  # --format is required


# --- BFCL's own evaluator on exported runs --------------------------------------------------


@pytest.fixture(scope="module")
def bfcl_evaluate():
    """The command line of `bfcl evaluate` as the export prints it, or a skip without BFCL's evaluator deps."""
    missing = missing_evaluator_packages()
    if missing:
        pytest.skip(
            f"BFCL's evaluator cannot be imported without {' '.join(missing)}: bfcl_eval.__main__ imports "
            "eval_runner, whose model registry imports every vendor SDK (pip install 'tooluse-gym[bfcl]')"
        )
    return [*evaluator_program(), "evaluate"]


def run_bfcl(commands, evaluate):
    """One `bfcl evaluate` (as printed, with this interpreter) over commands sharing a project root: BFCL
    scores several registered names in one call. Returns (model, category) -> (header, failed id -> error type)."""
    (root,) = {c.root for c in commands}
    categories = list(dict.fromkeys(category for c in commands for category in c.categories))
    assert all(set(c.categories) == set(categories) for c in commands), "give every name the same categories"
    models = ",".join(dict.fromkeys(c.target.model for c in commands))
    argv = [*evaluate, "--model", models, "--test-category", ",".join(categories), "--partial-eval"]
    env = {k: v for k, v in os.environ.items() if k != "WANDB_BFCL_PROJECT"}
    for command in commands:
        env.update(command.environment())
    env["PYTHONIOENCODING"] = "utf-8"
    done = subprocess.run(argv, env=env, cwd=root, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, f"{shlex.join(argv)} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    scores = {}
    for command in commands:
        for category in command.categories:
            path = command.score_file(category)
            header, *failed = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]
            failed_ids = {f["id"]: f["error"]["error_type"] for f in failed}
            scores[(command.target.model, category.removeprefix("multi_turn_"))] = (header, failed_ids)
    return scores


def assert_bfcl_agrees(run, export, scores):
    """BFCL's verdict on every exported task equals episodes.jsonl's, its accuracy results.json's; `scores`
    maps a seed to `run_bfcl`'s answer for that seed's root. Returns BFCL's error type per episode (None: valid)."""
    records = {(r.task_id, r.seed): r for r in read_episodes(run / "episodes.jsonl")[0]}
    categories = json.loads((run / "results.json").read_text())["summary"]["categories"]
    verdicts = []
    for command in export.commands:
        seed = int(command.root.name.removeprefix("seed_"))
        for category in (c.removeprefix("multi_turn_") for c in command.categories):
            header, failed = scores[seed][(export.target.model, category)]
            written = command.root / "result" / export.target.directory / "multi_turn"
            lines = (written / f"BFCL_v4_multi_turn_{category}_result.json").read_text().splitlines()
            ids = [json.loads(x)["id"] for x in lines]
            assert header["total_count"] == len(ids) and set(failed) <= set(ids)
            for task_id in ids:
                ours = records[(task_id, seed)]
                expected = (
                    None if ours.reward >= 1.0 else INFERENCE_ERROR if failed_inference(ours) else ours.error_type
                )
                assert failed.get(task_id) == expected, (
                    f"{task_id} seed {seed}: BFCL {failed.get(task_id)}, ours {expected}"
                )
                verdicts.append(expected)
            assert header["accuracy"] == pytest.approx(categories[category]["per_seed"][str(seed)])
    return verdicts


def score_each_root(export, evaluate):
    """`bfcl evaluate` on each of an export's roots: seed -> scores."""
    return {int(c.root.name.removeprefix("seed_")): run_bfcl([c], evaluate) for c in export.commands}


def test_oracle_run_scores_100_in_bfcl_too(tmp_path, capsys, bfcl_evaluate):
    run = tmp_path / "oracle"
    assert main(["run", "--agent", "oracle", "--limit", "2", "--out", str(run), "--no-progress"]) == 0
    assert main(["export", "--format", "bfcl", str(run), str(tmp_path / "bfcl")]) == 0
    printed = capsys.readouterr().out
    export = export_bfcl(run, tmp_path / "bfcl", force=True)  # the same files, with the commands as data
    assert f"  {export.commands[0].shell()}" in printed.splitlines()
    verdicts = assert_bfcl_agrees(run, export, score_each_root(export, bfcl_evaluate))
    assert verdicts == [None] * 8


# Perturbed ground truth: one kind of change per episode, in each step encoding.
END = "Done."
THINK = "<think>\nThe user wants this done; I will call the tools.\n</think>\n\n"
KINDS = {
    "python": (
        "oracle",
        "drop_call",
        "change_argument",
        "think",
        "force_quit",
        "tagged_fence",
        "bare_fence",
        "positional",
        "chatter_first",
        "agent_error",
        "no_brackets",
    ),
    "json": (
        "oracle",
        "drop_call",
        "change_argument",
        "think",
        "force_quit",
        "bad_block",
        "chatter_first",
        "agent_error",
    ),
    "fc": ("oracle", "drop_call", "change_argument", "force_quit", "bad_json", "chatter_first", "agent_error"),
}


def changed(tool_call):
    """The call with its first argument changed."""
    if not tool_call.arguments:
        return tool_call
    key, value = next(iter(tool_call.arguments.items()))
    if isinstance(value, bool):
        new = not value
    elif isinstance(value, int | float):
        new = value + 1
    elif isinstance(value, str):
        new = value + "_x"
    elif isinstance(value, list):
        new = [*value, value[0]] if value else ["x"]
    else:
        new = "x"
    return dataclasses.replace(tool_call, arguments={**tool_call.arguments, key: new})


def positional(tool_call):
    """The call with its first argument passed by position (BFCL's decoder drops it)."""
    if not tool_call.arguments:
        return tool_call
    (key, value), *rest = tool_call.arguments.items()
    return ToolCall(name=tool_call.name, arguments=dict(rest), positional=(value,))


def message(calls, encoding):
    if encoding == "python":
        return "[" + ", ".join(c.render() for c in calls) + "]"
    if encoding == "json":
        return "\n".join(json_call_block(c.name, dict(c.arguments)) for c in calls)
    tool_calls = [
        {
            "id": f"call_{i}",
            "type": "function",
            "function": {"name": c.name, "arguments": json.dumps(dict(c.arguments))},
        }
        for i, c in enumerate(calls)
    ]
    return {"content": "", "tool_calls": tool_calls}


class PerturbedOracle:
    """Replays each task's ground truth with the change `kinds` assigns its episode ((task id, run seed) -> kind)."""

    name = "perturbed-oracle"

    def __init__(self, encoding, kinds, seeds):
        self.encoding, self.kinds, self.seeds = encoding, kinds, seeds
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
        task, turn, steps = request.task, request.turn, request.steps_in_turn
        seed = next(s for s in self.seeds if derive_seed(s, task.task_id, turn, steps) == request.seed)
        kind = self.kinds[(task.task_id, seed)]
        first = next((t for t, calls in enumerate(task.ground_truth) if calls), None)
        if kind == "agent_error" and turn == min(1, task.num_turns - 1) and steps == 0:
            return Generation(error=AgentError("agent_exception", "a scripted failure"))
        if kind == "force_quit" and turn == 0 and first is not None:  # calls at every step: the 21st force-quits
            return self.generation(message(task.ground_truth[first], self.encoding))
        calls = list(task.ground_truth[turn])
        if steps > 0 or not calls:
            return Generation(text=END)
        if turn == first and kind == "chatter_first":  # ends the turn without its calls
            return Generation(text="Sure, I can help with that.")
        if turn == first and kind == "drop_call":
            calls = calls[:-1]
            if not calls:
                return Generation(text=END)
        if turn == first and kind == "change_argument":
            calls = [changed(calls[0]), *calls[1:]]
        if turn == first and kind == "positional":
            calls = [positional(calls[0]), *calls[1:]]
        text = message(calls, self.encoding)
        if kind == "bad_json" and turn == first:
            text["tool_calls"][0]["function"]["arguments"] = "{"  # the whole message fails to decode
        elif kind == "think":
            text = THINK + text
        elif turn == first:
            text = {
                "tagged_fence": f"```python\n{text}\n```",  # fails to decode: ends the turn
                "bare_fence": f"```\n{text}\n```",
                "no_brackets": text[1:-1] if isinstance(text, str) else text,
                "bad_block": f"<tool_call>\n{{not json}}\n</tool_call>\n{text}",  # the bad block is skipped
            }.get(kind, text)
        return self.generation(text)

    @staticmethod
    def generation(action):
        return Generation(text=action) if isinstance(action, str) else Generation(text="", message=action)


def perturbed_run(path, encoding, task_ids, seeds):
    episodes = [(t, s) for s in seeds for t in task_ids]
    kinds = {e: KINDS[encoding][i % len(KINDS[encoding])] for i, e in enumerate(episodes)}
    protocol = {"tool_format": "json" if encoding == "json" else "python", "system_prompt": "none"}
    config = EvalConfig(
        agent="oracle", task_ids=tuple(task_ids), seeds=tuple(seeds), protocol=Knobs(**protocol), num_envs=4
    )
    run_eval(config, path, agent=PerturbedOracle(encoding, kinds, seeds), progress=False)
    return path


PERTURBED = {"python": 3, "json": 2, "fc": 2}  # tasks per category in each encoding's run (seed 0)


@pytest.fixture(scope="module")
def perturbed(tmp_path_factory, bfcl_evaluate):
    """A perturbed run in each encoding, exported, and all three scored by ONE `bfcl evaluate`: their result
    folders (three registered names) copied into one project root. encoding -> (run, export, scores by seed)."""
    base = tmp_path_factory.mktemp("perturbed")
    root = base / "bfcl_root"
    exports = {}
    for encoding, limit in PERTURBED.items():
        run = perturbed_run(base / encoding, encoding, eval_task_ids(None, limit), (0,))
        export = export_bfcl(run, base / f"export_{encoding}")
        (command,) = export.commands
        shutil.copytree(command.root / "result", root / "result", dirs_exist_ok=True)
        exports[encoding] = (run, export, dataclasses.replace(command, root=root))
    scores = run_bfcl([command for _, _, command in exports.values()], bfcl_evaluate)
    return {encoding: (run, export, {0: scores}) for encoding, (run, export, _) in exports.items()}


@pytest.mark.parametrize("encoding", list(PERTURBED))
def test_perturbed_runs_get_the_same_verdicts_from_bfcl(encoding, perturbed):
    run, export, scores = perturbed[encoding]
    assert export.target.encoding == encoding
    assert not export.mismatches and not export.warnings
    verdicts = assert_bfcl_agrees(run, export, scores)
    assert len(verdicts) == 4 * PERTURBED[encoding]  # four categories
    assert None in verdicts and INFERENCE_ERROR in verdicts
    assert any(v not in (None, INFERENCE_ERROR) for v in verdicts)  # the checker failed some
    kinds = KINDS[encoding]
    assert len(verdicts) >= len(kinds)  # every kind of change is in the run


# Two tasks (a plain one, and one with a held-out-function turn): a HF model on the CPU re-reads the
# whole chat at every step, and four tasks (long-context included) took about 10 minutes of the suite.
SMOL_TASKS = ("multi_turn_base_0", "multi_turn_miss_func_0")


@pytest.mark.slow
def test_smollm2_run_gets_the_same_verdicts_from_bfcl(tmp_path, bfcl_evaluate):
    from tooluse_agents.backends.hf import HFAgent, HFAgentConfig

    agent = HFAgent(HFAgentConfig(model="smollm2-135m", dtype="float32", threads=2))
    config = EvalConfig(
        agent="hf",
        model="smollm2-135m",
        task_ids=SMOL_TASKS,
        seeds=(0,),
        sampling=SamplingConfig(temperature=1.0, max_tokens=64),
        num_envs=2,
    )
    try:
        run_eval(config, tmp_path / "smol", agent=agent, progress=False)
    finally:
        agent.close()
    export = export_bfcl(tmp_path / "smol", tmp_path / "bfcl")
    assert export.target.model == "Qwen/Qwen3-8B" and not export.mismatches
    scores = score_each_root(export, bfcl_evaluate)
    assert len(assert_bfcl_agrees(tmp_path / "smol", export, scores)) == len(SMOL_TASKS)


def test_export_warns_that_bfcl_counts_a_failed_servers_episodes_as_failures(tmp_path):
    run = oracle_run(tmp_path / "run", task_ids=TASKS[:1], seeds=(0,))
    assert not export_bfcl(run, tmp_path / "before").warnings
    append(run, record([step("[cd(folder='docs')]")], task_id=TASKS[1], checker=None, error={"type": "timeout"}))
    export = export_bfcl(run, tmp_path / "after")
    assert export.inference_errors == 1
    assert any(w.startswith("1 episodes ended because the model server failed") for w in export.warnings)
