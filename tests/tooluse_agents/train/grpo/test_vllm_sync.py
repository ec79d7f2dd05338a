"""After a weight push, the vLLM engine's log-probs match the trainer's (real SmolLM2, vLLM on the CPU, float32)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("vllm")

ROOT = Path(__file__).resolve().parents[4]


def test_engine_logprobs_match_trainer_after_push():
    proc = subprocess.run(
        [sys.executable, "-m", "tests.tooluse_agents.train.grpo.vllm_push_probe"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    print(result)  # shown with -s
    assert result["tied"]  # SmolLM2 ties its output projection to the embedding: the re-pack path is exercised
    assert result["parity_start"] < 1e-3
    assert result["before_push"] > 1e-2  # the update moved the trainer away from the engine
    assert result["after_push"] < 1e-3
    # generation on a prompt cached before the update: stale KV blocks would show here
    assert result["generation_after_push"] < 1e-3
