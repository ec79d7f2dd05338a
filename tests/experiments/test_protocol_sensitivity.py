"""The protocol-sensitivity study's driver: its pre-registration, its sweep grid and its report."""

from __future__ import annotations

import json

import pytest
import yaml

from experiments.framework.study import PreregError, load
from experiments.protocol_sensitivity import study as ps


def test_the_preregistered_grid_is_the_base_then_one_change_at_a_time():
    prereg = load(ps.DEFAULT_PREREG, ps.SCHEMA)
    literal = "You are a helpful assistant. You can call the functions you are given."
    assert ps.grid(prereg) == {
        "template": ["native", "context"],
        "reasoning": ["keep"],
        "system_prompt": ["strong", "bfcl", "none", literal],
        "tool_format": ["json", "python"],
        "tool_results": ["tool_messages", "user_message"],
        "max_steps_per_turn": [3],
        "decoder": ["lenient"],
    }
    assert prereg["base_seeds"] == [0, 1, 2, 3, 4] and prereg["change_seeds"] == [0, 1, 2]


def test_a_change_must_set_one_knob_of_the_base(tmp_path):
    data = yaml.safe_load(ps.DEFAULT_PREREG.read_text())
    data["changes"].append({"template": "context", "tool_format": "python"})
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(data))
    with pytest.raises(PreregError, match="one knob"):
        load(bad, ps.SCHEMA)
    data["changes"][-1] = {"temperature": 0.0}
    bad.write_text(yaml.safe_dump(data))
    with pytest.raises(PreregError, match="one knob"):
        load(bad, ps.SCHEMA)


def _results(folder, per_seed):
    folder.mkdir(parents=True)
    mean = sum(per_seed.values()) / len(per_seed)
    summary = {"overall": {"mean": mean, "per_seed": per_seed}, "episodes": 40}
    (folder / "results.json").write_text(json.dumps({"summary": summary, "fingerprint": "f" * 16}))


def test_the_report_from_run_folders(tmp_path):
    out = tmp_path / "runs"
    change = {
        "knob": "template",
        "value": "context",
        "folder": "template=context",
        "overall": 0.2,
        "per_seed": {"0": 0.2},
        "fingerprint": "c" * 16,
        "paired": {"tasks": 10, "pairs": 10, "diff": -0.1, "se": 0.03, "ci95": [-0.16, -0.04]},
        "seed_spread": {"seeds": 1, "max_minus_min": 0.0, "std": None},
    }
    base = {"folder": "base", "overall": 0.3, "seed_spread": {"seeds": 5, "max_minus_min": 0.04, "std": 0.015}}
    (out / "curriculum").mkdir(parents=True)
    (out / "curriculum" / "sweep.json").write_text(
        json.dumps({"design": "one_factor", "base": base, "changes": [change]})
    )
    _results(out / "bfcl", {"0": 0.0, "1": 0.05, "2": 0.0})
    args = ps.parse_args(
        ["report", "--out", str(out), "--json", str(tmp_path / "r.json"), "--figure", str(tmp_path / "f.png")]
    )
    assert ps.report(args) == 0
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["curriculum"]["changes"][0]["paired"]["ci95"] == [-0.16, -0.04]
    assert report["bfcl_slice"]["overall"] == pytest.approx(0.05 / 3) and report["bfcl_slice"]["fingerprint"]
    assert report["grpo_base"] is None and "not testable" in report["reasoning"]
    assert report["prereg"]["path"].endswith("protocol_sensitivity_v1.yaml") and report["paper"]["template"]
    assert (tmp_path / "f.png").stat().st_size > 0


def test_a_run_needs_the_model(tmp_path, monkeypatch):
    monkeypatch.setattr(ps, "uncommitted", lambda path: False)
    args = ps.parse_args(["run", "--out", str(tmp_path), "--model", str(tmp_path / "missing")])
    with pytest.raises(SystemExit, match="make warmstart"):
        ps.run(args)
