"""The v2 efficiency study's harness: the pre-registration, the runner (with a fake trainer), the report.

The fake trainer writes run folders with hand-chosen curves over 8 held-out prompts; every number
checked below is computed by hand in the comments. The real trainer runs in
`test_efficiency_multi_turn_smoke.py`.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
from pathlib import Path

import pytest
import yaml

from experiments.efficiency_multi_turn import study as v2
from experiments.framework import arms
from experiments.framework.provenance import uncommitted
from experiments.framework.run import commit_file
from experiments.framework.study import PreregError, load

FIXTURE = Path(__file__).with_name("prereg_v2.yaml")
PROMPTS = [f"p{i}" for i in range(8)]

# per arm: evaluations (step, epoch, train_s, prompts right: p0 .. p{n-1}) and steps (train_s, epoch,
# generated tokens, update tokens computed, prompts skipped so far in the epoch, prompts screened)
FAKE = {
    "vanilla": {
        "evals": [(0, 0, 0.0, 2), (2, 1, 100.0, 3), (4, 2, 200.0, 4), (6, 2, 310.0, 5)],
        "steps": [(t, 1 if i < 3 else 2, 100, 100, 0, 0) for i, t in enumerate((50, 100, 150, 200, 255, 310))],
    },
    "paper": {
        "evals": [(0, 0, 0.0, 2), (2, 1, 100.0, 4), (4, 2, 205.0, 5), (6, 2, 300.0, 5)],
        "steps": [
            (t, 1 if i < 3 else 2, 100, 50, 0 if i < 3 else 2, 0) for i, t in enumerate((50, 100, 150, 205, 250, 300))
        ],
    },
    "selective": {
        "evals": [(0, 0, 0.0, 2), (3, 1, 150.0, 3), (6, 2, 300.0, 3)],
        "steps": [(t, 1 if i < 3 else 2, 60, 30, 0, 1) for i, t in enumerate((50, 100, 150, 200, 250, 300))],
    },
}


def _write(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def fake_trainer(calls: list[dict]):
    """A stand-in for ``python -m tooluse_agents.cli.train``: writes the run folder of FAKE[arm]."""

    def train(cmd: list[str]) -> None:
        sets = dict(o.split("=", 1) for o in cmd if "=" in o)
        calls.append(sets)
        run_dir = Path(sets["run_dir"])
        data = FAKE[run_dir.name]
        at_start = sets["eval.at_start"] == "true"
        config = {"seed": int(sets["seed"]), "eval": {"at_start": at_start}}
        run_dir.mkdir(parents=True, exist_ok=True)
        (run_dir / "config.yaml").write_text(yaml.safe_dump(config))
        (run_dir / "runtime.json").write_text(json.dumps({"schedule": "lockstep"}))
        evals = [e for e in data["evals"] if at_start or e[0] > 0]
        _write(
            run_dir / "eval.jsonl",
            [
                {
                    "step": s,
                    "epoch": ep,
                    "eval/heldout_reward": n / 8,
                    "episodes": 8,
                    "time/train_s": t,
                    "time/eval_s": 5,
                }
                for s, ep, t, n in evals
            ],
        )
        _write(
            run_dir / "eval_episodes.jsonl",
            [
                {"eval_step": s, "task_id": p, "reward": float(i < n)}
                for s, _, _, n in evals
                for i, p in enumerate(PROMPTS)
            ],
        )
        metrics = []
        for step, (t, epoch, gen, upd, skipped, screened) in enumerate(data["steps"], 1):
            metrics.append(
                {
                    "step": step,
                    "epoch": epoch,
                    "time/train_s": float(t),
                    "time/rollout_s": 40.0,
                    "time/update_s": 10.0,
                    "time/sync_s": 0.0,
                    "rollout/completion_tokens": gen,
                    "update/tokens": 2 * upd,
                    "update/computed_tokens": upd,
                    "update/zero_adv_token_frac": 0.5,
                    "subsample/generated": 16,
                    "subsample/used": 8,
                    "filter/skipped_prompts": skipped,
                    "filter/active_prompts": 4 - skipped,
                    "screen/screened_prompts": screened,
                }
            )
        _write(run_dir / "metrics.jsonl", metrics)

    return train


@pytest.fixture
def prereg_file(tmp_path):
    """The fixture's schema with small numbers: targets 0.45 and 0.55 from a start of 0.25, budget 300 s."""
    data = yaml.safe_load(FIXTURE.read_text())
    data.update(budget_s=300, eval_every_train_s=100)
    data["targets"] = {"start": 0.25, "gain_ref": 0.4, "T50": 0.45, "T75": 0.55, "primary": "T50"}
    path = tmp_path / "prereg.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def test_the_preregistration_schema(tmp_path):
    p = load(FIXTURE)
    assert list(p.arms) == ["vanilla", "paper", "selective"] and p.seeds == (0, 1, 2)
    assert p.targets == {"T50": 0.361, "T75": 0.389} and p.primary == "T50" and p.start == 0.306
    assert p.budget_s == 1800.0 and p.eval_every_train_s == 150.0 and p.cost_ratios == (1.0, 3.0, 5.0)
    assert p.learned_alpha == 0.05 and p.no_loss_alpha == 0.05 and p.common == ("tasks.limit=32", "update.lr=1e-5")
    data = yaml.safe_load(FIXTURE.read_text())
    for change, message in (
        ({"version": 1}, "version"),
        ({"targets": {"start": 0.3, "gain_ref": 0.1, "T50": 0.35, "primary": "T90"}}, "primary"),
        ({"rules": {**data["rules"], "speedup": {"mean": "arithmetic", "faster_only_if": "every_seed"}}}, "geometric"),
        ({"arms": {"paper": ["filter.k=1"]}}, "vanilla"),
        ({"common": ["tasks.limit"]}, "key=value"),
    ):
        bad = tmp_path / "bad.yaml"
        bad.write_text(yaml.safe_dump({**data, **change}))
        with pytest.raises(PreregError, match=message):
            load(bad)
    bad.write_text(yaml.safe_dump({k: v for k, v in data.items() if k != "projection"}))
    with pytest.raises(PreregError, match="projection"):
        load(bad)


