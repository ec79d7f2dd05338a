"""A pinned commit (experiments.framework.run) on a throwaway git repository: the driver runs that code, its
results are committed in the checkout one by one, and the worktree is never committed to."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from experiments.framework.run import Pin, copy_back, main, prepare, run_pinned

DRIVER = """import json, pathlib, sys, time
time.sleep(float(sys.argv[2]) if len(sys.argv) > 2 else 0.0)
out = pathlib.Path("results")
start = pathlib.Path("runs/weakstart/weights.txt").read_text()
pilot = json.loads((out / "pilot.json").read_text())
for arm in ("a", "b"):
    (out / f"seed0_{arm}.json").write_text(json.dumps({"arm": arm, "version": VERSION, "start": start, **pilot}))
sys.exit(int(sys.argv[1]))
"""


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True).stdout.strip()


@pytest.fixture
def repo(tmp_path, monkeypatch):
    for key, value in {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t"}.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("GIT_COMMITTER_EMAIL", "t@t")
    root = tmp_path / "main"
    (root / "results").mkdir(parents=True)
    (root / ".packages").mkdir()
    git(root, "init", "-q")
    (root / "fake_driver.py").write_text(DRIVER.replace("VERSION", "1"))
    (root / "results" / "pilot.json").write_text(json.dumps({"pilot": "chosen"}))
    (root / ".gitignore").write_text("runs/\n")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "driver v1")
    pinned = git(root, "rev-parse", "HEAD")
    (root / "fake_driver.py").write_text(DRIVER.replace("VERSION", "2"))
    git(root, "commit", "-q", "-am", "driver v2")
    (root / "runs" / "weakstart").mkdir(parents=True)
    (root / "runs" / "weakstart" / "weights.txt").write_text("w0")
    return root, pinned


def test_the_driver_runs_the_pinned_code_and_each_result_is_committed_here(repo, tmp_path):
    root, pinned = repo
    pin = Pin(pinned[:7], "results", tmp_path / "wt", poll_s=0.05)
    code = run_pinned(pin, ["fake_driver", "3"], root)
    assert code == 3  # the driver's exit code, and its results still come back
    for arm in ("a", "b"):
        result = json.loads((root / "results" / f"seed0_{arm}.json").read_text())
        assert result == {"arm": arm, "version": 1, "start": "w0", "pilot": "chosen"}
        log = git(root, "log", "-1", "--format=%s", "--name-only", "--", f"results/seed0_{arm}.json").splitlines()
        assert log[0] == f"results: seed0_{arm} (run from {pinned[:7]} in a pinned worktree)"
        assert log[1:] == ["", f"results/seed0_{arm}.json"]  # committed alone
    assert git(root, "status", "--porcelain") == ""
    assert git(pin.worktree, "rev-parse", "HEAD") == pinned
    assert git(pin.worktree, "status", "--porcelain", "-uno") == ""
    assert (pin.worktree / "runs" / "weakstart").is_symlink()
    assert copy_back(pin, pinned, root) == []  # nothing changed: nothing more to commit


def test_a_failed_commit_while_the_driver_runs_does_not_stop_it(repo, tmp_path, monkeypatch, capsys):
    root, pinned = repo
    calls = []

    def flaky(pin, sha, where):
        calls.append(sha)
        if len(calls) == 1:
            raise RuntimeError("git's index stayed locked")
        return copy_back(pin, sha, where)

    monkeypatch.setattr("experiments.framework.run.copy_back", flaky)
    assert run_pinned(Pin(pinned, "results", tmp_path / "wt", poll_s=0.05), ["fake_driver", "0", "0.5"], root) == 0
    assert len(calls) >= 2 and "not committed yet: git's index stayed locked" in capsys.readouterr().err
    assert git(root, "status", "--porcelain") == ""  # both results committed after the failure
    assert json.loads((root / "results" / "seed0_b.json").read_text())["version"] == 1


def test_a_worktree_at_another_commit_or_with_changes_is_refused(repo, tmp_path):
    root, pinned = repo
    wt = tmp_path / "wt"
    git(root, "worktree", "add", "-q", "--detach", str(wt), "HEAD")
    with pytest.raises(RuntimeError, match="not the pinned"):
        prepare(Pin(pinned, "results", wt), root)
    git(wt, "checkout", "-q", "--detach", pinned)
    (wt / "fake_driver.py").write_text("raise SystemExit(0)\n")
    with pytest.raises(RuntimeError, match="changes to tracked files"):
        prepare(Pin(pinned, "results", wt), root)


def test_a_missing_input_or_a_clashing_link_is_refused(repo, tmp_path):
    root, pinned = repo
    with pytest.raises(FileNotFoundError, match="runs/elsewhere"):
        prepare(Pin(pinned, "results", tmp_path / "wt", links=("runs/elsewhere",)), root)
    (tmp_path / "wt" / "runs" / "weakstart").mkdir(parents=True)
    with pytest.raises(RuntimeError, match="is not a link"):
        prepare(Pin(pinned, "results", tmp_path / "wt"), root)


@pytest.mark.parametrize("driver", [[], ["--"], ["--", "experiments.trainer_vs_trl", "run", "--seed", "0", "--commit"]])
def test_the_command_line_refuses_no_driver_or_a_driver_that_would_commit_in_the_worktree(driver, capsys):
    with pytest.raises(SystemExit) as stop:
        main(["d297041", "benchmarks/results/trainer_vs_trl", *driver])
    assert stop.value.code == 2
    assert ("drop the driver's --commit" if "--commit" in driver else "name the driver") in capsys.readouterr().err
