"""The efficiency benchmark's arithmetic with hand-computed numbers: time to target, the 2-SE rule, the report."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest


@pytest.fixture(scope="module")
def bench():
    from experiments.history import grpo_efficiency

    return grpo_efficiency


def curve(*points: tuple[float, float]) -> list[dict]:
    return [{"train_s": t, "step": i, "reward": r} for i, (t, r) in enumerate(points)]


def arm(points: list[tuple[float, float]], train_s: float | None = None, prompts: int = 144) -> dict:
    c = curve(*points)
    final = c[-1]["reward"]
    return {
        "curve": c,
        "heldout_episodes": prompts,
        "heldout_start": c[0]["reward"],
        "heldout_final": final,
        "heldout_se": (final * (1 - final) / prompts) ** 0.5,
        "train_s": c[-1]["train_s"] if train_s is None else train_s,
    }


def test_time_to_target_is_the_first_evaluation_at_or_above_it(bench):
    c = curve((0, 0.30), (300, 0.35), (600, 0.40), (900, 0.38), (1200, 0.40))
    assert bench.time_to(c, 0.40) == 600  # reached exactly at a point (and again later: the first counts)
    assert bench.time_to(c, 0.37) == 600  # crossed between 300 and 600: the evaluation at or after, no interpolation
    assert bench.time_to(c, 0.30) == 0  # the start already reaches it
    assert bench.time_to(c, 0.45) is None  # never
    assert bench.time_to(curve((0, 0.0), (100, 54 / 144)), 0.375) == 100  # 54/144 is 0.375 up to rounding


def test_binomial_standard_errors(bench):
    # 0.375 over 144 prompts: sqrt(0.375 * 0.625 / 144) = sqrt(0.00162760) = 0.040344
    assert bench.binomial_se(0.375, 144) == pytest.approx(0.040344, abs=1e-6)
    # a gain 36/144 -> 54/144: sqrt((0.25 * 0.75 + 0.375 * 0.625) / 144) = sqrt(0.421875 / 144) = 0.054127
    assert bench.gain_standard_error(0.25, 0.375, 144) == pytest.approx(0.054127, abs=1e-6)


def test_paired_gain(bench):
    # 4 prompts 0,0,1,1 -> 1,1,1,0 (a prompt only in one evaluation is left out): differences 1,1,0,-1,
    # mean 0.25, squared deviations 0.5625 + 0.5625 + 0.0625 + 1.5625 = 2.75, variance 2.75 / 3,
    # SE sqrt(0.916667 / 4) = 0.478714
    start = {"a": 0.0, "b": 0.0, "c": 1.0, "d": 1.0, "only_start": 1.0}
    p = bench.paired_gain(start, {"a": 1.0, "b": 1.0, "c": 1.0, "d": 0.0})
    assert (p["prompts"], p["gained"], p["lost"]) == (4, 2, 1)
    assert p["gain"] == 0.25 and p["paired_se"] == pytest.approx(0.478714, abs=1e-6)
    assert bench.paired_gain({"a": 1.0}, {"a": 1.0})["paired_se"] == float("inf")


def test_a_speedup_when_vanilla_learned(bench):
    # vanilla 36/144 -> 54/144: gain 0.125 > 2 SE = 0.108; first at 0.375 at 1800 s (final at 2410 s)
    vanilla = arm([(0, 0.25), (600, 0.3125), (1200, 0.3472), (1800, 0.375), (2410, 0.375)])
    # efficient: 0.375 first at 900 s, ends at 52/144 = 0.3611 (below vanilla by 0.0139; one SE of the
    # difference: sqrt(0.0016276 + 0.3611 * 0.6389 / 144 = 0.0016022) = 0.05683)
    efficient = arm([(0, 0.25), (600, 0.3333), (900, 0.375), (1800, 0.3681), (2405, 52 / 144)])
    c = bench.compare(vanilla, efficient)
    assert c["target"] == 0.375
    assert vanilla["time_to_target_s"] == 1800 and efficient["time_to_target_s"] == 900
    assert c["speedup_to_target"] == 2.0
    assert c["vanilla_gain"] == 0.125 and c["vanilla_gain_se"] == pytest.approx(0.054127, abs=1e-6)
    assert c["final_heldout_delta"] == pytest.approx(-0.013889, abs=1e-6)
    assert c["final_heldout_delta_se"] == pytest.approx(0.056831, abs=1e-6)
    assert c["checks"] == {
        "vanilla_gain_over_2se": True,
        "speedup_at_least_1_7x": True,
        "speedup_at_least_2_6x": False,
        "efficient_final_within_1se": True,
    }
    assert c["meets_target"] is True and c["notes"] == []
    assert c["train_time_ratio"] == pytest.approx(2410 / 2405)


def test_no_speedup_within_two_standard_errors(bench):
    # the probe: 14/48 -> 18/48 (0.292 -> 0.375), gain 0.0833 against 2 SE = 2 * sqrt((0.2917 * 0.7083 +
    # 0.375 * 0.625) / 48) = 2 * 0.09585 = 0.1917
    vanilla = arm([(0, 14 / 48), (795, 18 / 48), (1348, 18 / 48)], prompts=48)
    c = bench.compare(vanilla, arm([(0, 14 / 48), (300, 18 / 48)], prompts=48))
    assert c["vanilla_gain_se"] == pytest.approx(0.09585, abs=1e-5)
    assert vanilla["time_to_target_s"] == 795  # the times are still reported
    assert c["speedup_to_target"] is None and c["meets_target"] is False
    assert c["checks"]["vanilla_gain_over_2se"] is False and c["checks"]["speedup_at_least_1_7x"] is False
    assert "within two standard errors" in c["notes"][0]
    # the same rewards on 144 prompts (42 -> 54): 2 SE = 2 * sqrt(0.440972 / 144) = 0.1107 > 0.0833, still none
    assert (
        bench.compare(arm([(0, 42 / 144), (100, 54 / 144)]), arm([(0, 42 / 144), (50, 0.375)]))["speedup_to_target"]
        is None
    )
    # the same prompts gained 12 and lost none: paired SE = sqrt(12/144 * 132/144 / 143) = 0.023112, so the
    # gain clears 2 paired SE; the gate (unpaired) still decides, and a note says the two disagree
    vanilla = arm([(0, 42 / 144), (100, 54 / 144)])
    vanilla["heldout_paired"] = {"prompts": 144, "gained": 12, "lost": 0, "gain": 12 / 144, "paired_se": 0.023112}
    c = bench.compare(vanilla, arm([(0, 42 / 144), (50, 0.375)]))
    assert c["speedup_to_target"] is None and c["vanilla_gain_paired_se"] == 0.023112
    assert any("paired SE of the gain (0.023: 12 prompts gained, 0 lost)" in n for n in c["notes"])


def test_never_reached_and_not_improved(bench):
    vanilla = arm([(0, 0.25), (1200, 0.375)])
    c = bench.compare(vanilla, arm([(0, 0.25), (600, 0.3333), (1200, 0.3611)]))
    assert c["speedup_to_target"] is None
    assert vanilla["time_to_target_s"] == 1200
    assert c["notes"] == ["the efficient arm never reached vanilla's final held-out reward"]
    assert c["checks"]["vanilla_gain_over_2se"] is True and c["meets_target"] is False
    flat = bench.compare(arm([(0, 0.3), (1200, 0.3)]), arm([(0, 0.3), (600, 0.3)]))
    assert flat["speedup_to_target"] is None and "did not improve" in flat["notes"][0]
    # faster to the target but ending more than one SE below it is not a pass
    dip = bench.compare(arm([(0, 0.25), (2400, 0.375)]), arm([(0, 0.25), (600, 0.375), (2400, 0.25)]))
    assert dip["speedup_to_target"] == 4.0 and dip["checks"]["efficient_final_within_1se"] is False
    assert dip["meets_target"] is False


def args_for(bench, **changes) -> argparse.Namespace:
    args = bench.parse_args(["--out", "/x"])
    for k, v in changes.items():
        setattr(args, k, v)
    return args


def test_arm_overrides_differ_only_in_the_two_switches(bench):
    args = args_for(bench, set=["rollout.max_tokens=64"])
    assert args.budget_s == 1800.0 and args.eval_every_s == 300.0 and args.weakstart_limit == 30
    vanilla, efficient = bench.variant_overrides("vanilla", args), bench.variant_overrides("efficient", args)
    for expected in (
        "policy.model=/x/weakstart/model",
        "budget_s=1800.0",
        "eval.every_train_s=300.0",
        "eval.every_steps=null",
        "eval.temperature=0.0",
        "eval.samples=1",
        "tasks.limit=60",  # 72 prompts: the filter acts from epoch 2 (the benchmark's docstring says why)
        "update.lr=1e-05",
        "grpo.prompts_per_step=4",
        "heldout.limit=null",  # all held-out prompts
        "update.skip_zero_advantage=true",
        "save_every=10",
        "rollout.max_tokens=64",
    ):
        assert expected in vanilla and expected in efficient, expected
    differ = set(vanilla) ^ set(efficient)
    assert {k.split("=")[0] for k in differ} == {"run_dir", "filter.enabled", "filter.k", "grpo.update_size"}
    assert "grpo.update_size=null" in vanilla and "grpo.update_size=4" in efficient
    assert bench.weakstart_command(args)[-6:] == ["--limit", "30", "--out", "/x/weakstart", "--seed", "0"]
    assert "policy.model=Qwen/Qwen3-4B" in bench.variant_overrides(
        "vanilla", args_for(bench, start_model="Qwen/Qwen3-4B")
    )
    short = bench.parse_args(["--short", "--out", "/y"])
    assert short.json == Path("/y/grpo_efficiency.json") and short.plot is None
    assert bench.parse_args(["--out", "/y"]).json == bench.DEFAULT_JSON
    assert bench.parse_args(["--plot"]).plot == bench.DEFAULT_PLOT


def _write(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def fake_arm(folder: Path, steps: list[tuple], evals: list[tuple[float, int, float]], used: int) -> None:
    """steps: (epoch, skipped, rollout_s, update_s, sync_s, zero_frac); evals: (train_s, step, reward)."""
    train_s, metrics, episodes = 0.0, [], []
    for i, (epoch, skipped, r, u, s, zero) in enumerate(steps, 1):
        train_s += r + u + s
        metrics.append(
            {
                "step": i,
                "epoch": epoch,
                "rollout/reward_mean": 0.25,
                "filter/skipped_prompts": skipped,
                "filter/active_prompts": 10 - skipped,
                "subsample/generated": 8,
                "subsample/used": used,
                "time/rollout_s": r,
                "time/update_s": u,
                "time/sync_s": s,
                "time/train_s": train_s,
                "update/tokens": 100,
                "update/computed_tokens": round(100 * (1 - zero)),
                "update/zero_adv_token_frac": zero,
            }
        )
        episodes += [{"train": {"used": j < used, "advantage": 0.0 if j % 2 else 1.0}} for j in range(8)]
    _write(folder / "metrics.jsonl", metrics)
    _write(folder / "episodes.jsonl", episodes)
    rows = [
        {"step": st, "eval/heldout_reward": rw, "episodes": 4, "time/train_s": t, "time/eval_s": 9.0}
        for t, st, rw in evals
    ]
    _write(folder / "eval.jsonl", rows)
    # per-prompt outcomes: prompt i of 4 is solved when i < 4 * reward
    _write(
        folder / "eval_episodes.jsonl",
        [{"eval_step": st, "task_id": f"p{i}", "reward": float(i < 4 * rw)} for _, st, rw in evals for i in range(4)],
    )


def test_the_report_from_run_folders(bench, tmp_path, monkeypatch):
    out = tmp_path / "out"
    _write(out / "weakstart" / "model" / "config.json", [{}])
    (out / "weakstart" / "summary.json").write_text(json.dumps({"steps": 8}))
    # vanilla: 3 steps of epoch 1 (91 + 91 + 102 = 284 s); held-out 1/4 -> 3/4 over 4 prompts
    fake_arm(
        out / "vanilla",
        [(1, 0, 50, 40, 1, 0.5), (1, 0, 60, 30, 1, 0.5), (1, 0, 55, 45, 2, 0.25)],
        [(0.0, 0, 0.25), (182.0, 2, 0.5), (284.0, 3, 0.75)],
        used=8,
    )
    # efficient: 4 steps over 2 epochs, 3 prompts skipped at the start of epoch 2, 4 of 8 rollouts used
    fake_arm(
        out / "efficient",
        [(1, 0, 50, 20, 1, 0.5), (1, 0, 50, 20, 1, 0.5), (2, 3, 40, 10, 1, 0.0), (2, 3, 40, 10, 1, 0.0)],
        [(0.0, 0, 0.25), (142.0, 2, 0.75), (244.0, 4, 0.75)],
        used=4,
    )
    monkeypatch.setattr(bench, "run_arm", lambda name, args: 0.0)
    monkeypatch.setattr(bench, "_run", lambda *a: pytest.fail("the finished warm-start is run again"))
    report_path = tmp_path / "report.json"
    assert bench.main(["--out", str(out), "--json", str(report_path), "--budget-s", "280"]) == 0
    report = json.loads(report_path.read_text())
    for dotted in (
        "vanilla.heldout_start",
        "vanilla.heldout_final",
        "vanilla.heldout_se",
        "efficient.heldout_final",
        "efficient.heldout_se",
        "target",
        "vanilla.time_to_target_s",
        "efficient.time_to_target_s",
        "speedup_to_target",
        "heldout_prompts",
        "budget_s",
        "vanilla.zero_advantage_update_frac",
        "vanilla.time_split_s.rollout",
        "efficient.prompts_per_epoch",
        "efficient.rollouts_generated",
        "efficient.rollouts_used",
        "efficient.curve",
    ):
        node = report
        for part in dotted.split("."):
            assert part in node, dotted
            node = node[part]
    v, e = report["vanilla"], report["efficient"]
    assert report["budget_s"] == 280.0 and report["heldout_prompts"] == 4 and report["target"] == 0.75
    assert (v["heldout_start"], v["heldout_final"]) == (0.25, 0.75)
    assert v["heldout_se"] == pytest.approx((0.75 * 0.25 / 4) ** 0.5)
    assert v["time_to_target_s"] == 284.0 and e["time_to_target_s"] == 142.0
    # gain 0.5 against 2 SE = 2 * sqrt((0.1875 + 0.1875) / 4) = 0.612: no speed-up over 4 prompts
    assert report["speedup_to_target"] is None and report["checks"]["vanilla_gain_over_2se"] is False
    # paired: p1, p2 gained, differences 0,1,1,0: SE sqrt((4 * 0.25 / 3) / 4) = 0.288675; 2 SE = 0.577 > 0.5,
    # the same verdict as the unpaired gate, so no note
    assert v["heldout_paired"] == {
        "prompts": 4,
        "gained": 2,
        "lost": 0,
        "gain": 0.5,
        "paired_se": pytest.approx(0.288675),
    }
    assert report["vanilla_gain_paired_se"] == pytest.approx(0.288675)
    assert not any("paired SE" in n for n in report["notes"])
    assert v["curve"][1] == {"train_s": 182.0, "step": 2, "reward": 0.5}
    assert v["train_s"] == 284.0 and v["time_split_s"] == {"rollout": 165, "update": 115, "sync": 4}
    assert e["time_split_s"] == {"rollout": 180, "update": 60, "sync": 4} and e["train_s"] == 244.0
    assert v["zero_advantage_update_frac"] == pytest.approx((50 + 50 + 25) / 300)
    assert e["prompts_per_epoch"] == {"1": {"skipped": 0, "active": 10}, "2": {"skipped": 3, "active": 7}}
    assert e["prompts_skipped"] == 3 and e["epochs"] == 2 and v["epochs"] == 1
    assert (v["rollouts_generated"], v["rollouts_used"]) == (24, 24)
    assert (e["rollouts_generated"], e["rollouts_used"]) == (32, 16)
    assert e["eval_s"] == 27.0
    assert report["weakstart"]["summary"] == {"steps": 8}
    # paths inside the checkout are recorded relative to it, others as given
    assert report["settings"]["config"] == "agents/train/grpo/configs/cpu_curriculum.yaml"
    assert report["settings"]["json"] == str(report_path)
    assert not (tmp_path / "docs").exists()  # no plot unless asked
    plot = tmp_path / "plot.png"
    bench.main(["--out", str(out), "--json", str(report_path), "--plot", str(plot)])
    assert plot.stat().st_size > 0
