"""`tooluse-eval` end to end with the oracle agent: scores, resume, sweep, compare."""

from __future__ import annotations

import json
import os
import re
import socket
import warnings

import pytest

from tooluse_agents.cli.eval import QUIET_ENV, main
from tooluse_agents.eval.run import eval_task_ids
from tooluse_agents.rollout.episode import read_episodes


def run(*args):
    return main([*args, "--no-progress"] if args[0] != "compare" else list(args))


@pytest.fixture(autouse=True)
def clean_environ(monkeypatch):
    """Each `QUIET_ENV` variable unset during a test, whatever the caller's environment."""
    for name in QUIET_ENV:
        monkeypatch.setenv(name, "")  # records the value to restore
        monkeypatch.delenv(name)


def test_oracle_scores_100_in_every_category(tmp_path, capsys):
    out = tmp_path / "oracle"
    assert run("run", "--agent", "oracle", "--limit", "10", "--seeds", "0", "1", "--out", str(out)) == 0
    results = json.loads((out / "results.json").read_text())
    summary = results["summary"]
    assert summary["episodes"] == 80
    for category in ("base", "miss_func", "miss_param", "long_context"):
        assert summary["categories"][category]["per_seed"] == {"0": 1.0, "1": 1.0}
    assert summary["overall"]["mean"] == 1.0
    assert results["protocol"]["system_prompt"] == "bfcl" and len(results["fingerprint"]) == 12
    assert (out / "report.md").read_text().startswith("# Evaluation: oracle")
    assert (out / "accuracy.png").read_bytes()[:4] == b"\x89PNG"
    assert "| **overall** | 80 | 100.0 | 100.0 | 100.0 |" in capsys.readouterr().out


def test_limit_selects_evenly_spaced_tasks():
    assert eval_task_ids(["base"], 4) == [f"multi_turn_base_{i}" for i in (0, 50, 100, 150)]


