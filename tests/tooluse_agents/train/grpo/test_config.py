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
        ("grpo.group_size=0", "grpo.group_size must be >= 2"),
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
        None, ["update.lr=1", "update.betas=[0, 0.99]", "tasks.task_ids=[a, b]", "protocol.tokenizer=t"]
    )
    assert config.update.lr == 1.0 and isinstance(config.update.lr, float) and config.update.betas == (0.0, 0.99)
    assert config.tasks.task_ids == ("a", "b") and config.protocol.tokenizer == "t"
    for path in CONFIGS:  # the shipped configs and their round trip through config.yaml hold only the declared types
        config = load_config(path)
        assert from_dict(TrainConfig, yaml.safe_load(dump_config(config))) == config


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("update.lr=-1", "update.lr must be > 0, got -1.0"),
        ("update.lr=0", "update.lr must be > 0, got 0.0"),
        ("update.betas=[0.9, 1.5]", "update.betas[1] must be in [0, 1), got 1.5"),
        ("update.max_grad_norm=0", "update.max_grad_norm must be > 0, got 0.0"),
        ("update.weight_decay=-0.1", "update.weight_decay must be >= 0, got -0.1"),
        ("update.micro_batch_tokens=0", "update.micro_batch_tokens must be >= 1, got 0"),
        ("rollout.temperature=-0.5", "rollout.temperature must be > 0 (the loss divides the logits by it"),
        ("rollout.top_p=1.5", "rollout.top_p must be in (0, 1], got 1.5"),
        ("rollout.gpu_memory_utilization=2", "rollout.gpu_memory_utilization must be in (0, 1], got 2.0"),
        ("rollout.screen={members: 1}", "rollout.screen.members must be >= 2 (one reward is always unanimous), got 1"),
        (
            "grpo.group_size=1",
            "grpo.group_size must be >= 2 (a group's advantages compare its rollouts' rewards: it needs at least two)"
            ", got 1",
        ),
        ("eval.samples=0", "eval.samples must be >= 1, got 0"),
        ("eval.temperature=-1", "eval.temperature must be >= 0, got -1.0"),
        ("seed=-1", "seed must be >= 0, got -1"),
        ("epochs=0", "epochs must be >= 1, got 0"),
        ("tasks.limit=0", "tasks.limit must be >= 1, got 0"),
        ("policy.lora={r: 0}", "policy.lora.r must be >= 1, got 0"),
        ("policy.threads=0", "policy.threads must be >= 1, got 0"),
        ("filter.max_reward=0", "filter.max_reward must be > 0, got 0.0"),
    ],
)
def test_every_numeric_setting_is_checked_when_the_config_loads_naming_its_key_and_rule(override, message, capsys):
    """Issue 60: ``update.lr=-1`` passed --print-config and died in torch; a negative temperature was accepted."""
    with pytest.raises(ValueError) as caught:
        load_config(None, [override])
    assert str(caught.value).startswith(message)
    assert main([str(CONFIGS[0]), override, "--print-config"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"tooluse train: {message}") and len(err.splitlines()) == 1


def test_a_config_file_that_is_not_yaml_is_one_line_naming_its_line_and_column(tmp_path, capsys):
    """Issue 60: malformed YAML in a config gave a 57-line traceback."""
    bad = tmp_path / "bad.yaml"
    bad.write_text("seed: 0\ngrpo: {group_size: 4\nupdate: {lr: 1e-5}\n")
    assert main([str(bad), "--print-config"]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1
    assert err.startswith(f"tooluse train: {bad}:3:7: ") and "not valid YAML" in err
