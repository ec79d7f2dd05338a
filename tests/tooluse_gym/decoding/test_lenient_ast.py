"""The single-turn ``lenient`` decoder: what it reads, how it binds, what fails as a whole, and its limits."""

from __future__ import annotations

import time

from hypothesis import given, settings
from hypothesis import strategies as st

from tooluse_gym.decoding.lenient_ast import decode_lenient_action, embedded_call_lists
from tooluse_gym.decoding.limits import MAX_CALLS_PER_MESSAGE, MAX_LENIENT_CANDIDATES, MAX_MESSAGE_CHARS

AREA = {
    "name": "calculate_triangle_area",
    "parameters": {
        "type": "dict",
        "properties": {"base": {"type": "integer"}, "height": {"type": "integer"}, "unit": {"type": "string"}},
        "required": ["base", "height"],
    },
}
DOTTED = {"name": "math.hypot", "parameters": {"type": "dict", "properties": {"x": {}, "y": {}}, "required": []}}
DOCS = [AREA, DOTTED]
WANTED = (("calculate_triangle_area", {"base": 10, "height": 5}),)


def calls(action, tool_format="python", docs=DOCS, dot=False):
    decoded = decode_lenient_action(action, tool_format, docs, underscore_to_dot=dot)
    return decoded.calls, decoded.failure


def test_what_bfcl_reads_reads_the_same():
    assert calls("[calculate_triangle_area(base=10, height=5)]") == (WANTED, None)
    assert calls("calculate_triangle_area(base=10, height=5)") == (WANTED, None)
    assert calls("[math.hypot(x=3, y=(1, 2))]") == ((("math.hypot", {"x": 3, "y": (1, 2)}),), None)
    text = '<tool_call>\n{"name": "calculate_triangle_area", "arguments": {"base": 10, "height": 5}}\n</tool_call>'
    assert calls(text, "json") == (WANTED, None)
    fc = {
        "content": None,
        "tool_calls": [{"id": "c1", "function": {"name": AREA["name"], "arguments": '{"base": 10, "height": 5}'}}],
    }
    decoded = decode_lenient_action(fc, "python", DOCS)
    assert (decoded.calls, decoded.ids) == (WANTED, ("c1",))


def test_positional_arguments_bind_by_the_schema():
    assert calls("[calculate_triangle_area(10, 5)]") == (WANTED, None)
    assert calls("[calculate_triangle_area(10, height=5)]") == (WANTED, None)
    assert calls("[math_hypot(3, 4)]", dot=True) == ((("math_hypot", {"x": 3, "y": 4}),), None)
    # a function not offered has no schema: its positional arguments are dropped, as BFCL drops them
    assert calls("[get_weather('Paris', unit='C')]") == ((("get_weather", {"unit": "C"}),), None)


def test_fences_think_blocks_and_prose_around_the_list():
    for text in [
        "```python\n[calculate_triangle_area(10, 5)]\n```",
        "Sure! Here is the call:\n[calculate_triangle_area(base=10, height=5)]",
        "[calculate_triangle_area(base=10, height=5)]\nThis computes the area.",
        "I'll use `[calculate_triangle_area(base=10, height=5)]` for that.",
        "Here:\n```\ncalculate_triangle_area(base=10, height=5)\n```\nDone.",
        "<think>maybe [other(a=1)]</think>\n[calculate_triangle_area(base=10, height=5)]",
        "the plan</think>\ncalculate_triangle_area(10, 5)",
        "[calculate_triangle_area(base=10, height=5)]\n<think>check it again",
        "It's easy: [calculate_triangle_area(base=10, height=5)] (isn't it?)",
    ]:
        assert calls(text) == (WANTED, None), text
    # the first list that holds calls is read
    assert calls("[calculate_triangle_area(base=10, height=5)] or [math.hypot(x=1)]") == (WANTED, None)
    # brackets inside strings do not end the list
    assert calls("Call: [calculate_triangle_area(base=10, height=5, unit='] cm [')] now")[0] == (
        ("calculate_triangle_area", {"base": 10, "height": 5, "unit": "] cm ["}),
    )


