"""What a model may call (`public_methods`) and how call arguments bind (`call_arguments`).

BFCL's rule, read from bfcl_eval's multi-turn executor (``execute_multi_turn_func_call`` in
``bfcl_eval/eval_checker/multi_turn_eval/multi_turn_utils.py``): for each involved class it
builds an instance (and loads its scenario unless the class is stateless), then maps every
``inspect.getmembers(instance, predicate=inspect.ismethod)`` name that does not start with ``_``.
Both places that decide what a model may call (the registry's derived docs, the runtime's
dispatch) must give that set on every BFCL simulator class.
"""

from __future__ import annotations

import inspect

import pytest

from tooluse_gym.tasks import bfcl
from tooluse_gym.tasks.task import Task
from tooluse_gym.tools.binding import call_arguments, public_methods
from tooluse_gym.tools.registry import register_tools, unregister_tools
from tooluse_gym.tools.runtime import ToolRuntime
from tooluse_gym.types import ToolCall


def bfcl_rule(name: str, cls: type) -> set[str]:
    """The names bfcl_eval's executor maps for an instance of `cls` (written from reading it)."""
    instance = cls()
    if name not in bfcl.stateless_backends():
        instance._load_scenario({}, long_context=False)
    return {m for m, _ in inspect.getmembers(instance, predicate=inspect.ismethod) if not m.startswith("_")}


def registry_names(cls: type) -> set[str]:
    """The functions the registry derives docs for when `cls` is registered without docs."""
    try:
        return set(register_tools("BindingProbe", cls, overwrite=True).function_names())
    finally:
        unregister_tools("BindingProbe")


def runtime_names(name: str, cls: type, stateless: frozenset[str] = frozenset()) -> set[str]:
    """The names the runtime dispatches for a task on `cls` (any other name is unknown to it)."""
    task = Task(
        task_id="probe",
        category="probe",
        turns=(),
        ground_truth=(),
        functions=(),
        backends=(name,),
        initial_config={},
        source="probe",
    )
    runtime = ToolRuntime(task, {name: cls}, stateless, validate=False)
    callable_names = set()
    for candidate in dir(runtime.instances[name]):
        try:
            runtime.keyword_arguments(ToolCall(name=candidate, arguments={}))
        except KeyError:
            continue
        callable_names.add(candidate)
    return callable_names


@pytest.mark.parametrize("name", sorted(bfcl.backend_classes()))
def test_both_call_sites_follow_bfcls_rule_on_every_simulator(name):
    cls = bfcl.backend_classes()[name]
    expected = bfcl_rule(name, cls)
    assert expected
    assert set(public_methods(cls)) == expected
    assert registry_names(cls) == expected
    assert runtime_names(name, cls, bfcl.stateless_backends()) == expected


class _Kinds:
    """A user backend with every kind of attribute a class can have."""

    limit = 3

    def load_state(self, state: dict) -> None:
        """Receives the initial state (never callable by a model)."""
        self.state = state

    def plain(self, a: int) -> int:
        """A plain method.

        Args:
            a: A number.
        """
        return a

    @classmethod
    def made(cls, a: int) -> int:
        """A classmethod (a bound method on an instance: BFCL maps it).

        Args:
            a: A number.
        """
        return a

    @staticmethod
    def helper(a: int) -> int:
        """A staticmethod (a plain function on an instance: BFCL does not map it).

        Args:
            a: A number.
        """
        return a

    @property
    def size(self) -> int:
        """A property."""
        return 0

    def _private(self) -> None:
        """Private."""


def test_user_backends_follow_the_same_rule():
    assert public_methods(_Kinds) == ("made", "plain")
    assert registry_names(_Kinds) == {"made", "plain"}
    assert runtime_names("Kinds", _Kinds) == {"made", "plain"}


class _Signatures:
    def plain(self, a, b=2):
        return a, b

    def variadic(self, a, *args, **kwargs):
        return a


def test_call_arguments_binds_positionals_in_parameter_order():
    call = ToolCall(name="plain", arguments={"b": 5}, positional=(1,))
    assert list(call_arguments(_Signatures, call).items()) == [("a", 1), ("b", 5)]
    with pytest.raises(TypeError):
        call_arguments(_Signatures, ToolCall(name="plain", arguments={"a": 1}, positional=(1,)))


def test_keyword_calls_are_bound_only_when_asked():
    call = ToolCall(name="plain", arguments={"b": 5, "z": 1})
    assert call_arguments(_Signatures, call) == {"b": 5, "z": 1}
    with pytest.raises(TypeError):
        call_arguments(_Signatures, call, bind_keywords=True)
    reordered = call_arguments(_Signatures, ToolCall(name="plain", arguments={"b": 5, "a": 1}), bind_keywords=True)
    assert list(reordered) == ["a", "b"]


def test_variadic_parameters_filled_by_position_are_refused_when_asked():
    call = ToolCall(name="variadic", arguments={}, positional=(1, 2))
    assert call_arguments(_Signatures, call) == {"a": 1, "args": (2,)}
    with pytest.raises(TypeError, match="variadic"):
        call_arguments(_Signatures, call, refuse_variadic=True)
    assert call_arguments(_Signatures, ToolCall(name="variadic", arguments={}, positional=(1,)), refuse_variadic=True)