def test_interrupted_run_resumes_without_redoing_episodes(tmp_path):
    out = tmp_path / "resume"
    args = (
        "run",
        "--agent",
        "oracle",
        "--categories",
        "base",
        "miss_func",
        "--limit",
        "5",
        "--seeds",
        "3",
        "--out",
        str(out),
    )
    assert run(*args) == 0
    path = out / "episodes.jsonl"
    lines = path.read_text().splitlines()
    assert len(lines) == 10
    kept = lines[:4]
    path.write_text("\n".join(kept) + "\n" + lines[4][: len(lines[4]) // 2])  # killed mid-write
    with pytest.warns(UserWarning) as caught:
        assert run(*args) == 0
    assert "torn last line" in str(caught[0].message)
    with pytest.warns(UserWarning):
        records, stats = read_episodes(path)
    assert stats.skipped == 1 and len(records) == 10
    assert len({(r.task_id, r.seed) for r in records}) == 10
    assert [json.dumps(r.to_dict()) for r in records[:4]] == [json.dumps(json.loads(x)) for x in kept]
    summary = json.loads((out / "results.json").read_text())["summary"]
    assert summary["episodes"] == 10 and summary["overall"]["mean"] == 1.0


def test_changed_configuration_is_refused(tmp_path, capsys):
    out = tmp_path / "conflict"
    assert run("run", "--agent", "oracle", "--limit", "1", "--out", str(out)) == 0
    assert run("run", "--agent", "oracle", "--limit", "1", "--template", "context", "--out", str(out)) == 2
    assert (
        "another configuration: protocol.template 'native' -> 'context' (stored -> this run)" in capsys.readouterr().err
    )
    assert run("run", "--agent", "oracle", "--limit", "1", "--template", "context", "--out", str(out), "--force") == 0


def test_a_run_refused_for_bad_input_writes_nothing_so_the_corrected_command_runs(tmp_path, capsys):
    out = tmp_path / "fresh"
    assert run("run", "--agent", "oracle", "--task-ids", "multi_turn_base_9999", "--out", str(out)) == 2
    assert "unknown task ids" in capsys.readouterr().err and not out.exists()
    assert run("run", "--agent", "oracle", "--limit", "0", "--out", str(out)) == 2
    assert "--limit 0: tasks per category, >= 1" in capsys.readouterr().err and not out.exists()
    assert run("run", "--agent", "oracle", "--task-ids", "multi_turn_base_1", "--out", str(out)) == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    # refused again on an existing run folder: it stays as it was, and --force discards nothing
    for bad in (["--task-ids", "multi_turn_base_9999"], ["--task-ids", "multi_turn_base_1", "--num-envs", "0"]):
        assert run("run", "--agent", "oracle", *bad, "--out", str(out), "--force") == 2
        assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert "--num-envs 0" in capsys.readouterr().err


def test_a_resumed_run_says_how_many_episodes_it_skipped_and_ctrl_c_says_how_to_resume(tmp_path, capsys, monkeypatch):
    from tooluse_agents.eval import run as evaluate

    out = tmp_path / "stopped"
    argv = ["run", "--agent", "oracle", "--task-ids", "multi_turn_base_1", "multi_turn_base_2", "multi_turn_base_3"]
    argv += ["--out", str(out), "--num-envs", "1", "--no-progress"]
    real = evaluate.run_rollouts

    def stopped_after_one(*args, on_episode, **kwargs):
        def then_ctrl_c(episode):
            on_episode(episode)
            raise KeyboardInterrupt

        return real(*args, on_episode=then_ctrl_c, **kwargs)

    monkeypatch.setattr(evaluate, "run_rollouts", stopped_after_one)
    assert main(argv) == 130
    err = capsys.readouterr().err
    assert err.strip() == (
        f"tooluse eval: interrupted; the episodes played so far are kept in {out}; run the same command to resume: "
        f"tooluse eval {' '.join(argv)}"
    )
    assert len((out / "episodes.jsonl").read_text().splitlines()) == 1
    monkeypatch.undo()
    assert main(argv) == 0
    assert f"resuming {out}: 1 of 3 episodes already done, skipped; 2 to play" in capsys.readouterr().err
    assert main(argv) == 0
    assert f"resuming {out}: 3 of 3 episodes already done, skipped; 0 to play" in capsys.readouterr().err
    assert json.loads((out / "results.json").read_text())["summary"]["episodes"] == 3


def test_run_json_keeps_its_shape_and_older_files_resume_under_an_equal_protocol(tmp_path):
    from tooluse_agents.eval.run import EvalConfig
    from tooluse_gym.envs.knobs import Knobs

    out = tmp_path / "old"
    args = ("run", "--agent", "oracle", "--task-ids", "multi_turn_base_0", "--out", str(out))
    assert run(*args) == 0
    config = json.loads((out / "run.json").read_text())
    assert config["protocol"] == {  # what tooluse-eval has always written: decoder only when not the env id's
        "template": "native",
        "reasoning": "keep",
        "system_prompt": "bfcl",
        "tool_format": "python",
        "tool_results": "tool_messages",
        "strict_tools": False,
        "max_steps_per_turn": 20,
    }
    assert EvalConfig(agent="oracle", protocol=Knobs(decoder="lenient")).to_dict()["protocol"]["decoder"] == "lenient"
    assert EvalConfig(agent="oracle", scenarios=("s.yaml",)).protocol.decoder == "lenient"  # the scenario env's
    for older in ({}, {"template": "native", "decoder": "bfcl"}):  # written by the Python API / an explicit flag
        (out / "run.json").write_text(json.dumps({**config, "protocol": older}))
        assert run(*args) == 0
    (out / "run.json").write_text(json.dumps({**config, "protocol": {"decoder": "lenient"}}))
    assert run(*args) == 2


def test_sweep_with_the_oracle_stays_at_100(tmp_path):
    out = tmp_path / "sweep"
    assert (
        run(
            "sweep",
            "--agent",
            "oracle",
            "--limit",
            "3",
            "--seeds",
            "0",
            "1",
            "--template",
            "native",
            "context",
            "--reasoning",
            "keep",
            "strip",
            "--system-prompt",
            "bfcl",
            "strong",
            "none",
            "--out",
            str(out),
        )
        == 0
    )
    data = json.loads((out / "sweep.json").read_text())
    assert len(data["runs"]) == 12 and all(r["overall"] == 1.0 for r in data["runs"])
    assert {r["knob"]: r["spread"] for r in data["sensitivity"]} == {
        "template": 0.0,
        "reasoning": 0.0,
        "system_prompt": 0.0,
        "seed": 0.0,
    }
    assert len({r["fingerprint"] for r in data["runs"]}) == 12
    assert (out / "sensitivity.png").exists() and "| template | 0.0 |" in (out / "sweep.md").read_text()


def test_compare_warns_when_protocols_differ(tmp_path, capsys):
    a, b = tmp_path / "a", tmp_path / "b"
    assert run("run", "--agent", "oracle", "--limit", "2", "--out", str(a)) == 0
    assert run("run", "--agent", "oracle", "--limit", "2", "--reasoning", "strip", "--out", str(b)) == 0
    capsys.readouterr()
    assert run("compare", str(a), str(b)) == 0
    captured = capsys.readouterr()
    assert (
        "WARNING: the protocol cards differ" in captured.out and "reasoning: 'keep' (A) vs 'strip' (B)" in captured.out
    )
    assert "protocol cards differ" in captured.err
    assert "| overall | 100.0 | 100.0 | +0.0 |" in captured.out
    assert "None of the 8 shared tasks disagree (mean reward across" in captured.out
    assert "disagree (mean reward across the seeds both runs played >= 0.5 in one run only):" not in captured.out


def test_bfcl_results_and_report_give_the_official_and_the_clean_score(tmp_path, capsys):
    from tooluse_gym.tasks.known_issues import load_known_issues

    out = tmp_path / "oracle"
    ids = ("multi_turn_base_4", "multi_turn_base_5", "multi_turn_miss_func_160", "multi_turn_miss_func_161")
    assert run("run", "--agent", "oracle", "--task-ids", *ids, "--out", str(out)) == 0
    summary = json.loads((out / "results.json").read_text())["summary"]
    clean = summary["clean"]
    assert clean["registry_version"] == load_known_issues().version
    assert clean["excluded_tasks"] == ["multi_turn_base_4", "multi_turn_miss_func_160"]
    assert clean["categories"]["base"]["tasks"] == 1 and clean["categories"]["base"]["excluded_tasks"] == 1
    assert clean["overall"]["mean"] == summary["overall"]["mean"] == 1.0
    report = (out / "report.md").read_text()
    assert "## Official score and clean subset" in report and f"registry {clean['registry_version']}" in report
    assert "| multi_turn_base_4 | wrong_ground_truth | https://github.com/ShishirPatil/gorilla/issues/1367 |" in report
    assert "leaves out 2 of this run's 4 tasks" in capsys.readouterr().out


def test_scenario_runs_have_no_clean_subset(tmp_path):
    out = tmp_path / "scenarios"
    args = ("run", "--agent", "oracle", "--scenarios", "scenarios/curriculum/heldout.yaml", "--limit", "1")
    assert run(*args, "--out", str(out)) == 0
    assert "clean" not in json.loads((out / "results.json").read_text())["summary"]
    assert "clean subset" not in (out / "report.md").read_text()


def test_compare_shows_the_official_and_the_clean_differences(tmp_path, capsys):
    """The TUI fixture runs with one disagreeing task renamed to a task the registry lists."""
    from pathlib import Path

    from tooluse_gym.tasks.known_issues import registry_version

    data = Path(__file__).resolve().parents[2] / "tooluse_tui" / "data"
    runs = []
    for name in ("run_a", "run_b"):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "results.json").write_text((data / name / "results.json").read_text())
        text = (data / name / "episodes.jsonl").read_text()
        (folder / "episodes.jsonl").write_text(text.replace('"multi_turn_miss_param_0"', '"multi_turn_miss_param_4"'))
        runs.append(folder)
    assert run("compare", *map(str, runs)) == 0
    out = capsys.readouterr().out
    official, clean = out.split("Clean subset")
    assert "Official score (all tasks)" in official and "| miss_param | 25.0 | 50.0 | +25.0 |" in official
    assert f"registry {registry_version()}; 1 of the runs' tasks left out" in clean
    assert "| miss_param | 0.0 | 100.0 | +100.0 |" in clean  # only miss_param_100 is left
    assert "multi_turn_miss_param_4: A 0.50  B 0.00  [known issue: wrong_ground_truth]" in clean


def test_compare_scores_only_the_tasks_and_seeds_both_runs_played(tmp_path, capsys):
    """Issue 43: A played 2 categories under 2 seeds, B 4 categories under 3 (`differing_runs.py` under eval/).

    Before, compare printed each run's own overall (A 54.2, B 37.5: -16.7 points between different
    task sets), dropped the categories only B has, and counted nothing that was left out.
    """
    from tests.tooluse_agents.eval.differing_runs import write_runs
    from tooluse_agents.eval.run import compare_runs

    runs = write_runs(tmp_path)
    assert run("compare", *map(str, runs)) == 0
    captured = capsys.readouterr()
    official, clean = captured.out.split("Clean subset")
    # on the pairs both played: A base (0.5, 1.0) by seed, B (1.0, 0.5); miss_func A (0.5, 0), B (1.0, 0.5);
    # overall A (0.5, 0.5), B (1.0, 0.5). 95% CI: 12.706 * std of the per-seed differences / sqrt(2)
    assert "| base | 75.0 | 75.0 | +0.0 | ±635.3 |" in official  # differences +0.5, -0.5
    assert "| miss_func | 25.0 | 75.0 | +50.0 | ±0.0 |" in official
    assert "| overall | 50.0 | 75.0 | +25.0 | ±317.6 |" in official  # differences +0.5, 0.0
    table = official.split("|---|")[-1]
    assert "miss_param" not in table and "long_context" not in table
    # without multi_turn_base_4 (a known issue): base A (1, 1), B (1, 0); overall A (0.75, 0.5), B (1.0, 0.25)
    assert "1 of the runs' tasks left out" in clean and "| base | 100.0 | 50.0 | -50.0 | ±635.3 |" in clean
    assert "| overall | 62.5 | 62.5 | +0.0 | ±317.6 |" in clean
    # over seeds 0 and 1 base_0 is A 1.0, B 0.5: both solve it; miss_func_0 is A 0.0, B 1.0
    assert "1 of 4 shared tasks disagree" in clean and "multi_turn_miss_func_0: A 0.00  B 1.00" in clean
    assert "Compared: the 8 (task, seed) pairs (4 tasks; seeds 0, 1; 2 categories) both played" in official
    assert "Only in A, left out: 2 episodes: 1 task that B did not play." in official
    assert (
        "Only in B, left out: 10 episodes: 2 tasks and 1 seed (2) that A did not play; "
        "2 categories with no episode compared (long_context, miss_param)." in official
    )
    assert "NOTE: the runs played different tasks or seeds" in captured.err
    _, data = compare_runs(*runs)
    assert data["compared"] == {"pairs": 8, "tasks": 4, "seeds": [0, 1], "categories": ["base", "miss_func"]}
    assert data["left_out"] == {
        "a": {"episodes": 2, "tasks": ["multi_turn_base_2"], "seeds": [], "categories": [], "unscored": 0},
        "b": {
            "episodes": 10,
            "tasks": ["multi_turn_long_context_0", "multi_turn_miss_param_0"],
            "seeds": [2],
            "categories": ["long_context", "miss_param"],
            "unscored": 0,
        },
    }
    rows = {r["category"]: r for r in data["categories"]}
    assert rows["overall"] == {
        "category": "overall",
        "episodes": 8,
        "a": 0.5,
        "b": 0.75,
        "diff": 0.25,
        "ci95": pytest.approx(12.706 * 0.25),
    }
    assert [r["category"] for r in data["clean"]["categories"]] == ["base", "miss_func", "overall"]


def test_backend_logs_and_warnings_are_hidden_unless_verbose(tmp_path, monkeypatch):
    from tooluse_agents.eval import run as evaluate

    seen = []

    def make_agent(config, progress=True):  # what the backend sees while the run is on
        seen.append({name: os.environ.get(name) for name in QUIET_ENV})
        warnings.warn_explicit("deprecated", FutureWarning, "dispatcher.py", 1, module="vllm.triton_utils.dispatcher")
        warnings.warn_explicit("skipped torn last line", UserWarning, "jsonl.py", 1, module="tooluse_agents.runs.jsonl")
        return make_real_agent(config, progress)

    make_real_agent = evaluate.make_agent
    monkeypatch.setattr(evaluate, "make_agent", make_agent)
    args = ("run", "--agent", "oracle", "--task-ids", "multi_turn_base_0")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert run(*args, "--out", str(tmp_path / "q")) == 0
    assert seen.pop() == QUIET_ENV and QUIET_ENV["VLLM_LOGGING_LEVEL"] == "ERROR"
    assert [str(w.message) for w in caught] == ["skipped torn last line"]  # the project's own warnings still show
    assert not set(QUIET_ENV) & set(os.environ)  # restored after the run
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert run(*args, "--verbose", "--out", str(tmp_path / "v")) == 0
    assert seen.pop() == dict.fromkeys(QUIET_ENV) and len(caught) == 2
    monkeypatch.setenv("VLLM_LOGGING_LEVEL", "DEBUG")  # an explicit setting wins
    with pytest.warns(UserWarning, match="torn"):
        assert run(*args, "--out", str(tmp_path / "d")) == 0
    assert seen.pop()["VLLM_LOGGING_LEVEL"] == "DEBUG" and os.environ["VLLM_LOGGING_LEVEL"] == "DEBUG"


def test_tensor_parallel_size_is_a_vllm_setting_recorded_only_when_set():
    from tooluse_agents.eval.run import EvalConfig

    assert "tensor_parallel_size" not in EvalConfig(agent="oracle").to_dict()  # older run.json files still match
    assert EvalConfig(agent="vllm", model="m", tensor_parallel_size=4).to_dict()["tensor_parallel_size"] == 4
    for agent, size in (("vllm", 0), ("oracle", 2)):
        with pytest.raises(ValueError, match="tensor-parallel-size"):
            EvalConfig(agent=agent, model="m", tensor_parallel_size=size)


def test_a_run_whose_every_episode_failed_says_so_above_the_table(tmp_path, capsys, monkeypatch):
    from tooluse_agents.backends.openai_compat import OpenAIAgent, OpenAIAgentConfig
    from tooluse_agents.eval import run as evaluate

    def one_attempt(config, progress=True):
        return OpenAIAgent(OpenAIAgentConfig(model=config.model, base_url=config.base_url, max_attempts=1))

    monkeypatch.setattr(evaluate, "make_agent", one_attempt)
    out = tmp_path / "dead"
    with socket.socket() as closed:  # bound, never listening: every connection is refused
        closed.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{closed.getsockname()[1]}/v1"
        tasks = ("--task-ids", "multi_turn_base_0", "multi_turn_base_1")
        code = run("run", "--agent", "openai", "--model", "m", "--base-url", url, *tasks, "--out", str(out))
    printed = capsys.readouterr().out
    banner = "ERROR: all 2 episodes ended in an agent error (connection_error: 2): the endpoint did not answer"
    assert code == 1 and banner in printed and printed.index(banner) < printed.index("| category |")
    assert "The run failed; this is not a score of 0." in printed
    assert banner in (out / "report.md").read_text()


@pytest.mark.parametrize("command", ["run", "sweep"])
def test_every_option_of_run_and_sweep_says_what_it_does_and_its_default(command):
    import argparse

    from tooluse_agents.cli.eval import build_parser

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)).choices[command]
    undocumented = [a.option_strings[0] for a in sub._actions if a.option_strings and not a.help]
    assert undocumented == []
    text = " ".join(sub.format_help().split())
    for shown in (
        "sampling temperature; 0: greedy (default: 0.7)",
        "per assistant message (default: 512)",
        "a seed fixes all sampling (default: 0)",
        "(the most requests in flight) (default: 8)",
        "excluded functions. (default: False)",  # a knob's own note, not repeated
        "async where possible (default: auto)",
    ):
        assert shown in text, shown
    assert not re.search(r"default: [^()]*\)\s*\(default:", text)  # no option says its default twice


