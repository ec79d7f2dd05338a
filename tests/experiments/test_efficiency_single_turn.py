"""Study B's harness (issue 40) without a model: the pre-registration's from-pilot targets, the pilot rule
and its gate on fake pilot results, ``run`` refusing without committed targets, and the pilot -> run ->
report path with a fake trainer (the report beside a fake multi-turn report).

The real pipeline (SmolLM2-135M, vLLM) is ``python -m experiments.efficiency_single_turn pilot --short``
then ``run --short`` and ``report --short``: minutes, so not a test here.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from experiments.efficiency_multi_turn import study as multi_turn
from experiments.efficiency_single_turn import pilot as pt
from experiments.efficiency_single_turn import study as est
from experiments.framework import arms, start_eval
from experiments.framework.study import PreregError, load, with_targets
from tests.experiments.test_trainer_vs_trl import fake_ours


def pilot_result(start: int, final: int, n: int = 40, lost: int = 0) -> dict:
    """A pilot's result as the rule reads it: `start` then `final` of `n` prompts right, `lost` of the first lost."""
    prompts = [f"p{i:02d}" for i in range(n)]
    before = "1" * start + "0" * (n - start)
    after = "0" * lost + "1" * final + "0" * (n - final - lost)
    assert len(after) == n and after.count("1") == final
    evals = [{"step": 0, "reward": start / n, "outcomes": before}, {"step": 9, "reward": final / n, "outcomes": after}]
    return {
        "arm": "vanilla",
        "seed": 100,
        "heldout_prompts": prompts,
        "evaluations": evals,
        "curve": [
            {"train_s": 0.0, "step": 0, "reward": start / n},
            {"train_s": 1800.0, "step": 9, "reward": final / n},
        ],
        "totals": {"train_s": 1800.0, "steps": 9},
        "checkout": {"commit": "abc", "dirty": False},
    }


def test_the_preregistration_loads_with_targets_from_a_pilot(tmp_path):
    prereg = load(est.PREREG)
    rule = prereg.pilot_rule
    assert rule is not None and (rule.arm, rule.seed, rule.start_range, rule.alpha) == (
        "vanilla",
        100,
        (0.1, 0.8),
        0.05,
    )
    assert rule.fractions == {"T50": 0.5, "T75": 0.75} and rule.primary == prereg.primary == "T50"
    assert prereg.targets == {} and prereg.start is None and prereg.gain_ref is None
    assert (
        list(prereg.arms) == ["vanilla", "paper"] and prereg.learned_arms == ("vanilla",) and prereg.seeds == (0, 1, 2)
    )
    assert "tasks.path=scenarios/curriculum/single_turn_train.yaml" in prereg.common
    assert {"protocol.decoder=bfcl", "protocol.max_steps_per_turn=20", "tasks.limit=64"} <= set(prereg.common)
    fixed = with_targets(prereg, {"start": 0.3, "gain_ref": 0.2, "T50": 0.4, "T75": 0.45, "primary": "T50"})
    assert fixed.targets == {"T50": 0.4, "T75": 0.45} and fixed.start == 0.3 and fixed.gain_ref == 0.2
    with pytest.raises(PreregError, match="pre-registered"):
        with_targets(prereg, {"start": 0.3, "gain_ref": 0.2, "T50": 0.4, "primary": "T50"})
    with pytest.raises(PreregError, match="fixes its own targets"):
        with_targets(load(multi_turn.PREREG), fixed.data["targets"])
    data = yaml.safe_load(est.PREREG.read_text())
    for change, message in (
        ({"pilot": {**data["pilot"], "seed": 0}}, "not a study seed"),
        ({"pilot": {**data["pilot"], "arm": "trl"}}, "an arm of the study"),
        ({"pilot": {**data["pilot"], "start_range": [0.8, 0.1]}}, "start_range"),
        ({"pilot": {**data["pilot"], "learned": {"test": "t_test", "alpha": 0.05}}}, "mcnemar"),
        ({"pilot": None}, "no pilot entry"),
        ({"targets": {**data["targets"], "primary": "T90"}}, "primary"),
        ({"targets": {**data["targets"], "T50_fraction": 1.5}}, r"\(0, 1\]"),
        ({"targets": {"start": 0.3, "gain_ref": 0.1, "T50": 0.35, "primary": "T50"}}, "needs targets from_pilot"),
        ({"study": "grpo_efficiency_v2", "version": 2}, "needs targets fixed"),
    ):
        bad = tmp_path / "bad.yaml"
        bad.write_text(yaml.safe_dump({**data, **change}))
        with pytest.raises(PreregError, match=message):
            load(bad)


