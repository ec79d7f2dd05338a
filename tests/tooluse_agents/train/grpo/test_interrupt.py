"""`tooluse train` stopped with Ctrl-C says where it stopped and how to resume; the resumed run says it resumed."""

from __future__ import annotations

import shlex

import pytest
import yaml

from tooluse_agents.cli.train import main
from tooluse_agents.train.grpo import trainer as trainer_module


@pytest.fixture
def config_file(tmp_path):
    """A config training the random tiny model on one BFCL task, checkpointed every third step and at the end."""
    config = {
        "run_dir": str(tmp_path / "run"),
        "max_steps": 1,
        "save_every": 3,
        "export_final": False,
        "tasks": {"source": "bfcl", "category": "base", "limit": 1},
        "protocol": {"system_prompt": "none", "tool_format": "python", "max_steps_per_turn": 1},
        "policy": {"model": "tiny-random", "gradient_checkpointing": False, "threads": 1, "autocast": None},
        "rollout": {"max_tokens": 8, "num_envs": 2},
        "grpo": {"group_size": 2, "prompts_per_step": 1},
    }
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def _interrupting(monkeypatch, after: int):
    """Make the trainer's step raise KeyboardInterrupt (Ctrl-C) once `after` steps have run in this process."""
    real = trainer_module.GRPOTrainer._train_step
    calls = []

    def step(self, batch):
        calls.append(self.step)
        if len(calls) > after:
            raise KeyboardInterrupt
        return real(self, batch)

    monkeypatch.setattr(trainer_module.GRPOTrainer, "_train_step", step)


def test_ctrl_c_prints_one_line_with_the_resume_command_and_the_resumed_run_says_so(config_file, monkeypatch, capsys):
    argv = [str(config_file), "--no-progress"]
    _interrupting(monkeypatch, after=0)
    assert main(argv) == 130
    err = capsys.readouterr().err
    resume = shlex.join(["tooluse", "train", *argv])
    last = err.strip().splitlines()[-1]  # above it only the backends' progress lines
    assert last == f"tooluse train: interrupted; stopped at step 0; run the same command to resume: {resume}"
    assert "Traceback" not in err and "resumed from step" not in err
    monkeypatch.undo()

    assert main(argv) == 0  # starts afresh: nothing was checkpointed
    assert "resumed from step" not in capsys.readouterr().err

    longer = [*argv, "max_steps=3"]  # a resume may train longer
    _interrupting(monkeypatch, after=1)
    assert main(longer) == 130
    err = capsys.readouterr().err
    assert f"resumed from step 1 ({config_file.parent / 'run'})\n" in err
    assert err.strip().splitlines()[-1] == (
        "tooluse train: interrupted; stopped at step 2 (checkpointed at step 1; the steps after it are redone); "
        f"run the same command to resume: {shlex.join(['tooluse', 'train', *longer])}"
    )
    assert "Traceback" not in err

    # another setting is refused by its dotted key and values, saying how to start afresh
    assert main([*argv, "grpo.group_size=4"]) == 2
    assert capsys.readouterr().err.strip() == (
        f"tooluse train: {config_file.parent / 'run'} holds a run with another configuration: grpo.group_size 2 -> 4 "
        "(stored -> this run); to start afresh give another run_dir (run_dir=runs/NEW); to resume this one, run with "
        "its stored settings (only epochs, max_steps, budget_s may change)"
    )