def test_the_limit_help_gives_the_true_category_sizes():
    """`--limit` spreads over a category: 200 multi-turn tasks each, 16 to 1,053 single-turn entries (not "its 200")."""
    from tooluse_agents.cli.eval import run_parser
    from tooluse_gym.tasks.bfcl_single_turn import CATEGORIES, load_single_turn_tasks

    sizes = [len(load_single_turn_tasks(c)) for c in CATEGORIES]
    text = next(a for a in run_parser("run")._actions if a.dest == "limit").help or ""
    assert f"a single-turn one {min(sizes)} to {max(sizes):,}" in text and "multi-turn category holds 200" in text


def test_single_turn_categories_run_on_the_single_turn_env(tmp_path, capsys):
    out = tmp_path / "single"
    args = ("run", "--agent", "oracle", "--categories", "simple_python", "irrelevance", "live_relevance")
    assert run(*args, "--limit", "2", "--seeds", "0", "1", "--out", str(out)) == 0
    results = json.loads((out / "results.json").read_text())
    assert results["protocol"]["env_id"] == "ToolUse-SingleTurn-v0"
    assert results["summary"]["episodes"] == 12 and results["summary"]["overall"]["mean"] == 1.0
    assert set(results["summary"]["categories"]) == {"simple_python", "irrelevance", "live_relevance"}
    assert eval_task_ids(["non_live"], 1) == [
        "simple_python_0",
        "simple_java_0",
        "simple_javascript_0",
        "multiple_0",
        "parallel_0",
        "parallel_multiple_0",
        "irrelevance_0",
    ]
    capsys.readouterr()
    assert run(*args, "--limit", "2", "--seeds", "0", "1", "--out", str(out)) == 0  # resumes: nothing to play
    assert "12 of 12 episodes already done" in capsys.readouterr().err
    mixed = ("run", "--agent", "oracle", "--categories", "simple_python", "base", "--limit", "1")
    assert run(*mixed, "--out", str(tmp_path / "mixed")) == 0  # one run over both envs
    assert set(json.loads((tmp_path / "mixed" / "results.json").read_text())["protocols"]) == {
        "ToolUse-SingleTurn-v0",
        "ToolUse-MultiTurn-v0",
    }
    capsys.readouterr()
    assert main(["export", "--format", "bfcl", str(out), str(tmp_path / "bfcl")]) == 0  # one root per seed
    assert "exported 12 BFCL episodes (seeds 0, 1)" in capsys.readouterr().out


