"""The loop shared by the cell studies (seed stability, format grid): one command per cell, a result per cell.

A cell study's pre-registration lists named cells; each cell is one `tooluse eval` command whose run
folder resumes. `run_cells` plays the cells not finished yet, in the file's order, rewrites the result
file from every finished cell after each one and, when asked, commits it, so an interrupted study
keeps what it finished.
"""

from __future__ import annotations

import argparse
import hashlib
import platform
import subprocess
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from experiments.prereg import ROOT, checkout, git, shown


def provenance(study: str, path: Path) -> dict[str, Any]:
    """A cell study result's head: the study, its pre-registration (path, commit, sha256), checkout, machine."""
    return {
        "study": study,
        "prereg": {
            "path": shown(path),
            "commit": git("log", "-1", "--format=%H", "--", str(path)) or None,
            "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
        },
        "checkout": checkout(),
        "machine": {"cpu": platform.processor() or platform.machine(), "python": platform.python_version()},
    }


def parse_args(argv: Sequence[str] | None, description: str, prereg: Path, runs: Path) -> argparse.Namespace:
    """The drivers' command line: ``--prereg``, ``--runs``, ``--cells`` and ``--commit``."""
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
        args: `parse_args`'s namespace.
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