def test_arm_order_rotates_with_the_seed():
    order = ["vanilla", "paper", "selective"]
    assert arms.arm_order(order, 0) == order
    assert arms.arm_order(order, 1) == ["paper", "selective", "vanilla"]
    assert arms.arm_order(order, 2) == ["selective", "vanilla", "paper"]
    assert arms.arm_order(order, 3) == order


def test_overrides_put_the_harness_last_and_refuse_a_clash(tmp_path):
    prereg = load(FIXTURE)
    args = v2.parse_args(["run", "--short", "--out", str(tmp_path), "--set", "rollout.engine=hf"])
    settings = arms.settings_for(args, prereg, v2.PATHS)
    out = arms.overrides(prereg, settings, "paper", 1, at_start=False)
    assert out[:6] == ["tasks.limit=32", "update.lr=1e-5", *prereg.arms["paper"]]
    assert out.index("tasks.limit=4") > out.index("tasks.limit=32")  # the smoke settings win over common
    assert "rollout.engine=hf" in out and "policy.model=smollm2-135m" in out and "budget_s=45.0" in out
    assert out[-10:] == [
        "seed=1",
        f"run_dir={tmp_path / 'runs' / 'seed1' / 'paper'}",
        "policy.model=smollm2-135m",
        "budget_s=45.0",
        "max_steps=null",
        "eval.every_train_s=15.0",
        "eval.every_steps=null",
        "eval.at_start=false",
        "eval.temperature=0.0",
        "eval.samples=1",
    ]
    study = arms.settings_for(v2.parse_args(["run", "--seed", "0"]), prereg, v2.PATHS)
    assert study.budget_s == 1800.0 and study.start_model == "runs/weakstart/model" and study.extra == ()
    assert study.result_path(2, "paper").parts[-3:] == ("results", "grpo_efficiency_v2", "seed2_paper.json")
    with pytest.raises(SystemExit, match="--short only"):
        arms.settings_for(v2.parse_args(["run", "--seed", "0", "--budget-s", "10"]), prereg, v2.PATHS)
    clash = dataclasses.replace(prereg, common=("budget_s=10", "eval.samples=1"))
    with pytest.raises(PreregError, match=r"\['budget_s'\]"):
        arms.overrides(clash, study, "vanilla", 0, at_start=True)
    # the same values as the harness's are no clash (the YAML values compare: 1800 is 1800.0)
    same = dataclasses.replace(prereg, common=("budget_s=1800", "eval.temperature=0.0", "max_steps=null"))
    assert arms.overrides(same, study, "vanilla", 0, at_start=True)[:3] == list(same.common)


