"""A small, bounded evaluator for literal arithmetic, with Python's own semantics.

BFCL's prompting decoder evaluates binary operations in arguments (``a=4+1`` becomes 5)
by calling `eval`. We never do: this module computes the same value from the AST of a
literal expression (numbers, strings, bytes, booleans, None, and lists, tuples, sets and
dicts of those, combined with unary and binary operators). Names, calls, attributes and
everything else raise `NotEvaluated`, as do operations whose result would be huge
(``2**10**9``, ``'a' * 10**9``) and printf-style string formatting.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable
from typing import Any

MAX_INT_BITS = 4096
"""Integers are refused once they need more bits than this (2**4096 has 1234 digits)."""
MAX_SEQUENCE_LENGTH = 65536
"""Strings, bytes, lists and tuples built by an operator are refused beyond this length."""
MAX_DEPTH = 100
MAX_NODES = 20000

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
_CONSTANTS = (str, bytes, int, float, complex, bool, type(None), type(Ellipsis))


class NotEvaluated(ValueError):
    """The expression is not literal arithmetic, or its value would be too large."""


def _bits(value: Any) -> int:
    return abs(value).bit_length() if isinstance(value, int) else 0


def _check_operands(op: type, left: Any, right: Any) -> None:
    ints = isinstance(left, int) and isinstance(right, int)
    if op is ast.Pow and ints and right > 0 and abs(left) > 1 and _bits(left) * right > MAX_INT_BITS:
        raise NotEvaluated("power too large")
    if op is ast.LShift and isinstance(right, int) and right > MAX_INT_BITS:
        raise NotEvaluated("shift too large")
    if op is ast.Mult:
        for seq, count in ((left, right), (right, left)):
            if isinstance(seq, _SEQUENCES) and isinstance(count, int) and len(seq) * count > MAX_SEQUENCE_LENGTH:
                raise NotEvaluated("repetition too large")
    if op is ast.Mod and isinstance(left, (str, bytes)):
        raise NotEvaluated("string formatting is not evaluated")


def _check_result(value: Any) -> Any:
    if isinstance(value, int) and _bits(value) > MAX_INT_BITS:
        raise NotEvaluated("integer too large")
    if isinstance(value, _SEQUENCES) and len(value) > MAX_SEQUENCE_LENGTH:
        raise NotEvaluated("value too long")
    return value


def binary(op: ast.operator, left: Any, right: Any) -> Any:
    """``left <op> right`` as Python computes it; Python's own errors (TypeError, ...) propagate."""
    _check_operands(type(op), left, right)
    return _check_result(_BINARY[type(op)](left, right))


def unary(op: ast.unaryop, operand: Any) -> Any:
    """``<op> operand`` (``-``, ``+``, ``not``, ``~``) as Python computes it; Python's own errors propagate."""
    return _check_result(_UNARY[type(op)](operand))


def evaluate(node: ast.expr, depth: int = 0, budget: list[int] | None = None) -> Any:
    """The value Python's `eval` gives a literal expression; raises `NotEvaluated` or Python's error."""
    budget = budget if budget is not None else [MAX_NODES]
    budget[0] -= 1
    if budget[0] < 0 or depth > MAX_DEPTH:
        raise NotEvaluated("expression too large")
    if isinstance(node, ast.Constant) and isinstance(node.value, _CONSTANTS):
        return node.value
    if isinstance(node, ast.BinOp):
        left = evaluate(node.left, depth + 1, budget)
        return binary(node.op, left, evaluate(node.right, depth + 1, budget))
    if isinstance(node, ast.UnaryOp):
        return unary(node.op, evaluate(node.operand, depth + 1, budget))
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        items = [evaluate(e, depth + 1, budget) for e in node.elts if not isinstance(e, ast.Starred)]
        if len(items) != len(node.elts):
            raise NotEvaluated("starred items are not evaluated")
        kind = {ast.List: list, ast.Tuple: tuple, ast.Set: set}[type(node)]
        return kind(items)
    if isinstance(node, ast.Dict):
        keys = [k for k in node.keys if k is not None]
        if len(keys) != len(node.keys):
            raise NotEvaluated("** in a dict is not evaluated")
        pairs = zip(keys, node.values, strict=True)
        return {evaluate(k, depth + 1, budget): evaluate(v, depth + 1, budget) for k, v in pairs}
    raise NotEvaluated(f"{type(node).__name__} is not literal arithmetic")
