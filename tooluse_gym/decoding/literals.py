"""One bounded walker over the syntax tree of a value, parameterized by the rule that reads it.

Every decoder that reads values out of Python syntax walks the tree with `Walk` under one of
four `LiteralRules`. The walker owns what they share: one node budget (over all the values of
one message or literal), a depth limit, and the error of the rule for a node it does not read.
The rules say which node types are read and how; their differences are on purpose:

* `LENIENT` (``decoder="lenient"``): literals only (strings, numbers, booleans, None, and lists,
  tuples and dicts of those); a sign only on a number. Errors: `NotLiteral` (the call is malformed).
* `BFCL_ARGUMENTS`: what BFCL's ``resolve_ast_by_type`` computes for an argument, quirks
  included: ``...`` is the string ``"..."``, any unary operator on a number negates it, binary
  arithmetic is computed (by `ARITHMETIC`, on the same budget), a bare name is its string, a
  call without keywords and a subscript are their source text, a call with keywords is a nested
  ``{name: {keyword: value}}``; sets and everything else fail. Errors: `DecodeError`.
* `PYTHON_LITERAL`: what ``ast.literal_eval`` returns (BFCL reads XML parameters of the array
  and object types with it), without its unbounded recursion. Errors: `DecodeError`.
* `ARITHMETIC`: what `eval` gives a literal expression of constants, containers and operators,
  bounded (`tooluse_gym.decoding.arithmetic`). Errors: `NotEvaluated` (and Python's own).

Nothing is ever evaluated by Python: the walker computes each value from the tree.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from tooluse_gym.decoding.arithmetic import NotEvaluated, binary, unary
from tooluse_gym.decoding.base import DecodeError
from tooluse_gym.decoding.limits import (
    MAX_BFCL_EXPRESSION_DEPTH,
    MAX_BFCL_EXPRESSION_NODES,
    MAX_LENIENT_LITERAL_DEPTH,
    MAX_LENIENT_LITERAL_NODES,
)
from tooluse_gym.errors import ToolUseGymError

__all__ = [
    "ARITHMETIC",
    "BFCL_ARGUMENTS",
    "LENIENT",
    "PYTHON_LITERAL",
    "LiteralRules",
    "NotLiteral",
    "Walk",
    "bfcl_call",
]


class NotLiteral(ToolUseGymError, ValueError):
    """A value outside the lenient rule: the call that holds it is malformed."""


Handler = Callable[["Walk", Any, int], Any]
"""Reads one node type: ``(walk, node, depth) -> value``, walking the node's children with ``walk.value``."""


@dataclass(frozen=True)
class LiteralRules:
    """How one rule reads a value from a syntax tree.

    Attributes:
        name: The rule's name, for messages and reprs.
        max_depth: The deepest node read (the root is at depth 0).
        max_nodes: The nodes one walk may visit.
        error: The exception the rule raises for what it does not read.
        too_large: The message when the node budget runs out.
        too_deep: The message when a node lies deeper than `max_depth`.
        unsupported: The message for a node type (or form) the rule does not read; ``{kind}`` is
            the node's type name.
        nodes: The node types read, each with its handler.
    """

    name: str
    max_depth: int
    max_nodes: int
    error: type[Exception]
    too_large: str
    too_deep: str
    unsupported: str
    nodes: Mapping[type[ast.AST], Handler]


class Walk:
    """One walk under one rule; the node budget is shared by every value read with it.

    Args:
        rules: The rule.
        budget: A one-item list holding the nodes left; a new full budget when None. A walk
            under another rule may share it (BFCL's arithmetic inside an argument does).
    """

    __slots__ = ("budget", "rules")

    def __init__(self, rules: LiteralRules, budget: list[int] | None = None):
        self.rules = rules
        self.budget = budget if budget is not None else [rules.max_nodes]

    def value(self, node: ast.AST, depth: int = 0) -> Any:
        """The value of `node` under the rule; raises the rule's error (or, for arithmetic, Python's)."""
        budget = self.budget
        budget[0] -= 1
        rules = self.rules
        if budget[0] < 0:
            raise rules.error(rules.too_large)
        if depth > rules.max_depth:
            raise rules.error(rules.too_deep)
        handler = rules.nodes.get(type(node))
        if handler is None:
            raise self.unsupported(node)
        return handler(self, node, depth)

    def unsupported(self, node: ast.AST) -> Exception:
        """The rule's error for a node it does not read."""
        return self.rules.error(self.rules.unsupported.format(kind=type(node).__name__))

    def fail(self, message: str) -> Exception:
        """The rule's error with `message`."""
        return self.rules.error(message)


