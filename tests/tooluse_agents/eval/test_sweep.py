"""The one-factor-at-a-time sweep: its design, the paired difference and interval (hand-computed), end to end."""

from __future__ import annotations

import json
import math
import statistics

import pytest

from tooluse_agents.cli.eval import main
from tooluse_agents.eval.sweep import format_sensitivity, one_factor_changes, paired_difference, seed_spread


def test_the_first_value_of_each_knob_is_the_base_and_every_other_value_one_change():
    grid = {"template": ["native", "context"], "system_prompt": ["strong", "bfcl", "none"], "tool_format": ["json"]}
    base, changes = one_factor_changes(grid)
    assert base == {"template": "native", "system_prompt": "strong", "tool_format": "json"}
    assert changes == [("template", "context"), ("system_prompt", "bfcl"), ("system_prompt", "none")]


def test_paired_difference_by_task_and_seed():
    base = {("t1", 0): 1, ("t1", 1): 0, ("t2", 0): 0, ("t2", 1): 0, ("t3", 0): 1, ("t3", 1): 1}
    change = {("t1", 0): 1, ("t1", 1): 1, ("t2", 0): 1, ("t2", 1): 0, ("t3", 0): 0, ("t3", 1): 1, ("t4", 0): 1}
    p = paired_difference(base, change)
    # per task, mean over its two seeds of change - base: t1 +0.5, t2 +0.5, t3 -0.5 (t4 has no base: unpaired)
    assert p["tasks"] == 3 and p["pairs"] == 6
    assert p["diff"] == pytest.approx(1 / 6)
    # sample std of (0.5, 0.5, -0.5) = sqrt(((1/3)^2 * 2 + (2/3)^2) / 2) = sqrt(1/3); SE = that / sqrt(3) = 1/3
    assert p["se"] == pytest.approx(1 / 3)
    low, high = p["ci95"]
    assert -0.5 <= low < p["diff"] < high <= 0.5  # a bootstrap mean of these three values stays within them


def test_bootstrap_interval_of_two_tasks():
    # per-task differences 0 and 1: a resampled mean is 0, 0.5 or 1 with probabilities 1/4, 1/2, 1/4,
    # so the 2.5% and 97.5% percentiles are 0 and 1
    p = paired_difference({("a", 0): 0, ("b", 0): 0}, {("a", 0): 0, ("b", 0): 1})
    assert p["diff"] == 0.5 and p["ci95"] == [0.0, 1.0]
    assert p["se"] == pytest.approx(math.sqrt(0.5) / math.sqrt(2))


def test_identical_runs_have_a_zero_width_interval_and_the_draws_are_seeded():
    same = {(f"t{i}", s): float((i + s) % 2) for i in range(5) for s in range(3)}
    p = paired_difference(same, same)
    assert p["diff"] == 0.0 and p["ci95"] == [0.0, 0.0] and p["se"] == 0.0
    shifted = {k: 1.0 for k in same}
    assert paired_difference(same, shifted) == paired_difference(same, shifted)
    assert paired_difference({}, shifted)["diff"] is None


def test_seed_spread():
    s = seed_spread({0: 0.2, 1: 0.3, 2: 0.25})
    assert s["seeds"] == 3 and s["max_minus_min"] == pytest.approx(0.1) and s["std"] == pytest.approx(0.05)
    assert seed_spread({0: 0.4})["std"] is None


def test_vary_end_to_end_with_the_oracle(tmp_path, capsys):
    out = tmp_path / "vary"
    argv = [
        "sweep", "--vary", "--agent", "oracle", "--categories", "base", "--limit", "2", "--seeds", "0", "1",
        "--change-seeds", "0", "--tool-format", "python", "json", "--system-prompt", "bfcl", "Use the tools.",
        "--no-progress", "--out", str(out),
    ]  # fmt: skip
    assert main(argv) == 0
    data = json.loads((out / "sweep.json").read_text())
    assert data["design"] == "one_factor"
    base = {"tool_format": "python", "system_prompt": "bfcl", "template": "native"}
    assert base.items() <= data["base"]["knobs"].items()
    assert data["base"]["seed_spread"] == {"seeds": 2, "max_minus_min": 0.0, "std": 0.0}
    changes = [(c["knob"], c["value"]) for c in data["changes"]]
    assert changes == [("tool_format", "json"), ("system_prompt", "Use the tools.")]
    for change in data["changes"]:
        assert change["per_seed"].keys() == {"0"}  # the change's seeds
        assert change["paired"]["pairs"] == 2 and change["paired"]["diff"] == 0.0  # the oracle is right everywhere
        assert change["fingerprint"] != data["base"]["fingerprint"]
    assert (out / "base" / "results.json").exists() and (out / "system_prompt=literal" / "results.json").exists()
    text = capsys.readouterr().out
    assert "one factor at a time" in text and "| system_prompt = literal |" in text
    with pytest.raises(SystemExit):
        main(["sweep", "--vary", "--agent", "oracle", "--out", str(out), "--change-seeds"])
    assert main(["sweep", "--agent", "oracle", "--change-seeds", "0", "--out", str(tmp_path / "x")]) == 2


def test_format_sensitivity_is_bfcls_statistics():
    formats = {"a": {("t1", 0): 1.0, ("t2", 0): 0.0, ("t1", 1): 0.0}, "b": {("t1", 0): 1.0, ("t2", 0): 1.0}}
    block = format_sensitivity(formats, [0])
    assert block["accuracy"] == {"a": 0.5, "b": 1.0}  # seed 1 is not every configuration's: left out
    assert block["std"] == statistics.stdev([0.5, 1.0]) and block["max_minus_min"] == 0.5
    assert block["variance"] == statistics.variance([0.5, 1.0])
    assert format_sensitivity({"a": formats["a"]}, [0])["std"] == 0.0  # one configuration: BFCL reports 0


def test_vary_over_bfcls_format_grid_with_the_oracle(tmp_path, capsys):
    pytest.importorskip("tree_sitter", reason="bfcl_eval's prompt builder needs tree_sitter (the dev extra)")
    from tooluse_gym.prompt_formats import default_prompt_format, prompt_formats

    out = tmp_path / "formats"
    argv = [
        "sweep", "--vary", "--agent", "oracle", "--categories", "simple_python", "parallel", "--limit", "2",
        "--seeds", "0", "--prompt-format", default_prompt_format(), "all", "--no-progress", "--out", str(out),
    ]  # fmt: skip
    assert main(argv) == 0
    data = json.loads((out / "sweep.json").read_text())
    assert data["base"]["knobs"]["prompt_format"] == default_prompt_format()
    assert len(data["changes"]) == 25 and all(c["knob"] == "prompt_format" for c in data["changes"])
    block = data["format_sensitivity"]
    assert block["configurations"] == 26 and set(block["accuracy"]) == set(prompt_formats())
    assert set(block["accuracy"].values()) == {1.0}  # the oracle writes every return format as BFCL reads it
    assert block["std"] == 0.0 and block["max_minus_min"] == 0.0
    assert (out / "prompt_format=json.tag.xml.plaintext.classic" / "results.json").exists()
    text = capsys.readouterr().out
    assert "## BFCL format sensitivity" in text and "26 prompt_format configurations" in text
