"""What `tooluse eval export` says about BFCL's evaluator: its missing packages only, and a command any shell runs."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

from tests.tooluse_agents.export.test_bfcl_export import TASKS, oracle_run
from tooluse_agents.cli.eval import main
from tooluse_agents.export import evaluator as bfcl_evaluator
from tooluse_agents.export.evaluator import BFCL_EVALUATOR_PACKAGES, evaluator_program, missing_evaluator_packages


def test_only_packages_that_cannot_be_imported_are_missing(monkeypatch):
    monkeypatch.setattr(bfcl_evaluator, "importable", lambda module: True)
    assert missing_evaluator_packages() == ()
    absent = {"pandas", "google.genai", "writerai"}
    monkeypatch.setattr(bfcl_evaluator, "importable", lambda module: module not in absent)
    assert missing_evaluator_packages() == ("pandas", "google-genai", "writer-sdk")


def test_importable_finds_real_modules_without_importing_them():
    assert bfcl_evaluator.importable("json") and bfcl_evaluator.importable("email.mime")
    assert not bfcl_evaluator.importable("no_such_module_xyz") and not bfcl_evaluator.importable("no_such_pkg.sub")


def test_the_evaluator_is_this_environments_bfcl_by_its_full_path(monkeypatch, tmp_path):
    python = tmp_path / "bin" / "python"
    python.parent.mkdir()
    monkeypatch.setattr(sys, "executable", str(python))
    assert evaluator_program() == (str(python), "-m", "bfcl_eval")  # no console script: the module
    (python.parent / "bfcl").write_text("#!/bin/sh\n")
    assert evaluator_program() == (str(python.parent / "bfcl"),)


def test_export_names_missing_packages_only_when_some_are_missing(tmp_path, capsys, monkeypatch):
    run = oracle_run(tmp_path / "run", task_ids=TASKS[:1], seeds=(0,))
    monkeypatch.setattr(bfcl_evaluator, "importable", lambda module: True)
    assert main(["export", "--format", "bfcl", str(run), str(tmp_path / "a")]) == 0
    printed = capsys.readouterr().out
    assert "pip install" not in printed and "needs packages" not in printed
    command = next(line for line in printed.splitlines() if "BFCL_PROJECT_ROOT=" in line)
    program = shlex.split(command)[1]  # after the variable: the program, by its full path
    assert Path(program).is_absolute() and Path(program).parent == Path(sys.executable).parent

    monkeypatch.setattr(bfcl_evaluator, "importable", lambda module: module != "pandas")
    assert main(["export", "--format", "bfcl", str(run), str(tmp_path / "b")]) == 0
    printed = capsys.readouterr().out
    install = shlex.join([sys.executable, "-m", "pip", "install", "pandas"])
    assert f"BFCL's evaluator needs packages missing here: {install}" in printed.splitlines()
    assert len(BFCL_EVALUATOR_PACKAGES) > 1 and "tabulate" not in printed
