"""Config loading, overrides and the shipped example configs."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tooluse_agents.grpo.cli import main
from tooluse_agents.grpo.config import TrainConfig, dump_config, from_dict, load_config

CONFIGS = sorted((Path(__file__).resolve().parents[2] / "agents" / "grpo" / "configs").glob("*.yaml"))


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
