r"""BFCL's Java and JavaScript type rules: parameter values written as source-code strings, read as BFCL reads them.

In BFCL's ``simple_java`` and ``simple_javascript`` categories every parameter value must be a
string holding the value in the language's syntax (``"42"``, ``"3.5f"``, ``"true"``,
``"new ArrayList<>(Arrays.asList(\"a\"))"``, ``"[1, 2]"``, ``"{k: 'v'}"``); a value of any other
type is ``type_error:java`` / ``type_error:js``. The string is then converted by the
parameter's declared type (`convert`) into the Python value that the rest of the AST checker
compares with the possible answers. Conversion never fails: text that does not have the
declared type's shape stays the string it was, and the checker later finds it of the wrong type
or value. A few declared types make BFCL's converter raise (Java ``Set``, ``Hashtable``,
``Queue``, ``Stack``); `convert` raises `NotImplementedError` for them too, and the checker
reports that entry as a crash, as `tooluse_gym.checking.single_turn` does for BFCL's other crashes.

The conversions reproduce the regular-expression reading of bfcl-eval 2026.3.23 (its
``java_type_converter`` and ``js_type_converter``) quirk for quirk, since scores depend on them:
a Java ``char`` is never unquoted, elements of a Java array of ``String`` keep their quotes,
collections are split at every comma, a JavaScript object ends at its first ``}``.
`realize` is the inverse used for reference answers: a value written so that `convert` gives it back.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = ["JAVA_TYPES", "JS_TYPES", "NESTED", "call_text_value", "convert", "language_of", "realize"]

JAVA_TYPES: Mapping[str, type] = {
    "byte": int,
    "short": int,
    "integer": int,
    "float": float,
    "double": float,
    "long": int,
    "boolean": bool,
    "char": str,
    "Array": list,
    "ArrayList": list,
    "Set": set,
    "HashMap": dict,
    "Hashtable": dict,
    "Queue": list,
    "Stack": list,
    "String": str,
    "any": str,
}
"""The Python type a Java parameter type converts to (BFCL's ``JAVA_TYPE_CONVERSION``)."""
JS_TYPES: Mapping[str, type] = {
    "String": str,
    "integer": int,
    "float": float,
    "Bigint": int,
    "Boolean": bool,
    "dict": dict,
    "array": list,
    "any": str,
}
"""The Python type a JavaScript parameter type converts to (BFCL's ``JS_TYPE_CONVERSION``)."""
NESTED = ("Array", "ArrayList", "array")
"""Declared types whose items' type (``items.type``) the conversion and the type check use."""

_INT = re.compile(r"^-?\d+$")
_JAVA_FLOAT = re.compile(r"^-?\d+(\.\d+)?([eE][+-]?\d+)?[fF]$")
_JAVA_DOUBLE = re.compile(r"^-?\d+(\.\d+)?([eE][+-]?\d+)?$")
_JAVA_LONG = re.compile(r"^-?\d+[lL]$")
_JS_FLOAT = re.compile(r"^-?\d+(\.\d+)?$")
_JS_BIGINT = re.compile(r"^-?\d+n$")
_AS_LIST = re.compile(r"new\s+ArrayList<\w*>\(Arrays\.asList\((.+?)\)\)")
_ADDS = re.compile(r"new\s+ArrayList<\w*>\(\)\s*\{\{\s*(.+?)\s*\}\}", re.DOTALL)
_ADD = re.compile(r"add\((.+?)\)")
_EMPTY_LIST = re.compile(r"new\s+ArrayList<\w*>\(\)")
_ARRAY = re.compile(r"new\s+\w+\[\]\s*\{(.*?)\}")
_MAP = re.compile(r"new\s+HashMap<.*?>\s*\(\)\s*\{\s*\{?\s*(.*?)\s*\}?\s*\}", re.DOTALL)
_PUT = re.compile(r"put\(\"(.*?)\",\s*(.*?)\)")
_EMPTY_MAP = re.compile(r"new\s+HashMap<.*?>\s*\(\)")
_JS_2D = re.compile(r"\[\s*\[.*?\]\s*(,\s*\[.*?\]\s*)*\]|\bnew\s+Array\(\s*\[.*?\]\s*(,\s*\[.*?\]\s*)*\)")
_JS_1D = re.compile(r"\[(.*?)\]|\bnew\s+Array\((.*?)\)")
_BRACKETS = re.compile(r"\[(.*?)\]")
_JS_OBJECT = re.compile(r"\{(.*?)\}")
_JS_PAIR = re.compile(r"([^:]+):\s*(.*?)(?:,\s*(?=[^,]+:)|$)")


def language_of(test_category: str) -> str:
    """``java``, ``javascript`` or ``python``: the language BFCL's runner checks a category in."""
    if "javascript" in test_category:
        return "javascript"
    return "java" if "java" in test_category else "python"


def convert(language: str, value: str, kind: str, item_kind: str | None = None) -> Any:
    """A parameter's source-code string as the Python value BFCL's checker compares (``java`` or ``javascript``)."""
    return _java(value, kind, item_kind) if language == "java" else _js(value, kind, item_kind)


def _quoted(text: str, quotes: str = '"') -> bool:
    return any(text.startswith(q) and text.endswith(q) for q in quotes)


# --- Java --------------------------------------------------------------------------------------


def _java(value: str, kind: str, item_kind: str | None = None) -> Any:
    if kind not in JAVA_TYPES:
        raise ValueError(f"Java type {kind!r} has no conversion")
    if kind in ("byte", "short", "integer"):
        return int(value) if _INT.match(value) else value
    if kind == "float":
        return float(re.sub(r"[fF]$", "", value)) if _JAVA_FLOAT.match(value) else value
    if kind == "double":
        return float(value) if _JAVA_DOUBLE.match(value) else value
    if kind == "long":
        return int(re.sub(r"[lL]$", "", value)) if _JAVA_LONG.match(value) else value
    if kind == "boolean":
        return value == "true" if value in ("true", "false") else value
    if kind == "ArrayList":
        return _java_list(value, item_kind)
    if kind == "Array":
        return _java_array(value, item_kind)
    if kind == "HashMap":
        return _java_map(value)
    if kind in ("char", "String", "any"):  # BFCL's char pattern never matches: a char stays as written
        return value
    raise NotImplementedError(f"BFCL does not convert Java {kind} values")


def _java_item(text: str, item_kind: str | None) -> Any:
    return _java(text, item_kind) if item_kind else _java_literal(text)


def _java_list(text: str, item_kind: str | None) -> Any:
    if m := _AS_LIST.search(text):
        items = [s.strip() for s in m.group(1).split(",")]
    elif m := _ADDS.search(text):
        items = [s.strip() for s in _ADD.findall(m.group(1))]
    else:
        return [] if _EMPTY_LIST.search(text) else text
    if item_kind in ("char", "String"):
        return [s[1:-1] for s in items]
    return [_java_item(s, item_kind) for s in items]


def _java_array(text: str, item_kind: str | None) -> Any:
    m = _ARRAY.search(text)
    if not m:
        return text
    return [_java_item(s.strip(), item_kind) for s in m.group(1).split(",") if s.strip()]


def _java_map(text: str) -> Any:
    m = _MAP.search(text)
    if m:
        body = m.group(1)
        return {k: _java_literal(v.strip()) for k, v in _PUT.findall(body)} if body.strip() else {}
    return {} if _EMPTY_MAP.search(text) else text


def _java_literal(text: str) -> Any:
    """A Java literal read without a declared type (collection items without one, map values)."""
    if text in ("true", "false"):
        return text == "true"
    if _quoted(text):
        return text[1:-1]
    if _JAVA_LONG.match(text):
        return int(text[:-1])
    if _JAVA_FLOAT.match(text):
        return float(re.sub(r"[fF]$", "", text))
    return _number_or_text(text)


def _number_or_text(text: str) -> Any:
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text


# --- JavaScript --------------------------------------------------------------------------------


def _js(value: str, kind: str, item_kind: str | None = None) -> Any:
    if kind not in JS_TYPES:
        raise ValueError(f"JavaScript type {kind!r} has no conversion")
    if kind == "String":
        return value[1:-1] if _quoted(value, "\"'") else value
    if kind == "integer":
        return int(value) if _INT.match(value) else value
    if kind == "float":
        return float(value) if _JS_FLOAT.match(value) else value
    if kind == "Bigint":
        return int(value[:-1]) if _JS_BIGINT.match(value) else value
    if kind == "Boolean":
        return value == "true" if value in ("true", "false") else value
    if kind == "array":
        return _js_array(value.strip(), item_kind)
    if kind == "dict":
        return _js_object(value.strip())
    return value


def _js_array(code: str, item_kind: str | None) -> Any:
    try:
        if m := _JS_2D.match(code):
            rows = []
            for i, row in enumerate(_BRACKETS.findall(m.group(0))):
                row = row.strip()
                if i == 0 and row.startswith("["):
                    row = row[1:]
                rows.append([_js_literal(s.strip()) for s in row.split(",")])
            return rows
        m = _JS_1D.match(code)
        if not m:
            return code
        body = m.group(1) if m.group(1) is not None else m.group(2)
        items = body.strip().split(",") if body is not None and body.strip() else []
        if item_kind:
            return [_js(s.strip(), item_kind) for s in items]
        return [_js_literal(s.strip()) for s in items]
    except Exception:  # BFCL's converter returns the text on any error here (an unknown item type)
        return code


def _js_object(code: str) -> Any:
    if code == "{}":
        return {}
    m = _JS_OBJECT.match(code)
    if not m:
        return code
    out: dict[str, Any] = {}
    for key, raw in _JS_PAIR.findall(m.group(1)):
        key, raw = key.strip().strip("'\""), raw.strip()
        if raw.startswith("[") and raw.endswith("]"):
            out[key] = _js_array(raw, None)
        elif raw.startswith("{") and raw.endswith("}"):
            out[key] = _js_object(raw)
        else:
            out[key] = _js_literal(raw.strip("'\""))
    return out


def _js_literal(text: str) -> Any:
    text = text.strip()
    if text in ("true", "false"):
        return text == "true"
    if _quoted(text, "\"'"):
        return text[1:-1]
    return _number_or_text(text)


# --- reference answers -------------------------------------------------------------------------


def realize(language: str, value: Any, spec: Mapping[str, Any]) -> Any:
    """`value` (a possible answer's, a Python value) written as the string `convert` reads back for `spec`'s type.

    Strings stay as they are (a variable name or text); only values of other types are written
    in the language's syntax.
    """
    if isinstance(value, str):
        return value
    kind = spec.get("type", "any")
    item_kind = spec.get("items", {}).get("type") if isinstance(spec.get("items"), Mapping) else None
    if language == "java":
        return _java_source(value, kind, item_kind)
    return _js_source(value, kind, item_kind)


def call_text_value(value: Any) -> str:
    """A parameter's value as Java or JavaScript call text that BFCL's parser reads back as the same string.

    BFCL's tree-sitter readers take an argument's source text and trim one pair of outer quotes; they
    never undo an escape. A string is therefore quoted only when a quoted literal holds it as it is
    (Python's ``repr`` escapes nothing); one that holds both quote characters, a backslash or a
    control character is written as the source it already is (``{k: ["f('x')"]}``), which the
    parser hands back untouched.
    """
    text = repr(value)
    if not isinstance(value, str) or text[1:-1] == value:
        return text
    return value


def _number(value: Any) -> str:
    return (
        format(value, "f").rstrip("0").rstrip(".") if isinstance(value, float) and "e" in repr(value) else repr(value)
    )


def _java_source(value: Any, kind: str, item_kind: str | None) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        text = _number(value)
        return text + "L" if kind == "long" else text + "f" if kind == "float" else text
    if isinstance(value, list):
        if kind == "Array":
            items = [v if isinstance(v, str) else _java_source(v, item_kind or "any", None) for v in value]
            return f"new {_JAVA_ITEM_NAMES.get(item_kind or '', 'Object')}[]{{{', '.join(items)}}}"
        if not value:
            return "new ArrayList<>()"
        items = [_java_element(v, item_kind) for v in value]
        return f"new ArrayList<>(Arrays.asList({', '.join(items)}))"
    if isinstance(value, dict):
        # a key whose acceptable values are not a list is BFCL data gone wrong: its checker reads the
        # string as its characters, finds "" there (the key is optional) and no value: leave it out
        puts = "".join(f'put("{k}", {_java_element(_first(v), None)}); ' for k, v in value.items() if type(v) is list)
        return f"new HashMap<String, Object>() {{{{ {puts}}}}}"
    return str(value)


_JAVA_ITEM_NAMES = {"String": "String", "integer": "int", "long": "long", "char": "char", "boolean": "boolean"}


def _first(accepted: Any) -> Any:
    """A possible answer's dict holds lists of acceptable values: the first that is not the optional mark."""
    if not isinstance(accepted, list):
        return accepted
    return next((v for v in accepted if v != ""), "")


def _java_element(value: Any, item_kind: str | None) -> str:
    if isinstance(value, str):
        return f'"{value}"' if item_kind in (None, "String", "char") else value
    return _java_source(value, item_kind or "any", None)


def _js_source(value: Any, kind: str, item_kind: str | None) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return _number(value) + ("n" if kind == "Bigint" else "")
    if isinstance(value, list):
        return "[" + ", ".join(_js_element(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_js_element(_first(v))}" for k, v in value.items()) + "}"
    return str(value)


def _js_element(value: Any) -> str:
    return f'"{value}"' if isinstance(value, str) else _js_source(value, "any", None)