# --- shared ----------------------------------------------------------------------------


def _list(walk: Walk, node: ast.List, depth: int) -> list[Any]:
    return [walk.value(e, depth + 1) for e in node.elts]


def _tuple(walk: Walk, node: ast.Tuple, depth: int) -> tuple[Any, ...]:
    return tuple(walk.value(e, depth + 1) for e in node.elts)


def _constant(walk: Walk, node: ast.Constant, depth: int) -> Any:
    return node.value


# --- lenient ---------------------------------------------------------------------------


def _lenient_constant(walk: Walk, node: ast.Constant, depth: int) -> Any:
    value = node.value
    if value is None or type(value) in (str, int, float, bool):
        return value
    raise walk.fail(f"unsupported constant {type(value).__name__}")


def _lenient_sign(walk: Walk, node: ast.UnaryOp, depth: int) -> Any:
    if not isinstance(node.op, (ast.USub, ast.UAdd)):
        raise walk.unsupported(node)
    operand = node.operand
    if isinstance(operand, ast.Constant):
        number = operand.value
        if type(number) is int or type(number) is float:
            return -number if isinstance(node.op, ast.USub) else number
    raise walk.fail("only numbers may carry a sign")


def _lenient_dict(walk: Walk, node: ast.Dict, depth: int) -> dict[Any, Any]:
    out = {}
    for k, v in zip(node.keys, node.values, strict=True):
        if k is None:
            raise walk.fail("** inside a dict is not allowed")
        key = walk.value(k, depth + 1)
        if not isinstance(key, (str, int, float, bool)) and key is not None:
            raise walk.fail("dict keys must be strings, numbers, booleans or None")
        out[key] = walk.value(v, depth + 1)
    return out


LENIENT = LiteralRules(
    name="lenient",
    max_depth=MAX_LENIENT_LITERAL_DEPTH,
    max_nodes=MAX_LENIENT_LITERAL_NODES,
    error=NotLiteral,
    too_large="argument value too large",
    too_deep=f"argument nested deeper than {MAX_LENIENT_LITERAL_DEPTH}",
    unsupported="{kind} is not a literal",
    nodes={
        ast.Constant: _lenient_constant,
        ast.UnaryOp: _lenient_sign,
        ast.List: _list,
        ast.Tuple: _tuple,
        ast.Dict: _lenient_dict,
    },
)
"""Literals only; ``-`` and ``+`` only on a number."""


# --- arithmetic ------------------------------------------------------------------------

_ARITHMETIC_CONSTANTS = (str, bytes, int, float, complex, bool, type(None), type(Ellipsis))
_COLLECTIONS: Mapping[type[ast.AST], Callable[[list[Any]], Any]] = {ast.List: list, ast.Tuple: tuple, ast.Set: set}


def _arithmetic_constant(walk: Walk, node: ast.Constant, depth: int) -> Any:
    if isinstance(node.value, _ARITHMETIC_CONSTANTS):
        return node.value
    raise walk.unsupported(node)


def _arithmetic_binary(walk: Walk, node: ast.BinOp, depth: int) -> Any:
    left = walk.value(node.left, depth + 1)
    return binary(node.op, left, walk.value(node.right, depth + 1))


def _arithmetic_unary(walk: Walk, node: ast.UnaryOp, depth: int) -> Any:
    return unary(node.op, walk.value(node.operand, depth + 1))


def _arithmetic_collection(walk: Walk, node: ast.List | ast.Tuple | ast.Set, depth: int) -> Any:
    items = [walk.value(e, depth + 1) for e in node.elts if not isinstance(e, ast.Starred)]
    if len(items) != len(node.elts):
        raise walk.fail("starred items are not evaluated")
    return _COLLECTIONS[type(node)](items)


