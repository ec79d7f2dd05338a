"""Study A's harness (issue 40) without a model: the TRL arm's clock and bookkeeping with a fake clock,
its settings against the pre-registered table, and the whole run -> result -> report path with fake
trainers, so the TRL arm's result is read by the same report as ours.

The real pipeline (SmolLM2-135M, vLLM, TRL) is ``python -m experiments.trainer_vs_trl run --short``:
minutes even on an idle CPU, so not a test here.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from experiments.framework import arms, start_eval
from experiments.framework.provenance import ROOT
from experiments.framework.study import load
from experiments.trainer_vs_trl import study as tvt
from experiments.trainer_vs_trl import trl_report
from experiments.trainer_vs_trl.trl_arm import AS_TRL, ArmRun, grpo_settings
from experiments.trainer_vs_trl.trl_clock import Limits, RolloutMeter, StepRollouts, TrainingClock, step_end, step_row
from tooluse_agents.runs.runlog import RunFiles
from tooluse_agents.train.grpo.config import load_config
from tooluse_agents.train.grpo.schedule import simulate

PROMPTS = [f"p{i}" for i in range(8)]


class FakeTime:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_the_clock_stops_while_paused():
    t = FakeTime()
    clock = TrainingClock(t)
    t.now = 5.0
    clock.start()
    t.now = 15.0
    assert clock.seconds == 10.0
    with clock.paused():
        t.now = 115.0  # an evaluation: not training time
    assert clock.seconds == 10.0 and clock.running
    t.now = 120.0
    clock.stop()
    t.now = 500.0
    assert clock.seconds == 15.0 and not clock.running
    with clock.paused():  # a stopped clock stays stopped
        pass
    assert not clock.running


@pytest.mark.parametrize(
    "durations", [[40.0] * 20, [70.0, 90.0, 155.0, 10.0, 10.0, 400.0, 30.0], [149.0, 1.0, 149.0, 2.0, 300.0]]
)
def test_step_end_decides_as_our_trainer_plans(durations):
    """The same evaluation points and last step as `tooluse_agents.train.grpo.schedule.simulate` (our rules)."""
    limits = Limits(budget_s=600.0, max_steps=None, every_train_s=150.0, every_steps=None)
    boundaries, evals = simulate(durations, budget_s=600.0, every_s=150.0)
    seen, train_s, stop = [0.0], 0.0, None
    for step, d in enumerate(durations, 1):
        before, train_s = train_s, train_s + d
        evaluate, stop = step_end(before, train_s, step, last_step=10_000, limits=limits)
        if evaluate:
            seen.append(train_s)
        if stop:
            break
    assert seen == evals and train_s == boundaries[-1] and stop == "budget_s"


def test_step_end_other_limits():
    limits = Limits(budget_s=None, max_steps=3, every_train_s=None, every_steps=2)
    assert step_end(0, 1, 1, 100, limits) == (False, None)
    assert step_end(1, 2, 2, 100, limits) == (True, None)  # every 2 steps
    assert step_end(2, 3, 3, 100, limits) == (True, "max_steps")  # the last step is evaluated
    assert step_end(0, 1, 1, 1, Limits(None, None, None, None)) == (True, "epochs")
    assert step_end(0, 1, 1, 1, Limits(None, None, None, None, heldout=False)) == (False, "epochs")


def _output(prompts: list[str], rewards: list[float], policy: int = 3, env: int = 2) -> dict[str, list]:
    n = len(prompts)
    return {
        "prompt_ids": [[1, 2]] * n,
        "completion_ids": [[5] * (policy + env)] * n,
        "env_mask": [[1] * policy + [0] * env] * n,
        "tooluse_reward": rewards,
        "tooluse_error": [None] * n,
        "tooluse_episode": [{"task_id": p, "reward": r} for p, r in zip(prompts, rewards, strict=True)],
    }


def test_the_meter_and_the_step_row():
    t = FakeTime()
    prompts = ["a"] * 4 + ["b"] * 4 + ["c"] * 4
    rewards = [1, 1, 1, 1, 0, 0, 0, 0, 1, 0, 0, 0]  # a all right, b all wrong, c mixed

    def rollout(ps, trainer):
        t.now += 30.0
        return _output(ps, [float(r) for r in rewards])

    meter = RolloutMeter(rollout, now=t)
    meter(prompts, None)
    step = meter.take()
    assert step.seconds == 30.0 and step.calls == 1 and step.completions == 12 and meter.take().calls == 0
    row = step_row(1, 1, step, step_s=50.0, train_s=50.0, prompts=38, logs={"loss": 0.1, "clip_ratio/region_mean": 0})
    assert row["time/rollout_s"] == 30.0 and row["time/update_s"] == 20.0 and row["time/sync_s"] == 0.0
    assert row["groups/all_correct_frac"] == row["groups/all_wrong_frac"] == row["groups/mixed_frac"] == 1 / 3
    assert row["rollout/completion_tokens"] == 36 and row["update/computed_tokens"] == 60
    assert row["update/zero_adv_token_frac"] == pytest.approx(24 / 36)  # groups a and b: zero variance
    assert row["rollout/reward_mean"] == 5 / 12 and row["perf/tokens_per_s"] == 36 / 30
    assert row["subsample/used"] == row["subsample/generated"] == 12 and row["filter/active_prompts"] == 38


def _config(overrides: list[str]):
    prereg = load(tvt.PREREG)
    return load_config(ROOT / prereg.base_config, [*prereg.common, *overrides, *AS_TRL])


def test_trl_settings_are_the_preregistered_table(tmp_path):
    config = _config(["seed=2"])
    s = grpo_settings(config, "hf_generate", tmp_path)
    table = {
        "num_generations": 8,
        "per_device_train_batch_size": 32,
        "gradient_accumulation_steps": 1,
        "steps_per_generation": 1,
        "learning_rate": 1e-5,
        "lr_scheduler_type": "constant",
        "warmup_steps": 0,
        "adam_beta1": 0.9,
        "adam_beta2": 0.999,
        "weight_decay": 0.0,
        "max_grad_norm": 1.0,
        "epsilon": 0.2,
        "epsilon_high": 0.28,
        "beta": 0.0,
        "num_iterations": 1,
        "loss_type": "dapo",
        "scale_rewards": "group",
        "temperature": 1.0,
        "top_p": 1.0,
        "top_k": 0,
        "bf16": False,
        "fp16": False,
        "use_cpu": True,
        "gradient_checkpointing": True,
        "seed": 2,
        "data_seed": 2,
        "use_vllm": False,
    }
    assert {k: s[k] for k in table} == table
    assert grpo_settings(config, "vllm_colocate", tmp_path)["vllm_mode"] == "colocate"
    with pytest.raises(ValueError, match="update_size"):
        grpo_settings(load_config(ROOT / load(tvt.PREREG).base_config, []), "hf_generate", tmp_path)


def test_trl_settings_on_a_gpu_and_in_micro_batches(tmp_path):
    gpu = _config(["policy.device=cuda", "policy.autocast=bfloat16"])
    s = grpo_settings(gpu, "hf_generate", tmp_path, micro_batch=8)
    assert (s["bf16"], s["use_cpu"]) == (True, False)
    assert (s["per_device_train_batch_size"], s["gradient_accumulation_steps"], s["steps_per_generation"]) == (8, 4, 4)
    with pytest.raises(ValueError, match="divide"):
        grpo_settings(gpu, "hf_generate", tmp_path, micro_batch=5)
    with pytest.raises(ValueError, match="autocast"):  # fp32 compute on a GPU is not the GPU arm's setting
        grpo_settings(_config(["policy.device=cuda"]), "hf_generate", tmp_path)
    with pytest.raises(ValueError, match="autocast"):
        grpo_settings(_config(["policy.autocast=bfloat16"]), "hf_generate", tmp_path)


class FakeMeter:
    """Each step: 4 prompts x 8 completions, 20 s of rollout out of the step's time."""

    def take(self) -> StepRollouts:
        step = StepRollouts()
        prompts = [p for p in PROMPTS[:4] for _ in range(8)]
        step.add(prompts, _output(prompts, [float(i % 2) for i in range(32)]), 20.0)
        return step


