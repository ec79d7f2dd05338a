"""Command-line flags for the knobs, generated from `tooluse_gym.envs.knobs.Knobs`: one per knob.

Every flag defaults to unset (None), so a command resolves the knobs it was given over its own
defaults (an env id's `ENV_DEFAULTS`, or the training protocol) with `given_knobs`:

    add_knob_flags(parser)
    knobs = env_defaults(env_id).with_defaults(**given_knobs(parser.parse_args()))
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Collection
from typing import Any

from tooluse_gym.envs.knobs import CHOICES, ENV_DEFAULTS, Knobs, knob_docs
from tooluse_gym.prompts import SYSTEM_PROMPTS

SWEPT = ("template", "reasoning", "tool_format", "tool_results", "system_prompt", "decoder", "prompt_format")
"""The knobs `tooluse eval sweep` takes several values of, in the order its folders are named by (``prompt_format``
also takes ``all``: BFCL's 26 configurations)."""

__all__ = ["SWEPT", "add_knob_flags", "flag", "given_knobs", "varies_by_env_id"]


def flag(knob: str) -> str:
    """A knob's flag: ``--tool-format`` for ``tool_format``."""
    return "--" + knob.replace("_", "-")


def varies_by_env_id(knob: str) -> bool:
    """Whether the env ids' defaults (`ENV_DEFAULTS`) differ for this knob (``decoder``)."""
    return len({repr(getattr(d, knob)) for d in ENV_DEFAULTS.values()}) > 1


def _default_note(knob: str, defaults: Knobs | None) -> str:
    if defaults is not None:
        return f"default: {getattr(defaults, knob)}"
    values = {env_id: getattr(d, knob) for env_id, d in ENV_DEFAULTS.items()}
    if not varies_by_env_id(knob):
        return f"default: {next(iter(values.values()))}"
    return "default: the env id's (" + ", ".join(f"{v} for {i}" for i, v in values.items()) + ")"


def add_knob_flags(
    parser: argparse._ActionsContainer, *, defaults: Knobs | None = None, several: Collection[str] = ()
) -> None:
    """Add one flag per knob (`Knobs` field), each unset (None) unless given.

    A knob with fixed values takes only those; ``bool`` knobs take ``--knob`` / ``--no-knob``;
    ``int`` knobs an integer; the rest text.

    Args:
        parser: The parser (or argument group) to add the flags to.
        defaults: What an unset knob becomes, for the help text (None: the env id's defaults).
        several: Knobs that take several values (``nargs="+"``): a sweep's grid.
    """
    docs = knob_docs()
    for field in dataclasses.fields(Knobs):
        name, kind = field.name, str(field.type)
        note = _default_note(name, defaults)
        text = docs.get(name, "").replace("``", "`").replace("%", "%%")
        kwargs: dict[str, Any] = {"default": None, "help": f"{text} ({note})"}
        if kind.startswith("bool"):
            kwargs["action"] = argparse.BooleanOptionalAction
        else:
            kwargs["type"] = int if kind.startswith("int") else str
            if name in CHOICES:
                kwargs["choices"] = CHOICES[name]
            elif name == "system_prompt":
                kwargs["metavar"] = "{" + ",".join(SYSTEM_PROMPTS) + ",TEXT}"
            if name in several:
                kwargs["nargs"] = "+"
        parser.add_argument(flag(name), **kwargs)


def given_knobs(args: argparse.Namespace, *, exclude: Collection[str] = ()) -> dict[str, Any]:
    """The knobs the command line set (not None), name -> value, in `Knobs` order; `exclude` left out."""
    return {k: getattr(args, k) for k in Knobs.names() if k not in exclude and getattr(args, k, None) is not None}
