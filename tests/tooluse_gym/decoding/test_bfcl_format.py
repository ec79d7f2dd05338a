"""`tooluse_gym.decoding.bfcl_format` against bfcl_eval's own decoders, and on hostile text.

The JSON and XML return formats are compared with bfcl_eval's ``default_decode_ast_prompting``
on generated text (its JSON and XML paths evaluate nothing; the texts stay short because its
JSON pattern takes exponential time on some of them); the linear scan that replaces that
pattern is compared with `re` itself, and the literal reader with `ast.literal_eval`. The
Python format is BFCL's Python decoder (`tests.tooluse_gym.decoding.test_bfcl_decoder`). Every decoder must
return, never raise, and finish quickly on text built to be slow, deep or huge.
"""

from __future__ import annotations

import ast
import math
import os
import re
import time
from functools import cache
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tooluse_gym.decoding.base import DecodeError
from tooluse_gym.decoding.bfcl_format import decode_format_action, json_list_span, literal_value
from tooluse_gym.prompt_formats import RETURN_FORMATS
from tooluse_gym.tasks import bfcl

SETTINGS = settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
BFCL_JSON_LIST = re.compile(r"\[\s*{.*?}\s*(?:,\s*{.*?}\s*)*\]", re.DOTALL)
"""BFCL's pattern (``parse_json_function_call``), to compare the scan with."""
_F, _END = '<functions><function name="f">', "</function></functions>"


def _key(value: Any) -> Any:
    """A value with NaN made comparable (NaN != NaN) and types kept apart (1 == 1.0 == True)."""
    if isinstance(value, float) and math.isnan(value):
        return ("nan",)
    if isinstance(value, (list, tuple, set, frozenset)):
        items = [_key(v) for v in value]
        return (type(value).__name__, sorted(items, key=repr) if isinstance(value, (set, frozenset)) else items)
    if isinstance(value, dict):
        return ("dict", [(_key(k), _key(v)) for k, v in value.items()])
    return (type(value).__name__, value)


def bfcl_decoded(text: str, return_format: str, tag: bool) -> Any:
    bfcl.backend_classes()
    pytest.importorskip("tree_sitter", reason="bfcl_eval's decoders need tree_sitter (the dev extra)")
    from bfcl_eval.constants.enums import ReturnFormat
    from bfcl_eval.model_handler.utils import default_decode_ast_prompting

    try:
        return _key(default_decode_ast_prompting(text, ReturnFormat(return_format), tag))
    except Exception:
        return "raises"


def ours_decoded(text: str, return_format: str, tag: bool) -> Any:
    decoded = decode_format_action(text, return_format, tag)
    if decoded.calls is None:
        return "raises"
    return _key([{name: params} for name, params in decoded.calls])


# --- the JSON pattern -----------------------------------------------------------------------

bracket_text = st.one_of(
    st.text(alphabet='[]{},: \t\n\xa0\x1ca"', max_size=24),
    st.lists(
        st.sampled_from(["[", "]", "{", "}", ",", " ", "a", "\xa0", ", {", "}]", "{}", "[{", "} ,"]), max_size=12
    ).map("".join),
)


@SETTINGS
@given(bracket_text)
@example("[{}]")
@example("[ {a}, {b} ]")
@example("[{a}], {b}]")
@example("[{x}, {y}, ]")
@example('[{"a": [{}, {}]}]')
@example("[\xa0{}\x1c]")
def test_json_list_span_is_res_match(text):
    match = BFCL_JSON_LIST.search(text)
    assert json_list_span(text) == (match.span() if match else None)


def test_json_list_span_is_linear_where_the_pattern_is_exponential():
    text = "[{}" + ",{}" * 30000 + "x"
    start = time.perf_counter()
    assert json_list_span(text) is None
    assert time.perf_counter() - start < 2.0


# --- literals ------------------------------------------------------------------------------

