"""The one study runner: resume, commit each result as it lands, and run from a pinned commit.

* `commit_file` commits one result file alone as soon as it is written (`write_json`); a study
  skips what has a result, so an interrupted study resumes where it stopped.
* `run_cells` is the loop of the cell studies: one command per pre-registered cell, whose run folder
  resumes; the result file is rewritten from every finished cell after each one and, when asked,
  committed.
* `dispatch` runs a study's parsed subcommand; a malformed pre-registration exits with status 2.
* `main` runs a study driver from a worktree pinned at one commit, committing each result here as
  it lands::

    python -m experiments.framework.run d297041 benchmarks/results/trainer_vs_trl -- \\
        experiments.trainer_vs_trl run --seed 0

A pre-registered study runs every seed from one code commit, while work goes on committing to
``main``. So the driver runs in a detached worktree at that commit (created beside this checkout if
it is missing; refused if it is at another commit or has tracked changes), importing that worktree's
own code (``PYTHONPATH`` = its ``.packages`` and its root) with this checkout's interpreter. Before
it starts, the paths in ``--link`` (the start model, ``runs/weakstart``) are linked into the
worktree and the results already committed here are copied in, so the driver skips what has run and
finds its pilot. While it runs, every ``--poll-s`` seconds, each result file (``RESULTS/*.json``)
that is new or changed in the worktree is copied here and committed alone; nothing is committed in
the worktree, whose HEAD must stay the pinned commit. A commit that fails while the driver runs is
retried at the next poll, never a reason to stop the driver. Interrupted (Ctrl-C), the driver is
stopped and what it finished is still copied and committed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from experiments.framework.provenance import ROOT
from experiments.framework.study import PreregError
from tooluse_agents.runs.portable import portable

# --- resume and commit --------------------------------------------------------------------------


def commit_file(path: Path, message: str, tries: int = 30, cwd: Path = ROOT, also: Sequence[Path] = ()) -> None:
    """Commit this one file (and `also`) alone (retrying while another process holds the index lock); never pushes."""
    files = [str(p) for p in (path, *also)]
    for attempt in range(tries):
        add = subprocess.run(["git", "add", "--", *files], cwd=cwd, capture_output=True, text=True, check=False)
        done = add
        if add.returncode == 0:
            cmd = ["git", "commit", "-m", message, "--", *files]
            done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, check=False)
            if done.returncode == 0:
                return
        if "index.lock" not in done.stderr:
            raise RuntimeError(f"git could not commit {path}: {done.stderr.strip() or done.stdout.strip()}")
        time.sleep(1 + attempt)
    raise RuntimeError(f"git's index stayed locked; {path} is written but not committed")


def write_json(path: Path, data: Any) -> None:
    """Write a result atomically (a temporary file, then a rename): a reader never sees half a file.

    Its paths are made relative to the checkout (`tooluse_agents.runs.portable`): no machine's folders.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(portable(data, ROOT), indent=1) + "\n", encoding="utf-8")
    tmp.replace(path)


def dispatch(name: str, commands: Mapping[str, Callable[[argparse.Namespace], int]], args: argparse.Namespace) -> int:
    """Run the parsed subcommand; a malformed pre-registration is exit status 2 with its message."""
    try:
        return commands[args.command](args)
    except PreregError as e:
        print(f"{name}: {e}", file=sys.stderr)
        return 2


# --- the cell studies' loop ----------------------------------------------------------------------


