"""The decoders' and the runtime's fast paths give exactly what their general paths give.

Each fast path (reading a call list without `ast`, knowing a parse fails, running a plain call
string without parsing it, binding keyword arguments without `inspect`, one reused JSON encoder)
is compared with the general path it replaces, on the ground-truth messages and on generated
and mutated texts, including the texts that must fall back.
"""

from __future__ import annotations

import ast
import contextlib
import copy
import inspect
import json
import random
import warnings
from collections import Counter
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import tooluse_gym.decoding.bfcl as bfcl_decoder
import tooluse_gym.decoding.lenient as lenient_decoder
from tooluse_gym.checking.multi_turn import _missing
from tooluse_gym.decoding.base import DecodeError
from tooluse_gym.decoding.call_lists import certain_syntax_error, read_call_list
from tooluse_gym.decoding.text import parse_expression
from tooluse_gym.tools import call_strings
from tooluse_gym.tools.binding import bound_arguments
from tooluse_gym.tools.runtime import stringify_result

SETTINGS = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _typed(value: Any) -> Any:
    """A value with every type spelled out (1 == 1.0 == True, but not here)."""
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, [_typed(v) for v in value])
    if isinstance(value, dict):
        return ("dict", [(_typed(k), _typed(v)) for k, v in value.items()])
    return (type(value).__name__, repr(value))


def _bfcl_decode(text: str, fast: bool, monkeypatch) -> Any:
    with monkeypatch.context() as m:
        if not fast:
            m.setattr(bfcl_decoder, "read_call_list", lambda *a, **k: None)
            m.setattr(bfcl_decoder, "certain_syntax_error", lambda text: False)
        try:
            return "ok", [(s, n, _typed(a)) for s, n, a in bfcl_decoder._decode_python(text)]
        except DecodeError as e:
            return "fails", str(e)


def _lenient_parse(text: str, fast: bool, monkeypatch) -> Any:
    with monkeypatch.context() as m:
        if not fast:
            m.setattr(lenient_decoder, "read_call_list", lambda *a, **k: None)
            m.setattr(lenient_decoder, "certain_syntax_error", lambda text: False)
        parsed = lenient_decoder.parse_python_calls(text)
    calls = [(c.name, _typed(dict(c.arguments)), _typed(c.positional), c.error) for c in parsed.calls]
    return parsed.content, parsed.failure, calls


def _ground_truth_messages(all_tasks) -> list[str]:
    return ["[" + ", ".join(c.render() for c in turn) + "]" for t in all_tasks for turn in t.ground_truth if turn]


_PIECES = [
    *"[](),= '\"\\\n\t\r.-_0123456789abexjTFN#\x00\x0c",
    *("True", "None", "if", "1if", "0x", "1e5", "__debug__", "é", "\ud800", "''", "'''", "a=", "f("),
    *("lambda", "**", "*", "{", "}", ":", "1.", ".5", "00", "-0", "1_0", "u'", "r'", "b'", "not", "<think>"),
]
_WORDS = ["x", "folder", "a_b", "True", "None", "False", "match", "_", "print", "if", "__debug__", "Done", "e5"]
_VALUES = [
    *("'a b'", '"q\'s"', "'x#y'", "''", "'é'", "'\t'", "'a\"b'", "0", "-0", "12", "-3", "1.5", "-0.0"),
    *("123456789012345678", "1234567890123456789", "3.14159", "0.1", "007", "1e3", "2.", "(1, 2)", "{'a': 1}"),
    *("{1}", "-x", "+1", "- 1", "x.y", "f()", "a[0]"),
]


def _generated_message(rng: random.Random) -> str:
    def value(depth: int = 0) -> str:
        r = rng.random()
        if r < 0.55:
            return rng.choice(_VALUES)
        if r < 0.7:
            return rng.choice(_WORDS)
        if depth < 10:
            items = ", ".join(value(depth + 1) for _ in range(rng.randint(0, 3)))
            return "[" + items + rng.choice(["]", ",]", " ]", "\n]"])
        return "[]"

    calls = []
    for _ in range(rng.randint(0, 4)):
        kws = [rng.choice(["", " "]) + rng.choice(_WORDS) + rng.choice(["=", " = "]) + value() for _ in range(3)]
        if rng.random() < 0.1:
            kws.append(value())
        calls.append(rng.choice(_WORDS) + rng.choice(["(", " ("]) + rng.choice([", ", ",", ",\n"]).join(kws) + ")")
    return rng.choice(["[", "[ ", "[\n", ""]) + rng.choice([", ", ","]).join(calls) + rng.choice(["]", " ]", ",]", ""])


