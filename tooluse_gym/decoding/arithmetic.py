"""Python's unary and binary operators on literal values, bounded: no result may be huge.

BFCL's prompting decoder evaluates binary operations in arguments (``a=4+1`` becomes 5)
by calling `eval`, and its executor evaluates the call strings it writes. We never do: the
literal walker (`tooluse_gym.decoding.literals`, its arithmetic rule) and the call-string
interpreter (`tooluse_gym.tools.call_strings`) compute the same values with `binary` and
`unary`, which refuse (`NotEvaluated`) operations whose result would be huge (``2**10**9``,
``'a' * 10**9``) and printf-style string formatting.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable
from typing import Any

from tooluse_gym.decoding.limits import MAX_ARITHMETIC_INT_BITS, MAX_ARITHMETIC_SEQUENCE_LENGTH
from tooluse_gym.errors import ToolUseGymError

_BINARY: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
    ast.LShift: operator.lshift,
    ast.RShift: operator.rshift,
    ast.BitOr: operator.or_,
    ast.BitXor: operator.xor,
    ast.BitAnd: operator.and_,
    ast.MatMult: operator.matmul,
}
_UNARY: dict[type, Callable[[Any], Any]] = {
    ast.USub: operator.neg,
    ast.UAdd: operator.pos,
    ast.Not: operator.not_,
    ast.Invert: operator.invert,
}
_SEQUENCES = (str, bytes, list, tuple)


class NotEvaluated(ToolUseGymError, ValueError):
    """The expression is not literal arithmetic, or its value would be too large."""


def _bits(value: Any) -> int:
    return abs(value).bit_length() if isinstance(value, int) else 0


def _check_operands(op: type, left: Any, right: Any) -> None:
    ints = isinstance(left, int) and isinstance(right, int)
    if op is ast.Pow and ints and right > 0 and abs(left) > 1 and _bits(left) * right > MAX_ARITHMETIC_INT_BITS:
        raise NotEvaluated("power too large")
    if op is ast.LShift and isinstance(right, int) and right > MAX_ARITHMETIC_INT_BITS:
        raise NotEvaluated("shift too large")
    if op is ast.Mult:
        for seq, count in ((left, right), (right, left)):
            if not isinstance(seq, _SEQUENCES) or not isinstance(count, int):
                continue
            if len(seq) * count > MAX_ARITHMETIC_SEQUENCE_LENGTH:
                raise NotEvaluated("repetition too large")
    if op is ast.Mod and isinstance(left, (str, bytes)):
        raise NotEvaluated("string formatting is not evaluated")


def _check_result(value: Any) -> Any:
    if isinstance(value, int) and _bits(value) > MAX_ARITHMETIC_INT_BITS:
        raise NotEvaluated("integer too large")
    if isinstance(value, _SEQUENCES) and len(value) > MAX_ARITHMETIC_SEQUENCE_LENGTH:
        raise NotEvaluated("value too long")
    return value


def binary(op: ast.operator, left: Any, right: Any) -> Any:
    """``left <op> right`` as Python computes it; Python's own errors (TypeError, ...) propagate."""
    _check_operands(type(op), left, right)
    return _check_result(_BINARY[type(op)](left, right))


def unary(op: ast.unaryop, operand: Any) -> Any:
    """``<op> operand`` (``-``, ``+``, ``not``, ``~``) as Python computes it; Python's own errors propagate."""
    return _check_result(_UNARY[type(op)](operand))