def test_the_pilot_rule_fixes_the_targets():
    rule = load(est.PREREG).pilot_rule
    assert rule is not None
    d = pt.decide(rule, pilot_result(8, 20))  # 0.2 -> 0.5: 12 gained, none lost
    assert d.passed and d.reasons(rule) == [] and d.vs_start.gained == 12 and d.vs_start.p == pytest.approx(2 / 2**12)
    assert d.gain == pytest.approx(0.3)
    assert d.targets == {"start": 0.2, "gain_ref": pytest.approx(0.3), "T50": 0.35, "T75": 0.425, "primary": "T50"}
    assert pt.decide(rule, pilot_result(4, 14)).start_in_range  # 0.10: the range includes its ends
    odd = pt.decide(rule, pilot_result(7, 18, n=33))  # 7/33 -> 18/33: rounded to 3 decimals
    assert (odd.targets["T50"], odd.targets["T75"]) == (round(12.5 / 33, 3), round(15.25 / 33, 3)) == (0.379, 0.462)


@pytest.mark.parametrize(
    ("start", "final", "lost", "in_range", "learned", "why"),
    [
        (2, 14, 0, False, True, "outside"),  # 0.05: below the range, though it learned
        (34, 40, 0, False, True, "outside"),  # 0.85: above it (6 gained: p = 0.031)
        (10, 12, 1, True, False, "did not learn"),  # 3 gained, 1 lost: p = 0.625
        (20, 10, 10, True, False, "did not learn"),  # significantly worse is not learning
        (2, 2, 0, False, False, "outside"),  # both
    ],
)
def test_the_gate_fails_and_writes_no_targets(tmp_path, start, final, lost, in_range, learned, why):
    prereg = load(est.PREREG)
    d = pt.decide(prereg.pilot_rule, pilot_result(start, final, lost=lost))
    assert (d.start_in_range, d.learned, d.passed) == (in_range, learned, False)
    assert why in " ".join(d.reasons(prereg.pilot_rule))
    target = tmp_path / "targets.yaml"
    assert not pt.write_targets(
        target, prereg, tmp_path / "pilot.json", pilot_result(start, final, lost=lost), False
    ).passed
    assert not target.exists()


def test_the_targets_file_round_trips_and_is_checked(tmp_path):
    prereg = load(est.PREREG)
    path = tmp_path / pt.targets_name(prereg)
    assert path.name == "grpo_efficiency_single_turn_v1_targets.yaml"
    assert pt.write_targets(path, prereg, tmp_path / "pilot.json", pilot_result(8, 20), short=False).passed
    data = yaml.safe_load(path.read_text())
    assert path.read_text().startswith("# The targets of grpo_efficiency_single_turn")
    assert data["targets"]["T50"] == 0.35 and data["gate"]["passed"] and data["pilot"]["seed"] == 100
    assert data["prereg"]["sha256"] == prereg.sha256 and data["vs_start"]["gained"] == 12
    study, record = pt.read_targets(prereg, path)
    assert study.targets == {"T50": 0.35, "T75": 0.425} and study.start == 0.2 and record["smoke"] is None
    assert record["uncommitted_changes"] and record["targets"]["primary"] == "T50"
    other = tmp_path / "other.yaml"
    other.write_text(est.PREREG.read_text() + "# edited\n")
    with pytest.raises(PreregError, match="another pre-registration"):
        pt.read_targets(load(other), path)
    pt.write_smoke_targets(path, prereg, "no pilot")
    with pytest.raises(PreregError, match="smoke"):
        pt.read_targets(prereg, path)
    assert pt.read_targets(prereg, path, smoke_ok=True)[0].targets == {"T50": 0.35, "T75": 0.4}


