"""`tooluse eval table`: one table over several one-factor sweeps (the main job's model x benchmark x template)."""

from __future__ import annotations

import json

import pytest

from tooluse_agents.cli.eval import main
from tooluse_agents.eval.table import benchmark_label, collect, table_findings, table_markdown


def _sweep(root, name, *, model, scenarios=None, categories=None, base, change, paired):
    """A hand-written one-factor sweep folder: sweep.json and a base run with two tasks."""
    folder = root / name
    (folder / "base").mkdir(parents=True)
    episodes = [{"task_id": f"t{i}", "seed": s, "reward": 1.0} for i in range(2) for s in (0, 1)]
    (folder / "base" / "episodes.jsonl").write_text("".join(json.dumps(e) + "\n" for e in episodes))
    data = {
        "design": "one_factor",
        "config": {"agent": "vllm", "model": model, "scenarios": scenarios, "categories": categories},
        "base": {
            "knobs": {"template": "native"},
            "folder": "base",
            "overall": base[0],
            "per_seed": base[1],
            "seed_spread": {"seeds": 2, "max_minus_min": base[2], "std": None},
            "fingerprint": "f-base",
        },
        "changes": [
            {
                "knob": "template",
                "value": "context",
                "knobs": {"template": "context"},
                "folder": "template=context",
                "overall": change[0],
                "per_seed": change[1],
                "seed_spread": {"seeds": 2, "max_minus_min": change[2], "std": None},
                "paired": paired,
                "fingerprint": "f-change",
            }
        ],
    }
    (folder / "sweep.json").write_text(json.dumps(data))


def test_rows_and_markdown_carry_each_sweeps_own_numbers(tmp_path):
    paired = {"tasks": 2, "pairs": 4, "diff": -0.125, "se": 0.05, "ci95": [-0.25, 0.0]}
    _sweep(
        tmp_path,
        "a/curriculum",
        model="smollm2-135m-warmstart",
        scenarios=["scenarios/curriculum/heldout.yaml"],
        base=(0.5, {"0": 0.45, "1": 0.55}, 0.1),
        change=(0.375, {"0": 0.375, "1": 0.375}, 0.0),
        paired=paired,
    )
    _sweep(
        tmp_path,
        "b/bfcl",
        model="smollm2-135m",
        categories=["simple_python", "multiple"],
        base=(0.0, {"0": 0.0, "1": 0.0}, 0.0),
        change=(0.0, {"0": 0.0, "1": 0.0}, 0.0),
        paired={"tasks": 2, "pairs": 4, "diff": 0.0, "se": 0.0, "ci95": [0.0, 0.0]},
    )
    (tmp_path / "grid").mkdir()
    (tmp_path / "grid" / "sweep.json").write_text(json.dumps({"design": "grid"}))  # not one-factor: left out
    data = collect(tmp_path)
    assert [(r["sweep"], r["role"]) for r in data["rows"]] == [
        ("a/curriculum", "base"),
        ("a/curriculum", "change"),
        ("b/bfcl", "base"),
        ("b/bfcl", "change"),
    ]
    first, second = data["rows"][:2]
    assert first["benchmark"] == "curriculum/heldout" and first["tasks"] == 2 and first["paired"] is None
    assert second["configuration"] == "template=context" and second["paired"] == paired
    assert data["rows"][2]["benchmark"] == "BFCL simple_python, multiple"
    text = table_markdown(data)
    assert (
        "| smollm2-135m-warmstart | curriculum/heldout (2) | template=context | 37.5 | 37.5, 37.5 | 0.0 | -12.5 | "
        "[-25.0, +0.0] |" in text
    )
    base_row = "| smollm2-135m-warmstart | curriculum/heldout (2) | template=native | 50.0 | 45.0, 55.0 | 10.0 |  |  |"
    assert base_row in text


def _row(model, benchmark, role, score, ci=None, diff=0.0):
    paired = {"tasks": 16, "pairs": 32, "diff": diff, "se": 0.05, "ci95": ci} if role == "change" else None
    return {
        "model": model,
        "benchmark": benchmark,
        "configuration": "template=context" if paired else "template=native",
        "role": role,
        "score": score,
        "paired": paired,
    }