def test_a_study_run_refuses_an_uncommitted_preregistration(prereg_file):
    assert uncommitted(prereg_file)  # outside the checkout: never committed
    with pytest.raises(SystemExit, match="uncommitted"):
        v2.main(["run", "--seed", "0", "--prereg", str(prereg_file)])


def test_run_and_report_from_fake_runs(prereg_file, tmp_path, monkeypatch):
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    calls: list[dict] = []
    monkeypatch.setattr(arms, "train", fake_trainer(calls))
    out = tmp_path / "out"
    common = ["--prereg", str(prereg_file), "--short", "--out", str(out)]
    run = ["run", *common, "--start-model", str(model), "--budget-s", "300", "--eval-every-s", "100"]
    assert v2.main([*run, "--seed", "0"]) == 0
    # seed 0 runs the pre-registered order; the first arm runs the start evaluation, the others share it
    assert [Path(c["run_dir"]).name for c in calls] == ["vanilla", "paper", "selective"]
    assert [c["eval.at_start"] for c in calls] == ["true", "false", "false"]
    results = out / "results"
    paper = json.loads((results / "seed0_paper.json").read_text())
    assert paper["start_eval"]["source"] == "shared" and paper["start_eval"]["from"] == "seed0_vanilla"
    assert paper["evaluations"][0] == {
        "step": 0,
        "epoch": 0,
        "train_s": 0.0,
        "reward": 0.25,
        "episodes": 8,
        "eval_s": 0.0,
        "outcomes": "11000000",
        "shared_from": "seed0_vanilla",
    }
    assert paper["run_order"] == ["vanilla", "paper", "selective"] and paper["prereg"]["sha256"]
    assert paper["machine"]["cpu_model"] and paper["runtime"] == {"schedule": "lockstep"}
    assert paper["command"][:3] == ["python", "-m", "tooluse_agents.cli.train"]
    # the filter skipped 2 prompts from epoch 2 (its first step starts at 150 s of 300)
    totals = paper["totals"]
    assert paper["per_epoch"]["2"]["skipped_prompts"] == 2 and paper["per_epoch"]["1"]["skipped_prompts"] == 0
    assert totals["selection_active_from_s"] == 150.0 and totals["selection_active_share"] == 0.5
    assert totals["prompts_skipped"] == 2 and totals["generated_tokens"] == 600
    assert totals["computed_update_tokens"] == 300 and totals["update_tokens"] == 600
    # (10 s / 300 tokens) / (40 s / 600 tokens) = 0.5
    assert totals["measured_update_token_cost_ratio"] == pytest.approx(0.5)
    assert paper["missing_metrics"] == [  # what the fake trainer does not write
        "rollout/reward_mean",
        "filter/zero_variance_frac",
        "groups/all_wrong_frac",
        "filter/skipped_all_correct",
        "filter/skipped_all_wrong",
        "screen/rollouts_saved",
    ]
    selective = json.loads((results / "seed0_selective.json").read_text())
    assert selective["totals"]["prompts_screened"] == 6 and selective["totals"]["selection_active_from_s"] == 0.0

    # resumed: every result exists, nothing is trained again
    monkeypatch.setattr(arms, "train", lambda cmd: pytest.fail("a finished arm was trained again"))
    assert v2.main([*run, "--seed", "0"]) == 0
    # seed 1 starts at the second arm; vanilla alone, sharing seed 0's start (greedy: the seed is not an input)
    monkeypatch.setattr(arms, "train", fake_trainer(calls))
    assert v2.main([*run, "--seed", "1", "--arms", "vanilla"]) == 0
    assert calls[-1]["seed"] == "1" and calls[-1]["eval.at_start"] == "false"
    assert json.loads((results / "seed1_vanilla.json").read_text())["run_order"] == ["paper", "selective", "vanilla"]

    assert v2.main(["report", *common]) == 0
    report = json.loads((out / "grpo_efficiency_v2.json").read_text())
    from experiments.framework.provenance import ROOT
    from tooluse_agents.runs.portable import portable

    # a prereg outside the checkout: recorded without the machine's folders
    assert report["prereg"]["path"] == portable(str(prereg_file), ROOT) and "<tmp>/" in report["prereg"]["path"]
    assert report["prereg"]["contents"]["budget_s"] == 300
    assert "commit" in report["prereg"]
    assert report["seeds"] == {
        "preregistered": [0, 1, 2],
        "complete": [0],
        "with_results": {"vanilla": [0, 1], "paper": [0], "selective": [0]},
    }
    van, pap, sel = (report["arms"][a]["per_seed"]["0"] for a in ("vanilla", "paper", "selective"))
    # vanilla: 0.45 between (100, 0.375) and (200, 0.5): 100 + 0.075 * 100 / 0.125 = 160;
    # 0.55 between (200, 0.5) and (310, 0.625): 200 + 0.05 * 110 / 0.125 = 244
    assert van["time_to_T50_s"] == pytest.approx(160) and van["time_to_T75_s"] == pytest.approx(244)
    # paper: 0.2 * 100 / 0.25 = 80; 100 + 0.05 * 105 / 0.125 = 142
    assert pap["time_to_T50_s"] == pytest.approx(80) and pap["time_to_T75_s"] == pytest.approx(142)
    # selective never reaches 0.45: censored at the budget
    assert sel["time_to_T50_s"] is None and sel["time_to_T50_censored_at"] == 300
    # steps: vanilla 2 + 0.075 * 2 / 0.125 = 3.2, paper 0.2 * 2 / 0.25 = 1.6
    assert van["step_to_T50"] == pytest.approx(3.2) and pap["step_to_T50"] == pytest.approx(1.6)
    # AUC over 300 s: vanilla (31.25 + 43.75 + 100 * (0.5 + 0.613636) / 2) / 300, paper (37.5 + 59.0625 + 59.375) / 300
    assert van["auc"] == pytest.approx(0.435606, abs=1e-6) and pap["auc"] == pytest.approx(0.519792, abs=1e-6)
    assert pap["auc_delta_vs_vanilla"] == pytest.approx(0.519792 - 0.435606, abs=1e-6)
    # vanilla's start -> final: 3 gained, 0 lost: p = 2 / 8
    assert van["mcnemar_p_vs_start"] == 0.25 and van["mcnemar_p_vs_vanilla"] is None
    assert (van["start"], van["final"], pap["final"], sel["final"]) == (0.25, 0.625, 0.625, 0.375)
    assert pap["mcnemar_p_vs_vanilla"] == 1.0  # the same 5 prompts right
    assert sel["paired_vs_vanilla"]["lost"] == 2 and sel["mcnemar_p_vs_vanilla"] == 0.5  # 2 * 1/4

    sp = report["arms"]["paper"]["speedup_T50"]
    assert sp["per_seed"] == {"0": {"value": 2.0, "kind": "exact", "label": "2.00x"}}
    assert sp["geometric_mean"]["value"] == 2.0 and sp["faster_in_every_seed"] is True
    # 2.0 = (3.2 / 1.6 steps) x (50 / 50 s per step)
    assert sp["decomposition"]["0"] == {"steps_ratio": pytest.approx(2.0), "sec_per_step_ratio": pytest.approx(1.0)}
    assert report["arms"]["paper"]["speedup_T75"]["per_seed"]["0"]["value"] == pytest.approx(244 / 142)
    sel_sp = report["arms"]["selective"]["speedup_T50"]["per_seed"]["0"]
    assert sel_sp["kind"] == "at_most" and sel_sp["value"] == pytest.approx(160 / 300) and sel_sp["label"] == "<= 0.53x"
    # no loss, selective: delta -2/8, paired SE sqrt(2 - 4/8) / 8 = 0.153093
    nl = report["arms"]["selective"]["no_loss"]
    assert nl["mean_delta"] == -0.25 and nl["mean_paired_se"] == pytest.approx(0.153093, abs=1e-6)
    assert nl["met"] is False and nl["none_significantly_worse"] is True and nl["seeds"] == [0]
    # projection: paper at 80 s: 160 generated, 80 computed; vanilla at 160 s: 320 and 320
    proj = report["arms"]["paper"]["projection"]
    assert proj["label"] == "projection" and "r" in proj["assumptions"]
    assert proj["r=1"]["per_seed"]["0"]["value"] == pytest.approx(240 / 640)
    assert proj["r=3"]["per_seed"]["0"]["value"] == pytest.approx(400 / 1280)
    assert proj["r=5"]["geometric_mean"]["value"] == pytest.approx(560 / 1920)
    assert proj["measured_r"]["0"] == pytest.approx(0.5)

    verdicts = report["verdicts"]
    assert verdicts["learned"]["status"] == "not met"  # p = 0.25 in seed 0 already
    assert verdicts["learned"]["per_seed"]["1"]["learned"] is False
    assert verdicts["speedup"]["paper"]["status"] == "not yet decidable"  # faster in seed 0, seeds 1-2 missing
    assert verdicts["speedup"]["selective"]["status"] == "not met"  # slower in seed 0 (a bound that decides)
    assert verdicts["no_loss"]["paper"]["status"] == "not yet decidable"
    assert verdicts["no_loss"]["selective"]["status"] == "not yet decidable"  # not significantly worse so far
    md = (out / "grpo_efficiency_v2.md").read_text()
    assert "| paper | 0 | 0.250 | 0.625 |" in md and "not yet decidable" in md and "projection" in md
    assert (out / "grpo-efficiency-v2.png").stat().st_size > 0


