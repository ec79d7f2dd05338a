"""`tooluse`: one command whose subcommands are the old scripts' mains, each with a `build_parser()`."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib

from tooluse_agents.cli.main import commands, load, main, usage

ROOT = Path(__file__).resolve().parents[3]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
BIN = Path(sys.executable).parent


def test_every_subcommand_is_installed_with_a_parser():
    declared = PYPROJECT["project"]["entry-points"]["tooluse.commands"]
    assert commands() == dict(sorted(declared.items()))
    assert set(declared) == {"eval", "train", "sft", "serve", "serve-env", "scenarios", "tui"}
    for target in declared.values():
        run, build = load(target)
        assert callable(run) and isinstance(build(), argparse.ArgumentParser)


def test_the_old_script_names_run_the_same_mains():
    scripts = PYPROJECT["project"]["scripts"]
    declared = PYPROJECT["project"]["entry-points"]["tooluse.commands"]
    for name, target in declared.items():
        old = f"tooluse-{name}"
        if old in scripts:
            assert scripts[old] == target


def test_help_lists_every_subcommand():
    out = subprocess.run([str(BIN / "tooluse"), "--help"], capture_output=True, text=True, check=True).stdout
    for name in ("eval", "train", "sft", "serve", "serve-env", "scenarios", "tui"):
        assert f"\n  {name} " in out
    sub = subprocess.run([str(BIN / "tooluse"), "eval", "--help"], capture_output=True, text=True, check=True).stdout
    assert "run" in sub and "sweep" in sub and "export" in sub


def test_help_summaries_quote_code_in_pairs():
    """Each subcommand's line in `tooluse --help` opens every code quote it closes (no stray backtick)."""
    for line in usage().splitlines()[3:]:
        assert line.count("`") % 2 == 0, line
    assert "  train      `tooluse train CONFIG.yaml [key=value ...]`: run (or resume)" in usage()


def test_an_unknown_subcommand_is_refused(capsys):
    assert main(["evaluate"]) == 2
    assert "unknown command 'evaluate'" in capsys.readouterr().err
    assert main([]) == 2


def test_a_subcommand_gets_the_rest_of_the_line(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["scenarios", "--help"])
    assert stop.value.code == 0 and "validate" in capsys.readouterr().out
    assert main(["scenarios", "schema"]) == 0 and '"$schema"' in capsys.readouterr().out


def test_a_mistyped_system_prompt_warns_once_in_one_line(tmp_path, capsys, monkeypatch):
    """Issue 60: ``--system-prompt stong`` printed its useful hint three times, each after ``dataclasses.py:1501``."""
    import warnings

    from tooluse_agents.cli.eval import QUIET_ENV

    for name in QUIET_ENV:
        monkeypatch.delenv(name, raising=False)
    argv = ["eval", "run", "--agent", "oracle", "--task-ids", "multi_turn_base_0", "--system-prompt", "stong"]
    with warnings.catch_warnings():
        warnings.resetwarnings()  # Python's default filters, as a user's shell has them
        warnings.simplefilter("default")
        assert main([*argv, "--no-progress", "--out", str(tmp_path / "run")]) == 0
    err = [line for line in capsys.readouterr().err.splitlines() if "stong" in line]
    assert err == [
        "tooluse eval: warning: system_prompt 'stong' is not a named prompt (bfcl, strong, none), so it is used as "
        "the literal prompt text; did you mean 'strong'?"
    ]