def test_run_refuses_without_committed_targets(tmp_path):
    prereg_file = tmp_path / "grpo_efficiency_single_turn_v1.yaml"
    prereg_file.write_text(est.PREREG.read_text())
    with pytest.raises(SystemExit, match=r"no targets at .*grpo_efficiency_single_turn_v1_targets\.yaml"):
        est.main(["run", "--seed", "0", "--prereg", str(prereg_file)])
    targets = prereg_file.with_name("grpo_efficiency_single_turn_v1_targets.yaml")
    pt.write_targets(targets, load(prereg_file), tmp_path / "pilot.json", pilot_result(8, 20), short=False)
    with pytest.raises(SystemExit, match="not committed"):  # outside the checkout: never committed
        est.main(["run", "--seed", "0", "--prereg", str(prereg_file)])
    with pytest.raises(SystemExit, match="not committed"):
        est.main(["report", "--prereg", str(prereg_file)])


MULTI_TURN = {  # the multi-turn study's report, as far as this one reads it
    "arms": {
        "vanilla": {
            "per_seed": {"0": {"time_split_s": {"rollout": 60.0, "update": 30.0, "sync": 10.0}, "sec_per_step": 16.0}}
        },
        "paper": {
            "per_seed": {"0": {"time_split_s": {"rollout": 50.0, "update": 50.0, "sync": 0.0}, "sec_per_step": 14.0}},
            "speedup_T50": {"geometric_mean": {"value": 1.26, "kind": "exact", "label": "1.26x"}},
        },
        "selective": {"per_seed": {"0": {"time_split_s": {"rollout": 1.0, "update": 1.0, "sync": 0.0}}}},
    }
}


@pytest.fixture
def study(tmp_path, monkeypatch):
    """A fake trainer (`fake_ours`: 8 held-out prompts, evaluations at 0, 100, 200 and 300 s, 70 s rollout and
    30 s update a step), a start model folder, the fake multi-turn report; returns (run, curves, out)."""
    monkeypatch.setattr(start_eval, "code_sha256", lambda: "fixed")
    curves: dict[str, dict[int, int]] = {}

    def train(cmd):
        fake_ours(cmd, curves[Path(dict(c.split("=", 1) for c in cmd if "=" in c)["run_dir"]).name])

    monkeypatch.setattr(arms, "train", train)
    multi = tmp_path / "grpo_efficiency_v2.json"
    multi.write_text(json.dumps(MULTI_TURN))
    monkeypatch.setattr(est, "MULTI_TURN", multi)
    model = tmp_path / "model"
    model.mkdir()
    (model / "w").write_text("x")
    out = tmp_path / "out"
    short = ["--short", "--out", str(out)]
    flags = [*short, "--start-model", str(model), "--budget-s", "300", "--eval-every-s", "100"]

    def run(command: str) -> int:
        return est.main([command, *(flags if command != "report" else short)])

    return run, curves, out


