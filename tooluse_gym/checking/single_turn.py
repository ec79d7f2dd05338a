"""Single-turn checking equivalent to BFCL's AST checker and its relevance rules, written for this project.

BFCL's eval runner scores a single-turn response in one of three ways (`verdict`):

* **AST categories** (``simple_*``, ``multiple``, ``parallel``, ``parallel_multiple`` and their
  ``live_`` versions): a response that fails to decode is ``ast_decoder:decoder_failed``, one
  whose decoded parameters are not a dict is ``ast_decoder:decoder_wrong_output_format``;
  otherwise the calls go to the checker the category's name picks: ``parallel`` (calls matched
  to the possible answers in any order), ``multiple`` (one call, against the first answer's
  function), or simple (exactly one call, against the first function).
* **irrelevance** (``irrelevance``, ``live_irrelevance``): valid when the response holds no
  call (it fails to decode, decodes to nothing, or is malformed), else
  ``irrelevance_error:decoder_success``.
* **relevance** (``live_relevance``): valid when it holds a call, else
  ``relevance_error:decoder_failed``.

One call is checked against a function doc and one possible answer
``{name: {param: [acceptable values]}}`` (an acceptable value ``""`` marks the parameter
optional): the function name, the required parameters, each given parameter (known to the doc
and to the answer, of the doc's type, with an acceptable value), and the answer's
non-optional parameters. Strings are compared after BFCL's normalisation (lower case, without
spaces and ``,./-_*^``, single quotes as double); an int is accepted for a float; a value
whose type is that of the answer's values rather than the doc's is a "variable" and compared
as it is. The error types are BFCL's own names.

The language is the category's, as in BFCL's runner: in ``simple_java`` and ``simple_javascript``
every value must be a string (else ``type_error:java`` / ``type_error:js``), converted by its
declared type with BFCL's rules (`tooluse_gym.checking.languages`) before the same checks. A possible
answer or doc that BFCL's checker cannot handle makes it raise, and `check_calls` then reports
``ast_checker:crashed`` (the official runner would stop).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tooluse_gym.checking import languages
from tooluse_gym.decoding.base import AstDecoded, Call
from tooluse_gym.errors import ToolUseGymError

__all__ = ["AstVerdict", "check_calls", "verdict"]

PYTHON_TYPES: Mapping[str, type] = {
    "string": str,
    "integer": int,
    "float": float,
    "boolean": bool,
    "array": list,
    "tuple": list,
    "dict": dict,
    "any": str,
}
"""The Python type a doc's parameter type names (BFCL's ``tuple`` arrives as a list after JSON)."""
_NESTED = ("array", "tuple")
_NORMALIZE = re.compile(r"[ ,./\-_*^]")

DECODER_FAILED = "ast_decoder:decoder_failed"
WRONG_OUTPUT_FORMAT = "ast_decoder:decoder_wrong_output_format"
IRRELEVANCE_ERROR = "irrelevance_error:decoder_success"
RELEVANCE_ERROR = "relevance_error:decoder_failed"
CRASHED = "ast_checker:crashed"


@dataclass(frozen=True)
class AstVerdict:
    """The checker's verdict on one response."""

    valid: bool
    error_type: str | None = None
    message: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form: ``valid``, ``error_type``, ``error_message``."""
        return {"valid": self.valid, "error_type": self.error_type, "error_message": self.message}


_VALID = AstVerdict(True)


class _Fail(ToolUseGymError):
    """A check that fails, with BFCL's error type."""

    def __init__(self, error_type: str, message: str):
        super().__init__(message)
        self.error_type = error_type


def verdict(
    decoded: AstDecoded,
    *,
    check: str,
    functions: Sequence[Mapping[str, Any]],
    answer: Sequence[Mapping[str, Any]],
    test_category: str,
    underscore_to_dot: bool = False,
) -> AstVerdict:
    """BFCL's verdict on a decoded response.

    Args:
        decoded: The response (`tooluse_gym.decoding.bfcl_ast.decode_ast_action`).
        check: ``ast``, ``irrelevance`` or ``relevance``.
        functions: The entry's function docs.
        answer: The possible answers (one ``{name: {param: [values]}}`` per expected call).
        test_category: BFCL's category name; it picks the AST checker.
        underscore_to_dot: Function names with dots are expected with underscores (BFCL's
            ``underscore_to_dot`` model setting, for tools offered through an API).
    """
    if check == "irrelevance":
        return AstVerdict(False, IRRELEVANCE_ERROR, "the response holds a call") if decoded.has_call else _VALID
    if check == "relevance":
        return _VALID if decoded.has_call else AstVerdict(False, RELEVANCE_ERROR, "the response holds no call")
    if check != "ast":
        raise ValueError(f"check must be 'ast', 'irrelevance' or 'relevance', got {check!r}")
    if decoded.calls is None:
        return AstVerdict(False, DECODER_FAILED, f"the response does not decode: {decoded.failure}")
    if not decoded.well_formed:
        return AstVerdict(False, WRONG_OUTPUT_FORMAT, "a call's arguments are not a dict")
    return check_calls(decoded.calls, functions, answer, test_category, underscore_to_dot=underscore_to_dot)