def cell_args(argv: Sequence[str] | None, description: str, prereg: Path, runs: Path) -> argparse.Namespace:
    """A cell study's command line: ``--prereg``, ``--runs``, ``--cells`` and ``--commit``."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--prereg", type=Path, default=prereg)
    parser.add_argument("--runs", type=Path, default=runs)
    parser.add_argument("--cells", nargs="*", help="only these cells (default: all, in the file's order)")
    parser.add_argument("--commit", action="store_true", help="commit the result file after each cell")
    return parser.parse_args(argv)


def run_cells(
    args: argparse.Namespace,
    prereg: Mapping[str, Any],
    *,
    collect: Callable[[Path], Any | None],
    command: Callable[[Mapping[str, Any], Mapping[str, Any], Path], list[str]],
    write: Callable[[dict[str, Any]], Mapping[str, Any]],
    line: Callable[[Mapping[str, Any]], str],
    result: Path,
    label: str,
) -> dict[str, Any]:
    """Play the wanted cells not finished yet and write (and commit) the result after each finished cell.

    Args:
        args: `cell_args`'s namespace.
        prereg: The pre-registration, read.
        collect: A cell's finished data from its run folder, or None while it is unfinished.
        command: The cell's command line (prereg, cell, run folder).
        write: Writes the result file from every finished cell's data; returns the result.
        line: The console line of a finished cell's statistics (the result's cell entry).
        result: The result file (committed alone with ``--commit``).
        label: The study's name in commit messages.

    Returns:
        Every finished cell's data, by name.
    """
    names = args.cells or list(prereg["cells"])
    unknown = sorted(set(names) - set(prereg["cells"]))
    if unknown:
        raise SystemExit(f"unknown cells {unknown}; the pre-registration has {list(prereg['cells'])}")
    done: dict[str, Any] = {}
    for name in prereg["cells"]:
        found = collect(args.runs / name)
        if found is None and name in names:
            cmd = command(prereg, prereg["cells"][name], args.runs / name)
            print(f"[{name}] {' '.join(cmd[1:])[:300]}", flush=True)
            subprocess.run(cmd, cwd=ROOT, check=True)
            found = collect(args.runs / name)
        if found is None:
            continue
        done[name] = found
        print(f"[{name}] {line(write(done)['cells'][name])}", flush=True)
        if args.commit:
            message = f"{label}: cell {name} ({prereg['study']})"
            subprocess.run(["git", "add", str(result)], cwd=ROOT, check=False)
            subprocess.run(["git", "commit", "-q", "-m", message, "--", str(result)], cwd=ROOT, check=False)
    return done


# --- a pinned commit -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Pin:
    """Where and at what commit a driver runs, and which of its outputs come back."""

    commit: str  # anything git resolves to a commit
    results: str  # the results folder, relative to the checkout
    worktree: Path
    links: tuple[str, ...] = ("runs/weakstart",)
    poll_s: float = 30.0


def _git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} failed in {cwd}: {done.stderr.strip()}")
    return done.stdout.strip()


def prepare(pin: Pin, root: Path = ROOT) -> str:
    """Create or check the worktree, link the inputs, copy the results in; returns the full commit."""
    sha = _git(root, "rev-parse", "--verify", f"{pin.commit}^{{commit}}")
    if not pin.worktree.exists():
        _git(root, "worktree", "prune")
        _git(root, "worktree", "add", "--detach", str(pin.worktree), sha)
    head = _git(pin.worktree, "rev-parse", "HEAD")
    if head != sha:
        raise RuntimeError(f"{pin.worktree} is at {head[:7]}, not the pinned {sha[:7]}: use another --worktree")
    if _git(pin.worktree, "status", "--porcelain", "-uno"):
        raise RuntimeError(f"{pin.worktree} has changes to tracked files; results from it would not be pinned")
    for rel in pin.links:
        source, link = root / rel, pin.worktree / rel
        if not source.exists():
            raise FileNotFoundError(f"{source} is missing here, so it cannot be linked into the worktree")
        if link.is_symlink() and link.resolve() == source.resolve():
            continue
        if link.exists() or link.is_symlink():
            raise RuntimeError(f"{link} exists and is not a link to {source}")
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(source.resolve(), target_is_directory=source.is_dir())
    here, there = root / pin.results, pin.worktree / pin.results
    there.mkdir(parents=True, exist_ok=True)
    for result in sorted(here.glob("*.json")):
        if not (there / result.name).exists():
            shutil.copy2(result, there / result.name)
    return sha


def copy_back(pin: Pin, sha: str, root: Path = ROOT) -> list[str]:
    """Copy each new or changed result from the worktree here and commit it alone; returns their names."""
    here, there = root / pin.results, pin.worktree / pin.results
    landed = []
    for result in sorted(there.glob("*.json")):
        target = here / result.name
        if target.is_file() and target.read_bytes() == result.read_bytes():
            continue
        here.mkdir(parents=True, exist_ok=True)
        shutil.copy2(result, target)
        message = f"{Path(pin.results).name}: {result.stem} (run from {sha[:7]} in a pinned worktree)"
        commit_file(target, message, cwd=root)
        landed.append(result.name)
    return landed


def _land(pin: Pin, sha: str, root: Path, *, retry_later: bool) -> None:
    """copy_back, saying what landed; with ``retry_later`` a failed commit is reported, not raised."""
    try:
        for name in copy_back(pin, sha, root):
            print(f"[pinned {sha[:7]}] committed {pin.results}/{name}", flush=True)
    except RuntimeError as exc:  # e.g. git busy while the driver runs: the next poll retries
        if not retry_later:
            raise
        print(f"[pinned {sha[:7]}] not committed yet: {exc}", file=sys.stderr, flush=True)


def run_pinned(pin: Pin, driver: Sequence[str], root: Path = ROOT) -> int:
    """Run ``python -m DRIVER...`` in the worktree, committing results here as they land; its exit code."""
    sha = prepare(pin, root)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(pin.worktree / ".packages"), str(pin.worktree)]))
    print(f"[pinned {sha[:7]}] python -m {' '.join(driver)} in {pin.worktree}", flush=True)
    child = subprocess.Popen([sys.executable, "-m", *driver], cwd=pin.worktree, env=env)
    try:
        while True:
            try:
                code = child.wait(timeout=pin.poll_s)
                break
            except subprocess.TimeoutExpired:
                _land(pin, sha, root, retry_later=True)
    except KeyboardInterrupt:
        child.terminate()
        child.wait()
        code = 130
    _land(pin, sha, root, retry_later=False)
    return code


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m experiments.framework.run", description=__doc__.splitlines()[0])
    ap.add_argument("commit", help="the pinned code commit (e.g. the study's pre-registered code commit)")
    ap.add_argument("results", help="the driver's results folder, relative to the checkout")
    ap.add_argument("driver", nargs=argparse.REMAINDER, help="-- MODULE ARGS...: the driver, as after `python -m`")
    ap.add_argument("--worktree", type=Path, help="default: ../<checkout>-<commit>, beside this checkout")
    ap.add_argument("--link", action="append", help="a path linked into the worktree (default: runs/weakstart)")
    ap.add_argument("--poll-s", type=float, default=30.0, help="seconds between copy-backs (default 30)")
    args = ap.parse_args(argv)
    driver = args.driver[1:] if args.driver[:1] == ["--"] else args.driver
    if not driver:
        ap.error("name the driver after --, e.g. -- experiments.trainer_vs_trl run --seed 0")
    if "--commit" in driver:
        ap.error("drop the driver's --commit: it would commit in the worktree and move it off the pinned commit")
    worktree = args.worktree or ROOT.parent / f"{ROOT.name}-{args.commit[:12]}"
    links = tuple(args.link) if args.link else Pin.links
    pin = Pin(args.commit, args.results, worktree.resolve(), links, args.poll_s)
    try:
        return run_pinned(pin, driver)
    except (RuntimeError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
