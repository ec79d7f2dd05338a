"""`import tooluse_gym` (and making an env, and the eval harness) never pulls in torch, vLLM or transformers."""

from __future__ import annotations

import subprocess
import sys


def test_import_stays_light():
    code = (
        "import sys, gymnasium as gym, tooluse_gym, agents.evaluate; "
        "env = gym.make('ToolUse-MultiTurn-v0'); env.reset(seed=0); "
        "print([m for m in ('torch', 'vllm', 'transformers', 'matplotlib') if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
