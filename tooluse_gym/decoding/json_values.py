"""`json_copy`: a value as JSON carries it (``json.loads(json.dumps(value, allow_nan=False))``), made cheaply.

Transcripts show a decoded call's arguments as JSON values (tuples become lists). The round trip
through a JSON string builds an encoder per call and costs more than decoding the message
did; the arguments decoders produce are nearly always plain already (dicts with string keys,
lists, strings, ints, finite floats, booleans, None), and those are copied directly here. Anything
else (a set, a key that is not a string, NaN, a subclass of a JSON type, an int too long to
write) takes the round trip itself, so the result, or the error, is the round trip's.
"""

from __future__ import annotations

import json
import math
from typing import Any

__all__ = ["json_copy"]

_LONGEST_INT = 10**4000
"""Ints shorter than this are written by `json.dumps` whatever ``sys.set_int_max_str_digits`` says (>= 640)."""


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
        if -_LONGEST_INT < value < _LONGEST_INT:
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
            out[key] = _copy(item)
        return out
    if kind is list or kind is tuple:
        return [_copy(item) for item in value]
    raise _NotPlain
