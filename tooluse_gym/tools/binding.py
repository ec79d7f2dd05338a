"""What a model may call on a backend class, and how a call's arguments bind to the method's parameters.

`public_methods` is the one definition of "the functions a model may call" (the registry derives
docs for them, the runtime dispatches to them). `call_arguments` turns a call's positional and
keyword arguments into keyword arguments by the method's signature (task loaders and the runtime
use it); `bound_arguments` binds a call to a bound method, as the runtime's checks need it.
"""

from __future__ import annotations

import inspect
import types
from functools import cache
from typing import Any

from tooluse_gym.types import ToolCall

STATE_LOADER = "load_state"
"""The public method through which a user backend receives its initial state (never callable by a model)."""


@cache
def public_methods(cls: type[object]) -> tuple[str, ...]:
    """The names a model may call on instances of `cls`, by the rule of BFCL's executor.

    bfcl_eval's multi-turn executor (``execute_multi_turn_func_call`` in
    ``bfcl_eval/eval_checker/multi_turn_eval/multi_turn_utils.py``) maps the members of each
    class instance that `inspect.ismethod` accepts (bound methods: plain methods and
    classmethods, not staticmethods) and whose names do not start with ``_``. The instance here
    is made without running ``__init__``; `STATE_LOADER` is left out as well (BFCL's
    simulators have no such method).
    """
    instance = cls.__new__(cls)
    return tuple(
        name
        for name, _ in inspect.getmembers(instance, predicate=inspect.ismethod)
        if not name.startswith("_") and name != STATE_LOADER
    )


@cache
def _signature(cls: type, name: str) -> inspect.Signature:
    return inspect.signature(getattr(cls, name))


def call_arguments(
    cls: type, call: ToolCall, *, bind_keywords: bool = False, refuse_variadic: bool = False
) -> dict[str, Any]:
    """The call's arguments by parameter name of method ``call.name`` of `cls`; raises the binding's TypeError.

    Positional arguments are bound to parameter names by the method's signature (``self`` is
    bound to None and dropped); the result is in parameter order. The call sites differ on
    purpose in two ways, which the flags keep:

    Args:
        cls: The backend class defining the method.
        call: The call (`ToolCall.positional` and `ToolCall.arguments`).
        bind_keywords: Bind a call with keyword arguments only as well, so that a keyword no
            parameter takes raises TypeError (scenario files are checked this way); without it
            such a call's arguments are returned as given.
        refuse_variadic: Raise TypeError when a call with positional arguments fills a
            ``*args`` or ``**kwargs`` parameter (the runtime refuses such calls).

    Returns:
        Parameter name -> value.
    """
    if not call.positional and not bind_keywords:
        return dict(call.arguments)
    signature = _signature(cls, call.name)
    arguments = dict(signature.bind(None, *call.positional, **call.arguments).arguments)
    arguments.pop(next(iter(arguments)))  # self
    if refuse_variadic and call.positional:
        for name, param in signature.parameters.items():
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD) and name in arguments:
                raise TypeError("variadic parameters cannot be bound by position")
    return arguments


class _Binder:
    """A method's signature, and what binding keyword arguments to it needs (None: bind in full)."""

    __slots__ = ("names", "required", "signature")

    def __init__(self, signature: inspect.Signature):
        self.signature = signature
        params = signature.parameters.values()
        plain = all(p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) for p in params)
        self.names = tuple(p.name for p in params) if plain else None
        self.required = frozenset(p.name for p in params if p.default is p.empty) if plain else frozenset()


_BINDERS: dict[Any, _Binder] = {}


def _binder(method: Any) -> _Binder:
    """The binder of ``inspect.signature(method)``, made once per function for bound methods of plain functions."""
    func = getattr(method, "__func__", None)
    if type(method) is not types.MethodType or type(func) is not types.FunctionType:
        return _Binder(inspect.signature(method))
    binder = _BINDERS.get(func)
    if binder is None:
        binder = _BINDERS[func] = _Binder(inspect.signature(method))
    return binder


def bound_arguments(method: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    """``inspect.signature(method).bind(*args, **kwargs).arguments``; raises its TypeError.

    Keyword arguments alone, to a signature of ordinary parameters, bind to themselves in
    parameter order when they name only parameters and every parameter without a default:
    that case skips `inspect`'s general binding.
    """
    binder = _binder(method)
    names = binder.names
    if not args and names is not None and binder.required <= kwargs.keys() and len(kwargs) <= len(names):
        bound = {name: kwargs[name] for name in names if name in kwargs}
        if len(bound) == len(kwargs):
            return bound
    return binder.signature.bind(*args, **kwargs).arguments