def test_a_config_file_then_the_flags_given_then_key_value_overrides(tmp_path):
    from tooluse_agents.cli.eval import eval_config, parse_run_args
    from tooluse_agents.eval.run import EvalConfig
    from tooluse_gym.envs.knobs import Knobs

    path = tmp_path / "eval.yaml"
    path.write_text(
        "agent: oracle\nscenarios: [s.yaml]\nseeds: [1, 2]\nnum_envs: 3\n"
        "protocol: {template: context}\nsampling: {temperature: 0}\n"
    )

    def config(*argv, command="run"):
        return eval_config(*parse_run_args(command, [*argv, "--out", "x"]))

    from_file = config("--config", str(path))
    assert (from_file.agent, from_file.scenarios, from_file.seeds, from_file.num_envs) == (
        "oracle",
        ("s.yaml",),
        (1, 2),
        3,
    )
    assert from_file.sampling.temperature == 0.0
    # the file's knobs change the env id's defaults (lenient for scenarios), not the multi-turn ones
    assert from_file.protocol == Knobs(template="context", decoder="lenient")
    # a flag given wins over the file even at its default value; a flag left out leaves the file's value
    layered = config("--config", str(path), "--temperature", "0.7", "--decoder", "bfcl", "--seeds", "5")
    assert (layered.sampling.temperature, layered.protocol.decoder, layered.seeds) == (0.7, "bfcl", (5,))
    assert (layered.num_envs, layered.protocol.template) == (3, "context")
    # overrides win over both, and may come between the options
    top = config("num_envs=1", "--config", str(path), "--num-envs", "2", "protocol.reasoning=strip", "seeds=[7]")
    assert (top.num_envs, top.protocol.reasoning, top.protocol.template, top.seeds) == (1, "strip", "context", (7,))
    # without --config the flags alone make the config they always made
    assert config("--agent", "oracle", "--limit", "2") == EvalConfig(agent="oracle", limit=2)
    # a sweep's knob flags are its grid; the file's knobs are its base protocol
    sweep = config("--config", str(path), "--template", "native", "context", command="sweep")
    assert sweep.protocol == Knobs(template="context", decoder="lenient")
    for argv, error in (
        (["--config", str(path), "sampling.temperature=hot"], "sampling.temperature: expected float, got 'hot'"),
        (["--config", str(path), "seeds=three"], "seeds: expected list of int, got 'three'"),
        (["--config", str(path), "protocol.tempalte=native"], "unknown protocol (Knobs) keys: ['tempalte']"),
        (["--config", str(path), "protocol.template=ctx"], "protocol.template must be one of 'native', 'context'"),
        (["--config", str(path), "nmu_envs=2"], "unknown EvalConfig keys: ['nmu_envs']"),
        (["--limit", "2"], "the following arguments are required: --agent (or agent: in --config)"),
    ):
        with pytest.raises(ValueError) as caught:
            config(*argv)
        assert str(caught.value).startswith(error), (argv, str(caught.value))
    (tmp_path / "no_agent.yaml").write_text("limit: 2\n")
    with pytest.raises(ValueError, match=r"^agent: required \(EvalConfig has no default for it\)"):
        config("--config", str(tmp_path / "no_agent.yaml"))


