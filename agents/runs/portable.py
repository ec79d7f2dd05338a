"""Result files without the machine's folders: paths in their strings made relative to the checkout.

A committed result (a benchmark's, a study's) records the commands it ran and the folders it wrote;
written as they were (``run_dir=/home/me/tooluse-gym/runs/x``, ``--out /tmp/abc``, TRL's
``output_dir``, a traceback's file names) they name one machine's layout. `portable` rewrites every
string of a JSON-able value before it is written:

* a path inside the checkout (`root`): relative to it (``runs/x``);
* the running interpreter (``sys.executable``): ``python``;
* a path in the temporary folder: ``<tmp>/...``; in the home folder: ``~/...``;
* any other absolute path under a machine's top-level folders (`MACHINE_DIRS`), e.g. another
  checkout's: ``<abs>/`` and its last three parts.

`machine_paths` finds what `portable` would rewrite (a test keeps committed results free of them).
Standard library only.
"""

from __future__ import annotations

import re
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["MACHINE_DIRS", "machine_paths", "portable", "portable_path"]

MACHINE_DIRS = ("tmp", "home", "root", "work", "Users", "private", "var", "mnt", "scratch")
"""Top-level folders whose paths name one machine's layout."""

_END = r"\s\"'\\,;:)\]}>"
"""Characters that end a path inside a string (a quote, a space, a separator, a closing bracket)."""
_PATH = re.compile(r"(?<![\w.~<>$/-])/(?:" + "|".join(MACHINE_DIRS) + rf")(?:/[^{_END}]*)?")


Roots = str | Path | Sequence[str | Path]
"""The checkout a result belongs to (or several: copies of one checkout, for results made in each)."""


def portable_path(path: str, root: Roots, *, tmp: str | None = None, home: str | None = None, keep: int = 3) -> str:
    """One absolute path as a result records it (module docstring); `tmp` and `home` default to this machine's."""
    tmp = tmp if tmp is not None else tempfile.gettempdir()
    home = home if home is not None else str(Path.home())
    if path == sys.executable:
        return "python"
    roots = _roots(root)
    for prefix, shown in (*((r, ".") for r in roots), (tmp, "<tmp>"), (home, "~")):
        if path == prefix:
            return shown
        if path.startswith(prefix.rstrip("/") + "/"):
            rest = path[len(prefix.rstrip("/")) + 1 :]
            return rest if shown == "." else f"{shown}/{rest}"
    parts = [p for p in path.split("/") if p]
    return "<abs>/" + "/".join(parts[-keep:]) if len(parts) > keep else "<abs>/" + "/".join(parts)


def portable(data: Any, root: Roots, *, tmp: str | None = None, home: str | None = None) -> Any:
    """`data` (JSON-able) with every machine path in its strings rewritten by `portable_path`."""
    if isinstance(data, str):
        text = data.replace(sys.executable, "python") if sys.executable else data
        for r in _roots(root):  # the checkout may sit anywhere, not only under MACHINE_DIRS
            text = re.sub(rf"(?<![\w.~<>$/-]){re.escape(r)}(?=[/{_END}]|$)(?:/[^{_END}]*)?", _relative(r), text)
        return _PATH.sub(lambda m: portable_path(m.group(0), root, tmp=tmp, home=home), text)
    if isinstance(data, Mapping):
        return {k: portable(v, root, tmp=tmp, home=home) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [portable(v, root, tmp=tmp, home=home) for v in data]
    return data


def _roots(root: Roots) -> list[str]:
    roots = [str(root)] if isinstance(root, (str, Path)) else [str(r) for r in root]
    return [r.rstrip("/") for r in roots if r.rstrip("/")]


def _relative(root: str) -> Any:
    def sub(m: re.Match[str]) -> str:
        rest = m.group(0)[len(root) :].lstrip("/")
        return rest or "."

    return sub


def machine_paths(data: Any) -> list[str]:
    """Every machine path in the strings of `data` (JSON-able), in order."""
    if isinstance(data, str):
        return _PATH.findall(data)
    if isinstance(data, Mapping):
        return [p for v in data.values() for p in machine_paths(v)]
    if isinstance(data, (list, tuple)):
        return [p for v in data for p in machine_paths(v)]
    return []
