"""What initial state a tool backend accepts: the keys its loader reads and the kind of value each takes.

A scenario gives each backend an initial state (``tools: {TwitterAPI: {username: alice}}``). The
backend's loader (``_load_scenario`` for BFCL's simulators, ``load_state`` for user classes) is
run once on an empty state that records what it asks for: each key it reads, and the default it
falls back to (``state.get("tweets", {})`` says that ``tweets`` takes a mapping). A loader that
iterates over the state or copies it accepts keys we cannot list, so its keys are not checked.
Nothing of the model's is run here; the loader is the backend's own code, as at every reset.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

_KINDS: tuple[tuple[tuple[type, ...], str], ...] = (
    ((bool,), "a boolean"),
    ((int, float), "a number"),
    ((str,), "a string"),
    ((Mapping,), "a mapping"),
    ((list, tuple, set, frozenset), "a list"),
)


_EXAMPLES = {"a boolean": "true", "a number": "3", "a string": "'text'", "a mapping": "{}", "a list": "[]"}


def value_kind(value: Any) -> str | None:
    """``a boolean``, ``a number``, ``a string``, ``a mapping``, ``a list``; ``null``; None for anything else."""
    if value is None:
        return "null"
    for types, kind in _KINDS:
        if isinstance(value, types):
            return kind
    return None


class _Recorder(dict[str, Any]):
    """An empty state that notes each key a loader reads (with the default it gives) and whether it iterates."""

    def __init__(self) -> None:
        super().__init__()
        self.reads: dict[str, Any] = {}
        self.iterated = False

    def get(self, key: Any, default: Any = None) -> Any:
        self.reads.setdefault(key, default)
        return default

    def __getitem__(self, key: Any) -> Any:
        self.reads.setdefault(key, None)
        raise KeyError(key)

    def __contains__(self, key: object) -> bool:
        if isinstance(key, str):
            self.reads.setdefault(key, None)
        return False

    def __iter__(self) -> Iterator[str]:
        self.iterated = True
        return super().__iter__()

    def keys(self):
        self.iterated = True
        return super().keys()

    def items(self):
        self.iterated = True
        return super().items()

    def values(self):
        self.iterated = True
        return super().values()


@dataclass(frozen=True)
class StateFields:
    """The initial state a backend class accepts.

    Attributes:
        kinds: Key -> the kind of value it takes (see `value_kind`), or None when not known.
        open: True when the loader's keys cannot be listed (it iterates or copies the state, or
            fails on an empty one): then any key is accepted.
    """

    kinds: Mapping[str, str | None]
    open: bool


@cache
def state_fields(cls: type) -> StateFields:
    """The keys (and value kinds) the loader of `cls` reads; see the module docstring."""
    loader = "_load_scenario" if hasattr(cls, "_load_scenario") else "load_state"
    recorder = _Recorder()
    try:
        instance = cls()
        if loader == "_load_scenario":
            instance._load_scenario(recorder, long_context=False)
        else:
            instance.load_state(recorder)
    except Exception:
        return StateFields({}, open=True)
    attributes = {k: v for k, v in vars(instance).items() if not k.startswith("_")}
    kinds: dict[str, str | None] = {}
    for key, default in recorder.reads.items():
        kind = value_kind(default if default is not None else attributes.get(key))
        kinds[key] = None if kind == "null" else kind
    return StateFields(kinds, open=recorder.iterated or not recorder.reads)


def state_problems(backend: str, cls: type, state: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """``(key, reason, hint)`` for each key of `state` that `cls` does not read or whose value has the wrong kind."""
    fields = state_fields(cls)
    known = sorted(fields.kinds)
    problems = []
    for key, value in state.items():
        if key not in fields.kinds:
            if fields.open:
                continue
            close = difflib.get_close_matches(str(key), known, n=1)
            mean = f"did you mean {close[0]!r}? " if close else ""
            problems.append((key, f"{backend} has no state key {key!r}", f"{mean}known keys: {', '.join(known)}"))
            continue
        want, got = fields.kinds[key], value_kind(value)
        if want is not None and got != want:
            reason = f"{backend}.{key} takes {want}, got {got or type(value).__name__}: {value!r:.60}"
            problems.append((key, reason, f"write it as {want}, e.g. {key}: {_EXAMPLES[want]}"))
    return problems
