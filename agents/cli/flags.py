"""Command-line flags generated from a config dataclass: one per field, named, typed and documented by it.

A command describes its settings once, as the frozen dataclass the one config loader builds
(`tooluse_agents.cli.config_loader.load`), and gets its flags from it:

    parser = argparse.ArgumentParser(prog="tooluse sft", formatter_class=DefaultsHelpFormatter)
    add_config_source(parser, "SFTConfig", examples="epochs=2, protocol.template=context")
    add_config_flags(parser, SFTConfig, skip=("lora",), knobs={"defaults": TRAIN_PROTOCOL})
    args = parser.parse_args(argv)
    config = load(SFTConfig, args.config, args.overrides, given=given_config(args))

Each field ``field_name`` becomes ``--field-name`` (dest ``field_name``), its type from the resolved
annotation: ``int``, ``float``, ``str`` and ``Path`` take one value, ``bool`` is ``--x`` / ``--no-x``,
``X | None`` takes an ``X``, ``tuple[X, ...]`` one or more. Its help is the field's entry in the
class docstring's google-style ``Attributes:`` section, and its default the field's. A field whose
type is a dataclass is flattened into its own fields' flags when named in ``flatten``
(``EvalConfig.sampling``: ``--temperature``, ``--top-p``, ``--max-tokens``); a `Knobs` field gets the
knob flags (`tooluse_gym.envs.flags.add_knob_flags`) when ``knobs`` is given. What a field needs
beyond that (choices, metavar, required, another default, dest, help, a positional name) is one
entry of ``flags``.

The flags remember being given, so the values a command line gave (`given_config`) win over the
config file even when they equal the default, and a flag left out leaves the file's value.

The parsers stay plain argparse ones, built by this small generator rather than by a library that
owns parsing (tyro, say): `--help`, the generated command-line reference and the ``KEY=VALUE``
items all read argparse parsers, and merging a file, the flags and the overrides stays the one
loader's job.
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import re
import types
import typing
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path
from typing import Any

from tooluse_gym.envs.flags import add_knob_flags, given_knobs
from tooluse_gym.envs.knobs import Knobs

__all__ = [
    "DefaultsHelpFormatter",
    "add_config_flags",
    "add_config_source",
    "attribute_docs",
    "given_config",
]

_GIVEN = "_given_config_flags"
"""The namespace attribute where the generated flags note that they were given: dotted key -> dest."""
_KNOBS = "_given_config_knobs"
"""The namespace attribute naming the config field the knob flags set (``protocol``), when there are some."""


class DefaultsHelpFormatter(argparse.RawDescriptionHelpFormatter):
    """`--help` that shows each option's default after its text, unless the text says it or there is none.

    None, False and a suppressed default show nothing (an unset option); a list shows its items.
    """

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        default = action.default
        if (
            not action.option_strings
            or "default" in text
            or any(default is v for v in (None, False, argparse.SUPPRESS))
        ):
            return text
        shown = " ".join(map(str, default)) if isinstance(default, (list, tuple)) else str(default)
        return f"{text} (default: {shown.replace('%', '%%')})".lstrip()


def _note_given(namespace: argparse.Namespace, key: str, dest: str) -> None:
    given = dict(getattr(namespace, _GIVEN, None) or {})
    given[key] = dest
    setattr(namespace, _GIVEN, given)


class _Store(argparse.Action):
    """Store the value (or ``const``, for a flag that takes none) and note that the flag was given."""

    def __init__(self, option_strings: Sequence[str], dest: str, *, key: str, **kwargs: Any) -> None:
        self.key = key
        super().__init__(option_strings, dest, **kwargs)

    def __call__(
        self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any, option: str | None = None
    ) -> None:
        setattr(namespace, self.dest, self.const if self.nargs == 0 else values)
        _note_given(namespace, self.key, self.dest)


class _Switch(argparse.BooleanOptionalAction):
    """``--x`` / ``--no-x`` that notes that it was given."""

    def __init__(self, option_strings: Sequence[str], dest: str, *, key: str, **kwargs: Any) -> None:
        self.key = key
        super().__init__(option_strings, dest, **kwargs)

    def __call__(
        self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any, option: str | None = None
    ) -> None:
        super().__call__(parser, namespace, values, option)
        _note_given(namespace, self.key, self.dest)


def attribute_docs(cls: type) -> dict[str, str]:
    """A class's google-style ``Attributes:`` entries, name -> text on one line (continuation lines joined)."""
    lines = inspect.cleandoc(cls.__doc__ or "").splitlines()
    docs: dict[str, str] = {}
    inside, indent, name = False, 0, ""
    for line in lines:
        if not inside:
            inside = line.strip() == "Attributes:"
            continue
        if line.strip() and not line.startswith(" "):  # the next section, or the end of this one
            break
        depth = len(line) - len(line.lstrip())
        entry = re.match(r"\s+(\w+)(?: \([^)]*\))?: (.*)", line)
        if entry and (not indent or depth == indent):
            indent, name = depth, entry.group(1)
            docs[name] = entry.group(2)
        elif name and line.strip():
            docs[name] += " " + line.strip()
    return {k: " ".join(v.split()) for k, v in docs.items()}