def test_verdicts_once_every_seed_has_run(prereg_file, tmp_path, monkeypatch):
    data = yaml.safe_load(prereg_file.read_text())
    data["seeds"] = [0]
    data["rules"]["learned"]["alpha"] = 0.3  # 3 gained of 8 (p = 0.25) counts as learned here
    prereg_file.write_text(yaml.safe_dump(data, sort_keys=False))
    model = tmp_path / "model"
    model.mkdir()
    (model / "w").write_text("x")
    monkeypatch.setattr(arms, "train", fake_trainer([]))
    out = tmp_path / "out"
    common = ["--prereg", str(prereg_file), "--short", "--out", str(out)]
    v2.main(["run", *common, "--start-model", str(model), "--budget-s", "300", "--eval-every-s", "100"])
    v2.main(["report", *common])
    verdicts = json.loads((out / "grpo_efficiency_v2.json").read_text())["verdicts"]
    assert verdicts["learned"]["status"] == "met"
    assert verdicts["speedup"]["paper"]["status"] == "met" and verdicts["speedup"]["selective"]["status"] == "not met"
    # paper: delta 0 >= -0 (no discordant prompt); selective: -0.25 < -0.153
    assert verdicts["no_loss"]["paper"]["status"] == "met" and verdicts["no_loss"]["selective"]["status"] == "not met"
    assert not any("code commits" in n for n in json.loads((out / "grpo_efficiency_v2.json").read_text())["notes"])
    # a result made from another commit (or a dirty checkout) is kept but flagged: the arms must run one code
    for path in (out / "results").glob("seed0_*.json"):
        changed = json.loads(path.read_text())
        paper = path.name == "seed0_paper.json"
        changed["checkout"] = {"commit": ("0" if paper else "a") * 40, "dirty": paper}
        path.write_text(json.dumps(changed))
    v2.main(["report", *common])
    notes = json.loads((out / "grpo_efficiency_v2.json").read_text())["notes"]
    assert any("results ran on 2 code commits" in n for n in notes)
    assert any("uncommitted changes: ['seed 0 paper']" in n for n in notes)
    # a result made under another pre-registration is left out and listed
    data["budget_s"] = 301
    prereg_file.write_text(yaml.safe_dump(data, sort_keys=False))
    v2.main(["report", *common])
    report = json.loads((out / "grpo_efficiency_v2.json").read_text())
    assert len(report["excluded"]) == 3 and report["seeds"]["complete"] == []
    assert verdicts["learned"]["status"] == "met" and report["verdicts"]["learned"]["status"] == "not yet decidable"


