"""`RunDir`: one refuse-or-resume rule for every run folder (eval run.json, trainer config.yaml)."""

from __future__ import annotations

import json

import pytest
import yaml

from tooluse_agents.runs.rundir import RunConflict, RunDir


def test_a_new_folder_starts_an_equal_config_resumes_another_is_refused_by_name(tmp_path):
    run = RunDir(tmp_path / "r", "run.json", resumable={"schedule"}, hint="use another --out")
    config = {"agent": "oracle", "seeds": [0], "schedule": "auto"}
    assert run.open(config) is False
    assert json.loads((tmp_path / "r" / "run.json").read_text()) == config
    assert run.open(config) is True
    assert run.open({**config, "schedule": "lockstep"}) is True  # a resumable key may change ...
    assert json.loads((tmp_path / "r" / "run.json").read_text())["schedule"] == "auto"  # ... and is not rewritten
    with pytest.raises(
        RunConflict, match=r"configuration: seeds \[0\] -> \[1\] \(stored -> this run\); use another --out$"
    ):
        run.open({**config, "seeds": [1], "schedule": "async"})
    with pytest.raises(RunConflict, match=r": model \(unset\) -> 'm' \("):  # a key only one side has
        run.open({**config, "model": "m"})


def test_force_starts_afresh(tmp_path):
    run = RunDir(tmp_path, "run.json")
    run.open({"a": 1})
    (tmp_path / "episodes.jsonl").write_text("{}\n")
    assert run.open({"a": 2}, force=True) is False
    assert not (tmp_path / "episodes.jsonl").exists() and json.loads((tmp_path / "run.json").read_text()) == {"a": 2}


def test_a_yaml_config_read_through_a_normalizer(tmp_path):
    def read(data):
        if "unknown" in data:
            raise ValueError("unknown keys: ['unknown']")
        return {"lr": 0.1, **data}  # a key added since that run reads as its default

    run = RunDir(tmp_path, "config.yaml", read=read)
    run.write({"steps": 3})
    assert yaml.safe_load((tmp_path / "config.yaml").read_text()) == {"steps": 3}
    assert run.check({"lr": 0.1, "steps": 3}) is True
    run.write({"unknown": 1})
    with pytest.raises(RunConflict, match="cannot read: unknown keys"):
        run.check({"lr": 0.1, "steps": 3})


def test_a_refusal_names_each_changed_setting_by_its_dotted_key_with_both_values(tmp_path):
    run = RunDir(tmp_path, "config.yaml", resumable={"epochs"}, hint="give another run_dir")
    stored = {"epochs": 1, "grpo": {"group_size": 4, "mode": "next_turn"}, "update": {"lr": 1e-5, "betas": [0.9, 0.99]}}
    run.write(stored)
    changed = {**stored, "epochs": 3, "grpo": {"group_size": 8, "mode": "next_turn"}}
    with pytest.raises(RunConflict) as caught:
        run.check(changed)
    assert str(caught.value) == (
        f"{tmp_path} holds a run with another configuration: grpo.group_size 4 -> 8 (stored -> this run); "
        "give another run_dir"
    )
    changed["update"] = {"lr": 2e-5}
    with pytest.raises(
        RunConflict,
        match=r": grpo.group_size 4 -> 8; update.betas \[0.9, 0.99\] -> \(unset\); "
        r"update.lr 1e-05 -> 2e-05 \(",
    ):
        run.check(changed)


def test_a_folder_held_by_one_writer_refuses_a_second_with_the_holders_process(tmp_path):
    """Issue 60: two processes running the same command into one folder wrote every episode twice."""
    import os
    import subprocess
    import sys

    run = RunDir(tmp_path / "r", "run.json")
    with run.lock():
        assert (tmp_path / "r" / ".lock").read_text() == str(os.getpid())
        held = rf"^{tmp_path / 'r'} is in use by another run \(process {os.getpid()}\)"
        with pytest.raises(RunConflict, match=held), RunDir(tmp_path / "r").lock():
            pass
        other = "from tooluse_agents.runs.rundir import RunDir\nwith RunDir(__import__('sys').argv[1]).lock(): pass"
        refused = subprocess.run([sys.executable, "-c", other, str(tmp_path / "r")], capture_output=True, text=True)
        assert refused.returncode != 0 and "is in use by another run" in refused.stderr
    with run.lock():  # released at the end of the block
        pass
    (tmp_path / "r" / "episodes.jsonl").write_text("{}\n")
    run.clear()
    assert [p.name for p in (tmp_path / "r").iterdir()] == [".lock"]