def _arithmetic_dict(walk: Walk, node: ast.Dict, depth: int) -> dict[Any, Any]:
    keys = [k for k in node.keys if k is not None]
    if len(keys) != len(node.keys):
        raise walk.fail("** in a dict is not evaluated")
    pairs = zip(keys, node.values, strict=True)
    return {walk.value(k, depth + 1): walk.value(v, depth + 1) for k, v in pairs}


ARITHMETIC = LiteralRules(
    name="arithmetic",
    max_depth=MAX_BFCL_EXPRESSION_DEPTH,
    max_nodes=MAX_BFCL_EXPRESSION_NODES,
    error=NotEvaluated,
    too_large="expression too large",
    too_deep="expression too large",
    unsupported="{kind} is not literal arithmetic",
    nodes={
        ast.Constant: _arithmetic_constant,
        ast.BinOp: _arithmetic_binary,
        ast.UnaryOp: _arithmetic_unary,
        ast.List: _arithmetic_collection,
        ast.Tuple: _arithmetic_collection,
        ast.Set: _arithmetic_collection,
        ast.Dict: _arithmetic_dict,
    },
)
"""The value Python's `eval` gives a literal expression; Python's own errors (TypeError, ...) propagate."""


# --- BFCL's arguments ------------------------------------------------------------------


def bfcl_call(walk: Walk, node: ast.Call, depth: int) -> dict[str, dict[Any, Any]]:
    """A call as BFCL's ``resolve_ast_call`` reads it: ``{dotted name: {keyword: value}}``.

    Positional arguments are dropped; a callee that is not a (dotted) name loses that part of
    its name, as in BFCL. The keyword values are read with `walk` (under `BFCL_ARGUMENTS`).
    """
    parts = []
    func = node.func
    while isinstance(func, ast.Attribute):
        parts.append(func.attr)
        func = func.value
    if isinstance(func, ast.Name):
        parts.append(func.id)
    return {".".join(reversed(parts)): {kw.arg: walk.value(kw.value, depth + 1) for kw in node.keywords}}


def _bfcl_constant(walk: Walk, node: ast.Constant, depth: int) -> Any:
    return "..." if node.value is Ellipsis else node.value


def _bfcl_negation(walk: Walk, node: ast.UnaryOp, depth: int) -> Any:
    operand = node.operand  # BFCL negates the operand's value, whatever the operator
    if isinstance(operand, ast.Constant):
        number = operand.value
        if type(number) is int or type(number) is float or type(number) is complex or type(number) is bool:
            return -number
    raise walk.fail("a unary operator on something other than a number")


def _bfcl_dict(walk: Walk, node: ast.Dict, depth: int) -> dict[Any, Any]:
    keys = [k for k in node.keys if k is not None]
    if len(keys) != len(node.keys):
        raise walk.fail("** inside a dict")
    try:
        return {walk.value(k, depth + 1): walk.value(v, depth + 1) for k, v in zip(keys, node.values, strict=True)}
    except TypeError:
        raise walk.fail("unhashable dict key") from None


def _bfcl_arithmetic(walk: Walk, node: ast.BinOp, depth: int) -> Any:
    try:
        return Walk(ARITHMETIC, walk.budget).value(node, depth)
    except NotEvaluated as e:
        raise walk.fail(f"arithmetic not evaluated: {e}") from None
    except (ArithmeticError, TypeError, ValueError, MemoryError, RecursionError) as e:
        raise walk.fail(f"arithmetic fails ({type(e).__name__})") from None


def _bfcl_name(walk: Walk, node: ast.Name, depth: int) -> str:
    return node.id


def _bfcl_nested_call(walk: Walk, node: ast.Call, depth: int) -> Any:
    return _source(walk, node) if not node.keywords else bfcl_call(walk, node, depth + 1)


def _bfcl_subscript(walk: Walk, node: ast.Subscript, depth: int) -> str:
    return _source(walk, node.value) + "[" + _source(walk, node.slice) + "]"


def _source(walk: Walk, node: ast.AST) -> str:
    try:
        return ast.unparse(node)
    except (RecursionError, ValueError) as e:
        raise walk.fail(f"cannot write the argument ({type(e).__name__})") from None


