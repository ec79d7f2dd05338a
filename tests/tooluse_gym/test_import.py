"""`import tooluse_gym` (and making an env, and the eval harness) never pulls in torch, vLLM or transformers."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_import_stays_light():
    code = (
        "import sys, gymnasium as gym, tooluse_gym, tooluse_agents.eval.run; "
        "env = gym.make('ToolUse-MultiTurn-v0'); env.reset(seed=0); "
        "print([m for m in ('torch', 'vllm', 'transformers', 'matplotlib') if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_env_suite_imports_nothing_of_the_layers_above_it():
    """`tooluse_gym` <- `tooluse_agents` <- `tooluse_tui`: playing an episode loads neither of the others."""
    code = (
        "import sys, gymnasium as gym, tooluse_gym\n"
        "from tooluse_gym.tasks.task import END_OF_TURN\n"
        "env = gym.make('ToolUse-MultiTurn-v0', category='base')\n"
        "obs, info = env.reset(seed=0)\n"
        "while True:\n"
        "    obs, reward, terminated, truncated, info = env.step(END_OF_TURN)\n"
        "    if terminated or truncated: break\n"
        "print(sorted({m.split('.')[0] for m in sys.modules if m.split('.')[0] in "
        "('tooluse_agents', 'tooluse_tui', 'torch', 'vllm', 'transformers')}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
    offenders = [
        str(path.relative_to(ROOT))
        for path in (ROOT / "tooluse_gym").rglob("*.py")
        if re.search(r"^\s*(from|import)\s+tooluse_(agents|tui)\b", path.read_text(encoding="utf-8"), re.MULTILINE)
    ]
    assert offenders == []


def test_loading_a_training_config_imports_no_torch():
    config = Path(__file__).resolve().parents[2] / "agents" / "train" / "grpo" / "configs" / "cpu_curriculum.yaml"
    code = (
        "import sys; from tooluse_agents.train.grpo.config import load_config; "
        f"c = load_config({str(config)!r}, ['policy.model=tiny-random']); "
        "assert c.protocol.system_prompt == 'strong' and c.update.lr > 0; "
        "print([m for m in ('torch', 'vllm', 'transformers') if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_moved_adapters_name_their_new_home():
    import pytest

    with pytest.raises(ImportError, match=r"tooluse_agents\.integrations import trl"):
        from tooluse_gym.integrations import trl  # noqa: F401


def test_an_env_id_with_its_module_needs_no_import():
    """Gymnasium 1.x imports the module named before the colon (its entry-point group is gone since 1.0)."""
    code = (
        "import sys, gymnasium as gym\n"
        "env = gym.make('tooluse_gym:ToolUse-MultiTurn-v0', category='base')\n"
        "obs, info = env.reset(seed=0)\n"
        "print(info['protocol']['env_id'], [m for m in ('torch', 'vllm', 'transformers') if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd="/")
    assert out.stdout.strip() == "ToolUse-MultiTurn-v0 []"
