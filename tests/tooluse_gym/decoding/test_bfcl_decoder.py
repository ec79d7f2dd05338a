"""`tooluse_gym.decoding.bfcl` and `call_strings` against bfcl_eval's own code.

The decoders must return exactly the call strings bfcl_eval's decoders return (or fail
where they raise), and `run_call_string` must return the result strings BFCL's executor
returns. bfcl_eval's prompting decoder `eval`s arithmetic, so the generated texts only put
numbers, strings and names that are not defined anywhere into arithmetic.
"""

from __future__ import annotations

import builtins
import copy
import json
from functools import cache
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests._reference.bfcl_reference import handler, model_response
from tooluse_gym.decoding.base import DecodeError
from tooluse_gym.decoding.bfcl import (
    decode_function_calls,
    decode_python,
    decode_tool_call_tags,
    parse_action_bfcl,
)
from tooluse_gym.decoding.text import visible_response
from tooluse_gym.tasks import bfcl

NAMES = ("documents", "alpha", "my_var", "temp_dir", "x1", "report_final", "beta2", "zeta")
"""Bare names used in generated texts: none is defined in bfcl_eval's decoder module or builtins."""
FUNCS = ("cd", "ls", "mkdir", "get_x", "send_message", "f", "g2")
SETTINGS = settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _bfcl_utils():
    bfcl.backend_classes()
    from bfcl_eval.model_handler import utils

    return utils


def test_generated_names_are_undefined_where_bfcl_evaluates():
    namespace = vars(_bfcl_utils())
    for name in (*NAMES, *FUNCS):
        assert name not in namespace and not hasattr(builtins, name), name


def _outcome(fn, *args) -> tuple[str, Any]:
    try:
        return "ok", fn(*args)
    except Exception as e:
        return "raises", type(e).__name__


def _ours(fn, *args) -> tuple[str, Any]:
    try:
        return "ok", fn(*args)
    except DecodeError:
        return "raises", "DecodeError"


def _same(ours: tuple[str, Any], theirs: tuple[str, Any]) -> bool:
    return ours[0] == theirs[0] and (ours[0] == "raises" or ours[1] == theirs[1])


def assert_python_parity(text: str) -> list[str] | None:
    ours = _ours(decode_python, text)
    theirs = _outcome(_bfcl_utils().default_decode_execute_prompting, text)
    assert _same(ours, theirs), f"{text!r}: ours {ours}, BFCL {theirs}"
    return ours[1] if ours[0] == "ok" else None


# --- python text: strategies ---------------------------------------------------------------


def rarely(common: st.SearchStrategy, rare: st.SearchStrategy, one_in: int = 12) -> st.SearchStrategy:
    """`common` most of the time, `rare` about once in `one_in` draws (hypothesis favours small integers)."""
    return st.integers(1, one_in).flatmap(lambda n: rare if n == one_in else common)


small_ints = st.integers(-9, 9)
literal_numbers = st.one_of(
    st.integers(-(10**12), 10**12).map(repr),
    st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False).map(repr),
    st.sampled_from(["1e16", "1e-07", "0.1", "3.0", "1_000", "0x1F", "0o17", "0b101", "2j", "1.5e300"]),
)


@st.composite
def string_literal(draw) -> str:
    s = draw(st.text(max_size=12))
    style = draw(st.sampled_from(["repr", "repr", "double", "raw"]))
    if style == "double":
        return json.dumps(s)
    if style == "raw" and not set(s) & set("'\\\n\r"):
        return "r'" + s + "'"
    return repr(s)


names = st.sampled_from(NAMES)
number_leaf = st.one_of(small_ints.map(str), st.floats(-100, 100, allow_nan=False).map(repr), st.just("True"))
OPERATORS = ("+", "-", "*", "/", "//", "%", "**", "<<", ">>", "&", "|", "^")


@cache
def numeric(depth: int = 0) -> st.SearchStrategy[str]:
    """Arithmetic of small numbers, with Python's operators (BFCL `eval`s it)."""

    @st.composite
    def expression(draw) -> str:
        left = draw(number_leaf) if depth >= 2 or draw(st.booleans()) else "(" + draw(numeric(depth + 1)) + ")"
        op = draw(st.sampled_from(OPERATORS))
        if op == "**":  # keep the values small (we refuse integers beyond 4096 bits): a literal exponent
            right = str(draw(st.integers(0, 6)))
        elif op in ("<<", ">>"):
            right = str(draw(st.integers(0, 12)))
        else:
            right = draw(number_leaf)
        if draw(st.integers(0, 5)) == 5:
            left = draw(st.sampled_from(["-", "+", "~"])) + left
        return f"{left} {op} {right}"

    return expression()


