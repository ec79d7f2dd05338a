"""The two folders of an export: the run read (its episodes and settings) and the folder written.

Shared by the BFCL exports (`tooluse_agents.export.multi_turn` for multi-turn runs,
`tooluse_agents.export.single_turn` for single-turn ones).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from tooluse_agents.runs.records import EpisodeRecord, read_episodes
from tooluse_gym.errors import ToolUseGymError

__all__ = ["ExportError", "prepare_out", "read_run", "run_setting"]


class ExportError(ToolUseGymError, ValueError):
    """The run folder cannot be exported, or the output folder cannot take the export."""


def read_run(run: Path) -> tuple[list[EpisodeRecord], int]:
    """A run folder's episode records and the number of unreadable lines of its episodes.jsonl."""
    if not run.is_dir():
        raise ExportError(f"{run}: no such run folder")
    path = run / "episodes.jsonl"
    if not path.is_file():
        raise ExportError(f"{run}: no episodes.jsonl here; RUN must be a `tooluse eval run --out` folder")
    records, health = read_episodes(path)
    if not records:
        detail = f" ({health.describe()})" if health.skipped else ""
        raise ExportError(f"{path}: no readable episode records{detail}")
    return records, health.skipped


def run_setting(run: Path, key: str) -> Any:
    """A setting from the run's ``run.json`` (None when missing or unreadable)."""
    try:
        config = json.loads((run / "run.json").read_text(encoding="utf-8"))
        return config.get(key) if isinstance(config, dict) else None
    except (OSError, ValueError):
        return None


def prepare_out(out: Path, run: Path, force: bool) -> None:
    """Make `out` an empty folder to write into: refuse one holding the run, or (without `force`) one not empty."""
    target, source = out.resolve(), run.resolve()
    if target == source or target in source.parents:
        raise ExportError(f"{out} holds the run itself; choose another OUT")
    if out.exists():
        if not out.is_dir():
            raise ExportError(f"{out} is a file; OUT must be a folder")
        if any(out.iterdir()):
            if not force:
                raise ExportError(f"{out} is not empty; use another OUT, or --force to replace it")
            shutil.rmtree(out)
    out.mkdir(parents=True, exist_ok=True)
