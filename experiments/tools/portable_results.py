"""Rewrite committed result files so that no string names a machine's folders (`tooluse_agents.runs.portable`).

    python -m experiments.tools.portable_results            # rewrite what needs it, print each file
    python -m experiments.tools.portable_results --check    # exit 1 if a file would change

Results written before the writers made their paths portable name the checkouts they ran in
(``/work/<checkout>/runs/...``), temporary folders and the device's home. Each file's text is
rewritten in place, string by string, so its JSON is otherwise byte for byte the same (its
indentation and key order kept); a file whose JSON would read differently from the same rewrite
applied to its parsed value is refused. Pre-registration files are never touched: their sha256 is
recorded in every result (`experiments.framework.provenance`).
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

from experiments.framework.provenance import ROOT
from tooluse_agents.runs.portable import machine_paths, portable

PATTERNS = ("benchmarks/results/**/*.json", "experiments/**/results*.json")
"""The committed result files."""

_CHECKOUT = re.compile(r"/work/[^/\s\"\\]+")


def result_files() -> list[Path]:
    """Every committed result file (`PATTERNS`)."""
    return sorted({p for pattern in PATTERNS for p in ROOT.glob(pattern)})


def rewritten(text: str) -> str:
    """The file's text with its machine paths made portable: the checkouts it ran in are its root."""
    roots = sorted(set(_CHECKOUT.findall(text)), key=len, reverse=True)
    new = portable(text, roots, tmp="/tmp", home="/root")
    if json.loads(new) != portable(json.loads(text), roots, tmp="/tmp", home="/root"):
        raise ValueError("the text rewrite reads differently from the rewritten value")
    return new


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if a file would change")
    args = parser.parse_args(argv)
    changed = []
    for path in result_files():
        text = path.read_text(encoding="utf-8")
        if not machine_paths(json.loads(text)):
            continue
        changed.append(path)
        if not args.check:
            path.write_text(rewritten(text), encoding="utf-8")
        print(path.relative_to(ROOT))
    return 1 if args.check and changed else 0


if __name__ == "__main__":
    raise SystemExit(main())