BFCL_ARGUMENTS = LiteralRules(
    name="bfcl",
    max_depth=MAX_BFCL_EXPRESSION_DEPTH,
    max_nodes=MAX_BFCL_EXPRESSION_NODES,
    error=DecodeError,
    too_large="argument value too large",
    too_deep="argument value too large",
    unsupported="unsupported argument ({kind})",
    nodes={
        ast.Constant: _bfcl_constant,
        ast.UnaryOp: _bfcl_negation,
        ast.List: _list,
        ast.Tuple: _tuple,
        ast.Dict: _bfcl_dict,
        ast.BinOp: _bfcl_arithmetic,
        ast.Name: _bfcl_name,
        ast.Call: _bfcl_nested_call,
        ast.Subscript: _bfcl_subscript,
    },
)
"""An argument's value as BFCL's ``resolve_ast_by_type`` computes it."""


# --- ast.literal_eval ------------------------------------------------------------------

_NUMBERS = (int, float, complex)


def _literal_collection(walk: Walk, node: ast.List | ast.Tuple | ast.Set, depth: int) -> Any:
    items = [walk.value(e, depth + 1) for e in node.elts]
    if isinstance(node, ast.List):
        return items
    if isinstance(node, ast.Tuple):
        return tuple(items)
    return _hashed(walk, set, items)


def _literal_dict(walk: Walk, node: ast.Dict, depth: int) -> Any:
    if any(k is None for k in node.keys):
        raise walk.fail("not a Python literal (** in a dict)")
    keys = [walk.value(k, depth + 1) for k in node.keys if k is not None]
    values = [walk.value(v, depth + 1) for v in node.values]
    return _hashed(walk, dict, list(zip(keys, values, strict=True)))


def _literal_empty_set(walk: Walk, node: ast.Call, depth: int) -> Any:
    """``set()``: the one call ``literal_eval`` accepts."""
    func = node.func
    if isinstance(func, ast.Name) and func.id == "set" and not node.args and not node.keywords:
        return set()
    raise walk.unsupported(node)


def _literal_sign(walk: Walk, node: ast.UnaryOp, depth: int) -> Any:
    if isinstance(node.op, (ast.UAdd, ast.USub)):
        return _signed(walk, node)
    raise walk.unsupported(node)


def _literal_complex(walk: Walk, node: ast.BinOp, depth: int) -> Any:
    """``1+2j``, ``-1-2j``: a signed real number plus or minus an imaginary constant."""
    if isinstance(node.op, (ast.Add, ast.Sub)):
        left, right = _signed(walk, node.left), node.right
        if type(left) in (int, float) and isinstance(right, ast.Constant) and type(right.value) is complex:
            return left + right.value if isinstance(node.op, ast.Add) else left - right.value
    raise walk.unsupported(node)


def _signed(walk: Walk, node: ast.expr) -> Any:
    """``literal_eval``'s signed number: a number constant, or ``+`` / ``-`` applied to one."""
    if isinstance(node, ast.Constant) and type(node.value) in _NUMBERS:
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.UAdd, ast.USub)):
        operand = node.operand
        if isinstance(operand, ast.Constant) and type(operand.value) in _NUMBERS:
            number: Any = operand.value
            return +number if isinstance(node.op, ast.UAdd) else -number
    raise walk.fail("not a Python literal (an operator on something other than a number)")


def _hashed(walk: Walk, kind: Any, items: list[Any]) -> Any:
    try:
        return kind(items)
    except TypeError:
        raise walk.fail("not a Python literal (an unhashable key)") from None


PYTHON_LITERAL = LiteralRules(
    name="literal_eval",
    max_depth=MAX_BFCL_EXPRESSION_DEPTH,
    max_nodes=MAX_BFCL_EXPRESSION_NODES,
    error=DecodeError,
    too_large="literal too large",
    too_deep="literal too large",
    unsupported="not a Python literal ({kind})",
    nodes={
        ast.Constant: _constant,
        ast.List: _literal_collection,
        ast.Tuple: _literal_collection,
        ast.Set: _literal_collection,
        ast.Dict: _literal_dict,
        ast.Call: _literal_empty_set,
        ast.UnaryOp: _literal_sign,
        ast.BinOp: _literal_complex,
    },
)
"""What ``ast.literal_eval`` returns for a tree, within the decoders' size limits."""
