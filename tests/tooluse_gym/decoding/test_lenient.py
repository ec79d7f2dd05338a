from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tooluse_gym.decoding.lenient import (
    parse_action,
    parse_call_string,
    parse_json_calls,
    parse_python_calls,
)
from tooluse_gym.decoding.limits import MAX_CALLS_PER_MESSAGE, MAX_LENIENT_LITERAL_DEPTH, MAX_MESSAGE_CHARS
from tooluse_gym.decoding.text import strip_reasoning


def names(parsed):
    return [c.name for c in parsed.calls]


def test_python_list_and_bare_call():
    parsed = parse_python_calls("[cd(folder='docs'), ls(a=True)]")
    assert names(parsed) == ["cd", "ls"]
    assert parsed.calls[0].arguments == {"folder": "docs"}
    assert names(parse_python_calls("pwd()")) == ["pwd"]


def test_positional_arguments_are_kept():
    call = parse_call_string("sort('a.txt')")
    assert call.positional == ("a.txt",) and call.arguments == {}


def test_literals_of_every_kind():
    call = parse_call_string("f(a=-1, b=2.5, c=None, d=[1, (2, 3)], e={'k': [True, False]}, g=+4)")
    assert call.arguments == {"a": -1, "b": 2.5, "c": None, "d": [1, (2, 3)], "e": {"k": [True, False]}, "g": 4}


def test_code_fences_and_reasoning_are_ignored():
    assert names(parse_python_calls("```python\n[cd(folder='x')]\n```")) == ["cd"]
    assert names(parse_python_calls("<think>maybe [rm(file_name='a')]</think>[ls()]")) == ["ls"]
    assert strip_reasoning("a<think>b</think>c<think>unclosed") == "ac"


def test_prose_is_no_call_and_not_a_failure():
    parsed = parse_python_calls("I have finished moving the file.")
    assert parsed.calls == () and parsed.failure is None


def test_broken_call_list_is_a_recorded_failure():
    parsed = parse_python_calls("[cd(folder='x'")
    assert parsed.calls == () and "not a Python call list" in parsed.failure


def test_non_call_elements_reject_the_message():
    assert parse_python_calls("[cd(folder='x'), 3]").calls == ()


@pytest.mark.parametrize(
    "text, reason",
    [
        ("[cd(folder=__import__('os').getcwd())]", "Call is not a literal"),
        ("[cd(folder=x)]", "Name is not a literal"),
        ("[cd(folder=(lambda: 1)())]", "Call is not a literal"),
        ("[cd(folder=[c for c in 'ab'])]", "ListComp is not a literal"),
        ("[cd(folder=f'{1+1}')]", "JoinedStr is not a literal"),
        ("[cd(folder=1+1)]", "BinOp is not a literal"),
        ("[cd(folder='a'.upper())]", "Call is not a literal"),
        ("[cd(folder=().__class__)]", "Attribute is not a literal"),
        ("[cd(folder=b'x')]", "unsupported constant bytes"),
        ("[cd(folder=1j)]", "unsupported constant complex"),
        ("[cd(folder={1, 2})]", "Set is not a literal"),
        ("[cd(**{'folder': 'x'})]", "**kwargs is not allowed"),
        ("[cd(*['x'])]", "*args is not allowed"),
        ("[cd(folder='a', folder='b')]", "given twice"),
        ("[cd(folder='a' 'b' 'c' + 'd')]", "BinOp is not a literal"),
    ],
)
def test_non_literal_arguments_become_call_errors(text, reason):
    (call,) = parse_python_calls(text).calls
    assert call.error is not None and reason in call.error


def test_called_object_must_be_a_name():
    (call,) = parse_python_calls("[(lambda: 1)()]").calls
    assert call.error and call.name == "<invalid>"
    (call,) = parse_python_calls("[os.system(cmd='ls')]").calls
    assert call.name == "os.system" and call.error is None  # an unknown name; the runtime refuses it


def test_size_limits():
    assert parse_python_calls("[f(a='" + "x" * MAX_MESSAGE_CHARS + "')]").failure
    deep = "[f(a=" + "[" * (MAX_LENIENT_LITERAL_DEPTH + 2) + "]" * (MAX_LENIENT_LITERAL_DEPTH + 2) + ")]"
    (call,) = parse_python_calls(deep).calls
    assert "nested deeper" in call.error
    very_deep = "[f(a=" + "[" * 5000 + "]" * 5000 + ")]"
    assert parse_python_calls(very_deep).calls == ()
    many = "[" + ", ".join("ls()" for _ in range(MAX_CALLS_PER_MESSAGE + 1)) + "]"
    assert parse_python_calls(many).failure
    assert parse_python_calls("[f(a=" + "9" * 5000 + ")]").calls == ()  # int literal over Python's limit


def test_json_blocks():
    text = (
        'ok <tool_call>{"name": "cd", "arguments": {"folder": "x"}}</tool_call>\n<tool_call>{"name": "ls"}</tool_call>'
    )
    parsed = parse_json_calls(text)
    assert names(parsed) == ["cd", "ls"] and parsed.calls[1].arguments == {}
    bad = parse_json_calls('<tool_call>{"name": "cd", "arguments": "{not json"}</tool_call><tool_call>[1]</tool_call>')
    assert [c.error is not None for c in bad.calls] == [True, True]
    assert parse_json_calls("<tool_call>{").failure == "unterminated <tool_call> block"
    assert parse_json_calls("[cd(folder='x')]").calls == ()  # python syntax is not the json format
    for depth in (MAX_LENIENT_LITERAL_DEPTH + 2, 20000):  # over our limit; over json's recursion limit
        deep = '<tool_call>{"name": "f", "arguments": {"a": ' + "[" * depth + "]" * depth + "}}</tool_call>"
        (call,) = parse_json_calls(deep).calls
        assert call.error


def test_structured_tool_calls():
    action = {
        "content": "",
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "cd", "arguments": '{"folder": "x"}'}},
            {"id": "c2", "type": "function", "function": {"name": "ls", "arguments": {"a": True}}},
            {"id": "c3", "function": {"name": "cd", "arguments": "[1]"}},
            "garbage",
        ],
    }
    parsed = parse_action(action, "python")
    assert [c.call_id for c in parsed.calls[:3]] == ["c1", "c2", "c3"]
    assert parsed.calls[0].arguments == {"folder": "x"} and parsed.calls[1].arguments == {"a": True}
    assert parsed.calls[2].error and parsed.calls[3].error
    # a dict without tool_calls is a text message in the env's format
    assert names(parse_action({"content": "[pwd()]"}, "python")) == ["pwd"]


def test_unknown_format_and_bad_action_type():
    with pytest.raises(ValueError):
        parse_action("x", "xml")
    assert parse_action(b"\xff", "python").failure
    assert parse_action(None, "json").calls == ()


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_parsers_never_raise_on_text(text):
    for fmt in ("python", "json"):
        parse_action(text, fmt)
    parse_action("[" + text + "]", "python")
    parse_action("<tool_call>" + text + "</tool_call>", "json")


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.text(), json_values | st.binary(), max_size=4), json_values)
def test_structured_parser_never_raises(action, calls):
    parse_action(action, "python")
    parse_action({"tool_calls": [calls, {"function": calls}]}, "json")
