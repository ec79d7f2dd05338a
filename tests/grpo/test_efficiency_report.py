"""The efficiency benchmark's arithmetic: time to target, the comparison, and the arms' overrides."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("grpo_efficiency", ROOT / "benchmarks" / "grpo_efficiency.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def curve(*points: tuple[float, float]) -> list[dict]:
    return [{"elapsed_s": t, "step": i, "reward": r} for i, (t, r) in enumerate(points)]


def run(points: list[tuple[float, float]], train_time: float, episodes: int = 1000) -> dict:
    c = curve(*points)
    return {
        "curve": c,
        "heldout_episodes": episodes,
        "initial_heldout_reward": c[0]["reward"],
        "final_heldout_reward": c[-1]["reward"],
        "train_time_s": train_time,
    }


def test_time_to_is_the_first_evaluation_at_or_above_target(bench):
    c = curve((0, 0.5), (100, 0.7), (200, 0.6), (300, 0.7))
    assert bench.time_to(c, 0.7) == 100
    assert bench.time_to(c, 0.65) == 100
    assert bench.time_to(c, 0.8) is None


def test_compare_speedup_and_target(bench):
    vanilla = run([(0, 0.5), (100, 0.6), (400, 0.7)], 400)
    efficient = run([(0, 0.5), (100, 0.7), (200, 0.7)], 200)
    c = bench.compare(vanilla, efficient)
    assert c["target_heldout_reward"] == 0.7
    assert c["time_to_target_s"] == {"vanilla": 400, "efficient": 100}
    assert c["speedup_to_target"] == 4.0
    assert c["total_train_time_ratio"] == 2.0
    assert c["meets_target"] is True
    assert c["notes"] == []


def test_compare_refuses_a_speedup_when_vanilla_did_not_learn_or_efficient_fell_short(bench):
    flat = run([(0, 0.6), (100, 0.6)], 100)
    c = bench.compare(flat, run([(0, 0.6), (50, 0.6)], 50))
    assert c["speedup_to_target"] is None and c["meets_target"] is False
    assert "did not improve" in c["notes"][0]
    short = bench.compare(run([(0, 0.5), (100, 0.7)], 100), run([(0, 0.5), (50, 0.65)], 50))
    assert short["speedup_to_target"] is None and short["meets_target"] is False
    assert short["final_heldout_delta"] == pytest.approx(-0.05)
    # faster to the target but ending lower is not a pass
    dip = bench.compare(run([(0, 0.5), (400, 0.7)], 400), run([(0, 0.5), (100, 0.7), (200, 0.6)], 200))
    assert dip["speedup_to_target"] == 4.0 and dip["meets_target"] is False


def test_arm_overrides_differ_only_in_the_two_switches(bench):
    args = bench.argparse.Namespace(
        out=Path("/x"),
        seed=3,
        epochs=2,
        train_limit=5,
        heldout_limit=0,
        group_size=4,
        prompts_per_step=2,
        engine="hf",
        max_tokens=64,
        eval_every=1,
        save_every=None,
        skip_zero_advantage=False,
        short=False,
        set=["update.lr=1e-4"],
        k=1,
        update_size=2,
    )
    vanilla, efficient = bench.variant_overrides("vanilla", args), bench.variant_overrides("efficient", args)
    assert "heldout.limit=null" in vanilla  # 0: the whole held-out split
    assert f"save_every={10**6}" in vanilla
    assert "update.lr=1e-4" in vanilla and "update.lr=1e-4" in efficient
    differ = set(vanilla) ^ set(efficient)
    assert {k.split("=")[0] for k in differ} == {"run_dir", "filter.enabled", "filter.k", "grpo.update_size"}
    assert "grpo.update_size=null" in vanilla and "grpo.update_size=2" in efficient
    args.save_every = 2
    assert "save_every=2" in bench.variant_overrides("efficient", args)


def test_a_vanilla_gain_within_evaluation_noise_gives_no_speedup(bench):
    # 72 episodes, 0.625 -> 0.667: +3 episodes against a standard error of 0.080 (0.625*0.375 + 0.667*0.333
    # = 0.4566; / 72 = 0.00634; sqrt = 0.0796), the second benchmark run's situation.
    vanilla = run([(0, 0.625), (100, 0.667)], 100, episodes=72)
    c = bench.compare(vanilla, run([(0, 0.625), (50, 0.667)], 50, episodes=72))
    assert c["vanilla_gain_se"] == pytest.approx(0.0796, abs=1e-4)
    assert c["speedup_to_target"] is None and c["meets_target"] is False
    assert "within two standard errors" in c["notes"][0]
    # the same rewards over 2,000 episodes: SE 0.0151, the gain counts
    c = bench.compare(run([(0, 0.625), (100, 0.667)], 100, episodes=2000), run([(0, 0.625), (50, 0.667)], 50))
    assert c["speedup_to_target"] == 2.0 and c["notes"] == []