def _help_text(doc: str) -> str:
    """A docstring entry as a flag's help: code in single backticks, no final period, a lower-case first word."""
    text = doc.replace("``", "`").rstrip(".").replace("%", "%%")
    first = text.split(" ", 1)[0]
    if first[1:].islower() and first.isalpha():  # "Sampling" -> "sampling", but not "GPUs" or "AdamW"
        text = text[0].lower() + text[1:]
    return text


def _optional(hint: Any) -> Any:
    """`X` of ``X | None``; `hint` itself otherwise."""
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        options = [a for a in typing.get_args(hint) if a is not type(None)]
        if len(options) == 1:
            return options[0]
    return hint


def _default(field: dataclasses.Field[Any]) -> Any:
    if field.default is not dataclasses.MISSING:
        value = field.default
    elif field.default_factory is not dataclasses.MISSING:
        value = field.default_factory()
    else:
        return None
    return list(value) if isinstance(value, tuple) else value


def add_config_flags(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup,
    cls: type,
    *,
    flags: Mapping[str, Mapping[str, Any]] | None = None,
    flatten: Collection[str] = (),
    skip: Collection[str] = (),
    knobs: Mapping[str, Any] | None = None,
) -> None:
    """Add one flag per field of the dataclass `cls`, in field order.

    Args:
        parser: The parser (or argument group) to add the flags to.
        cls: The config dataclass.
        flags: Per field (a flattened one by its own name): argparse keyword arguments that replace
            the generated ones (``choices``, ``metavar``, ``required``, ``default``, ``dest``, ``help``;
            ``const`` makes a flag that takes no value and stores it), and ``name``: the option string
            instead of ``--field-name``, or a positional's name.
        flatten: Dataclass-typed fields whose own fields become flags (their keys dotted: ``sampling.top_p``).
        skip: Fields that get no flag (a flattened one's by its own name).
        knobs: `add_knob_flags`' keyword arguments for a `Knobs` field (None: no knob flags).

    Raises:
        TypeError: A field of a type with no flag form that is not in `skip`.
    """
    _add(parser, cls, flags or {}, flatten, skip, knobs, prefix="")


def _add(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup,
    cls: type,
    flags: Mapping[str, Mapping[str, Any]],
    flatten: Collection[str],
    skip: Collection[str],
    knobs: Mapping[str, Any] | None,
    prefix: str,
) -> None:
    hints, docs = typing.get_type_hints(cls), attribute_docs(cls)
    for field in dataclasses.fields(cls):
        name, hint = field.name, _optional(hints[field.name])
        if name in skip or not field.init:
            continue
        if hint is Knobs:
            if knobs is not None:
                add_knob_flags(parser.add_argument_group("protocol knobs"), **knobs)
                parser.set_defaults(**{_KNOBS: prefix + name})
            continue
        if isinstance(hint, type) and dataclasses.is_dataclass(hint):
            if name not in flatten:
                raise TypeError(f"{cls.__name__}.{name} ({hint.__name__} settings): flatten or skip it")
            _add(parser, hint, flags, flatten, skip, knobs, prefix=f"{prefix}{name}.")
            continue
        kwargs = {"help": _help_text(docs.get(name, "")), **_kwargs(cls, name, hint), "default": _default(field)}
        kwargs.update(flags.get(name, {}))
        option = kwargs.pop("name", "--" + name.replace("_", "-"))
        required = field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING
        if required and option.startswith("-") and not kwargs.get("required") and "help" not in flags.get(name, {}):
            kwargs["help"] = "required, here or in --config | " + kwargs["help"]
        if "const" in kwargs:
            kwargs.update(nargs=0, action=_Store)
            kwargs.pop("type", None)
        if not option.startswith("-"):  # a positional: its name is its dest, and it is always required
            kwargs.pop("dest", None)
            kwargs.pop("required", None)
        elif "dest" not in kwargs:
            kwargs["dest"] = name
        parser.add_argument(option, key=prefix + name, **kwargs)


