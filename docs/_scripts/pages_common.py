"""What the documentation generator's parts share: paths, the "not measured yet" line, table helpers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
RESULTS = ROOT / "benchmarks" / "results"
NOT_MEASURED = "*Not measured yet: `{file}` does not exist. Run `{command}`, then `make docs`.*"


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell.replace("|", "\\|").replace("\n", " ") for cell in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def _code(value: object) -> str:
    return f"`{value!r}`" if not isinstance(value, str) else f'`"{value}"`'


def _load(name: str) -> dict[str, Any] | None:
    path = RESULTS / name
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else None


def _not_measured(name: str, command: str) -> str:
    return NOT_MEASURED.format(file=f"benchmarks/results/{name}", command=command) + "\n"
