"""Function docs (BFCL format) -> JSON Schema validators and OpenAI tool schemas.

BFCL docs use their own type names (``dict``, ``float``, ``tuple``, ``any``); these are
mapped to JSON Schema (``object``, ``number``, ``array``, no constraint). Parameters that
are optional and default to ``None`` also accept ``null``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import lru_cache
from typing import Any

import jsonschema

_TYPE_MAP = {"dict": "object", "float": "number", "tuple": "array", "int": "integer", "bool": "boolean",
             "str": "string", "list": "array"}
_KEEP = ("properties", "items", "required", "enum", "minimum", "maximum", "minItems", "maxItems",
         "additionalProperties", "description", "default")


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


def openai_tool(doc: Mapping[str, Any]) -> dict[str, Any]:
    """An OpenAI chat-completions tool schema for one BFCL function doc."""
    params = to_json_schema(doc.get("parameters") or {"type": "dict", "properties": {}})
    params.setdefault("type", "object")
    params.setdefault("properties", {})
    return {
        "type": "function",
        "function": {"name": doc["name"], "description": doc.get("description", ""), "parameters": params},
    }


def argument_validator(doc: Mapping[str, Any]) -> jsonschema.protocols.Validator:
    """A cached validator for the keyword arguments of one function doc."""
    return _validator(json.dumps(doc.get("parameters") or {}, sort_keys=True))


# BFCL ground truth passes tuples where docs say "array"; accept both list and tuple.
_ArgumentValidator = jsonschema.validators.extend(
    jsonschema.Draft202012Validator,
    type_checker=jsonschema.Draft202012Validator.TYPE_CHECKER.redefine(
        "array", lambda _checker, value: isinstance(value, (list, tuple))
    ),
)


@lru_cache(maxsize=4096)
def _validator(params_json: str) -> jsonschema.protocols.Validator:
    params = json.loads(params_json)
    schema = to_json_schema(params, descriptions=False)
    schema["type"] = "object"
    schema["additionalProperties"] = False
    required = set(params.get("required", ()))
    for name, sub in params.get("properties", {}).items():
        if name not in required and sub.get("default", "missing") is None and "type" in schema["properties"][name]:
            schema["properties"][name]["type"] = [schema["properties"][name]["type"], "null"]
    _ArgumentValidator.check_schema(schema)
    return _ArgumentValidator(schema)


def validation_error(doc: Mapping[str, Any], arguments: Mapping[str, Any]) -> str | None:
    """The first problem with `arguments` for `doc`, as one readable line, or None if valid."""
    error = jsonschema.exceptions.best_match(argument_validator(doc).iter_errors(dict(arguments)))
    if error is None:
        return None
    where = "".join(f"[{p!r}]" for p in error.absolute_path)
    message = error.message if len(error.message) <= 300 else error.message[:300] + "..."
    return f"{'argument' + where + ': ' if where else ''}{message}"
