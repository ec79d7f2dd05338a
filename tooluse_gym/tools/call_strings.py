"""Run a BFCL call string such as ``cd(folder='docs')`` against the simulators, without `eval`.

BFCL's executor prefixes every simulator method name in the string with its instance and
calls `eval`. `run_call_string` interprets the same string instead: the subset of Python
that BFCL's decoders write (a call, possibly with nested calls, of literal arguments) is
evaluated with Python's own semantics, and a name is callable only when it is a simulator
method offered by the runtime. The result string is what BFCL's executor returns for the
same call: the method's result through `stringify`, or ``Error during execution: <e>``
for the exception the same evaluation raises (a ``SyntaxError``, a ``NameError`` for an
unknown name or a ``nan`` value, the simulator's own ``TypeError``...).

Intended differences, for text BFCL would evaluate and we do not: callables that are
not simulator methods (builtins such as ``print``, modules such as ``json`` in the
executor's namespace) are unknown names; method calls on literals (``'a'.upper()``),
subscripts, comprehensions and ``*``/``**`` unpacking are refused with an error result;
arithmetic is bounded (`tooluse_gym.decoding.arithmetic`); the size limits are
`tooluse_gym.decoding.limits`'.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Container, Mapping
from functools import lru_cache, partial
from keyword import iskeyword
from math import isfinite
from typing import Any

from tooluse_gym.decoding import arithmetic
from tooluse_gym.decoding.limits import (
    MAX_BFCL_EXPRESSION_DEPTH,
    MAX_BFCL_EXPRESSION_NODES,
    MAX_CALL_STRING_CHARS,
    MAX_MESSAGE_CHARS,
)
from tooluse_gym.decoding.text import parse_expression
from tooluse_gym.errors import ToolUseGymError

BLOCKED_NAMES = ("kill", "exit", "quit", "remove", "unlink", "popen", "Popen", "run")
"""Names BFCL's executor refuses to call, checked exactly as it does (on the outermost call)."""
_METHOD_CALL = re.compile(r"\b([a-zA-Z_]\w*)\s*(?=\()")
_PREFIX = "instance"

Invoke = Callable[[str, tuple[Any, ...], dict[str, Any]], Any]


class Refused(ToolUseGymError):
    """An expression outside the subset we interpret; its message becomes the error result."""


def blocked_name(source: str, methods: Container[str]) -> str | None:
    """The name BFCL's blocklist would refuse in `source`, if any (after its method prefixing)."""
    head = _METHOD_CALL.sub(lambda m: f"{_PREFIX}.{m[1]}" if m[1] in methods else m[1], source)
    head = head.split("(")[0] if "(" in head else head
    head = head.split(".")[1] if "." in head else head
    return head if head in BLOCKED_NAMES else None


def run_call_string(source: str, methods: Container[str], invoke: Invoke, stringify: Callable[[Any], str]) -> str:
    """The tool-result string of one call string.

    Args:
        source: The call string (from `tooluse_gym.decoding.bfcl`).
        methods: The callable method names.
        invoke: ``(name, args, kwargs) -> return value``; runs one method (and may raise).
        stringify: BFCL's conversion of a return value to the result string.
    """
    try:
        return stringify(evaluate_call_string(source, methods, invoke))
    except Exception as e:
        return f"Error during execution: {e}"


def plain_call(source: str, name: Any, arguments: Any, *, written_from_them: bool = False) -> bool:
    """Whether `source` is exactly ``name(k=repr(v), ...)`` over plain values, nothing else.

    Plain: `name` and every key are ASCII identifiers that may name a keyword argument, the
    values are strings, booleans, None, integers within +-2**63, finite floats, and shallow,
    small lists and tuples of those, written with ``, `` or ``,`` between arguments (the two
    decoders' forms) and free of ``<think>``. Python reads each such ``repr`` back as an
    equal value of the same type, so evaluating `source` calls `name` with equal copies of
    `arguments` and does nothing else: `run_plain_call` returns what `run_call_string`
    would, and the lenient parser reads `plain_arguments(arguments)` from it, without a parse.

    `written_from_them`: the caller wrote `source` from `name` and `arguments` in one of those
    two forms (the decoders do), so only the parts need checking.
    """
    if type(name) is not str or type(arguments) is not dict or not _plain_name(name):
        return False
    if len(source) > MAX_MESSAGE_CHARS or "<think>" in source:
        return False
    budget = [_PLAIN_NODES]
    for key, value in arguments.items():
        if type(key) is not str or not _plain_name(key) or not _plain_value(value, 0, budget):
            return False
    if written_from_them:
        return True
    parts = [f"{k}={v!r}" for k, v in arguments.items()]
    return source == f"{name}({', '.join(parts)})" or (len(parts) > 1 and source == f"{name}({','.join(parts)})")