def drive_trl_arm(cmd: list[str], curve: dict[int, int], step_s: float = 60.0) -> None:
    """A stand-in for ``python -m experiments.trainer_vs_trl.trl_arm``: `ArmRun` driven as TRL's callback drives it,
    with a fake clock (each step `step_s`), a fake evaluator (each evaluation takes 100 s of wall
    time, and after step s gets the first curve[s] prompts right) and the run folder written for real."""
    sets = [c for c in cmd if "=" in c and not c.startswith("-")]
    config = load_config(cmd[cmd.index("-m") + 2], [*sets, *AS_TRL])
    run_dir = Path(config.run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "config.yaml").write_text(yaml.safe_dump(config.to_dict()))
    (run_dir / "runtime.json").write_text(json.dumps({"schedule": "lockstep"}))
    (run_dir / "trl.json").write_text(json.dumps({"status": "done", "backend": cmd[cmd.index("--backend") + 1]}))
    t = FakeTime()

    def evaluate(model, step):
        t.now += 100.0
        right = curve[max(s for s in curve if s <= step)]
        return right / 8, [{"task_id": p, "reward": float(i < right)} for i, p in enumerate(PROMPTS)]

    files = RunFiles(run_dir)
    arm = ArmRun(config, files, FakeMeter(), evaluate, prompts=38, clock=TrainingClock(t))
    if config.eval.at_start:
        arm.evaluate(0, 0, "start")
    arm.clock.start()
    for step in range(1, 1000):
        t.now += step_s
        last = arm.step_end(step, step / 9, 900, save=lambda folder: None)
        arm.log(step, {"loss": 0.0, "clip_ratio/region_mean": 0.0, "step_time": step_s})
        if last:
            break
    files.close()


