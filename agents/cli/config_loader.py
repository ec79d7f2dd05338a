"""The one config loader: a YAML file, ``dotted.key=value`` overrides and a command's flags -> a typed dataclass.

Every command that takes a config reads it here (`tooluse eval run` and `sweep`, `tooluse train`,
`tooluse train prefilter`, `tooluse sft`, the studies): values are checked against the fields' types with
the dotted key in the error (``grpo.group_size: expected int, got 'four'``), unknown keys are refused with
the known ones, a field without a default must be given, and a nested dataclass field whose default is an
instance (e.g. `TRAIN_PROTOCOL`) takes a mapping of changes to the value it holds once the config is built:
its default, or what the class resolves that default to (`EvalConfig.protocol` becomes the env id's knobs).
Later sources win: the dataclass defaults, then the file, then the flags given, then the overrides.
"""

from __future__ import annotations

import dataclasses
import re
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import yaml

__all__ = ["apply_overrides", "dump", "from_dict", "load", "plain", "read_yaml"]

T = TypeVar("T")


def load(
    cls: type[T],
    path: str | Path | None = None,
    overrides: Sequence[str] = (),
    *,
    given: Mapping[str, Any] | None = None,
) -> T:
    """`cls` from the YAML file at `path` (if any), the `given` values (a command's flags, nested) and `overrides`."""
    data: Any = read_yaml(path) if path is not None else {}
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        raise ValueError(f"{path}: expected a mapping of {cls.__name__} settings, got {type(data).__name__}")
    merged = _merge(dict(data), given or {})
    built = from_dict(cls, apply_overrides(merged, overrides))
    return typing.cast(T, built)


def read_yaml(path: str | Path) -> Any:
    """A YAML file's data; a file that is not YAML is a `ValueError` of one line, ``FILE:LINE:COLUMN: problem``."""
    text = Path(path).read_text(encoding="utf-8")
    try:
        return yaml.safe_load(text)
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark is not None else str(path)
        problem = " ".join(str(e.problem or e.context or "cannot be read").split())
        raise ValueError(f"{where}: {problem} (the file is not valid YAML)") from None
    except yaml.YAMLError as e:
        raise ValueError(f"{path}: not valid YAML ({' '.join(str(e).split())})") from None


def dump(config: Any) -> str:
    """A config dataclass as YAML, in field order."""
    return yaml.safe_dump(plain(dataclasses.asdict(config)), sort_keys=False)


def _merge(base: dict[str, Any], top: Mapping[str, Any]) -> dict[str, Any]:
    """`top`'s values over `base`'s, mappings merged key by key."""
    for key, value in top.items():
        if isinstance(value, Mapping) and isinstance(base.get(key), Mapping):
            base[key] = _merge(dict(base[key]), value)
        else:
            base[key] = value
    return base


def from_dict(cls: type, data: Mapping[str, Any] | None, key: str = "") -> Any:
    """Build a (nested) config dataclass from plain data; unknown keys and values of the wrong type are errors.

    Every value is checked against its field's type; an error names the dotted key (`key` is
    this section's, "" at the top): ``grpo.group_size: expected int, got 'four'``. A mapping given
    for a field whose default is a dataclass instance changes what that field holds once the
    config is built (so a class that resolves its default in ``__post_init__`` sees it resolved).
    """
    if data is None:
        return None
    if not isinstance(data, Mapping):
        raise ValueError(f"{key or cls.__name__}: expected a mapping of {cls.__name__} settings, got {data!r}")
    fields = dataclasses.fields(cls)
    instances = {f.name for f in fields if dataclasses.is_dataclass(f.default)}
    changes = {k: v for k, v in data.items() if k in instances and isinstance(v, Mapping)}
    values = _values(cls, {k: v for k, v in data.items() if k not in changes}, key)
    missing = [
        f.name
        for f in fields
        if f.init
        and f.name not in data
        and f.default is dataclasses.MISSING
        and f.default_factory is dataclasses.MISSING
    ]
    if missing:
        raise ValueError(f"{_dotted(key, missing[0])}: required ({_where(key, cls)}has no default for it)")
    built = _built(key, lambda: cls(**values), cls)
    if not changes:
        return built
    changed = {k: _changed(getattr(built, k), v, _dotted(key, k)) for k, v in changes.items()}
    return _built(key, lambda: dataclasses.replace(built, **changed), cls)


def _changed(default: Any, data: Mapping[str, Any], key: str) -> Any:
    """A field's value (e.g. `TRAIN_PROTOCOL`) with the values `data` gives; unknown keys are an error."""
    values = _values(type(default), data, key)
    return _built(key, lambda: dataclasses.replace(default, **values), type(default))