_PLAIN_DEPTH = 8
_PLAIN_NODES = 512
_PLAIN_INT = 2**63


def _plain_name(name: str) -> bool:
    known = _PLAIN_NAMES.get(name)
    if known is None:
        known = name.isascii() and name.isidentifier() and not iskeyword(name) and name != "__debug__"
        if len(_PLAIN_NAMES) >= 4096:
            _PLAIN_NAMES.clear()
        _PLAIN_NAMES[name] = known
    return known


_PLAIN_NAMES: dict[str, bool] = {}


def _plain_value(value: Any, depth: int, budget: list[int]) -> bool:
    budget[0] -= 1
    if budget[0] < 0 or depth > _PLAIN_DEPTH:
        return False
    kind = type(value)
    if kind is str or kind is bool or value is None:
        return True
    if kind is int:
        return -_PLAIN_INT < value < _PLAIN_INT
    if kind is float:
        return isfinite(value)
    if kind is list or kind is tuple:
        return all(_plain_value(v, depth + 1, budget) for v in value)
    return False


def plain_arguments(arguments: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of arguments that `plain_call` accepted: what evaluating (or literally parsing) their source gives."""
    return {k: _copy_plain(v) for k, v in arguments.items()}


def _copy_plain(value: Any) -> Any:
    kind = type(value)
    if kind is list:
        return [_copy_plain(v) for v in value]
    if kind is tuple:
        return tuple(_copy_plain(v) for v in value)
    return value


def run_plain_call(
    name: str, arguments: Mapping[str, Any], methods: Container[str], invoke: Invoke, stringify: Callable[[Any], str]
) -> str:
    """`run_call_string` of a call string that `plain_call` accepted for `name` and `arguments`, without parsing it.

    The same checks in the same order: BFCL's blocklist (the head of a plain call is its
    name), an unknown name, then the call with fresh copies of the arguments.
    """
    try:
        if name in BLOCKED_NAMES:
            raise Refused(f"Function call {name} is not allowed.")
        if name not in methods:
            raise NameError(f"name '{name}' is not defined")
        return stringify(invoke(name, (), plain_arguments(arguments)))
    except Exception as e:
        return f"Error during execution: {e}"


def evaluate_call_string(source: str, methods: Container[str], invoke: Invoke) -> Any:
    """The value of `source`, raising what BFCL's evaluation of it would raise (or `Refused`)."""
    if len(source) > MAX_CALL_STRING_CHARS:
        raise Refused(f"call longer than {MAX_CALL_STRING_CHARS} characters")
    blocked = blocked_name(source, methods)
    if blocked is not None:
        raise Refused(f"Function call {blocked} is not allowed.")
    try:
        tree = call_tree(source)
    except RecursionError:
        raise Refused("call nested too deeply") from None
    if _may_repeat_keywords(tree.body):
        _check_keywords(tree.body)
    return _Interpreter(methods, invoke).eval(tree.body, 0)


call_tree: Callable[[str], ast.Expression] = lru_cache(maxsize=256)(partial(parse_expression, filename="<string>"))
"""``parse_expression(source, "<string>")``, the tree shared by the last few callers of the same string.

The decoder reads a call's arguments for the transcript from its tree, and the runtime then
runs the call from the same tree: one parse. Trees are only read (the interpreter builds every
list, dict and set anew), so sharing one carries no state from a call to another. Failures
are not cached: each raises afresh.
"""