literal_text = st.one_of(
    st.text(alphabet="[](){}, :'\"0123456789.+-jeEabst\\\n\t", max_size=20),
    st.recursive(
        st.one_of(st.integers(), st.floats(), st.text(max_size=5), st.booleans(), st.none(), st.complex_numbers()),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
        max_leaves=8,
    ).map(repr),
)


@SETTINGS
@given(literal_text)
@example("set()")
@example("-1+2j")
@example("+1-2j")
@example("{1: 2, **x}")
@example("{[1]: 2}")
@example("{[1]}")
@example("  \t[1]")
@example("...")
@example("b'x'")
@example("-(1)")
@example("1+2")
def test_literal_value_is_literal_eval(text):
    try:
        expected = _key(ast.literal_eval(text))
    except Exception:
        expected = "raises"
    try:
        got = _key(literal_value(text))
    except DecodeError:
        got = "raises"
    assert got == expected, text


# --- whole messages against bfcl_eval -------------------------------------------------------

_XML_PIECES = (
    "<functions>", "</functions>", '<function name="f">', '<function name="g.h">', "<function>", "</function>",
    "<params>", "</params>", '<param name="a" value="1" type="integer"/>', '<param name="b" value="x"/>',
    '<param name="c" value="[1, (2, 3)]" type="array"/>', '<param name="d" value="{1: 2}" type="dict"/>',
    '<param name="e" value="TRUE" type="boolean"/>', '<param name="f" value="1.5e3" type="float"/>',
    '<param value="x"/>', '<param name="a" type="integer">7</param>', '<param name="s">  text </param>',
    '<param name="n" type="null">x</param>', '<param name="t" type="tuple">(1,)</param>',
    '<param type="string">v</param>', '<param name="z" type="float">nan</param>', "</param>",
    "<TOOLCALL>", "</TOOLCALL>", "```xml\n", "```", "&amp;", "&bogus;", "<!-- c -->", "text ", " ", "\n", "[", "]",
)  # fmt: skip
_JSON_PIECES = (
    "[", "]", "{", "}", ",", ":", " ", "\n", '"function"', '"parameters"', '"f"', '"g"', "1", "[1, 2]", "null",
    '{"a": 1}', '{"function": "f", "parameters": {"a": [1]}}', "<TOOLCALL>", "</TOOLCALL>", "```json\n", "```",
    "text", '"x"', "1e400", "true",
)  # fmt: skip


_TYPED_VALUES = (
    ("integer", "7"), ("integer", " -3 "), ("integer", "x"), ("float", "1.5e3"), ("float", "nan"), ("float", ""),
    ("boolean", "TRUE"), ("boolean", "yes"), ("null", "x"), ("array", "[1, (2, 3)]"), ("tuple", "(1,)"),
    ("dict", "{1: 2}"), ("object", "{'a': [1]}"), ("array", "[1, x]"), ("dict", "{[1]: 2}"), ("string", " s &amp; t "),
    ("", "v"), ("other", "v"), ("array", "set()"), ("array", "-1+2j"),
)  # fmt: skip


@st.composite
def xml_text(draw) -> tuple[str, str]:
    """A document in one of the XML formats: mostly well formed, sometimes with a stray piece inserted."""
    verbose = draw(st.booleans())
    out = ["<functions>"]
    for _ in range(draw(st.integers(0, 3))):
        names = [
            '<function name="f">',
            '<function name="a.b">',
            "<function>",
            '<function name="calculate_triangle_area">',
        ]
        out.append(draw(st.sampled_from(names)))
        params = []
        for _ in range(draw(st.integers(0, 3))):
            kind, value = draw(st.sampled_from(_TYPED_VALUES))
            name = draw(st.sampled_from(['name="p" ', 'name="q" ', "", 'name="base" ', 'name="height" ']))
            typed = f'type="{kind}"' if kind else ""
            params.append(
                f'<param {name}value="{value}" {typed}/>' if verbose else f"<param {name}{typed}>{value}</param>"
            )
        wrapped = verbose and draw(st.booleans())
        out.extend(["<params>", *params, "</params>"] if wrapped else params)
        out.append("</function>")
    out.append("</functions>")
    if draw(st.integers(0, 3)) == 0:
        out.insert(draw(st.integers(0, len(out))), draw(st.sampled_from(_XML_PIECES)))
    return "".join(out), "verbose_xml" if verbose else "concise_xml"