def _kwargs(cls: type, name: str, hint: Any) -> dict[str, Any]:
    """The generated argparse keyword arguments of field `name` of type `hint` (X of an ``X | None``)."""
    if hint is bool:
        return {"action": _Switch}
    if typing.get_origin(hint) is tuple:
        args = typing.get_args(hint)
        if len(args) != 2 or args[1] is not Ellipsis or args[0] not in (int, float, str, Path):
            raise TypeError(f"{cls.__name__}.{name}: {hint} has no flag form (tuple[int, ...] and the like do)")
        return {"action": _Store, "nargs": "+", "type": args[0]}
    if hint in (int, float, Path):
        return {"action": _Store, "type": hint}
    if hint is str:
        return {"action": _Store}
    raise TypeError(f"{cls.__name__}.{name}: {hint} has no flag form; skip it")


def add_config_source(
    parser: argparse.ArgumentParser,
    config: str,
    *,
    examples: str,
    keys: str | None = None,
    positional: bool = False,
    flags: bool = True,
) -> None:
    """Add where a config comes from: a YAML file (``--config FILE``, or a positional ``CONFIG``) and ``KEY=VALUE``.

    The namespace gets ``config`` (the file, None when left out) and ``overrides`` (the items), as
    `tooluse_agents.cli.config_loader.load` takes them.

    Args:
        parser: The command's parser.
        config: The config class's name, for the help (``EvalConfig``).
        examples: Overrides to show (``limit=2, seeds=[0,1]``).
        keys: The file's keys to show (``agent, model, protocol: {...}``), or a note on where files are.
        positional: The file is a required positional ``CONFIG`` (``tooluse train CONFIG``), not ``--config``.
        flags: Whether the command has flags that set the config's values (then they win over the file).
    """
    source = "CONFIG" if positional else "--config"
    text = f"a YAML file of {config} settings" + (f" ({keys})" if keys else "")
    if flags:
        text += "; the flags given win over it, and a flag left out leaves its value"
    if positional:  # before the overrides: the first positional item is the file
        parser.add_argument("config", metavar="CONFIG", type=Path, help=text)
    parser.add_argument(
        "overrides",
        nargs="*",
        metavar="KEY=VALUE",
        help=f"{config} settings as dotted key=value, the value read as YAML ({examples}); they win over {source}"
        + (" and the flags" if flags else ""),
    )
    if not positional:
        parser.add_argument("--config", type=Path, metavar="FILE", help=text)


def given_config(args: argparse.Namespace, *, exclude: Collection[str] = ()) -> dict[str, Any]:
    """The config values the command line gave, nested by section as `config_loader.load`'s ``given`` takes them.

    A generated flag counts when it was given, even at its default; a knob when it is set (not None).

    Args:
        args: The parsed command line.
        exclude: Fields and knobs to leave out, by name (a sweep's grid of knobs, say).
    """
    given: dict[str, Any] = {}
    for key, dest in (getattr(args, _GIVEN, None) or {}).items():
        if key.rsplit(".", 1)[-1] not in exclude:
            _set(given, key, getattr(args, dest))
    section: str | None = getattr(args, _KNOBS, None)
    knobs = given_knobs(args, exclude=exclude) if section else {}
    if section and knobs:
        _set(given, section, knobs)
    return given


def _set(data: dict[str, Any], key: str, value: Any) -> None:
    """Set the dotted `key` in the nested `data`."""
    *sections, name = key.split(".")
    for section in sections:
        data = data.setdefault(section, {})
    data[name] = value
