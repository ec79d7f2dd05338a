"""What the cell studies (seed stability, format grid) share: each pre-registered cell is a `tooluse eval` command."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest
import yaml

from experiments.format_grid import study as format_grid
from experiments.seed_stability import study as seed_stability


def _seed_stability(prereg: dict[str, Any], cell: dict[str, Any], parsed: Any) -> None:
    assert parsed.seeds == prereg["seeds"] and parsed.model == cell["model"]


def _format_grid(prereg: dict[str, Any], cell: dict[str, Any], parsed: Any) -> None:
    assert parsed.model == cell["model"] and parsed.seeds == [prereg["seed"]] and parsed.vary
    assert parsed.prompt_format[0] == prereg["base"]


@pytest.mark.parametrize(("study", "check"), [(seed_stability, _seed_stability), (format_grid, _format_grid)])
def test_the_preregistered_cells_are_commands_tooluse_eval_takes(
    study: ModuleType, check: Callable[[dict[str, Any], dict[str, Any], Any], None]
) -> None:
    prereg = yaml.safe_load(study.PREREG.read_text())
    from tooluse_agents.cli.eval import build_parser

    parser = build_parser()
    for name, cell in prereg["cells"].items():
        argv = study.command(prereg, cell, study.ROOT / "runs" / name)[2:]  # after `tooluse eval`
        check(prereg, cell, parser.parse_args(argv))


def test_the_format_grid_task_set_is_every_tenth_grid_task() -> None:
    assert len(format_grid.TASK_SETS["bfcl_grid_every_10th"]()) == 20