arithmetic = st.one_of(
    numeric(),
    numeric(),
    st.tuples(string_literal(), string_literal()).map(" + ".join),
    st.tuples(string_literal(), st.integers(-1, 3).map(str)).map(" * ".join),
    st.sampled_from(["[1] + [2, 3]", "(1,) * 2", "[0] * 3", "b'a' + b'b'", "1e308 * 10", "1e999 - 1e999"]),
)
failing_arithmetic = st.one_of(  # BFCL's eval raises on these (a NameError, TypeError, ZeroDivisionError)
    st.tuples(names, st.sampled_from(OPERATORS), number_leaf).map(" ".join),
    st.tuples(string_literal(), st.sampled_from(["+", "-", "/"]), number_leaf).map(" ".join),
    st.sampled_from(["1 / 0", "1 // 0", "2 % 0", "None + 1", "[1] + 1", "10.0 ** 400", "1 << -1"]),
)
unary = st.tuples(st.sampled_from(["-", "+", "~", "not "]), st.one_of(literal_numbers, st.sampled_from(["True"]))).map(
    "".join
)
failing_values = st.one_of(  # BFCL's decoder raises on these
    failing_arithmetic,
    st.tuples(st.sampled_from(["-", "+", "~", "not "]), st.one_of(names, string_literal())).map("".join),
    st.sampled_from(["-None", "-...", "-(-1)", "-(1+2)", "not x.y", "{}", "{'a': 1, 'b': {}}"]),
    st.tuples(names, st.sampled_from([".attr", ".a.b"])).map("".join),
    st.sampled_from(["{1, 2}", "[x for x in y]", "f'{alpha}'", "1 < 2", "a and b", "lambda: 1", "{**alpha}"]),
    st.sampled_from(["{[1]: 2}", "{(1, [2]): 3}", "alpha if beta else zeta", "(yield)", "*alpha", "await x"]),
)
scalar_values = st.one_of(
    literal_numbers,
    string_literal(),
    names,
    st.sampled_from(["True", "False", "None", "...", "b'x'", "[]", "()", "set()", "{'a': {}}"]),
    unary,
    arithmetic,
    st.tuples(names, st.sampled_from(["[0]", "['k']", "[1:2]", "[::2]", "[a, b]", "[-1]", "()[0]"])).map("".join),
)


@cache
def values(depth: int = 0) -> st.SearchStrategy[str]:
    base = rarely(scalar_values, failing_values, one_in=25)
    if depth >= 3:
        return base
    inner = st.deferred(lambda: values(depth + 1))
    key = st.one_of(string_literal(), small_ints.map(str), names, st.sampled_from(["True", "None", "(1, 2)", "1.5"]))
    return st.one_of(
        base,
        base,
        st.lists(inner, max_size=4).map(lambda xs: "[" + ", ".join(xs) + "]"),
        st.lists(inner, max_size=3).map(lambda xs: "(" + ", ".join(xs) + ("," if len(xs) == 1 else "") + ")"),
        st.lists(st.tuples(key, inner), max_size=3).map(lambda kv: "{" + ", ".join(f"{k}: {v}" for k, v in kv) + "}"),
        st.lists(st.tuples(st.sampled_from(["a", "b", "c"]), inner), min_size=1, max_size=2).map(
            lambda kv: "{" + ", ".join(f"'{k}': {{'{k}2': {v}}}" for k, v in kv) + "}"  # dicts of dicts: calls
        ),
        calls(depth + 1),
    )


CALL_NAMES = st.one_of(st.sampled_from(FUNCS), st.sampled_from(["os.path.join", "a.b", "x[0]", "f()"]))
KEYWORDS = st.sampled_from(["a", "b", "folder", "file_name", "numbers", "x"])


@cache
def calls(depth: int = 0) -> st.SearchStrategy[str]:
    @st.composite
    def call(draw) -> str:
        name = draw(rarely(st.sampled_from(FUNCS), CALL_NAMES, one_in=8))
        eq = draw(st.sampled_from(["=", "=", " = "]))
        parts = [f"{k}{eq}{draw(values(depth + 1))}" for k in draw(st.lists(KEYWORDS, max_size=4))]
        positional = draw(rarely(st.just([]), st.lists(values(depth + 1), min_size=1, max_size=2), one_in=4))
        after = positional and draw(st.integers(0, 5)) == 5  # a positional after keywords: a syntax error
        parts = parts + positional if after else positional + parts
        if draw(st.integers(0, 15)) == 15:
            parts.append("**" + draw(names))
        sep = draw(st.sampled_from([", ", ",", " , ", ",\n", ",\t"]))
        return f"{name}({sep.join(parts)})"

    return call()