def test_no_call_is_an_empty_list_and_an_attempt_that_does_not_parse_a_failure():
    for action in ["I cannot help with that.", "", "[]", {"content": "", "tool_calls": []}, {"content": None}]:
        assert calls(action) == ((), None), action
    assert calls("no tags here", "json") == ((), None)
    decoded, failure = calls("[calculate_triangle_area(base=10, height=5")
    assert decoded is None and "SyntaxError" in failure


def test_a_malformed_call_fails_the_whole_message():
    for text, reason in [
        ("[calculate_triangle_area(base=10, height=5), math.hypot(x=open('f'))]", "call 1 (math.hypot)"),
        ("[calculate_triangle_area(base=4+6, height=5)]", "BinOp is not a literal"),
        ("[calculate_triangle_area(base=ten, height=5)]", "Name is not a literal"),
        ("[calculate_triangle_area(10, 5, 'cm', 1)]", "4 positional arguments"),
        ("[calculate_triangle_area(10, base=5)]", "given by position and by name"),
        ("[calculate_triangle_area(*[10, 5])]", "*args"),
    ]:
        decoded, failure = calls(text)
        assert decoded is None and failure.startswith("malformed calls:") and reason in failure, (text, failure)
    decoded, failure = calls(
        '<tool_call>{"name": "a", "arguments": {}}</tool_call><tool_call>{oops}</tool_call>', "json"
    )
    assert decoded is None and "call 1" in failure
    fc = {"tool_calls": [{"function": {"name": "a", "arguments": "{}"}}, {"function": {"name": "b", "arguments": "{"}}]}
    assert calls(fc)[0] is None


def test_size_caps_hold():
    assert calls("[calculate_triangle_area(base=1)]" + " " * MAX_MESSAGE_CHARS)[1].startswith("message longer than")
    many = "[" + ", ".join(["calculate_triangle_area(base=1, height=1)"] * (MAX_CALLS_PER_MESSAGE + 1)) + "]"
    assert calls(many) == (None, f"more than {MAX_CALLS_PER_MESSAGE} calls in one message")
    assert calls("Here: " + many)[0] is None
    # only the first MAX_LENIENT_CANDIDATES fenced blocks and lists are tried
    decoys = "Try " + " or ".join(["[x(1) y]"] * MAX_LENIENT_CANDIDATES)
    assert calls(decoys + " [calculate_triangle_area(base=10, height=5)]")[0] is None
    fewer = "Try " + " or ".join(["[x(1) y]"] * (MAX_LENIENT_CANDIDATES - 1))
    assert calls(fewer + " [calculate_triangle_area(base=10, height=5)]") == (WANTED, None)
    assert len(list(embedded_call_lists("```\na\n``` [f(1)] " * 40))) == MAX_LENIENT_CANDIDATES


def test_hostile_text_is_bounded_in_time():
    for text in [
        "[f(" * (MAX_MESSAGE_CHARS // 3),
        "Sure " + "[f('" * (MAX_MESSAGE_CHARS // 5),
        "```\n" * (MAX_MESSAGE_CHARS // 4),
        "x [f(a=" + "[" * 30000 + "]" * 30000 + ")]",
    ]:
        start = time.perf_counter()
        decoded = decode_lenient_action(text[:MAX_MESSAGE_CHARS], "python", DOCS)
        assert time.perf_counter() - start < 5.0
        assert not decoded.calls


@settings(max_examples=300, deadline=None)
@given(
    st.text(max_size=40),
    st.one_of(
        st.text(max_size=60),
        st.from_regex(r"\[[a-z_.]{1,12}\((('[^']{0,6}'|-?[0-9]{1,4}|\[\]|None|True|[a-z]{1,3}), ?){0,3}\)\]"),
        st.from_regex(r"```[a-z]{0,6}\n\[?[a-z]{1,6}\(([a-z]{1,4}=[0-9]{1,3}, ?){0,2}\)\]?\n```"),
    ),
    st.text(max_size=40),
    st.sampled_from(["python", "json"]),
)
def test_any_text_decodes_or_fails_without_raising(before, middle, after, tool_format):
    decoded = decode_lenient_action(before + middle + after, tool_format, DOCS)
    assert (decoded.calls is None) == (decoded.failure is not None)
    for name, params in decoded.calls or ():
        assert isinstance(name, str) and type(params) is dict
    assert len(decoded.calls or ()) <= MAX_CALLS_PER_MESSAGE
    decoded.parsed()  # the step record's form