@SETTINGS
@given(xml_text(), st.booleans(), st.sampled_from(["", "Here: ", "```xml\n"]))
def test_generated_xml_documents_match_bfcl(doc, tag, before):
    text, return_format = doc
    text = before + (f"<TOOLCALL>{text}</TOOLCALL>" if tag else text)
    assert ours_decoded(text, return_format, tag) == bfcl_decoded(text, return_format, tag), text


@SETTINGS
@given(
    st.lists(st.sampled_from(_XML_PIECES), max_size=14).map("".join),
    st.sampled_from(["verbose_xml", "concise_xml"]),
    st.booleans(),
)
@example(
    '<functions><function name="f"><params><param name="a" value="1" type="integer"/></params></function></functions>',
    "verbose_xml",
    False,
)
@example(
    f'<TOOLCALL>{_F}<param name="a" type="array">[1, 2]</param>{_END}</TOOLCALL>',
    "concise_xml",
    True,
)
def test_xml_decoding_matches_bfcl(text, return_format, tag):
    assert ours_decoded(text, return_format, tag) == bfcl_decoded(text, return_format, tag), text


_JSON_ITEMS = (
    '{"function": "f", "parameters": {"a": 1}}', '{"function": "g.h", "parameters": {}}', "{}", '{"function": "f"}',
    '{"parameters": {}}', '{"function": ["f"], "parameters": {}}', '{"function": 1, "parameters": [1]}', "1", '"s"',
    "null", "[]", '{"function": "f", "parameters": {"a": [{"b": 1}, {"c": 2}]}}',
    '{"function": "f", "parameters": {"a": {"b": {}}}}',
    '{"function": "calculate_triangle_area", "parameters": {"base": {"x": 1}, "height": [1], "unit": null}}',
    '{"function": "calculate_triangle_area", "parameters": {"base": 10, "height": 5}}',
)  # fmt: skip


@st.composite
def json_text(draw) -> str:
    """A JSON call list, mostly well formed, sometimes with a stray piece, in a fence, tag or prose."""
    items = draw(st.lists(st.sampled_from(_JSON_ITEMS), max_size=3))
    out = ["[", ", ".join(items), "]"] if draw(st.integers(0, 5)) else [draw(st.sampled_from(_JSON_ITEMS))]
    if draw(st.integers(0, 3)) == 0:
        out.insert(draw(st.integers(0, len(out))), draw(st.sampled_from(_JSON_PIECES)))
    return (
        draw(st.sampled_from(["", "```json\n", "Calls: "])) + "".join(out) + draw(st.sampled_from(["", "\n```", " ok"]))
    )


@SETTINGS
@given(json_text(), st.booleans())
@example("[{}]", False)
@example("1", True)
@example('"s"', True)
def test_generated_json_lists_match_bfcl(text, tag):
    text = f"<TOOLCALL>{text}</TOOLCALL>" if tag else text
    assert ours_decoded(text, "json", tag) == bfcl_decoded(text, "json", tag), text


@SETTINGS
@given(st.lists(st.sampled_from(_JSON_PIECES), max_size=12).map("".join), st.booleans())
@example('```json\n[{"function": "f", "parameters": {"a": 1}}]\n```', False)
@example('<TOOLCALL>[{"function": "f", "parameters": {"a": [{"b": 1}]}}]</TOOLCALL>', True)
@example('[{"function": "f"}]', False)
@example("[1]", False)
@example("5", False)
def test_json_decoding_matches_bfcl(text, tag):
    assert ours_decoded(text, "json", tag) == bfcl_decoded(text, "json", tag), text