def fake_ours(cmd: list[str], curve: dict[int, int]) -> None:
    """A stand-in for our trainer: evaluations at 0, 100 and 200 s (3 steps of 100 s; 2 per evaluation)."""
    sets = dict(c.split("=", 1) for c in cmd if "=" in c)
    run_dir = Path(sets["run_dir"])
    at_start = sets["eval.at_start"] == "true"
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "config.yaml").write_text(yaml.safe_dump({"seed": int(sets["seed"]), "eval": {"at_start": at_start}}))
    (run_dir / "runtime.json").write_text(json.dumps({"schedule": "async"}))
    evals = [(s, t) for s, t in ((0, 0.0), (1, 100.0), (2, 200.0), (3, 300.0)) if at_start or s > 0]
    rows = [{"step": s, "epoch": 1, "eval/heldout_reward": curve[s] / 8, "time/train_s": t} for s, t in evals]
    (run_dir / "eval.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    eps = [
        {"eval_step": s, "task_id": p, "reward": float(i < curve[s])} for s, _ in evals for i, p in enumerate(PROMPTS)
    ]
    (run_dir / "eval_episodes.jsonl").write_text("".join(json.dumps(e) + "\n" for e in eps))
    metrics = [
        {"step": s, "epoch": 1, "time/train_s": 100.0 * s, "time/rollout_s": 70.0, "time/update_s": 30.0}
        | {"time/sync_s": 0.0, "rollout/completion_tokens": 700, "subsample/generated": 32, "subsample/used": 16}
        for s in (1, 2, 3)
    ]
    (run_dir / "metrics.jsonl").write_text("".join(json.dumps(m) + "\n" for m in metrics))