def check_calls(
    calls: Sequence[Call],
    functions: Sequence[Mapping[str, Any]],
    answer: Sequence[Mapping[str, Any]],
    test_category: str,
    *,
    underscore_to_dot: bool = False,
) -> AstVerdict:
    """BFCL's ``ast_checker`` on well-formed calls (each (name, parameter dict)), in the category's language."""
    rules = _rules(underscore_to_dot, languages.language_of(test_category))
    try:
        if "parallel" in test_category:
            _parallel(calls, functions, answer, rules)
        elif "multiple" in test_category:
            if len(calls) != len(answer):
                raise _Fail("multiple_function_checker:wrong_count", f"{len(calls)} calls, expected {len(answer)}")
            _one(_doc(functions, _answer_name(answer[0])), calls[0], answer[0], rules)
        else:
            if len(calls) != 1:
                raise _Fail("simple_function_checker:wrong_count", f"{len(calls)} calls, expected 1")
            _one(functions[0], calls[0], answer[0], rules)
    except _Fail as e:
        return AstVerdict(False, e.error_type, str(e))
    except (AttributeError, KeyError, IndexError, TypeError, NotImplementedError) as e:
        return AstVerdict(False, CRASHED, f"BFCL's checker would raise here ({type(e).__name__}: {e})")
    return _VALID


@dataclass(frozen=True)
class _Rules:
    dot: bool
    """Dotted function names are expected with underscores."""
    language: str
    """``python``, ``java`` or ``javascript``."""


@functools.cache
def _rules(dot: bool, language: str) -> _Rules:
    return _Rules(dot, language)


def _answer_name(item: Mapping[str, Any]) -> Any:
    return next(iter(item))


def _doc(functions: Sequence[Mapping[str, Any]], name: Any) -> Any:
    for doc in functions:
        if doc["name"] == name:
            return doc
    return None


def _parallel(
    calls: Sequence[Call], functions: Sequence[Mapping[str, Any]], answer: Sequence[Any], rules: _Rules
) -> None:
    if len(calls) != len(answer):
        raise _Fail("parallel_function_checker_no_order:wrong_count", f"{len(calls)} calls, expected {len(answer)}")
    matched: set[int] = set()
    for i, item in enumerate(answer):
        doc = _doc(functions, _answer_name(item))
        found = None
        for index, call in enumerate(calls):
            if index in matched:
                continue
            try:
                _one(doc, call, item, rules)
            except _Fail:
                found = False
                continue
            matched.add(index)
            found = True
            break
        if found is False:
            raise _Fail(
                "parallel_function_checker_no_order:cannot_find_match",
                f"no remaining call matches expected call {i} ({_answer_name(item)!r})",
            )


def _one(doc: Any, call: Call, item: Mapping[str, Any], rules: _Rules) -> None:
    """BFCL's ``simple_function_checker`` on one call; raises `_Fail` with its error type."""
    expected = next(iter(item.values()))
    name = doc["name"]
    properties = doc["parameters"]["properties"]
    required = doc["parameters"]["required"]
    if rules.dot and "." in name:
        name = name.replace(".", "_")
    if call[0] != name:
        raise _Fail("simple_function_checker:wrong_func_name", f"expected a call of {name!r}, got {call[0]!r}")
    params = call[1]
    for param in required:
        if param not in params:
            raise _Fail("simple_function_checker:missing_required", f"required parameter {param!r} is missing")
    for param, given in params.items():
        if param not in properties or param not in expected:
            raise _Fail("simple_function_checker:unexpected_param", f"unexpected parameter {param!r}")
        _check_param(param, given, properties[param], expected[param], rules.language)
    for param, values in expected.items():
        if param not in params and "" not in values:
            raise _Fail("simple_function_checker:missing_optional", f"parameter {param!r} is expected but missing")


def _check_param(param: Any, value: Any, spec: Mapping[str, Any], accepted: Any, language: str) -> None:
    kind = spec["type"]
    if language == "python":
        target = PYTHON_TYPES[kind]
        inner = PYTHON_TYPES[spec["items"]["type"]] if kind in _NESTED else None
        if kind == "tuple" and type(value) is tuple:
            value = list(value)
        if kind == "float" and type(value) is int:
            value = float(value)
    else:
        value, target, inner = _converted(param, value, kind, spec, language)
    is_variable = _type_check(param, value, accepted, target, inner)
    if not is_variable:
        if target is dict:
            _dict_check(param, value, accepted)
            return
        if target is list and inner is dict:
            _list_of_dicts_check(param, value, accepted)
            return
        if target is str:
            if _normalize(value) not in [_normalize_answer(a) for a in accepted if type(a) is str]:
                raise _Fail("value_error:string", f"{param!r} = {value!r} is not an accepted value")
            return
        if target is list:
            if _normalized_list(value) not in [_normalized_list(a, _normalize_answer) for a in accepted]:
                raise _Fail("value_error:list/tuple", f"{param!r} = {value!r} is not an accepted value")
            return
    if value not in accepted:
        raise _Fail("value_error:others", f"{param!r} = {value!r} is not an accepted value")


