"""Config loading, overrides and the shipped example configs."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tooluse_agents.cli.config_loader import from_dict
from tooluse_agents.cli.train import main
from tooluse_agents.train.grpo.config import TrainConfig, dump_config, load_config

CONFIGS = sorted((Path(__file__).resolve().parents[4] / "agents" / "train" / "grpo" / "configs").glob("*.yaml"))


def test_overrides_are_typed_and_round_trip():
    config = load_config(None, ["update.lr=1e-5", "grpo.update_size=4", "policy.lora={r: 8}", "heldout=null"])
    assert config.update.lr == 1e-5 and isinstance(config.update.lr, float)
    assert config.grpo.update_size == 4 and config.policy.lora.r == 8 and config.heldout is None
    assert from_dict(TrainConfig, yaml.safe_load(dump_config(config))) == config


@pytest.mark.parametrize("bad", ["grpo.gruop_size=4", "grpo.update_size=99", "filter.k=0", "rollout.engine=tgi"])
def test_bad_values_are_refused(bad):
    with pytest.raises(ValueError):
        load_config(None, [bad])


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.stem)
def test_example_configs_load(path, capsys):
    assert main([str(path), "--print-config"]) == 0
    config = from_dict(TrainConfig, yaml.safe_load(capsys.readouterr().out))
    assert config.grpo.update_size <= config.grpo.group_size


def test_paper_defaults():
    config = TrainConfig()
    assert (config.update.clip_low, config.update.clip_high, config.update.lr) == (0.2, 0.28, 1e-6)
    assert config.update.kl_coef == 0 and config.update.entropy_coef == 0
    assert config.grpo.mode == "next_turn" and config.filter.k == 1 and not config.filter.skip_all_wrong


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("grpo.group_size=four", "grpo.group_size: expected int, got 'four'"),
        ("grpo.update_size=2.5", "grpo.update_size: expected int or null, got 2.5"),
        ("seed=true", "seed: expected int, got True"),
        ("run_dir=5", "run_dir: expected str, got 5"),
        ("update.lr=fast", "update.lr: expected float, got 'fast'"),
        ("update.betas=[0.9]", "update.betas: expected list of 2 (float, float), got [0.9]"),
        ("update.betas=[0.9, x]", "update.betas[1]: expected float, got 'x'"),
        ("filter.enabled=sometimes", "filter.enabled: expected bool, got 'sometimes'"),
        ("policy.lora={r: x}", "policy.lora.r: expected int, got 'x'"),
        ("policy.lora=5", "policy.lora: expected LoraSettings settings or null, got 5"),
        ("tasks.task_ids=[a, 1]", "tasks.task_ids[1]: expected str, got 1"),
        ("protocol.strict_tools=maybe", "protocol.strict_tools: expected bool, got 'maybe'"),
        ("protocol=null", "protocol: expected Knobs settings, got None"),
        ("grpo=3", "grpo: expected GRPOConfig settings, got 3"),
        ("grpo.group_size=0", "grpo: group_size and prompts_per_step must be >= 1"),
        ("grpo.gruop_size=4", "unknown grpo (GRPOConfig) keys: ['gruop_size']"),
        ("policy.lora={r:", "override 'policy.lora={r:': its value is not YAML"),
    ],
)
def test_a_value_of_the_wrong_type_is_refused_naming_its_dotted_key(override, message, capsys):
    with pytest.raises(ValueError) as caught:
        load_config(None, [override])
    assert str(caught.value).startswith(message)
    assert main([str(CONFIGS[0]), override, "--print-config"]) == 2
    assert capsys.readouterr().err.startswith(f"tooluse train: {message}")


def test_values_of_the_declared_types_load_as_the_fields_hold_them():
    config = load_config(
        None, ["update.lr=1", "update.betas=[0.9, 1]", "tasks.task_ids=[a, b]", "protocol.tokenizer=t"]
    )
    assert config.update.lr == 1.0 and isinstance(config.update.lr, float) and config.update.betas == (0.9, 1.0)
    assert config.tasks.task_ids == ("a", "b") and config.protocol.tokenizer == "t"
    for path in CONFIGS:  # the shipped configs and their round trip through config.yaml hold only the declared types
        config = load_config(path)
        assert from_dict(TrainConfig, yaml.safe_load(dump_config(config))) == config
