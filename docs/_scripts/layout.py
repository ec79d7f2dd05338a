"""The development page's layout: the installed packages' folders and modules, each with its docstring's first line.

Read from the source with `ast` (nothing is imported), so the page lists what the tree holds.
"""

from __future__ import annotations

import ast
from pathlib import Path

from pages_common import ROOT

PACKAGES = (("tooluse_gym", "tooluse_gym"), ("agents", "tooluse_agents"), ("tui", "tooluse_tui"))
"""(folder, installed name) of each package, in the order the page lists them."""


def _summary(path: Path) -> str:
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    first = doc.strip().split("\n\n", 1)[0].replace("\n", " ")
    return first.split(". ", 1)[0].rstrip(".")


def _walk(folder: Path, depth: int, lines: list[str]) -> None:
    for path in sorted(folder.iterdir(), key=lambda p: (p.is_dir(), p.name)):
        indent = "  " * depth
        if path.is_dir() and (path / "__init__.py").is_file():
            lines.append(f"{indent}{path.name}/  {_summary(path / '__init__.py')}")
            _walk(path, depth + 1, lines)
        elif path.suffix == ".py" and path.name != "__init__.py":
            lines.append(f"{indent}{path.name}  {_summary(path)}")


def layout_block() -> str:
    """A code block of the packages' tree, a line per folder and module."""
    lines: list[str] = []
    for folder, name in PACKAGES:
        title = f"{folder}/" if name == folder else f"{folder}/ (installs as {name})"
        lines.append(f"{title}  {_summary(ROOT / folder / '__init__.py')}")
        _walk(ROOT / folder, 1, lines)
    return "```\n" + "\n".join(lines) + "\n```\n"