def test_pilot_run_and_report_with_a_fake_trainer(study):
    run, curves, out = study
    curves.update(pilot={0: 1, 1: 3, 2: 5, 3: 7}, vanilla={0: 1, 1: 4, 2: 6, 3: 7}, paper={0: 1, 1: 5, 2: 7, 3: 7})
    assert run("pilot") == 0  # 1/8 -> 7/8, 6 gained: p = 0.031; start 0.125 in range
    pilot = json.loads((out / "results" / "pilot.json").read_text())
    assert (
        pilot["seed"] == 100 and pilot["arm"] == "vanilla" and pilot["counted"] is False and "pilot" in pilot["label"]
    )
    assert pilot["run_dir"].endswith("runs/pilot") and pilot["start_eval"]["source"] == "run"
    assert set(json.loads((out / "results" / "pilot.json").read_text())) >= {"evaluations", "per_step", "totals"}
    targets = yaml.safe_load((out / "grpo_efficiency_single_turn_v1_targets.yaml").read_text())
    t50, t75 = 0.125 + 0.5 * 0.75, round(0.125 + 0.75 * 0.75, 3)
    assert targets["targets"] == {"start": 0.125, "gain_ref": 0.75, "T50": t50, "T75": t75, "primary": "T50"}
    assert targets["short"] is True and targets["pilot"]["result"].endswith("results/pilot.json")
    with pytest.raises(SystemExit, match="targets are fixed"):
        run("pilot")

    assert run("run") == 0  # seed 0: vanilla then paper; the pilot's start evaluation is not shared
    results = {a: json.loads((out / "results" / f"seed0_{a}.json").read_text()) for a in ("vanilla", "paper")}
    assert results["vanilla"]["start_eval"]["source"] == "run"
    assert results["paper"]["start_eval"]["from"] == "seed0_vanilla"
    assert results["paper"]["targets"]["targets"]["T50"] == t50 and results["paper"]["targets"]["smoke"] is None

    assert run("report") == 0
    report = json.loads((out / "grpo_efficiency_single_turn.json").read_text())
    assert report["targets"]["T50"] == t50 and report["seeds"]["with_results"] == {"vanilla": [0], "paper": [0]}
    assert (
        report["pilot"]["counted"] is False
        and report["pilot"]["gate"]["passed"]
        and "pilot.json" not in report["results"]
    )
    # vanilla: 0.125 at 0 s, 0.5 at 100 s -> T50 (0.5) at 100 s; paper: 0.625 at 100 s -> 75 s
    sp = report["arms"]["paper"]["speedup_T50"]["per_seed"]["0"]
    assert sp["value"] == pytest.approx(100 / 75)
    paper = report["paper"]["paper"]["T50"]
    assert paper["over_paper"]["value"] == pytest.approx(100 / 75 / 1.7) and paper["multi_turn_v2"]["label"] == "1.26x"
    split = report["time_split"]
    assert split["single_turn"]["vanilla"]["per_seed"]["0"] == {
        "rollout_s": 210.0,
        "update_s": 90.0,
        "sync_s": 0.0,
        "rollout_share": 0.7,
        "update_share": 0.3,
        "sync_share": 0.0,
        "sec_per_step": 100.0,
    }
    assert set(split["multi_turn_v2"]) == {"vanilla", "paper"}  # this study's arms only
    assert split["multi_turn_v2"]["vanilla"]["mean"]["rollout_share"] == pytest.approx(0.6)
    md = (out / "grpo_efficiency_single_turn.md").read_text()
    assert md.startswith("# GRPO efficiency on single-turn tasks") and "## The pilot (not counted)" in md
    assert "| multi-turn v2 | paper | 0 | 14.0 | 50 | 50 | 0 | 50% | 50% | 0% |" in md
    assert "of the paper's 1.7x; multi-turn v2: 1.26x" in md and (out / "grpo-efficiency-single-turn.png").is_file()


def test_a_smoke_run_whose_pilot_failed_runs_on_smoke_targets(study, capsys):
    run, curves, out = study
    curves.update(pilot={0: 2, 1: 2, 2: 3, 3: 3}, vanilla={0: 2, 1: 3, 2: 4, 3: 5}, paper={0: 2, 1: 3, 2: 3, 3: 4})
    assert run("pilot") == 1  # 2/8 -> 3/8: did not learn
    assert "gate failed: the pilot did not learn" in capsys.readouterr().err
    path = out / "grpo_efficiency_single_turn_v1_targets.yaml"
    assert (out / "results" / "pilot.json").is_file() and not path.exists()
    assert run("run") == 0
    assert "fixed smoke targets" in capsys.readouterr().err
    assert yaml.safe_load(path.read_text())["targets"] == pt.SMOKE_TARGETS
    assert json.loads((out / "results" / "seed0_paper.json").read_text())["targets"]["smoke"]
    assert run("report") == 0
    report = json.loads((out / "grpo_efficiency_single_turn.json").read_text())
    assert not report["pilot"]["gate"]["passed"] and any("smoke targets" in n for n in report["notes"])
    assert "smoke targets, not the study's" in (out / "grpo_efficiency_single_turn.md").read_text()
