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
arithmetic is bounded (`tooluse_gym.tools.arithmetic`).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Container
from typing import Any

from tooluse_gym.tools import arithmetic
from tooluse_gym.tools.parsing import parse_expression

BLOCKED_NAMES = ("kill", "exit", "quit", "remove", "unlink", "popen", "Popen", "run")
"""Names BFCL's executor refuses to call, checked exactly as it does (on the outermost call)."""
MAX_SOURCE_CHARS = 300_000
_METHOD_CALL = re.compile(r"\b([a-zA-Z_]\w*)\s*(?=\()")
_PREFIX = "instance"

Invoke = Callable[[str, tuple[Any, ...], dict[str, Any]], Any]


class Refused(Exception):
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
        source: The call string (from `tooluse_gym.tools.bfcl_decoding`).
        methods: The callable method names.
        invoke: ``(name, args, kwargs) -> return value``; runs one method (and may raise).
        stringify: BFCL's conversion of a return value to the result string.
    """
    try:
        return stringify(evaluate_call_string(source, methods, invoke))
    except Exception as e:
        return f"Error during execution: {e}"


def evaluate_call_string(source: str, methods: Container[str], invoke: Invoke) -> Any:
    """The value of `source`, raising what BFCL's evaluation of it would raise (or `Refused`)."""
    if len(source) > MAX_SOURCE_CHARS:
        raise Refused(f"call longer than {MAX_SOURCE_CHARS} characters")
    blocked = blocked_name(source, methods)
    if blocked is not None:
        raise Refused(f"Function call {blocked} is not allowed.")
    try:
        tree = parse_expression(source, "<string>")
    except RecursionError:
        raise Refused("call nested too deeply") from None
    _check_keywords(tree.body)
    return _Interpreter(methods, invoke).eval(tree.body, 0)


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
        self.budget = [arithmetic.MAX_NODES]

    def eval(self, node: ast.expr, depth: int) -> Any:
        self.budget[0] -= 1
        if self.budget[0] < 0 or depth > arithmetic.MAX_DEPTH:
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
            if any(k is None for k in node.keys):
                raise Refused("** unpacking is not supported")
            out = {}
            for k, v in zip(node.keys, node.values, strict=True):
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