def _may_repeat_keywords(root: ast.AST) -> bool:
    """False when no call in the tree repeats a keyword; True when one may (then `_check_keywords` decides).

    Walks the node types call strings are made of; any other node type answers True.
    """
    stack = [root]
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Constant, ast.Name)):
            continue
        if isinstance(node, ast.Call):
            keywords = node.keywords
            if len(keywords) > 1 and len({kw.arg for kw in keywords}) < len(keywords):
                return True
            stack.append(node.func)
            stack.extend(node.args)
            stack.extend(kw.value for kw in keywords)
        elif isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            stack.extend(node.elts)
        elif isinstance(node, ast.Dict):
            keys = [k for k in node.keys if k is not None]
            if len(keys) != len(node.keys):
                return True
            stack.extend(keys)
            stack.extend(node.values)
        elif isinstance(node, ast.BinOp):
            stack.append(node.left)
            stack.append(node.right)
        elif isinstance(node, ast.UnaryOp):
            stack.append(node.operand)
        elif isinstance(node, ast.Attribute):
            stack.append(node.value)
        else:
            return True
    return False


def _check_keywords(root: ast.AST) -> None:
    """Python's compiler refuses a repeated keyword argument; `ast` alone does not."""
    for node in ast.walk(root):
        if isinstance(node, ast.Call):
            seen = set()
            for kw in node.keywords:
                if kw.arg is not None and kw.arg in seen:
                    raise SyntaxError(f"keyword argument repeated: {kw.arg}", ("<string>", 1, 0, ""))
                seen.add(kw.arg)


class _Interpreter:
    def __init__(self, methods: Container[str], invoke: Invoke):
        self.methods = methods
        self.invoke = invoke
        self.budget = [MAX_BFCL_EXPRESSION_NODES]

    def eval(self, node: ast.expr, depth: int) -> Any:
        self.budget[0] -= 1
        if self.budget[0] < 0 or depth > MAX_BFCL_EXPRESSION_DEPTH:
            raise Refused("call too large")
        if isinstance(node, ast.Call):
            return self._call(node, depth)
        if isinstance(node, ast.Name):
            raise NameError(f"name '{node.id}' is not defined")
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            if any(isinstance(e, ast.Starred) for e in node.elts):
                raise Refused("* unpacking is not supported")
            kind = {ast.List: list, ast.Tuple: tuple, ast.Set: set}[type(node)]
            return kind(self.eval(e, depth + 1) for e in node.elts)
        if isinstance(node, ast.Dict):
            keys = [k for k in node.keys if k is not None]
            if len(keys) != len(node.keys):
                raise Refused("** unpacking is not supported")
            out = {}
            for k, v in zip(keys, node.values, strict=True):
                key = self.eval(k, depth + 1)
                out[key] = self.eval(v, depth + 1)
            return out
        if isinstance(node, ast.BinOp):
            left = self.eval(node.left, depth + 1)
            return arithmetic.binary(node.op, left, self.eval(node.right, depth + 1))
        if isinstance(node, ast.UnaryOp):
            return arithmetic.unary(node.op, self.eval(node.operand, depth + 1))
        if isinstance(node, ast.Constant):
            return node.value
        raise Refused(f"{type(node).__name__} expressions are not supported")

    def _call(self, node: ast.Call, depth: int) -> Any:
        func = node.func
        if isinstance(func, ast.Attribute):  # BFCL resolves the leftmost name first: it is never a method
            while isinstance(func, ast.Attribute):
                func = func.value
            if isinstance(func, ast.Name):
                raise NameError(f"name '{func.id}' is not defined")
            raise Refused("only simulator methods can be called")
        if not isinstance(func, ast.Name):
            raise Refused("only simulator methods can be called")
        if func.id not in self.methods:
            raise NameError(f"name '{func.id}' is not defined")
        args = []
        for arg in node.args:
            if isinstance(arg, ast.Starred):
                raise Refused("* unpacking is not supported")
            args.append(self.eval(arg, depth + 1))
        kwargs = {}
        for kw in node.keywords:
            if kw.arg is None:
                raise Refused("** unpacking is not supported")
            kwargs[kw.arg] = self.eval(kw.value, depth + 1)
        return self.invoke(func.id, tuple(args), kwargs)