@pytest.fixture
def prereg_file(tmp_path):
    """The study's file with small numbers: targets 0.45 and 0.55 from 0.25, a 300 s budget, evaluations every 100 s."""
    data = yaml.safe_load(tvt.PREREG.read_text())
    data.update(budget_s=300, eval_every_train_s=100, seeds=[0])
    data["targets"] = {"start": 0.25, "gain_ref": 0.4, "T50": 0.45, "T75": 0.55, "primary": "T50"}
    path = tmp_path / "prereg.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def test_run_and_report_with_fake_trainers(prereg_file, tmp_path, monkeypatch):
    monkeypatch.setattr(start_eval, "code_sha256", lambda: "fixed")
    curves = {"vanilla": {0: 2, 1: 4, 2: 5, 3: 6}, "paper": {0: 2, 1: 5, 2: 6, 3: 6}, "trl": {0: 2, 2: 3, 4: 5}}
    calls: list[list[str]] = []

    def train(cmd):
        calls.append(cmd)
        arm = Path(dict(c.split("=", 1) for c in cmd if "=" in c)["run_dir"]).name
        (drive_trl_arm if "experiments.trainer_vs_trl.trl_arm" in cmd else fake_ours)(cmd, curves[arm])

    monkeypatch.setattr(arms, "train", train)
    model = tmp_path / "model"
    model.mkdir()
    (model / "w").write_text("x")
    out = tmp_path / "out"
    common = ["--prereg", str(prereg_file), "--short", "--out", str(out)]
    assert tvt.main(["run", *common, "--start-model", str(model), "--budget-s", "300", "--eval-every-s", "100"]) == 0
    assert [c[c.index("-m") + 1] for c in calls] == [arms.TRAINER, arms.TRAINER, tvt.TRL_ARM]
    assert calls[2][-2:] == ["--backend", "hf_generate"]  # no pilot in a smoke folder: the default
    results = {a: json.loads((out / "results" / f"seed0_{a}.json").read_text()) for a in curves}
    trl = results["trl"]
    assert set(results["vanilla"]) | {"trl"} == set(trl)  # the same schema, plus TRL's own part
    assert trl["start_eval"]["source"] == "shared" and trl["evaluations"][0]["shared_from"] == "seed0_vanilla"
    # 60 s steps, evaluations past 100 and 200 s and at the budget (the 5th step, 300 s); the fake
    # evaluator's 100 s each are not training time
    assert [(e["step"], e["train_s"]) for e in trl["evaluations"]] == [(0, 0.0), (2, 120.0), (4, 240.0), (5, 300.0)]
    assert trl["totals"]["steps"] == 5 and trl["totals"]["time_split_s"]["rollout"] == 100.0
    assert trl["missing_metrics"] == [] and trl["trl"]["backend"] == "hf_generate"
    assert trl["trl"]["per_step"]["step_time"] == [60.0] * 5 and trl["trl"]["pilot"]["source"] == "none (--short)"
    assert trl["stats"]["final"] == 5 / 8

    assert tvt.main(["report", *common]) == 0
    report = json.loads((out / "trainer_vs_trl.json").read_text())
    assert report["reference"] == "trl" and report["seeds"]["complete"] == [0]
    # vanilla: 0.25 at 0 s, 0.5 at 100 s: 0.45 at 80 s; TRL: 0.375 at 120 s, 0.625 at 240 s: 0.45 at 156 s
    assert report["arms"]["vanilla"]["per_seed"]["0"]["time_to_T50_s"] == pytest.approx(80.0)
    assert report["arms"]["trl"]["per_seed"]["0"]["time_to_T50_s"] == pytest.approx(156.0)
    sp = report["arms"]["vanilla"]["speedup_T50"]  # t_trl / t_vanilla
    assert sp["per_seed"]["0"]["value"] == pytest.approx(156 / 80) and sp["faster_in_every_seed"] is True
    d = report["descriptive"]
    assert d["trl"]["0"]["sec_per_step"] == {"n": 5, "median": 60.0, "q1": 60.0, "q3": 60.0, "iqr": 0.0}
    assert d["vanilla"]["0"]["generated_tokens_per_s"] == 10.0 and d["trl"]["0"]["rollout_share"] == 1 / 3
    ratio = report["ratios_to_trl"]["paper"]["0"]
    assert ratio["sec_per_step_median"] == pytest.approx(100 / 60) and ratio["final_minus_trl"] == pytest.approx(1 / 8)
    assert set(report["verdicts"]["learned_by_arm"]) == {"vanilla", "paper", "trl"}
    assert report["verdicts"]["no_loss"]["paper"]["status"] in ("met", "not met")
    assert report["differences"] and report["pilot"] is None
    md = (out / "trainer_vs_trl.md").read_text()
    assert "| trl | 0 |" in md and "60.0 [0.0]" in md and "What could not be made equal" in md
    # the docs generator renders the summary from the JSON file (string seed keys): the same text
    assert trl_report.markdown(report, out / "trainer_vs_trl.json", out / "trainer-vs-trl.png") == md