def test_commit_file_commits_that_file_alone(tmp_path):
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True, text=True).stdout

    git("init", "-q")
    git("config", "user.email", "t@example.com")
    git("config", "user.name", "t")
    (tmp_path / "other.txt").write_text("staged by someone else")
    git("add", "other.txt")
    result = tmp_path / "results" / "seed0_vanilla.json"
    result.parent.mkdir()
    result.write_text("{}")
    commit_file(result, "seed 0 vanilla", cwd=tmp_path)
    assert git("show", "--name-only", "--format=%s", "HEAD").split() == [
        "seed",
        "0",
        "vanilla",
        "results/seed0_vanilla.json",
    ]
    assert git("diff", "--cached", "--name-only").split() == ["other.txt"]  # still staged, not committed


def test_a_report_before_any_result(tmp_path):
    out = tmp_path / "empty"
    assert v2.main(["report", "--short", "--prereg", str(FIXTURE), "--out", str(out)]) == 0
    report = json.loads((out / "grpo_efficiency_v2.json").read_text())
    assert report["seeds"]["complete"] == [] and report["arms"]["paper"]["no_loss"] is None
    verdicts = report["verdicts"]
    statuses = [
        verdicts["learned"]["status"],
        *(v["status"] for k in ("speedup", "no_loss") for v in verdicts[k].values()),
    ]
    assert set(statuses) == {"not yet decidable"}
    assert "not yet decidable" in (out / "grpo_efficiency_v2.md").read_text()