good_shapes = st.sampled_from(["list", "list", "list", "bare", "fence", "space", "newline"])
bad_shapes = st.sampled_from(["two_lists", "tuple", "quoted", "python_fence", "prose", "after", "tab", "bracket"])


@st.composite
def python_text(draw) -> str:
    items = draw(st.lists(calls(), min_size=0, max_size=4))
    sep = draw(st.sampled_from([", ", ",", ",\n", " ,\t"]))
    body = "[" + sep.join(items) + "]"
    shape = draw(rarely(good_shapes, bad_shapes, one_in=5))
    if shape == "bare":
        body = sep.join(items)
    elif shape == "fence":
        body = draw(st.sampled_from(["```\n", "```", "``` \n"])) + body + draw(st.sampled_from(["\n```", "```"]))
    elif shape == "space":
        body = draw(st.sampled_from([" ", "\n ", "`"])) + body + draw(st.sampled_from(["", " ", "\n\n", "``"]))
    elif shape == "newline":
        body = body + "\n"
    elif shape == "two_lists" and items:
        body = f"[{items[0]}]" + draw(st.sampled_from(["\n", " ", "", ", "])) + "[" + sep.join(items[1:]) + "]"
    elif shape == "tuple":
        body = "(" + sep.join(items) + ")"
    elif shape == "quoted":
        body = "'" + body + "'"
    elif shape == "python_fence":
        body = "```python\n" + body + "\n```"
    elif shape == "prose":
        body = draw(st.sampled_from(["Sure! ", "Here you go:\n", "I'll call:"])) + body
    elif shape == "after":
        body = body + draw(st.sampled_from([" Done.", "\nLet me know.", "]", " \t"]))
    elif shape == "tab":
        body = "\t" + body
    elif shape == "bracket":
        body = body[:-1] if body.endswith("]") else body
    return body


# --- python text: tests ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[cd(folder='documents')]", ["cd(folder='documents')"]),
        ("cd(folder=documents)", ["cd(folder='documents')"]),
        ("[sort('a.txt'), cd(folder='x')]", ["sort()", "cd(folder='x')"]),
        ("[f(a=4+1, b=-2, c=+3, d=~4, e=not 5)]", ["f(a=5, b=-2, c=-3, d=-4, e=-5)"]),
        ('```\n[f(a="x")]\n```', ["f(a='x')"]),
        ("[f(a={'g': {'b': 1}})]", ["f(a=g(b=1))"]),
        ("[f(a={'k': 1, 'g': {'h': {}}})]", ["f(a={'k': 1, 'g': h()})"]),
        ("[f(a=g(1), b=g(c=2), c=x[0], d=...)]", ["f(a='g(1)', b=g(c=2), c='x[0]', d='...')"]),
        ("[f(a=(1, [2]), **kw)]", ["f(a=(1, [2]), None='kw')"]),
        ("[a.b.c(x=1)]", ["a.b.c(x=1)"]),
        ("[]", []),
        ("\n[f()]\n", ["f()"]),
    ],
)
def test_python_examples(text, expected):
    assert assert_python_parity(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "I will list the files.",
        "```python\n[ls()]\n```",
        "Sure: [ls()]",
        "[ls()] Done.",
        "[ls()]\n[pwd()]",
        "\t[ls()]",
        "[ls(a=lambda: 1)]",
        "[ls(a=x.y)]",
        "[ls(a={1, 2})]",
        "[ls(a={})]",
        "[ls(a=[i for i in b])]",
        "[ls(a=-x)]",
        "[ls(a=1/0)]",
        "[ls(a=[1]+1)]",
        "[ls(a={[1]: 2})]",
        "['ls()']",
        "[ls(), 3]",
    ],
)
def test_python_failures(text):
    assert assert_python_parity(text) is None


@SETTINGS
@given(python_text())
@example("[f(a=1e999 - 1e999, b=2 ** 0.5, c=-8 ** 0.5, d=(-8) ** 0.5)]")
@example("[f(a='ab' * 3, b=[1] * 2, c=(1,) + (2,), d=True + True, e=None + 1)]")
@example("[f(a=alpha + 1)]")
def test_python_decoder_matches_bfcl(text):
    assert_python_parity(text)


# --- <tool_call> text ----------------------------------------------------------------------------

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**20), 10**20),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=10),
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)
arguments_objects = st.dictionaries(st.sampled_from(["a", "folder", "file_name", "x", "my key", "1a", ""]), json_values)
malformed_json = st.sampled_from(['{"order_id": 124?}', "", "{", '{"a": 1', "[1, 2", "{'a': 1}", "nul", "{a: 1}"])