def _converted(param: Any, value: Any, kind: str, spec: Mapping[str, Any], language: str) -> tuple[Any, type, Any]:
    """A Java or JavaScript value: (converted value, its declared Python type, the items' type or None)."""
    types = languages.JAVA_TYPES if language == "java" else languages.JS_TYPES
    target = types[kind]
    if type(value) is not str:
        error = "type_error:java" if language == "java" else "type_error:js"
        raise _Fail(error, f"{param!r} should be a string of source code, got {type(value).__name__}")
    if kind in languages.NESTED:
        item_kind = spec["items"]["type"]
        inner = types[item_kind]
        return languages.convert(language, value, kind, item_kind), target, inner
    return languages.convert(language, value, kind), target, None


def _answer_type(accepted: Sequence[Any]) -> type | None:
    """The type of the first acceptable value that is not the optional mark."""
    for a in accepted:
        if a != "":
            return type(a)
    return None


def _type_check(param: Any, value: Any, accepted: Any, target: type, inner: type | None) -> bool:
    """BFCL's ``type_checker``: raises `_Fail` on a type error, else returns whether `value` is a variable."""
    answer_type = _answer_type(accepted)
    is_variable = answer_type is not None and answer_type != target
    error = "type_error:simple"
    items: Any = value  # (`type(value) is target` narrows `value` to `object` for mypy)
    if type(value) is target:
        if inner is None:
            return is_variable
        for candidate in accepted:
            if type(candidate) is not list or all(_inner_ok(param, v, candidate, inner) for v in items):
                return is_variable
        error = "type_error:nested"
    if answer_type is not None and type(value) is answer_type:
        if error == "type_error:nested":
            raise _Fail(error, f"{param!r}: an item is not of type {inner.__name__ if inner else ''}")
        return True
    raise _Fail("type_error:simple", f"{param!r} should be of type {target.__name__}, got {type(value).__name__}")


def _inner_ok(param: Any, value: Any, accepted: list[Any], inner: type) -> bool:
    try:
        _type_check(param, value, accepted, inner, None)
    except _Fail:
        return False
    return True


def _normalize(text: str) -> str:
    return _NORMALIZE.sub("", text).lower().replace("'", '"')


_normalize_answer = functools.lru_cache(maxsize=1 << 16)(_normalize)
"""`_normalize` for the possible answers' strings: task data, the same few at every episode of a task
(a model's strings are normalised afresh: they need not recur, and a cache of them could grow large)."""


def _normalized_list(values: Any, normalize: Callable[[str], str] = _normalize) -> list[Any]:
    return [normalize(v) if type(v) is str else v for v in values]


def _dict_check(param: Any, value: Mapping[Any, Any], accepted: Sequence[Any]) -> None:
    error = ("dict_checker:unclear", f"{param!r} matches no accepted value")
    for candidate in accepted:
        if candidate == "":
            continue
        error = ("dict_checker:unclear", f"{param!r} matches no accepted value")
        ok = True
        for key, given in value.items():
            if key not in candidate:
                error, ok = ("value_error:dict_key", f"{param!r} has an unexpected key {key!r}"), False
                break
            shown = _normalize(given) if type(given) is str else given
            if shown not in _normalized_list(candidate[key], _normalize_answer):
                error, ok = ("value_error:dict_value", f"{param!r}[{key!r}] = {given!r} is not accepted"), False
                break
        for key, values in candidate.items():
            if key not in value and "" not in values:
                error, ok = ("value_error:dict_key", f"{param!r} lacks the key {key!r}"), False
                break
        if ok:
            return
    raise _Fail(*error)


def _list_of_dicts_check(param: Any, value: Sequence[Any], accepted: Sequence[Any]) -> None:
    error = ("list_dict_checker:unclear", f"{param!r} matches no accepted value")
    for candidate in accepted:
        if len(value) != len(candidate):
            error = ("value_error:list_dict_count", f"{param!r} has {len(value)} items, expected {len(candidate)}")
            continue
        try:
            for given, expected in zip(value, candidate, strict=False):
                _dict_check(param, given, [expected])
        except _Fail as e:
            error = (e.error_type, str(e))
            continue
        return
    raise _Fail(*error)
