"""Function docs (BFCL format) -> JSON Schema validators and OpenAI tool schemas.

BFCL docs use their own type names (``dict``, ``float``, ``tuple``, ``any``); these are
mapped to JSON Schema (``object``, ``number``, ``array``, no constraint). Parameters that
are optional and default to ``None`` also accept ``null``.

`jsonschema` is the authority on validity and writes the error messages. Because it costs
~0.2 ms per call, schemas made only of ``type``/``properties``/``required``/``items``/
``additionalProperties: false`` are first checked by a compiled predicate that uses
jsonschema's own type checker; jsonschema runs only when that predicate rejects (to
explain why) or when a schema uses any other keyword.
"""

from __future__ import annotations

import numbers
from collections.abc import Callable, Mapping
from typing import Any, Generic, TypeVar

import jsonschema

_TYPE_MAP = {
    "dict": "object",
    "float": "number",
    "tuple": "array",
    "int": "integer",
    "bool": "boolean",
    "str": "string",
    "list": "array",
}
_KEEP = (
    "properties",
    "items",
    "required",
    "enum",
    "minimum",
    "maximum",
    "minItems",
    "maxItems",
    "additionalProperties",
    "description",
    "default",
)
_FAST_KEYWORDS = frozenset({"type", "properties", "required", "items", "additionalProperties"})

# BFCL ground truth passes tuples where docs say "array"; accept both list and tuple.
ArgumentValidator = jsonschema.validators.extend(
    jsonschema.Draft202012Validator,
    type_checker=jsonschema.Draft202012Validator.TYPE_CHECKER.redefine(
        "array", lambda _checker, value: isinstance(value, (list, tuple))
    ),
)


def _is_number(value: Any) -> bool:
    return isinstance(value, numbers.Number) and not isinstance(value, bool)


# The same semantics as ArgumentValidator's type checker (draft 2020-12 with tuple arrays),
# as plain predicates; tests/tooluse_gym/tools/test_schemas.py checks that they agree.
FAST_TYPES: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: (isinstance(v, int) and not isinstance(v, bool)) or (isinstance(v, float) and v.is_integer()),
    "number": _is_number,
    "boolean": lambda v: isinstance(v, bool),
    "array": lambda v: isinstance(v, (list, tuple)),
    "object": lambda v: isinstance(v, dict),
    "null": lambda v: v is None,
}

V = TypeVar("V")


class DocCache(Generic[V]):
    """Values derived from function docs, shared across tasks that carry equal docs."""

    def __init__(self, build: Callable[[Mapping[str, Any]], V], max_names: int = 8192):
        self._build = build
        self._max_names = max_names
        self._entries: dict[str, list[tuple[Mapping[str, Any], V]]] = {}
        self._by_id: dict[int, tuple[Mapping[str, Any], V]] = {}

    def get(self, doc: Mapping[str, Any]) -> V:
        """The value built from `doc`, reused for an equal doc seen before."""
        hit = self._by_id.get(id(doc))
        if hit is not None and hit[0] is doc:
            return hit[1]
        if len(self._by_id) >= 16 * self._max_names:
            self._by_id.clear()
        value = self._get_by_name(doc)
        self._by_id[id(doc)] = (doc, value)  # holding `doc` keeps its id from being reused
        return value

    def _get_by_name(self, doc: Mapping[str, Any]) -> V:
        entries = self._entries.get(doc["name"])
        if entries is None:
            if len(self._entries) >= self._max_names:
                self._entries.clear()
            entries = self._entries[doc["name"]] = []
        for known, value in entries:
            if known is doc or known == doc:
                return value
        value = self._build(doc)
        entries.append((doc, value))
        del entries[:-8]
        return value


def to_json_schema(spec: Mapping[str, Any], *, descriptions: bool = True) -> dict[str, Any]:
    """Convert one BFCL parameter spec (recursively) to JSON Schema."""
    out: dict[str, Any] = {}
    kind = spec.get("type")
    if isinstance(kind, str) and kind != "any":
        out["type"] = _TYPE_MAP.get(kind, kind)
    for key in _KEEP:
        if key not in spec or (key in ("description", "default") and not descriptions):
            continue
        value = spec[key]
        if key == "properties":
            value = {name: to_json_schema(sub, descriptions=descriptions) for name, sub in value.items()}
        elif key == "items" and isinstance(value, Mapping):
            value = to_json_schema(value, descriptions=descriptions)
        out[key] = value
    return out


