"""The paper's offline pre-filter (`tooluse-train prefilter`) and training on its keep list, offline:
the oracle through the command, the tiny model through the function; options between overrides."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.tooluse_agents.train.grpo.test_trainer import _config, tiny_trainer
from tests.tooluse_agents.train.grpo.tiny import pool
from tooluse_agents.cli.train import main
from tooluse_agents.train.grpo.prefilter import KeepList, kept_prompts, prefilter, read_keep_list, write_keep_list
from tooluse_agents.train.grpo.tasks import prompts_for

CHECK = Path(__file__).resolve().parents[4] / "agents" / "train" / "grpo" / "configs" / "cpu_distributed_check.yaml"
CHECK_PROMPTS = ["add_2_3@turn1", "mul_4_5@turn1", "add_3_4@turn1"]


def test_the_command_keeps_what_the_oracle_solves_and_a_run_trains_on_it(tmp_path, capsys):
    out = tmp_path / "kept.yaml"
    assert main(["prefilter", str(CHECK), "--agent", "oracle", "--samples", "3", "--out", str(out), "seed=5"]) == 0
    counts = json.loads(capsys.readouterr().out)
    assert counts == {
        "prompts": 3,
        "kept": 3,
        "dropped": 0,
        "rollouts": 9,
        "all_correct": 3,
        "all_wrong": 0,
        "mixed": 0,
    }
    data = yaml.safe_load(out.read_text())
    assert data["kind"] == "tooluse-gym prefilter" and data["kept"] == CHECK_PROMPTS and data["counts"] == counts
    assert data["solved"] == dict.fromkeys(CHECK_PROMPTS, 3) and (data["samples"], data["min_correct"]) == (3, 1)
    settings = data["settings"]
    assert settings["agent"] == {"name": "oracle"} and settings["mode"] == "next_turn" and settings["seed"] == 5
    assert settings["tasks"]["path"] == "scenarios/checks/tiny_math.yaml" and settings["protocol"]["system_prompt"]
    as_json = tmp_path / "kept.json"  # the same list as JSON, chosen by the name
    assert main(["prefilter", str(CHECK), "--agent", "oracle", "--out", str(as_json), "--samples", "3"]) == 0
    assert json.loads(as_json.read_text())["kept"] == CHECK_PROMPTS
    capsys.readouterr()
    # a training config takes the list (options and overrides in any order)
    assert main([str(CHECK), f"tasks.keep_list={out}", "--print-config", "max_steps=1"]) == 0
    assert yaml.safe_load(capsys.readouterr().out)["tasks"]["keep_list"] == str(out)


def test_the_tiny_model_keeps_the_prompts_it_solves_at_least_once(tiny_model, tmp_path):
    from tooluse_agents.eval.run import EvalConfig, make_agent
    from tooluse_agents.runs.records import EpisodeRecord

    config = _config(tiny_model, tmp_path / "unused", "rollout.num_envs=8")
    agent = make_agent(EvalConfig(agent="hf", model=str(tiny_model)))
    records: list[EpisodeRecord] = []
    keep = prefilter(config, agent, samples=8, pool=pool(), episodes=records)
    assert len(records) == 16 and keep.samples == 8
    solved = {pid: sum(r.reward == 1.0 for r in records if r.task_id == pid) for pid in keep.solved}
    assert keep.solved == solved and set(solved) == {"add_2_3@turn1", "mul_4_5@turn1"}
    assert keep.kept == tuple(pid for pid, k in solved.items() if k >= 1)
    assert keep.counts()["prompts"] == 2 and keep.counts()["kept"] == len(keep.kept)
    strict = prefilter(config, agent, samples=8, min_correct=8, pool=pool())
    assert strict.solved == keep.solved  # the same seeds: the same rollouts
    assert strict.kept == tuple(pid for pid, k in solved.items() if k == 8)
    path = tmp_path / "kept.yaml"
    write_keep_list(keep, path)
    assert read_keep_list(path) == keep
    with pytest.raises(ValueError):
        prefilter(config, agent, samples=4, min_correct=5, pool=pool())


def _keep(path: Path, kept: list[str], mode: str = "next_turn") -> str:
    solved = dict.fromkeys(kept, 1)
    write_keep_list(KeepList(tuple(kept), solved, 8, 1, {"mode": mode}), path)
    return str(path)


def test_a_keep_list_selects_the_training_prompts(tiny_model, tmp_path):
    kept = _keep(tmp_path / "k.yaml", ["mul_4_5@turn1"])
    trainer = tiny_trainer(tiny_model, tmp_path / "run", f"tasks.keep_list={kept}", heldout=False)
    assert trainer.prompt_ids == ["mul_4_5@turn1"]
    prompts = prompts_for(pool(), "next_turn")
    with pytest.raises(ValueError, match=r"grpo\.mode"):
        kept_prompts(prompts, _keep(tmp_path / "e.yaml", ["mul_4_5"], mode="episode"), "next_turn")
    with pytest.raises(ValueError, match="another task source"):
        kept_prompts(prompts, _keep(tmp_path / "x.yaml", ["add_9_9@turn1"]), "next_turn")
    with pytest.raises(ValueError, match="keeps no prompt"):
        kept_prompts(prompts, _keep(tmp_path / "n.yaml", []), "next_turn")
    assert kept_prompts(prompts, None, "next_turn") is prompts
    (tmp_path / "bad.yaml").write_text("kept: [a]\n")
    with pytest.raises(ValueError, match="not a keep list"):
        read_keep_list(tmp_path / "bad.yaml")


def test_options_and_overrides_in_any_order(capsys):
    for argv in (
        [str(CHECK), "seed=3", "--no-progress", "grpo.group_size=2", "--print-config"],
        ["--print-config", str(CHECK), "seed=3", "--no-progress", "grpo.group_size=2"],
        [str(CHECK), "--print-config", "seed=3", "grpo.group_size=2", "--no-progress"],
    ):
        assert main(argv) == 0
        printed = yaml.safe_load(capsys.readouterr().out)
        assert printed["seed"] == 3 and printed["grpo"]["group_size"] == 2


def test_dtype_offers_what_tooluse_eval_offers():
    from tooluse_agents.backends.dtypes import DTYPES
    from tooluse_agents.cli.eval import build_parser as eval_parser
    from tooluse_agents.train.grpo.prefilter import build_parser

    def dtype(parser):
        return next(a for a in parser._actions if a.dest == "dtype")

    run = next(a for a in eval_parser()._actions if a.dest == "command").choices["run"]
    ours, theirs = dtype(build_parser()), dtype(run)
    assert (ours.default, tuple(ours.choices)) == (theirs.default, tuple(theirs.choices)) == ("auto", DTYPES)
    assert ours.help == theirs.help
    args = build_parser().parse_args(["c.yaml", "--agent", "hf", "--model", "m", "--out", "k.yaml"])
    assert args.dtype == "auto"
