"""`import tooluse_gym` (and making an env, and the eval harness) never pulls in torch, vLLM or transformers."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def test_import_stays_light():
    code = (
        "import sys, gymnasium as gym, tooluse_gym, tooluse_agents.evaluate; "
        "env = gym.make('ToolUse-MultiTurn-v0'); env.reset(seed=0); "
        "print([m for m in ('torch', 'vllm', 'transformers', 'matplotlib') if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_loading_a_training_config_imports_no_torch():
    config = Path(__file__).resolve().parents[1] / "tooluse_agents" / "grpo" / "configs" / "cpu_curriculum.yaml"
    code = (
        "import sys; from tooluse_agents.grpo.config import load_config; "
        f"c = load_config({str(config)!r}, ['policy.model=tiny-random']); "
        "assert c.protocol.system_prompt == 'strong' and c.update.lr > 0; "
        "print([m for m in ('torch', 'vllm', 'transformers') if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