def test_the_pilot_picks_what_completed_and_records_what_failed(prereg_file, tmp_path, monkeypatch):
    """vllm_colocate fails (its error recorded), hf_generate completes 3 steps: it is chosen, and run uses it."""

    real_run = tvt.subprocess.run

    def fake_run(cmd, **kwargs):
        if tvt.TRL_ARM not in cmd:  # git, for the provenance
            return real_run(cmd, **kwargs)
        sets = dict(c.split("=", 1) for c in cmd if "=" in c)
        run_dir, backend = Path(sets["run_dir"]), cmd[cmd.index("--backend") + 1]
        assert sets["max_steps"] == "3" and sets["heldout"] == "null" and sets["seed"] == "0"
        if backend == "vllm_colocate":
            error = {"type": "ValueError", "message": "set use_vllm=False"}
            (run_dir / "trl.json").write_text(json.dumps({"status": "failed", "error": error}))
            return type("Done", (), {"returncode": 1})()
        ends = [40.0, 70.0, 110.0]
        (run_dir / "metrics.jsonl").write_text(
            "".join(json.dumps({"step": i, "time/train_s": t}) + "\n" for i, t in enumerate(ends, 1))
        )
        return type("Done", (), {"returncode": 0})()

    monkeypatch.setattr(tvt.subprocess, "run", fake_run)
    model = tmp_path / "model"
    model.mkdir()
    out = tmp_path / "out"
    common = ["--prereg", str(prereg_file), "--short", "--out", str(out)]
    assert tvt.main(["pilot", *common, "--start-model", str(model)]) == 0
    pilot = json.loads((out / "results" / "pilot.json").read_text())
    failed, done = pilot["attempts"]
    assert [failed["backend"], done["backend"]] == ["vllm_colocate", "hf_generate"] and pilot["chosen"] == "hf_generate"
    assert not failed["completed"] and failed["error"]["type"] == "ValueError" and failed["median_step_s"] is None
    assert done["completed"] and done["step_s"] == [40.0, 30.0, 40.0] and done["median_step_s"] == 40.0
    assert tvt.choose([{**done, "median_step_s": 50.0}, {**done, "backend": "x", "median_step_s": 45.0}]) == "x"
    prereg = load(prereg_file)
    short = arms.settings_for(tvt.parse_args(["run", *common]), prereg, tvt.PATHS)
    assert tvt.chosen_backend(prereg, short)[0] == "hf_generate"
    study = short.__class__(**{**short.__dict__, "short": False})
    with pytest.raises(SystemExit, match="smoke run"):  # a smoke run's pilot cannot fix the study's backend
        tvt.chosen_backend(prereg, study)