@st.composite
def arguments_json(draw) -> str:
    kind = draw(rarely(st.just("object"), st.sampled_from(["malformed", "other"]), one_in=6))
    if kind == "object":
        return json.dumps(draw(arguments_objects))
    if kind == "malformed":
        return draw(malformed_json)
    return json.dumps(draw(json_values))


@st.composite
def tool_call_item(draw) -> str:
    kind = draw(st.sampled_from(["call"] * 6 + ["string_args", "no_args", "no_name", "not_object", "bad", "odd_name"]))
    name = draw(st.sampled_from(FUNCS))
    if kind == "call":
        return json.dumps({"name": name, "arguments": draw(arguments_objects)})
    if kind == "string_args":
        return json.dumps({"name": name, "arguments": draw(arguments_json())})
    if kind == "no_args":
        return json.dumps({"name": name})
    if kind == "no_name":
        return json.dumps({"arguments": draw(arguments_objects)})
    if kind == "not_object":
        return json.dumps(draw(json_values))
    if kind == "odd_name":
        return json.dumps({"name": draw(json_values), "arguments": {}})
    return draw(malformed_json)


@st.composite
def tool_call_text(draw) -> str:
    items = draw(st.lists(tool_call_item(), max_size=4))
    blocks = []
    for item in items:
        newline = draw(st.sampled_from(["\n", "\n", "\n", "", " ", "\n\n"]))
        closing = draw(st.sampled_from(["\n", "\n", "\n", "", " "]))
        blocks.append(f"<tool_call>{newline}{item}{closing}</tool_call>")
    sep = draw(st.sampled_from(["\n", "", " text ", "\n\n"]))
    prose = draw(st.sampled_from(["", "", "Sure.\n", "<think>\nhmm\n</think>\n\n"]))
    return prose + sep.join(blocks) + draw(st.sampled_from(["", "\nDone.", "\n"]))


def assert_tool_call_parity(text: str) -> list[str] | None:
    ours = _ours(decode_tool_call_tags, text)
    theirs = _outcome(lambda t: handler("json").decode_execute(t, has_tool_call_tag=False), text)
    assert _same(ours, theirs), f"{text!r}: ours {ours}, BFCL {theirs}"
    return ours[1] if ours[0] == "ok" else None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('<tool_call>\n{"name": "cd", "arguments": {"folder": "a"}}\n</tool_call>', ["cd(folder='a')"]),
        ('<tool_call>{"name": "cd", "arguments": {"folder": "a"}}</tool_call>', []),
        (
            '<tool_call>\n{"name": "cd", "arguments": {bad}}\n</tool_call>\n'
            '<tool_call>\n{"name": "ls", "arguments": {"a": true}}\n</tool_call>',
            ["ls(a=True)"],
        ),
        ('<tool_call>\n{"name": "ls", "arguments": "{\\"a\\": NaN}"}\n</tool_call>', ["ls(a=nan)"]),
        ('<tool_call>\n{"name": "ls"}\n</tool_call>', None),
        ("<tool_call>\n[1]\n</tool_call>", None),
        ('<tool_call>\n{"name": "ls", "arguments": [1]}\n</tool_call>', None),
    ],
)
def test_tool_call_examples(text, expected):
    assert assert_tool_call_parity(text) == expected


@SETTINGS
@given(tool_call_text())
def test_tool_call_decoder_matches_bfcl(text):
    assert_tool_call_parity(text)


# --- structured function calls ---------------------------------------------------------------


@st.composite
def function_calls(draw) -> Any:
    kind = draw(st.sampled_from(["list"] * 6 + ["dict", "text", "none", "tuple", "odd_items"]))
    if kind == "text":
        return draw(st.sampled_from(["", "I cannot help with that.", "ls()"]))
    if kind == "none":
        return None
    entry = st.dictionaries(
        st.sampled_from(FUNCS),
        rarely(
            st.one_of(arguments_json(), arguments_objects),
            st.one_of(st.none(), st.integers(), st.lists(st.integers(), max_size=2)),
            one_in=10,
        ),
        min_size=1,
        max_size=2,
    )
    if kind == "dict":
        return draw(entry)
    calls = draw(st.lists(entry, max_size=4))
    if kind == "odd_items":
        calls.insert(0, draw(st.sampled_from(["ls", 3, None, ["ls", "{}"]])))
    return tuple(calls) if kind == "tuple" else calls