def _mutated(rng: random.Random, text: str) -> str:
    chars = list(text)
    for _ in range(rng.randint(1, 3)):
        pos = rng.randint(0, len(chars))
        if rng.random() < 0.5:
            chars.insert(pos, rng.choice(_PIECES))
        elif chars:
            del chars[min(pos, len(chars) - 1)]
    return "".join(chars)


def _texts(all_tasks, count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    messages = _ground_truth_messages(all_tasks)
    texts = list(messages)
    for _ in range(count):
        texts.append(_mutated(rng, rng.choice(messages)) if rng.random() < 0.5 else _generated_message(rng))
    return texts


def test_call_list_reader_reads_what_ast_reads(all_tasks, monkeypatch):
    texts = _texts(all_tasks, 6000, seed=0)
    read = 0
    for text in texts:
        assert _bfcl_decode(text, True, monkeypatch) == _bfcl_decode(text, False, monkeypatch), text
        assert _lenient_parse(text, True, monkeypatch) == _lenient_parse(text, False, monkeypatch), text
        read += read_call_list(text if text.startswith("[") else "[" + text + "]", names=True) is not None
    assert read > len(texts) // 4  # the fast path is the common path, not a rarity
    messages = _ground_truth_messages(all_tasks)
    assert sum(read_call_list(m, names=True) is not None for m in messages) > 0.95 * len(messages)


@pytest.mark.parametrize(
    "text",
    [
        "[f(a='x')]",
        "[f(a=1if 1 else 2)]",
        "[f(a=0x1f)]",
        "[f(a=1, a=2)]",
        "[f(a=r'x')]",
        "[f(a='x' 'y')]",
        "[f(a=-0.0, b=-0)]",
        "[f(__debug__=1)]",
        "[f(a='\ud800')]",
        "[f(a='é')]",
        "[f(\na=[1,\n2])]",
        "[f(a=[[[[[[[[[1]]]]]]]]])]",
        "[f(a=[[[[[[[[[[1]]]]]]]]]])]",
        "[f(a=folder)]",
        "[f(a=match, case=_)]",
        "[f(a=not)]",
        "[]",
        "[ ]",
        "[\t]",
        "[f()][g()]",
        "[f(a=1),]",
        "[f(a=00.5)]",
        "[f(a=1.5.2)]",
        "[f(a=123456789012345678901)]",
    ],
)
def test_call_list_reader_edge_cases(text, monkeypatch):
    assert _bfcl_decode(text, True, monkeypatch) == _bfcl_decode(text, False, monkeypatch)
    assert _lenient_parse(text, True, monkeypatch) == _lenient_parse(text, False, monkeypatch)


def _compile_outcome(text: str) -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            compile(text, "<unknown>", "eval", ast.PyCF_ONLY_AST)
        except Exception as e:
            return type(e).__name__
    return "ok"


def test_certain_syntax_error_is_certain():
    from keyword import kwlist

    rng = random.Random(1)
    words = [*kwlist, "match", "case", "_", "type", "x", "Done", "e5", "1", "0x1f", "1.", ".5", "1e5", "1j", "..."]
    marks = [" ", " ", ".", ",", "(", ")", "[", "]", ":", "=", "+", "-", "*", "!", "?", "@", ":=", "{", "}", "~", ";"]
    hits = 0
    for _ in range(20000):
        parts = [rng.choice(words) if rng.random() < 0.6 else rng.choice(marks) for _ in range(rng.randint(1, 8))]
        text = "[" + rng.choice(["", " "]).join(parts) + rng.choice(["]", ".]", " .]"])
        if certain_syntax_error(text):
            hits += 1
            assert _compile_outcome(text) == "SyntaxError", text
    assert hits > 1000
    for text in ("[Done.]", "[Nothing more to do.]", "[The task is complete.]", "[I moved the file.]"):
        assert certain_syntax_error(text) and _compile_outcome(text) == "SyntaxError"
    for text in ("[x if y else z]", "[done]", "[a, b]", "[x not in y]", "[x...]", "[it's done.]", "[a\nb]", "[é x]"):
        assert not certain_syntax_error(text)


_PLAIN_VALUES = st.recursive(
    st.one_of(
        st.text(max_size=8),
        st.sampled_from(["<think>x</think>", "it's", 'q"', "\\", "\n", "\ud800"]),
        st.integers(min_value=-(2**64), max_value=2**64),
        st.floats(allow_nan=True, allow_infinity=True),
        st.booleans(),
        st.none(),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.lists(inner, max_size=3).map(tuple),
        st.dictionaries(st.text(max_size=3), inner, max_size=2),
    ),
    max_leaves=8,
)
_NAMES = st.sampled_from(["f", "ls", "cd", "kill", "remove", "class", "True", "__debug__", "a.b", "é", "print", "_"])
_KEYS = st.sampled_from(["a", "b", "folder", "class", "None", "__debug__", "x1", "é", "a b", "match"])
_METHODS = frozenset({"f", "ls", "cd", "kill", "remove", "print", "_"})


def _invoke(name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    return {"name": name, "args": [_typed(a) for a in args], "kwargs": {k: _typed(v) for k, v in kwargs.items()}}


@SETTINGS
@given(name=_NAMES, arguments=st.dictionaries(_KEYS, _PLAIN_VALUES, max_size=3), sep=st.sampled_from([", ", ","]))
def test_plain_call_runs_and_reads_as_its_string(name, arguments, sep):
    try:
        source = f"{name}({sep.join(f'{k}={v!r}' for k, v in arguments.items())})"
    except ValueError:
        return
    if not call_strings.plain_call(source, name, arguments):
        return
    fast = call_strings.run_plain_call(name, arguments, _METHODS, _invoke, repr)
    assert fast == call_strings.run_call_string(source, _METHODS, _invoke, repr)
    parsed = lenient_decoder.parse_python_calls(source)  # what the decoder showed before it had a fast path
    (call,) = parsed.calls
    assert not call.error and not call.positional
    assert _typed(call_strings.plain_arguments(arguments)) == _typed(dict(call.arguments))
    assert _typed(bfcl_decoder._shown(source)) == _typed(dict(call.arguments))


def _shown_by_lenient_parse(source: str) -> dict[str, Any]:
    parsed = lenient_decoder.parse_python_calls(source)
    if len(parsed.calls) != 1 or parsed.calls[0].error or parsed.calls[0].positional:
        return {}
    return dict(parsed.calls[0].arguments)


def test_shown_arguments_equal_the_lenient_parse(all_tasks):
    rng = random.Random(2)
    sources = []
    for text in _texts(all_tasks, 3000, seed=3):
        with contextlib.suppress(DecodeError):
            sources += bfcl_decoder.decode_python(text)
    sources += [
        "f(a={'k': {'n': 1}})",
        "f(a='<think>x</think>')",
        " f(a=1)",
        "[f(a=1)]",
        "f(a=1),",
        "f(a=g(b=1))",
        "f(a=1, a=2)",
        "f(" * 120 + ")" * 120,
        "```f(a=1)```",
    ]
    for source in sources + [_mutated(rng, s) for s in sources[:2000]]:
        assert _typed(bfcl_decoder._shown(source)) == _typed(_shown_by_lenient_parse(source)), source


def test_decoded_calls_show_what_the_lenient_parser_reads(all_tasks):
    """`ToolCall.arguments` of a decoded call: what the lenient parser reads in its call string."""
    rng = random.Random(4)
    actions: list[tuple[Any, str]] = [(text, "python") for text in _texts(all_tasks, 3000, seed=5)]
    keys = ["a", "folder", "a b", "class", "x\n", "", "é", "(", "<think>"]
    values = ["s", "it's", "<think>", "\n", 1, -2.5, None, True, [1, "x"], {"k": 1}, {"k": {"n": 1}}, [], 2**70]
    for _ in range(3000):
        name = rng.choice(["f", "cd", "a.b", "x y", "é", "print"])
        arguments = {rng.choice(keys): rng.choice(values) for _ in range(rng.randint(0, 3))}
        block = json.dumps({"name": name, "arguments": arguments})
        actions.append(("<tool_call>\n" + block + "\n</tool_call>", "json"))
        call = {"id": "c", "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}
        actions.append(({"content": "", "tool_calls": [call]}, "python"))
    for action, tool_format in actions:
        for call in bfcl_decoder.parse_action_bfcl(action, tool_format).calls:
            assert _typed(dict(call.arguments)) == _typed(_shown_by_lenient_parse(call.source)), call.source


def test_a_shared_call_tree_carries_no_state():
    seen = []

    def invoke(name, args, kwargs):
        seen.append(copy.deepcopy(kwargs))
        kwargs["items"].append("mutated")  # simulators may extend the lists they are given
        kwargs["table"]["k"] = "mutated"
        return "ok"

    source = "f(items=[1, [2]], table={'k': 'v'}, pair=(1, 2))"
    for _ in range(3):
        assert call_strings.run_call_string(source, {"f"}, invoke, str) == "ok"
    assert seen == [{"items": [1, [2]], "table": {"k": "v"}, "pair": (1, 2)}] * 3


@pytest.mark.parametrize(
    "source",
    [r"grep(pattern='\d+')", "[1if 1 else 2]", "[0x1for x in y]", "[1.if 1 else 2]", "[1jif 1 else 2]", "[0o7or 1]"],
)
def test_parse_expression_never_warns(source):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        try:
            tree = parse_expression(source)
        except SyntaxError:
            return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert ast.dump(tree) == ast.dump(compile(source, "<unknown>", "eval", ast.PyCF_ONLY_AST))


class _Methods:
    def plain(self, a, b=2, *, c=3):
        return a, b, c

    def variadic(self, a, *args, **kwargs):
        return a

    def positional_only(self, a, /, b=1):
        return a


_BINDINGS = [
    *[((), {"a": 1}), ((), {"b": 1, "a": 2}), ((), {"c": 1, "a": 2, "b": 3}), ((), {"b": 1}), ((), {"a": 1, "z": 2})],
    *[((1,), {}), ((1,), {"b": 2}), ((1, 2, 3, 4), {}), ((), {}), ((1,), {"a": 1})],
]


@pytest.mark.parametrize("method_name", ["plain", "variadic", "positional_only"])
@pytest.mark.parametrize("args,kwargs", _BINDINGS)
def test_bound_arguments_equal_inspect(method_name, args, kwargs):
    method = getattr(_Methods(), method_name)

    def outcome(fn):
        try:
            return "ok", list(fn().items())
        except TypeError as e:
            return "TypeError", str(e)

    assert outcome(lambda: bound_arguments(method, args, dict(kwargs))) == outcome(
        lambda: inspect.signature(method).bind(*args, **kwargs).arguments
    )


def test_stringify_result_equals_bfcl_conversion():
    circular: dict[str, Any] = {}
    circular["self"] = circular
    values: list[Any] = [
        {"a": [1, 2.5, float("nan"), float("inf"), 'é"\n'], "b": {"c": None, "d": True}},
        {1: "int key", 2.5: "float key", None: "none key", False: "bool key"},
        {(1, 2): "tuple key"},
        {"object": object()},
        circular,
        {},
        "text",
        [1, 2],
        None,
        3.5,
    ]

    def bfcl(result):
        if type(result) is str:
            return result
        if type(result) is dict:
            try:
                return json.dumps(result)
            except Exception:
                return str(result)
        return str(result)

    for value in values:
        assert stringify_result(value) == bfcl(value)


def test_long_values_reuse_their_text_only_while_unchanged():
    history = [1.5] * 300 + [float("nan"), -0.0, 1e300, "é", None]
    result = {"price": 1.0, "MA(5)": history, "MA(20)": tuple(history), "nested": {"k": [1] * 200}}
    for change in [None, (3, 2), (3, True), (3, 1), (3, 1.0), (0, "1.5"), (5, [1.5]), (7, {"k": 1})]:
        if change is not None:
            history[change[0]] = change[1]
        for _ in range(2):  # written afresh, then reused
            assert stringify_result(result) == json.dumps(result), change
    history.append(object())  # not serializable: BFCL's fallback
    assert stringify_result(result) == str(result)
    history.pop()
    for other in ({1: history}, {"a": history, 2: "int key"}, {"a": list(history)}, {"a": history[:10]}):
        assert stringify_result(other) == json.dumps(other)


@given(
    st.lists(st.sampled_from(["a", "b", "c", "{}", ""]), max_size=8),
    st.lists(st.sampled_from(["a", "b", "c"]), max_size=8),
)
def test_missing_results_as_a_multiset(needed, available):
    pool = Counter(available)
    expected = []
    for item in needed:
        if pool[item] > 0:
            pool[item] -= 1
        else:
            expected.append(item)
    assert _missing(needed, available) == expected