def _values(cls: type, data: Mapping[str, Any], key: str) -> dict[str, Any]:
    """`data`'s values converted to `cls`' field types."""
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - names, key=str)
    if unknown:
        raise ValueError(f"unknown {_where(key, cls)}keys: {unknown}; known: {sorted(names)}")
    return {k: _convert(hints[k], v, _dotted(key, k)) for k, v in data.items()}


def _built(key: str, build: Callable[[], Any], cls: type) -> Any:
    """`build()`, its `ValueError` prefixed with the section's key (a section's own checks name only the field).

    A message that starts with one of `cls`' fields gets the dotted key (``lr must be > 0`` in
    ``update`` reads ``update.lr must be > 0``); any other gets the section's (``grpo: ...``).
    """
    try:
        return build()
    except ValueError as e:
        text = str(e)
        if not key or text.startswith((f"{key}.", f"{key}:", f"{key}[")):
            raise
        first = re.match(r"[A-Za-z_]\w*(?=[ :\[])", text)
        if first and first.group() in {f.name for f in dataclasses.fields(cls)}:
            raise ValueError(f"{key}.{text}") from e
        raise ValueError(f"{key}: {text}") from e


def _dotted(key: str, name: Any) -> str:
    return f"{key}.{name}" if key else str(name)


def _where(key: str, cls: type) -> str:
    return f"{key} ({cls.__name__}) " if key else f"{cls.__name__} "


_YAML_NAMES = {int: "int", float: "float", str: "str", bool: "bool", type(None): "null"}


def _describe(hint: Any) -> str:
    """A type as the error shows it: ``int``, ``int or null``, ``list of str``, ``GRPOConfig settings``."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_describe(a) for a in typing.get_args(hint))
    if origin is tuple:
        args = typing.get_args(hint)
        if len(args) == 2 and args[1] is Ellipsis:
            return f"list of {_describe(args[0])}"
        return f"list of {len(args)} ({', '.join(_describe(a) for a in args)})"
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return f"{hint.__name__} settings"
    return _YAML_NAMES.get(hint, getattr(hint, "__name__", str(hint)))


class _WrongType(ValueError):
    pass


def _convert(hint: Any, value: Any, key: str) -> Any:
    """`value` as a field of type `hint` holds it (tuples from lists, floats from ints); `ValueError` naming `key`."""
    try:
        return _as(hint, value, key)
    except _WrongType:
        raise ValueError(f"{key}: expected {_describe(hint)}, got {value!r}") from None


def _as(hint: Any, value: Any, key: str) -> Any:
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        options = typing.get_args(hint)
        if value is None and type(None) in options:
            return None
        for option in options:
            if option is type(None):
                continue
            try:
                return _as(option, value, key)
            except _WrongType:
                continue
        raise _WrongType
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        if not isinstance(value, Mapping):
            raise _WrongType
        return from_dict(hint, value, key)
    if origin is tuple:
        if not isinstance(value, Sequence) or isinstance(value, str):
            raise _WrongType
        args = typing.get_args(hint)
        if len(args) == 2 and args[1] is Ellipsis:
            args = (args[0],) * len(value)
        if len(args) != len(value):
            raise _WrongType
        return tuple(_convert(a, v, f"{key}[{i}]") for i, (a, v) in enumerate(zip(args, value, strict=True)))
    if hint is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        if isinstance(value, str):  # YAML reads 1e-5 (no dot) as a string
            try:
                return float(value)
            except ValueError:
                raise _WrongType from None
        raise _WrongType
    if hint is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        raise _WrongType
    if hint in (str, bool):
        if type(value) is hint:
            return value
        raise _WrongType
    return value  # a type this loader does not check (Any, say)


def apply_overrides(data: dict[str, Any], overrides: Sequence[str]) -> dict[str, Any]:
    """Set ``dotted.key=value`` overrides (values parsed as YAML) in a nested dict."""
    for item in overrides:
        if "=" not in item:
            raise ValueError(f"override {item!r} is not of the form key=value")
        key, raw = item.split("=", 1)
        node = data
        parts = key.strip().split(".")
        for part in parts[:-1]:
            if not isinstance(node.get(part), dict):
                node[part] = {}
            node = node[part]
        try:
            node[parts[-1]] = yaml.safe_load(raw)
        except yaml.YAMLError as e:
            raise ValueError(f"override {item!r}: its value is not YAML ({' '.join(str(e).split())})") from None
    return data


def plain(value: Any) -> Any:
    """Tuples as lists, recursively: what YAML and JSON write."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value
