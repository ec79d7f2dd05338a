"""The tool-backend registry: backend name -> class, function docs and hooks.

The eight BFCL simulators are registered on first use (importing `bfcl_eval` only then).
Users add their own classes with `register_tools(name, cls)` or through the
``tooluse_gym.tools`` entry-point group (entry-point name = backend name, value = the class).

A backend class has a no-argument constructor and public methods (the functions a model may
call). A stateful backend receives its initial state through ``load_state(state)`` or, like
BFCL's simulators, ``_load_scenario(state, long_context=False)``; its state, as the checker
compares it, is its public instance attributes. Function docs come from a docs file (a JSON
list or one JSON doc per line, in BFCL's format), a list of docs, or the methods' type hints
and Google-style docstrings.
"""

from __future__ import annotations

import inspect
import json
import re
import threading
import types
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from tooluse_gym.tools.binding import STATE_LOADER, public_methods
from tooluse_gym.tools.runtime import BackendHooks

ENTRY_POINT_GROUP = "tooluse_gym.tools"
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class ToolBackend:
    """One registered backend.

    Attributes:
        name: Registry name, used by scenarios (``tools: {MathAPI: {}}``).
        cls: The class instantiated per episode.
        docs: Function docs (BFCL format: name, description, parameters) of its public methods.
        stateless: True when the class takes no initial state.
        hooks: Adjustments the runtime applies to this backend (see `BackendHooks`).
        source: ``bfcl``, ``entry_point`` or ``user``.
    """

    name: str
    cls: type
    docs: tuple[Mapping[str, Any], ...]
    stateless: bool
    hooks: BackendHooks | None = None
    source: str = "user"

    def function_names(self) -> tuple[str, ...]:
        """The names of its functions, in `docs` order."""
        return tuple(doc["name"] for doc in self.docs)


_registry: dict[str, ToolBackend] = {}
_lock = threading.Lock()
_defaults_loaded = False


def register_tools(
    name: str,
    cls: type,
    *,
    docs: str | Path | Sequence[Mapping[str, Any]] | None = None,
    overwrite: bool = False,
) -> ToolBackend:
    """Register a tool backend class under `name` and return its entry.

    Args:
        name: Registry name (an identifier).
        cls: Class with a no-argument constructor; its public methods are the functions.
        docs: A docs file (JSON list or JSON lines), a list of docs, or None to derive them
            from type hints and docstrings.
        overwrite: Replace an existing registration of the same name.
    """
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValueError(f"backend name must be an identifier, got {name!r}")
    if not isinstance(cls, type):
        raise TypeError(f"register_tools({name!r}, ...) needs a class, got {type(cls).__name__}")
    _load_defaults()
    backend = _make_backend(name, cls, docs, source="user")
    with _lock:
        if name in _registry and not overwrite:
            known = _registry[name].source
            raise ValueError(f"tool backend {name!r} is already registered ({known}); pass overwrite=True")
        _registry[name] = backend
    return backend


def unregister_tools(name: str) -> None:
    """Remove a user registration (BFCL simulators cannot be removed)."""
    with _lock:
        backend = _registry.get(name)
        if backend is None:
            raise KeyError(f"tool backend {name!r} is not registered")
        if backend.source == "bfcl":
            raise ValueError(f"{name!r} is a BFCL simulator and cannot be unregistered")
        del _registry[name]


def get_backend(name: str) -> ToolBackend:
    """The registered backend `name`; raises KeyError listing the known names."""
    _load_defaults()
    try:
        return _registry[name]
    except KeyError:
        raise KeyError(f"unknown tool backend {name!r}; registered: {', '.join(sorted(_registry))}") from None


def combined_hooks(backends: Sequence[ToolBackend]) -> BackendHooks:
    """One `BackendHooks` that routes each backend (and each of its functions) to that backend's hooks."""
    by_backend = {b.name: b.hooks for b in backends if b.hooks is not None}
    by_function = {name: b.hooks for b in backends if b.hooks is not None for name in b.function_names()}

    def isolate(backend: str, instance: Any, long_context: bool) -> None:
        hooks = by_backend.get(backend)
        if hooks is not None and hooks.isolate is not None:
            hooks.isolate(backend, instance, long_context)

    def guard(backend: str, function: str, kwargs: Mapping[str, Any]) -> str | None:
        hooks = by_backend.get(backend)
        return hooks.guard(backend, function, kwargs) if hooks is not None and hooks.guard is not None else None

    def validation_doc(doc: Mapping[str, Any]) -> Mapping[str, Any]:
        name = doc.get("name")
        hooks = by_function.get(name) if isinstance(name, str) else None
        return hooks.validation_doc(doc) if hooks is not None and hooks.validation_doc is not None else doc

    return BackendHooks(isolate=isolate, guard=guard, validation_doc=validation_doc)