# --- hostile input ------------------------------------------------------------------------------

CANARY = "tooluse_format_canary"
HOSTILE = [
    f"[__import__('os').system('touch {CANARY}')]",
    f"<TOOLCALL>[f(a=open('{CANARY}', 'w'))]</TOOLCALL>",
    f'{_F}<param name="a" type="array">__import__("os").system("touch {CANARY}")</param>{_END}',
    f'{_F}<params><param name="a" value="[open(\'{CANARY}\', \'w\')]" type="dict"/></params>{_END}',
    '<?xml version="1.0"?><!DOCTYPE l [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;&a;&a;&a;">]>'
    "<functions>&b;</functions>",
    "<functions>" + "<a>" * 20000 + "</a>" * 20000 + "</functions>",
    f'{_F}<param name="a" type="array">' + "[" * 5000 + "]" * 5000 + f"</param>{_END}",
    f'{_F}<param name="a" type="integer">' + "9" * 30000 + f"</param>{_END}",
    "[{}" + ",{}" * 20000,
    "[" * 30000,
    "<TOOLCALL>" * 6000,
    "<functions>" * 5000,
    '[{"function": "f", "parameters": ' + "[" * 30000 + "]" * 30000 + "}]",
    "[f(a=" + "9" * 20000 + ")]",
    "\udcff<functions><function name='\ud800'/></functions>",
    "x" * 70000,
]


@pytest.mark.parametrize("text", HOSTILE, ids=range(len(HOSTILE)))
@pytest.mark.parametrize("tag", [False, True])
@pytest.mark.parametrize("return_format", RETURN_FORMATS)
def test_hostile_text_is_data(text, tag, return_format, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    start = time.perf_counter()
    body = f"<TOOLCALL>{text}</TOOLCALL>" if tag else text
    decoded = decode_format_action(body, return_format, tag)
    assert time.perf_counter() - start < 2.0
    assert decoded.calls is not None or decoded.failure
    assert not os.path.exists(CANARY)


@SETTINGS
@given(st.text(max_size=300), st.sampled_from(RETURN_FORMATS), st.booleans())
def test_any_text_decodes_or_fails_without_raising(text, return_format, tag):
    decoded = decode_format_action(text, return_format, tag)
    assert (decoded.calls is None) == (decoded.failure is not None)
    decoded.parsed()  # the step record's view never raises either


_STEP_TASKS = ("simple_python_0", "parallel_multiple_0", "irrelevance_0", "live_multiple_0-0-0", "live_relevance_0-0-0")


@cache
def _env(return_format: str, tag: bool) -> Any:
    import gymnasium as gym

    import tooluse_gym  # noqa: F401  (registers the env ids)

    config = f"ret_fmt={return_format}&tool_call_tag={tag}&func_doc_fmt=json&prompt_fmt=plaintext&style=classic"
    return gym.make("ToolUse-SingleTurn-v0", category="single_turn", task_ids=_STEP_TASKS, prompt_format=config)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(xml_text(), json_text().map(lambda t: (t, "json"))), st.sampled_from(_STEP_TASKS), st.booleans())
def test_env_steps_on_generated_markup_never_raise(doc, task_id, tag):
    """Odd decoded values (None keys, sets, bytes, complex, non-string names) reach the checker as data."""
    text, return_format = doc
    env = _env(return_format, tag)
    env.reset(options={"task_id": task_id})
    _, reward, terminated, _, info = env.step(f"<TOOLCALL>{text}</TOOLCALL>" if tag else text)
    assert terminated and reward in (0.0, 1.0) and isinstance(info["checker"]["valid"], bool)


def test_structured_calls_are_not_read():
    action = {"content": "", "tool_calls": [{"function": {"name": "f", "arguments": "{}"}}]}
    assert decode_format_action(action, "json", False).failure
    assert decode_format_action({"content": '[{"function": "f", "parameters": {}}]'}, "json", False).calls == (
        ("f", {}),
    )