def _build_openai_tool(doc: Mapping[str, Any]) -> dict[str, Any]:
    params = to_json_schema(doc.get("parameters") or {"type": "dict", "properties": {}})
    params.setdefault("type", "object")
    params.setdefault("properties", {})
    return {
        "type": "function",
        "function": {"name": doc["name"], "description": doc.get("description", ""), "parameters": params},
    }


_TOOLS: DocCache[dict[str, Any]] = DocCache(_build_openai_tool)


def openai_tool(doc: Mapping[str, Any]) -> dict[str, Any]:
    """An OpenAI chat-completions tool schema for one BFCL function doc (shared; do not mutate)."""
    return _TOOLS.get(doc)


def arguments_schema(doc: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON Schema that a call's keyword arguments must satisfy."""
    params = doc.get("parameters") or {}
    schema = to_json_schema(params, descriptions=False)
    schema["type"] = "object"
    schema["additionalProperties"] = False
    schema.setdefault("properties", {})
    required = set(params.get("required", ()))
    for name, sub in params.get("properties", {}).items():
        prop = schema["properties"][name]
        if name not in required and sub.get("default", "missing") is None and "type" in prop:
            prop["type"] = [prop["type"], "null"]
    return schema


def compile_predicate(schema: Mapping[str, Any]) -> Callable[[Any], bool] | None:
    """A fast validity test equivalent to jsonschema for a keyword subset; None if unsupported."""
    if not set(schema) <= _FAST_KEYWORDS:
        return None
    kinds = schema.get("type")
    kinds = (kinds,) if isinstance(kinds, str) else tuple(kinds) if kinds is not None else ()
    if any(k not in FAST_TYPES for k in kinds):
        return None
    type_checks = tuple(FAST_TYPES[k] for k in kinds)
    props = {}
    for name, sub in (schema.get("properties") or {}).items():
        prop_check = compile_predicate(sub)
        if prop_check is None:
            return None
        props[name] = prop_check
    items = schema.get("items")
    item_check = compile_predicate(items) if isinstance(items, Mapping) else None
    if items is not None and item_check is None:
        return None
    extra = schema.get("additionalProperties", True)
    if not isinstance(extra, bool):
        return None
    required = tuple(schema.get("required") or ())

    def check(value: Any) -> bool:
        if type_checks:
            for type_check in type_checks:
                if type_check(value):
                    break
            else:
                return False
        if isinstance(value, dict):
            for r in required:
                if r not in value:
                    return False
            for key, sub in value.items():
                prop = props.get(key)
                if prop is None:
                    if not extra:
                        return False
                elif not prop(sub):
                    return False
        if item_check is not None and isinstance(value, (list, tuple)):
            for v in value:
                if not item_check(v):
                    return False
        return True

    return check


class _CompiledArguments:
    def __init__(self, doc: Mapping[str, Any]):
        schema = arguments_schema(doc)
        ArgumentValidator.check_schema(schema)
        self.validator = ArgumentValidator(schema)
        self.fast = compile_predicate(schema)


_COMPILED: DocCache[_CompiledArguments] = DocCache(_CompiledArguments)


def validation_error(doc: Mapping[str, Any], arguments: Mapping[str, Any]) -> str | None:
    """The first problem with `arguments` for `doc`, as one readable line, or None if valid."""
    compiled = _COMPILED.get(doc)
    if compiled.fast is not None and compiled.fast(arguments if type(arguments) is dict else dict(arguments)):
        return None
    error = jsonschema.exceptions.best_match(compiled.validator.iter_errors(dict(arguments)))
    if error is None:
        return None
    where = "".join(f"[{p!r}]" for p in error.absolute_path)
    message = error.message if len(error.message) <= 300 else error.message[:300] + "..."
    return f"{'argument' + where + ': ' if where else ''}{message}"