def test_notes_name_the_seeds_that_ran_on_another_machine_or_start_model(prereg_file):
    from experiments.framework.report import _notes

    prereg = load(prereg_file)

    def result(cpu: str, model_sha: str) -> dict:
        machine = {"cpu_model": cpu, "bf16_flags": ["avx512_bf16"], "cpu_count": 2}
        return {"machine": machine, "start_eval": {"key": {"model_sha256": model_sha}}}

    one_place = {(s, a): result("AMD EPYC", "e0" * 32) for s in (0, 1) for a in ("vanilla", "paper")}
    assert not any("seeds ran on" in n for n in _notes(prereg, one_place, []))
    # seed 1 ran elsewhere, from a start model rebuilt there (other bytes): both said, seed by seed
    moved = {**one_place, **{(1, a): result("Intel Xeon", "b8" * 32) for a in ("vanilla", "paper")}}
    notes = _notes(prereg, moved, [])
    assert (
        "seeds ran on different machines (AMD EPYC ['avx512_bf16'] 2: seeds [0]; "
        "Intel Xeon ['avx512_bf16'] 2: seeds [1]); every ratio compares arms within one seed"
    ) in notes
    assert (
        "seeds ran on different start models (sha256 of their files) (e0e0e0e0e0e0: seeds [0]; "
        "b8b8b8b8b8b8: seeds [1]); each seed's start is its own start evaluation"
    ) in notes
    assert not any(n.startswith("seed 1: arms ran on different machines") for n in notes)
