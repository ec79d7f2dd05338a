"""GRPO on two ranks (torchrun, gloo, FSDP2) trains what one process trains, and resumes exactly.

Each run is the distributed check (`agents/train/grpo/configs/cpu_distributed_check.yaml`, through
`tests/tooluse_agents/train/grpo/dist_worker.py`): the check model on three prompts (two ranks get two and one),
groups of 4 of which 2 are used, the pre-rollout filter on, 3 steps. The selective runs add
GRESO's filter and screening (6 steps, the tiny model): every rank makes the same skip and screen
decisions, and one process makes them too for as long as its sampled rollouts are the two ranks'.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[4]
WORKER = Path(__file__).with_name("dist_worker.py")


def _launch(model: Path, run_dir: Path, ranks: int, *overrides: str, check: bool = True) -> subprocess.CompletedProcess:
    """Run the check on `ranks` ranks (one plain process for 1) into `run_dir`."""
    env = {
        **os.environ,
        "OMP_NUM_THREADS": "1",
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    for key in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        env.pop(key, None)
    args = [str(WORKER), str(run_dir), f"policy.model={model}", *overrides]
    if ranks > 1:
        args = ["-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={ranks}", *args]
    done = subprocess.run([sys.executable, *args], env=env, capture_output=True, text=True, timeout=600, cwd=ROOT)
    if check:
        assert done.returncode == 0, done.stderr[-3000:]
    return done


def _read(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _steady(records: list[dict]) -> list[dict]:
    """Records without what may differ between layouts: timings and the dist/* keys."""
    out = []
    for r in records:
        r = {k: v for k, v in r.items() if not k.startswith(("time/", "perf/", "dist/")) and k != "duration_s"}
        for turn in r.get("turns", []):
            for step in turn["steps"]:
                step.pop("latency_s")
        out.append(r)
    return out


def _max_diff(a: dict, b: dict) -> float:
    assert a.keys() == b.keys()
    return max(float((a[k].float() - b[k].float()).abs().max()) for k in a)


@pytest.fixture(scope="module")
def runs(check_model, tmp_path_factory):
    base = tmp_path_factory.mktemp("dist")
    _launch(check_model, base / "one", 1)
    _launch(check_model, base / "two", 2)
    return base / "one", base / "two"


def test_two_ranks_train_the_weights_one_process_trains(runs):
    one, two = runs
    start, a, b = (torch.load(p, weights_only=True) for p in (one / "start.pt", one / "final.pt", two / "final.pt"))
    assert _max_diff(start, a) > 1e-4  # the weights moved: the comparison is not vacuous
    assert _max_diff(a, b) <= 1e-5
    exported = torch.load(two / "final.pt", weights_only=True)  # the run's own export: the same weights
    from transformers import AutoModelForCausalLM

    saved = dict(AutoModelForCausalLM.from_pretrained(two / "final_model").named_parameters())
    assert _max_diff(exported, {k: saved[k].detach() for k in exported}) == 0.0


def test_two_ranks_write_one_process_metrics_and_rollouts(runs):
    one, two = runs
    m1, m2 = _read(one / "metrics.jsonl"), _read(two / "metrics.jsonl")
    assert [m["dist/world_size"] for m in m1] == [1, 1, 1] and [m["dist/world_size"] for m in m2] == [2, 2, 2]
    assert all("dist/update_spread_s" in m for m in m2)
    for x, y in zip(_steady(m1), _steady(m2), strict=True):
        assert x.keys() == y.keys()
        for key in x:  # counts exactly; losses and norms up to the order of float sums over ranks
            assert x[key] == pytest.approx(y[key], rel=1e-5, abs=1e-7), key
    assert _steady(_read(one / "episodes.jsonl")) == _steady(_read(two / "episodes.jsonl"))
    from tooluse_tui.data import MetricsLog

    live = MetricsLog(two / "metrics.jsonl")  # what the TUI's live view reads
    assert live.poll() == 3 and not live.health.describe() and len(live.series("rollout/reward_mean")) == 3


def test_every_rank_ends_with_the_same_filter_and_plan(runs):
    one, two = runs
    states = [json.loads(p.read_text()) for p in (one / "rank_0.json", two / "rank_0.json", two / "rank_1.json")]
    assert states[0] == states[1] == states[2]
    assert states[0]["step"] == 3 and len(states[0]["filter"]) == 3


def test_ranks_had_unequal_work_and_finished(runs):
    _, two = runs
    episodes = _read(two / "episodes.jsonl")
    prompts = {(e["train"]["step"], e["task_id"]) for e in episodes}
    per_step = [sum(1 for s, _ in prompts if s == step) for step in (1, 2, 3)]
    assert per_step[0] == 3  # dealt 2 and 1: the ranks' groups, samples and micro-batches differ


def test_a_two_rank_run_resumes_exactly(runs, check_model, tmp_path):
    _, two = runs
    _launch(check_model, tmp_path / "b", 2, "max_steps=2")
    shards = tmp_path / "b" / "checkpoints" / "step_000002" / "sharded"
    assert (shards / ".metadata").is_file() and len(list(shards.glob("*.distcp"))) == 2  # one file a rank
    # what a kill during step 3 leaves behind: a metrics line and a torn episode line past the checkpoint
    with (tmp_path / "b" / "metrics.jsonl").open("a") as f:
        f.write(json.dumps({"step": 3, "epoch": 3}) + "\n")
    with (tmp_path / "b" / "episodes.jsonl").open("a") as f:
        f.write('{"task_id": "add_2_3@turn1", "train": {"st')
    _launch(check_model, tmp_path / "b", 2, "max_steps=3")
    a, b = (torch.load(p / "final.pt", weights_only=True) for p in (two, tmp_path / "b"))
    assert _max_diff(a, b) == 0.0
    for name in ("metrics.jsonl", "episodes.jsonl"):
        assert _steady(_read(two / name)) == _steady(_read(tmp_path / "b" / name))
    refused = _launch(check_model, tmp_path / "b", 1, "max_steps=4", check=False)
    assert refused.returncode != 0 and "written by a run on 2 rank(s)" in refused.stderr


SELECTIVE = (
    "filter.kind=zero_variance",
    "filter.zero_variance.p_correct=0.2",  # skip often (0.8 on a run of 1), so that 6 steps see skips
    "filter.zero_variance.p_wrong=0.2",
    "rollout.screen.members=2",
    "epochs=6",
    "max_steps=6",
)


@pytest.fixture(scope="module")
def selective_runs(tiny_model, tmp_path_factory):
    base = tmp_path_factory.mktemp("selective")
    _launch(tiny_model, base / "one", 1, *SELECTIVE)
    _launch(tiny_model, base / "two", 2, *SELECTIVE)
    return base / "one", base / "two"


def _episodes_by_step(run: Path) -> dict[int, list[dict]]:
    steps: dict[int, list[dict]] = {}
    for episode in _steady(_read(run / "episodes.jsonl")):
        steps.setdefault(episode["train"]["step"], []).append(episode)
    return steps


def test_every_rank_makes_the_skip_and_screen_decisions_one_process_makes(selective_runs):
    one, two = selective_runs
    states = [json.loads(p.read_text()) for p in (one / "rank_0.json", two / "rank_0.json", two / "rank_1.json")]
    assert states[1] == states[2]  # every rank: the same decisions, plan, runs and rates, step by step
    decisions = [d for d in states[1]["decisions"] if d["batch"]]  # the last draw may find every prompt skipped
    assert len(decisions) == states[1]["step"] >= 4
    assert any(d["screened"] for d in decisions) and any(d["passed"] for d in decisions)  # both screen verdicts
    assert any(d["counts"]["skipped_all_correct"] + d["counts"]["skipped_all_wrong"] for d in decisions)
    assert any(d["rates"]["filter/p_correct"] != 0.2 for d in decisions)  # the rates adapted
    # One process against two ranks: equal while their rollouts are equal. The two layouts reduce gradients in
    # different orders, and AdamW's first steps turn rounding in near-zero gradient entries into lr-sized weight
    # changes, so on some CPUs a sampled token differs after a few updates; from there they are different runs.
    by_step = [_episodes_by_step(run) for run in (one, two)]
    agree = 0
    while by_step[0].get(agree + 1) is not None and by_step[0].get(agree + 1) == by_step[1].get(agree + 1):
        agree += 1
    assert agree >= 2, "one process and two ranks sampled different rollouts from the start"
    assert states[0]["decisions"][:agree] == states[1]["decisions"][:agree]
    seen = states[1]["decisions"][:agree]
    assert any(d["screened"] for d in seen) and any(d["passed"] for d in seen)  # the agreeing steps screen both ways
    m1, m2 = _read(one / "metrics.jsonl")[:agree], _read(two / "metrics.jsonl")[:agree]
    for x, y in zip(_steady(m1), _steady(m2), strict=True):
        assert x.keys() == y.keys()
        for key in x:
            assert x[key] == pytest.approx(y[key], rel=1e-5, abs=1e-7), key
    if agree == states[0]["step"] == states[1]["step"]:  # the whole run agreed: so must the state and the weights
        assert states[0] == states[1]
        a, b = (torch.load(p, weights_only=True) for p in (one / "final.pt", two / "final.pt"))
        assert _max_diff(a, b) <= 1e-5