def assert_function_call_parity(calls: Any) -> list[str] | None:
    ours = _ours(decode_function_calls, copy.deepcopy(calls))
    theirs = _outcome(_bfcl_utils().convert_to_function_call, copy.deepcopy(calls))
    assert _same(ours, theirs), f"{calls!r}: ours {ours}, BFCL {theirs}"
    return ours[1] if ours[0] == "ok" else None


@pytest.mark.parametrize(
    ("calls", "expected"),
    [
        ([{"cd": '{"folder": "a"}'}, {"ls": "{}"}], ["cd(folder='a')", "ls()"]),
        ({"cd": {"folder": "a"}, "ls": "{}"}, ["cd(folder='a')", "ls()"]),
        ([{"get_order_details": '{"order_id": 124?}'}, {"ls": "{}"}], None),
        ([{"ls": ""}], None),
        ([{"mean": '{"numbers": [NaN, Infinity, -Infinity, 1e400]}'}], ["mean(numbers=[nan, inf, -inf, inf])"]),
        ([{"f": '{"a": {"b": {"c": 1}}, "t": [1, [2]]}'}], ["f(a={'b': {'c': 1}},t=[1, [2]])"]),
        ([], []),
        ("", []),
        ("plain text", None),
    ],
)
def test_function_call_examples(calls, expected):
    assert assert_function_call_parity(calls) == expected


@SETTINGS
@given(function_calls())
def test_function_call_decoder_matches_bfcl(calls):
    assert_function_call_parity(calls)


# --- whole actions: what the env decodes vs BFCL's handlers ------------------------------------


@st.composite
def fc_action(draw) -> dict[str, Any]:
    kind = draw(st.sampled_from(["calls"] * 4 + ["none", "empty", "missing"]))
    content = draw(st.sampled_from(["", "Let me check.", "[ls()]"]))
    if kind == "none":
        return {"content": content, "tool_calls": None}
    if kind == "empty":
        return {"content": content, "tool_calls": []}
    calls = [
        {
            "id": f"call_{i}",
            "type": "function",
            "function": {"name": draw(st.sampled_from(FUNCS)), "arguments": draw(arguments_json())},
        }
        for i in range(draw(st.integers(1, 4)))
    ]
    return {"content": content, "tool_calls": calls}


def _action_parity(action: Any, response_format: str, tool_format: str) -> None:
    parsed = parse_action_bfcl(copy.deepcopy(action), tool_format)
    ours = ("raises", None) if parsed.failure else ("ok", [c.source for c in parsed.calls])
    responses = model_response(copy.deepcopy(action), response_format)
    theirs = _outcome(lambda r: handler(response_format).decode_execute(r, has_tool_call_tag=False), responses)
    assert _same(ours, theirs), f"{action!r}: ours {ours} ({parsed.failure}), BFCL {theirs}"


@SETTINGS
@given(fc_action())
def test_tool_calls_actions_match_bfcl(action):
    _action_parity(action, "fc", "python")


think_texts = st.tuples(
    st.sampled_from(["", "<think>", "<think>\n", "\n<think>x"]),
    st.text(alphabet="ab\n <>/[]()", max_size=12),
    st.sampled_from(["", "</think>", "</think>\n", "</think>\n\n", "\n</think>"]),
    st.sampled_from(["", "</think>", "x</think>\n"]),
    st.sampled_from(["[ls()]", "\n[ls(a=True)]", "ls()", "\n\n"]),
)


@SETTINGS
@given(think_texts.map("".join))
def test_visible_response_matches_bfcl_reasoning_split(text):
    assert visible_response(text) == model_response(text, "python") == model_response(text, "json")
    _action_parity(text, "python", "python")
    _action_parity(text, "json", "json")


def test_fc_response_shapes_match_openai_handler():
    """Our reading of ``tool_calls`` equals BFCL's OpenAI handler on the shapes an API returns."""
    call = SimpleNamespace(id="c", function=SimpleNamespace(name="ls", arguments='{"a": true}'))
    message = SimpleNamespace(content="x", tool_calls=[call])
    api = SimpleNamespace(
        choices=[SimpleNamespace(message=message)], usage=SimpleNamespace(prompt_tokens=0, completion_tokens=0)
    )
    assert handler("fc")._parse_query_response_FC(api)["model_responses"] == [{"ls": '{"a": true}'}]
    action = {
        "content": "x",
        "tool_calls": [{"id": "c", "type": "function", "function": {"name": "ls", "arguments": '{"a": true}'}}],
    }
    assert [c.source for c in parse_action_bfcl(action, "python").calls] == ["ls(a=True)"]