def test_findings_say_what_the_rows_say_and_name_the_cpu():
    """The prose under `make run`'s table is generated: an interval that excludes 0 is not said to reach it."""
    reach = {
        "rows": [
            _row("shipped", "bfcl", "base", 0.0),
            _row("shipped", "bfcl", "change", 0.0, [0.0, 0.0]),
            _row("warm", "bfcl", "base", 0.31),
            _row("warm", "bfcl", "change", 0.25, [-0.188, 0.0], -0.0625),
            _row("warm", "curriculum", "base", 0.57),
            _row("warm", "curriculum", "change", 0.4, [-0.367, 0.0], -0.167),
        ],
        "machine": {"cpu_model": "AMD EPYC 7B13"},
    }
    text = table_findings(reach)
    assert "shipped scores 0 in every row." in text
    assert "warm: -6.2 points with template=context on bfcl, -16.7 points with template=context on curriculum" in text
    assert "(the same sign on every slice)" in text and "Every paired 95% interval includes 0" in text
    assert "Recorded on AMD EPYC 7B13." in text and "on a different CPU, rows can differ" in text
    apart = dict(reach, machine={"cpu_model": "Intel Xeon Platinum 8480+"})
    apart["rows"] = [*reach["rows"][:3], _row("warm", "bfcl", "change", 0.06, [-0.4, -0.1], -0.25), *reach["rows"][4:]]
    text = table_findings(apart)
    assert "Every paired 95% interval includes 0" not in text and "reach 0" not in text
    assert "1 of 2 paired 95% intervals include 0; the others: warm template=context on bfcl." in text
    assert "Recorded on Intel Xeon Platinum 8480+." in text
    signs = dict(
        reach, rows=[*reach["rows"][:3], _row("warm", "bfcl", "change", 0.5, [0.1, 0.3], 0.19), *reach["rows"][4:]]
    )
    assert "(the same sign on every slice)" not in table_findings(signs)


def test_the_table_records_the_cpu_it_was_gathered_on(tmp_path):
    _sweep(
        tmp_path,
        "a/bfcl",
        model="m",
        categories=["simple_python"],
        base=(0.5, {"0": 0.5, "1": 0.5}, 0.0),
        change=(0.5, {"0": 0.5, "1": 0.5}, 0.0),
        paired={"tasks": 2, "pairs": 4, "diff": 0.0, "se": 0.0, "ci95": [0.0, 0.0]},
    )
    data = collect(tmp_path)
    assert isinstance(data["machine"]["cpu_model"], str) and data["machine"]["cpu_count"]


def test_the_command_writes_results_and_refuses_a_folder_without_sweeps(tmp_path, capsys):
    with pytest.raises(FileNotFoundError, match="no one-factor sweep"):
        collect(tmp_path)
    assert main(["table", str(tmp_path)]) == 2
    assert "no one-factor sweep" in capsys.readouterr().err


def test_a_real_sweep_per_benchmark_with_the_oracle(tmp_path, capsys):
    """Two real one-factor sweeps (curriculum scenarios, BFCL single-turn) gathered into one table."""
    common = ["--vary", "--agent", "oracle", "--template", "native", "context", "--seeds", "0", "1", "--no-progress"]
    scenarios = ["--scenarios", "scenarios/curriculum/heldout.yaml", "--limit", "1"]
    bfcl = ["--categories", "simple_python", "--limit", "2"]
    assert main(["sweep", *common, *scenarios, "--out", str(tmp_path / "oracle" / "curriculum")]) == 0
    assert main(["sweep", *common, *bfcl, "--out", str(tmp_path / "oracle" / "bfcl")]) == 0
    capsys.readouterr()
    assert main(["table", str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    data = json.loads((tmp_path / "results.json").read_text())
    assert (tmp_path / "table.md").read_text() in printed
    rows = {(r["benchmark"], r["configuration"]): r for r in data["rows"]}
    assert set(rows) == {
        ("BFCL simple_python", "template=native"),
        ("BFCL simple_python", "template=context"),
        ("curriculum/heldout", "template=native"),
        ("curriculum/heldout", "template=context"),
    }
    assert rows[("curriculum/heldout", "template=native")]["tasks"] == 5  # one per tier
    assert rows[("BFCL simple_python", "template=native")]["tasks"] == 2
    for row in data["rows"]:
        assert row["model"] == "oracle" and row["score"] == 1.0 and row["per_seed"] == {"0": 1.0, "1": 1.0}
    change = rows[("BFCL simple_python", "template=context")]
    assert change["paired"]["pairs"] == 4 and change["paired"]["diff"] == 0.0
    assert change["fingerprint"] != rows[("BFCL simple_python", "template=native")]["fingerprint"]


def test_benchmark_labels():
    assert benchmark_label({"scenarios": ["scenarios/curriculum/heldout.yaml"]}) == "curriculum/heldout"
    assert benchmark_label({"categories": ["base"]}) == "BFCL base"
    assert benchmark_label({"task_ids": ["a", "b"]}) == "BFCL 2 task ids"