def _load_defaults() -> None:
    global _defaults_loaded
    if _defaults_loaded:
        return
    with _lock:
        if _defaults_loaded:
            return
        from tooluse_gym.tasks import bfcl

        stateless = bfcl.stateless_backends()
        docs = bfcl.function_docs()
        for name, cls in bfcl.backend_classes().items():
            _registry[name] = ToolBackend(name, cls, docs[name], name in stateless, bfcl.HOOKS, source="bfcl")
        for entry in metadata.entry_points(group=ENTRY_POINT_GROUP):
            if entry.name not in _registry:
                _registry[entry.name] = _make_backend(entry.name, entry.load(), None, source="entry_point")
        _defaults_loaded = True


def _make_backend(name: str, cls: type, docs: Any, *, source: str) -> ToolBackend:
    methods = public_methods(cls)
    loaded: tuple[Mapping[str, Any], ...]
    if docs is None:
        loaded = tuple(derive_doc(getattr(cls, m), m) for m in methods)
    elif isinstance(docs, (str, Path)):
        loaded = load_docs_file(Path(docs))
    else:
        loaded = tuple(dict(d) for d in docs)
    for doc in loaded:
        if not isinstance(doc, Mapping) or not isinstance(doc.get("name"), str):
            raise ValueError(f"backend {name!r}: every doc needs a string 'name', got {doc!r:.80}")
        if doc["name"] not in methods:
            raise ValueError(f"backend {name!r}: doc for {doc['name']!r}, not a public method of {cls.__name__}")
    stateless = not (hasattr(cls, STATE_LOADER) or hasattr(cls, "_load_scenario"))
    return ToolBackend(name, cls, loaded, stateless, None, source=source)


def load_docs_file(path: Path) -> tuple[Mapping[str, Any], ...]:
    """Docs from a JSON list or a JSON-lines file."""
    text = path.read_text(encoding="utf-8")
    stripped = text.lstrip()
    if stripped.startswith("["):
        docs = json.loads(text)
    else:
        docs = [json.loads(line) for line in text.splitlines() if line.strip()]
    return tuple(docs)


_SIMPLE_TYPES = {str: "string", int: "integer", float: "float", bool: "boolean", dict: "dict", list: "array"}


def _json_type(annotation: Any) -> dict[str, Any]:
    """BFCL-style parameter type for a Python annotation (``any`` when it cannot be expressed)."""
    origin = typing.get_origin(annotation)
    if annotation in _SIMPLE_TYPES:
        return {"type": _SIMPLE_TYPES[annotation]}
    if origin in (list, tuple, Sequence):
        args = [a for a in typing.get_args(annotation) if a is not Ellipsis]
        spec: dict[str, Any] = {"type": "array"}
        if len(args) == 1:
            spec["items"] = _json_type(args[0])
        return spec
    if origin in (dict, Mapping):
        return {"type": "dict"}
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(args) == 1:
            return _json_type(args[0])
    if origin is typing.Literal:
        values = list(typing.get_args(annotation))
        kinds = {type(v) for v in values}
        spec = _json_type(kinds.pop()) if len(kinds) == 1 else {"type": "any"}
        return {**spec, "enum": values}
    return {"type": "any"}


_SECTIONS = ("args", "arguments", "parameters", "returns", "raises", "yields", "examples", "example")


def _docstring_sections(doc: str) -> tuple[str, dict[str, str]]:
    """(description, {parameter: description}) from a Google-style docstring."""
    lines = inspect.cleandoc(doc).splitlines() if doc else []
    description: list[str] = []
    params: dict[str, str] = {}
    section = None
    current = None
    for line in lines:
        header = line.strip().rstrip(":").lower()
        if line and not line.startswith(" ") and line.rstrip().endswith(":") and header in _SECTIONS:
            section = header
            continue
        if section is None:
            description.append(line)
        elif section in ("args", "arguments", "parameters"):
            match = re.match(r"^\s+(\w+)(?:\s*\([^)]*\))?:\s*(.*)$", line)
            if match and line.startswith("    ") and not line.startswith("        "):
                current = match.group(1)
                params[current] = match.group(2).strip()
            elif current and line.strip():
                params[current] = (params[current] + " " + line.strip()).strip()
    text = " ".join(part.strip() for part in "\n".join(description).strip().split("\n\n")[0].splitlines())
    return text, params


def derive_doc(function: Any, name: str) -> dict[str, Any]:
    """A BFCL-format doc from a method's signature, type hints and Google-style docstring."""
    signature = inspect.signature(function)
    try:
        hints = typing.get_type_hints(function)
    except Exception:
        hints = {}
    description, param_docs = _docstring_sections(inspect.getdoc(function) or "")
    properties: dict[str, Any] = {}
    required: list[str] = []
    for pname, param in signature.parameters.items():
        if pname == "self" or param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        spec = _json_type(hints.get(pname, Any))
        spec["description"] = param_docs.get(pname, "")
        if param.default is inspect.Parameter.empty:
            required.append(pname)
        elif isinstance(param.default, (str, int, float, bool, type(None))):
            spec["default"] = param.default
        properties[pname] = spec
    return {
        "name": name,
        "description": description or name,
        "parameters": {"type": "dict", "properties": properties, "required": required},
    }
