"""`json_copy`, `json_value` and `tool_call_blocks` give what the standard library's calls they replace give."""

from __future__ import annotations

import json
import random
import re
from typing import Any

import pytest

from tooluse_gym.decoding.bfcl import tool_call_blocks
from tooluse_gym.decoding.json_values import json_copy, json_value


class _Text(str):
    pass


class _Number(int):
    pass


VALUES: list[Any] = [
    {},
    {"a": 1, "b": "x", "c": None, "d": True, "e": 2.5, "f": -0.0},
    {"a": [1, (2, 3), {"b": (4,)}]},
    (1, "two", [3.0]),
    [{"nested": {"deep": [[[]]]}}],
    {"big": 10**600, "negative": -(10**600)},
    {"huge": 10**5000},  # past the digits `str` writes: the round trip's ValueError
    {"nan": float("nan")},
    [float("inf")],
    {1: "int key"},
    {"a": 1, 1: "a"},
    {None: 1, True: 2, 2.5: 3},
    {"set": {1, 2}},
    {"bytes": b"x"},
    {"sub": _Text("text"), "number": _Number(3)},
    _Text("top"),
    {"ordered": dict(zip("zyx", range(3), strict=True))},
]


def _outcome(call: Any, value: Any) -> tuple[str, Any]:
    try:
        return "value", call(value)
    except (TypeError, ValueError, RecursionError) as e:  # json.loads's JSONDecodeError counts as a ValueError
        return "error", next(t for t in (RecursionError, TypeError, ValueError) if isinstance(e, t))


@pytest.mark.parametrize("value", VALUES, ids=range(len(VALUES)))
def test_json_copy_is_the_round_trip(value: Any):
    expected = _outcome(lambda v: json.loads(json.dumps(v, allow_nan=False)), value)
    got = _outcome(json_copy, value)
    assert got == expected
    if got[0] == "value":
        assert json.dumps(got[1]) == json.dumps(expected[1])  # key order and types too
        assert [type(x) for x in _leaves(got[1])] == [type(x) for x in _leaves(expected[1])]


def test_json_copy_copies_every_container():
    value = {"a": [1, {"b": [2]}], "c": {"d": "e"}}
    copied = json_copy(value)
    copied["a"][1]["b"].append(3)
    copied["c"]["d"] = "changed"
    assert value == {"a": [1, {"b": [2]}], "c": {"d": "e"}}


def test_json_copy_of_a_cycle_raises_as_the_round_trip_does():
    cycle: list[Any] = []
    cycle.append(cycle)
    assert _outcome(json_copy, cycle) == ("error", ValueError)


TEXTS = [
    "{}",
    ' {"a": 1} ',
    '\n\t{"a": [1, {"b": null}]}\r\n',
    "\ufeff{}",
    " \ufeff{}",
    "{} {}",
    "1 2",
    "NaN",
    "-Infinity",
    "[1, 2.5e3, -0]",
    "",
    "   ",
    '"caf\\u00e9"',
    '{"a": "\x01"}',
    "tru",
    '{"a": 1,}',
    "\x0b{}",
    "{}\x0c",
    "\xa0{}",
    "{}\u2028",
    "[" * 100_000,
    '{"a": 1, "a": 2}',
]


@pytest.mark.parametrize("text", TEXTS, ids=range(len(TEXTS)))
def test_json_value_reads_as_json_loads(text: str):
    expected = _outcome(json.loads, text)
    got = _outcome(json_value, text)
    assert got[0] == expected[0]
    assert json.dumps(got[1]) == json.dumps(expected[1]) if got[0] == "value" else got[1] == expected[1]


_BLOCKS = re.compile(r"<tool_call>\n(.*?)\n</tool_call>", re.DOTALL)
_PIECES = ["<tool_call>", "</tool_call>", "\n", "<tool_call>\n", "\n</tool_call>", "{}", "x", " ", "<tool", "call>"]


def test_tool_call_blocks_are_the_regex_blocks():
    fixed = [
        "<tool_call>\n{}\n</tool_call>",
        "<tool_call>\n\n</tool_call>",
        "<tool_call>\n</tool_call>\n</tool_call>",
        "<tool_call>\n<tool_call>\n{}\n</tool_call>\n</tool_call>",
        "<tool_call>\n{}\n</tool_call>\n<tool_call>\n[]\n</tool_call>",
        "<tool_call>\n{} no closing",
        "text <tool_call>\n{}\n</tool_call> text",
        "",
    ]
    rng = random.Random(0)
    drawn = ["".join(rng.choice(_PIECES) for _ in range(rng.randrange(12))) for _ in range(5000)]
    for text in fixed + drawn:
        assert tool_call_blocks(text) == _BLOCKS.findall(text), text


def _leaves(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [value, *(x for v in value.values() for x in _leaves(v))]
    if isinstance(value, list):
        return [value, *(x for v in value for x in _leaves(v))]
    return [value]
