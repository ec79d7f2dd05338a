"""JSON the way the standard library reads and writes it, without its per-call overhead.

* `json_copy`: a value as JSON carries it (``json.loads(json.dumps(value, allow_nan=False))``).
  Transcripts show a decoded call's arguments as JSON values (tuples become lists). The round
  trip through a string builds an encoder per call and costs more than decoding the message
  did; the arguments decoders produce are nearly always plain already (dicts with string keys,
  lists, strings, ints, finite floats, booleans, None), and those are copied directly here.
  Anything else (a set, a key that is not a string, NaN, a subclass of a JSON type, an int too
  long to write) takes the round trip itself, so the result, or the error, is the round trip's.
* `json_value`: the value ``json.loads(text)`` reads from a string, or a `ValueError` where it
  raises one (the message may differ), read by the same C scanner without the wrapper's calls
  and whitespace regexes (a ``<tool_call>`` block is a few dozen characters: the wrapper cost
  as much as the scan).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

__all__ = ["json_copy", "json_value"]

_SCAN: Callable[[str, int], tuple[Any, int]] = json.JSONDecoder().scan_once  # type: ignore[attr-defined]
"""The scanner of a default decoder, which `json.loads` uses (no hooks, strict strings)."""
_WHITESPACE = " \t\n\r"
"""What `json.loads` skips before and after the value (its ``WHITESPACE`` pattern)."""

_INT_BOUND = 1 << 2048
"""Ints within this are written by `json.dumps` whatever ``sys.set_int_max_str_digits`` allows (>= 640 digits)."""
_NEGATIVE_INT_BOUND = -_INT_BOUND


def json_value(text: str) -> Any:
    """What ``json.loads(text)`` returns for a string; `ValueError` (or `RecursionError`) where it raises.

    Raises:
        ValueError: The text is not one JSON value between optional whitespace (a byte order mark too).
        RecursionError: A value nested too deep for the scanner.
    """
    body = text.strip(_WHITESPACE)
    try:
        value, end = _SCAN(body, 0)
    except StopIteration:
        raise ValueError("expecting a JSON value") from None
    if end != len(body):
        raise ValueError(f"extra data after the JSON value at {end}")
    return value


class _NotPlain(Exception):
    """The value holds something the direct copy leaves to the round trip."""


def json_copy(value: Any) -> Any:
    """What ``json.loads(json.dumps(value, allow_nan=False))`` gives, raising what it raises.

    Raises:
        TypeError: A value JSON cannot write (a set, bytes, an object).
        ValueError: NaN or an infinity, a circular reference, an int too long to write.
        RecursionError: A value nested too deep for the encoder.
    """
    try:
        return _copy(value)
    except (_NotPlain, RecursionError):
        return json.loads(json.dumps(value, allow_nan=False))


def _copy(value: Any) -> Any:
    kind = type(value)
    if kind is str or kind is bool or value is None:
        return value
    if kind is int:
        if _NEGATIVE_INT_BOUND < value < _INT_BOUND:
            return value
        raise _NotPlain
    if kind is float:
        if math.isfinite(value):
            return value
        raise _NotPlain
    if kind is dict:
        out = {}
        for key, item in value.items():
            if type(key) is not str:  # JSON writes other keys as strings (and may merge two)
                raise _NotPlain
            # strings and small ints, the usual values, inline; anything else through `_copy`
            item_kind = type(item)
            if item_kind is str or (item_kind is int and _NEGATIVE_INT_BOUND < item < _INT_BOUND):
                out[key] = item
            else:
                out[key] = _copy(item)
        return out
    if kind is list or kind is tuple:
        return [_copy(item) for item in value]
    raise _NotPlain
