"""On 2 ranks, each rank's in-process vLLM engine gets the sharded trainer's whole weights (real SmolLM2, CPU, gloo)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("vllm")

ROOT = Path(__file__).resolve().parents[4]


@pytest.mark.slow
def test_each_rank_engine_matches_the_sharded_trainer_after_a_push(tmp_path):
    env = {
        **os.environ,
        "OMP_NUM_THREADS": "1",
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    for key in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        env.pop(key, None)
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2"]
    proc = subprocess.run(
        [*command, "-m", "tests.tooluse_agents.train.grpo.vllm_dist_probe", str(tmp_path)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    reports = [json.loads(p.read_text()) for p in sorted(tmp_path.glob("rank_*.json"))]
    print(reports)  # shown with -s
    assert sorted(r["rank"] for r in reports) == [0, 1]
    for r in reports:
        assert r["start"] < 1e-3  # engine and sharded trainer agree on the starting weights
        assert r["before_push"] > 1e-2  # the update moved the trainer away from the engine
        assert r["after_push"] < 1e-3
        assert r["across"] < 1e-4  # both ranks' engines hold the same weights
