"""Where a study's inputs and results stand in git: the one provenance every result records.

A pre-registration is committed before the first timed run; every result names its path, the
commit that last touched it and the sha256 of its contents (`provenance`), with the checkout it
was made in (`checkout`) and the machine (`machine`). Paths are shown relative to the checkout
(`shown`), never a machine's folders.
"""

from __future__ import annotations

import hashlib
import platform
import subprocess
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]  # the checkout: experiments/framework/ -> .


def git(*args: str) -> str:
    """A git command's stdout in the checkout ('' when git fails, e.g. outside a repository)."""
    done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False)
    return done.stdout.strip() if done.returncode == 0 else ""


def shown(path: str | Path) -> str:
    """A path as results record it: relative to the checkout when inside it (no machine's folders)."""
    p = Path(path)
    absolute = p if p.is_absolute() else (ROOT / p)
    try:
        return str(absolute.resolve().relative_to(ROOT))
    except ValueError:
        return str(p)


def uncommitted(path: Path) -> bool:
    """The file differs from its last commit, is not tracked (or outside the checkout), or git cannot tell."""
    tracked = subprocess.run(
        ["git", "ls-files", "--error-unmatch", "--", str(path)], cwd=ROOT, capture_output=True, check=False
    )
    return tracked.returncode != 0 or bool(git("status", "--porcelain", "--", str(path)))


def provenance(path: str | Path) -> dict[str, Any]:
    """A committed input file (a pre-registration, its targets) as results record it.

    Its path, the commit that last touched it, the sha256 of its contents, and whether it has
    uncommitted changes.
    """
    path = Path(path)
    return {
        "path": shown(path),
        "commit": git("log", "-1", "--format=%H", "--", str(path)) or None,
        "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
        "uncommitted_changes": uncommitted(path),
    }


def checkout() -> dict[str, Any]:
    """The checkout a result was made in: HEAD and whether tracked files had changes."""
    return {"commit": git("rev-parse", "HEAD") or None, "dirty": bool(git("status", "--porcelain", "-uno"))}


def machine() -> dict[str, str]:
    """The machine a cell study ran on, as its result records it: the CPU and the Python version."""
    return {"cpu": platform.processor() or platform.machine(), "python": platform.python_version()}
