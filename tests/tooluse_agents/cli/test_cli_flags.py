"""`tooluse_agents.cli.flags`: argparse flags generated from a config dataclass, and the values a line gave."""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tooluse_agents.cli.config_loader import load
from tooluse_agents.cli.flags import (
    DefaultsHelpFormatter,
    add_config_flags,
    add_config_source,
    attribute_docs,
    given_config,
)
from tooluse_gym.envs.knobs import Knobs


@dataclass(frozen=True)
class Inner:
    """Nested settings.

    Attributes:
        top_p: Nucleus sampling mass, in (0, 1].
    """

    top_p: float = 1.0


@dataclass(frozen=True, kw_only=True)
class Settings:
    """A config with one field of each kind.

    Attributes:
        name: Which one; it goes on and on
            over two lines.
        count: How many (left out: all).
        rate: Sampling rate.
        folder: Where it goes.
        flag: Whether to.
        seeds: One pass per seed.
        tags: Labels.
        inner: Inner settings.
        protocol: The knobs.
        extra: Not a flag.
    """

    name: str
    count: int | None = None
    rate: float = 0.5
    folder: Path = Path("out")
    flag: bool = True
    seeds: tuple[int, ...] = (0,)
    tags: tuple[str, ...] | None = None
    inner: Inner = field(default_factory=Inner)
    protocol: Knobs = field(default_factory=Knobs)
    extra: dict[str, int] = field(default_factory=dict)


def parser(**kwargs) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(formatter_class=DefaultsHelpFormatter)
    add_config_source(p, "Settings", examples="count=2")
    add_config_flags(p, Settings, flatten=("inner",), skip=("extra",), knobs={}, **kwargs)
    return p


def test_the_docstring_attributes_are_read_one_line_each():
    docs = attribute_docs(Settings)
    assert docs["name"] == "Which one; it goes on and on over two lines."
    assert docs["count"] == "How many (left out: all)."
    assert list(docs)[-1] == "extra"


def test_each_field_is_a_flag_of_its_type_with_its_default_and_help():
    actions = {a.dest: a for a in parser()._actions}
    assert actions["count"].type is int and actions["count"].default is None
    assert actions["rate"].type is float and actions["folder"].type is Path
    assert actions["flag"].option_strings == ["--flag", "--no-flag"]
    assert (actions["seeds"].nargs, actions["seeds"].type, actions["seeds"].default) == ("+", int, [0])
    assert actions["tags"].nargs == "+" and actions["tags"].type is str
    assert (
        actions["top_p"].option_strings == ["--top-p"] and actions["top_p"].help == "nucleus sampling mass, in (0, 1]"
    )
    assert actions["name"].help == "required, here or in --config | which one; it goes on and on over two lines"
    assert "extra" not in actions and "template" in actions  # skipped; the knobs' own flags
    text = " ".join(parser().format_help().split())
    assert "sampling rate (default: 0.5)" in text and "how many (left out: all)" in text


def test_a_flag_given_counts_even_at_its_default_and_one_left_out_does_not(tmp_path):
    args = parser().parse_intermixed_args(
        ["--name", "a", "count=3", "--rate", "0.5", "--top-p", "0.9", "--reasoning", "strip"]
    )
    assert given_config(args) == {
        "name": "a",
        "rate": 0.5,
        "inner": {"top_p": 0.9},
        "protocol": {"reasoning": "strip"},
    }
    assert args.overrides == ["count=3"] and args.config is None and args.seeds == [0]
    assert given_config(args, exclude=("rate", "reasoning")) == {"name": "a", "inner": {"top_p": 0.9}}
    path = tmp_path / "s.yaml"
    path.write_text("name: b\nrate: 0.1\nflag: false\n")
    args = parser().parse_intermixed_args(["--config", str(path), "--rate", "0.5", "count=3"])
    settings = load(Settings, args.config, args.overrides, given=given_config(args))
    assert (settings.name, settings.rate, settings.flag, settings.count) == ("b", 0.5, False, 3)
    assert given_config(parser().parse_args([])) == {}


def test_per_field_changes_replace_what_is_generated():
    flags = {
        "name": {"name": "name"},  # a positional
        "count": {"choices": (1, 2), "required": True},
        "flag": {"name": "--off", "const": False, "default": None, "help": "turn it off"},
        "rate": {"dest": "the_rate", "default": None, "metavar": "R"},
    }
    p = parser(flags=flags)
    actions = {a.dest: a for a in p._actions}
    assert actions["name"].option_strings == [] and actions["count"].required
    assert (actions["flag"].option_strings, actions["flag"].nargs, actions["flag"].help) == (
        ["--off"],
        0,
        "turn it off",
    )
    assert actions["the_rate"].metavar == "R"
    args = p.parse_args(["x", "--count", "2", "--off", "--rate", "0.2"])
    assert given_config(args) == {"name": "x", "count": 2, "flag": False, "rate": 0.2}
    assert p.parse_args(["x", "--count", "1"]).flag is None


def test_a_field_with_no_flag_form_must_be_skipped():
    with pytest.raises(TypeError, match=r"Settings\.extra"):
        add_config_flags(argparse.ArgumentParser(), Settings, flatten=("inner",))
    with pytest.raises(TypeError, match=r"Settings\.inner \(Inner settings\): flatten or skip it"):
        add_config_flags(argparse.ArgumentParser(), Settings, skip=("extra",))


def test_a_positional_config_file_comes_before_its_overrides():
    p = argparse.ArgumentParser()
    add_config_source(p, "TrainConfig", examples="seed=3", positional=True, flags=False)
    args = p.parse_intermixed_args(["c.yaml", "seed=3", "grpo.group_size=2"])
    assert (args.config, args.overrides) == (Path("c.yaml"), ["seed=3", "grpo.group_size=2"])
    assert "they win over CONFIG" in p.format_help().replace("\n", " ").replace("  ", " ")