def test_eval_run_plays_what_its_config_file_says(tmp_path, capsys):
    path = tmp_path / "eval.yaml"
    path.write_text("agent: oracle\ntask_ids: [multi_turn_base_0, multi_turn_base_1]\nseeds: [4]\n")
    out = tmp_path / "from_file"
    assert run("run", "--config", str(path), "num_envs=1", "--out", str(out)) == 0
    stored = json.loads((out / "run.json").read_text())
    assert (stored["task_ids"], stored["seeds"], stored["num_envs"]) == (
        ["multi_turn_base_0", "multi_turn_base_1"],
        [4],
        1,
    )
    assert json.loads((out / "results.json").read_text())["summary"]["episodes"] == 2
    capsys.readouterr()
    assert run("run", "--config", str(path), "sampling.max_tokens=many", "--out", str(tmp_path / "bad")) == 2
    assert "tooluse eval: error: sampling.max_tokens: expected int, got 'many'" in capsys.readouterr().err
    assert not (tmp_path / "bad").exists()


def test_the_categories_help_names_every_category_and_group():
    from tooluse_agents.cli.eval import run_parser
    from tooluse_gym.tasks import bfcl, bfcl_single_turn

    text = next(a for a in run_parser("run")._actions if a.dest == "categories").help or ""
    names = (*bfcl.CATEGORIES, *bfcl_single_turn.CATEGORIES, *bfcl_single_turn.GROUPS)
    assert [n for n in names if not re.search(rf"\b{n}\b", text)] == []


@pytest.mark.parametrize(
    ("seeds", "message"),
    [
        (["-1"], "tooluse eval: error: --seeds -1: seeds are integers >= 0"),
        (["0", "0"], "tooluse eval: error: --seeds 0 0: seed 0 is given twice; give each seed once"),
    ],
)
def test_negative_or_repeated_seeds_are_refused_in_one_line_before_anything_is_written(
    tmp_path, capsys, seeds, message
):
    """Issue 60: ``--seeds -1`` died in Gymnasium after run.json was written; ``--seeds 0 0`` played twice."""
    out = tmp_path / "seeds"
    assert run("run", "--agent", "oracle", "--task-ids", "multi_turn_base_1", "--seeds", *seeds, "--out", str(out)) == 2
    assert capsys.readouterr().err.strip() == message
    assert not out.exists()
    assert run("run", "--agent", "oracle", "--task-ids", "multi_turn_base_1", "--seeds", "0", "--out", str(out)) == 0


def test_a_run_folder_in_use_refuses_a_second_run_and_results_count_each_task_and_seed_once(tmp_path, capsys):
    """Issue 60: the same run started twice at once wrote both into one episodes.jsonl, and results counted both."""
    from tooluse_agents.runs.rundir import RunDir

    out = tmp_path / "twice"
    argv = ("run", "--agent", "oracle", "--task-ids", "multi_turn_base_1", "multi_turn_base_2", "--out", str(out))
    with RunDir(out).lock():
        assert run(*argv) == 2
    err = capsys.readouterr().err.strip()
    in_use = f"{out} is in use by another run (process {os.getpid()}): wait for it to end, or use another --out"
    assert err == f"tooluse eval: error: {in_use}"
    assert [p.name for p in out.iterdir()] == [".lock"]
    assert run(*argv) == 0
    path = out / "episodes.jsonl"
    lines = path.read_text().splitlines()
    path.write_text("\n".join(lines + lines) + "\n")  # what two writers left before folders were locked
    with pytest.warns(UserWarning, match="left out 2 repeated episodes"):
        assert run(*argv) == 0
    assert json.loads((out / "results.json").read_text())["summary"]["episodes"] == 2


def test_a_config_file_that_is_not_yaml_is_refused_in_one_line_with_its_line_and_column(tmp_path, capsys):
    """Issue 60: malformed YAML in --config gave a 57-line traceback."""
    config = tmp_path / "eval.yaml"
    config.write_text("agent: oracle\nseeds: [0, 1\nlimit: 1\n")
    assert run("run", "--config", str(config), "--out", str(tmp_path / "out")) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and not (tmp_path / "out").exists()
    assert err.startswith(f"tooluse eval: error: {config}:3:6: ") and "not valid YAML" in err
