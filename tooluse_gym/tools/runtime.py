"""Per-episode tool runtime: fresh backend instances, dispatch by name, validated arguments.

Result strings follow BFCL's executor exactly for calls it would run: a ``str`` result is
returned as is, a ``dict`` as ``json.dumps`` (``str`` if that fails), anything else as
``str(result)``, and an exception as ``"Error during execution: <message>"``. Calls that
we refuse before running them (unknown function, invalid arguments, a malformed call)
get a message with the same ``Error during execution:`` prefix; an unknown name reads
exactly like BFCL's ``name 'f' is not defined``.

Isolation: every runtime creates its own instances from a copy of the initial state; the
`BackendHooks.isolate` hook then copies whatever a backend shares with module-level data
(BFCL's long-context TravelAPI merges module dicts by reference). Arguments are copied
before every call, because simulators may mutate the lists they are given.
"""

from __future__ import annotations

import copy
import json
import marshal
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from json.encoder import encode_basestring_ascii
from typing import Any

from tooluse_gym.errors import ToolUseGymError
from tooluse_gym.tasks.task import Task
from tooluse_gym.tools.binding import bound_arguments, call_arguments, public_methods
from tooluse_gym.tools.call_strings import plain_call, run_call_string, run_plain_call
from tooluse_gym.tools.schemas import validation_error
from tooluse_gym.tools.snapshots import InstanceSnapshots
from tooluse_gym.types import ToolCall

MAX_INT_MAGNITUDE = 2**63
"""Integer arguments beyond +-2**63 are refused (they only serve to make a simulator hang)."""
MAX_RESULT_CHARS = 1_000_000
"""Longer tool results are cut (BFCL's long-context results stay well below this)."""


@dataclass(frozen=True)
class BackendHooks:
    """Adjustments for one family of backends, supplied by the task source (BFCL's: `tasks/bfcl.py`).

    Attributes:
        isolate: ``(backend, fresh instance, long_context) -> None``; copies state that the
            instance shares with module-level data.
        guard: ``(backend, function, kwargs) -> message | None``; refuses argument values
            a backend cannot handle safely (e.g. an exponent that takes minutes).
        validation_doc: ``doc -> doc``; the doc to validate arguments against, where the
            published doc contradicts the backend's own data (the doc shown to the model
            is never changed).
        snapshots: Loaded instances hold only builtin data and `random.Random` generators,
            so later episodes may start from a snapshot of them (`tooluse_gym.tools.snapshots`).
    """

    isolate: Callable[[str, Any, bool], None] | None = None
    guard: Callable[[str, str, Mapping[str, Any]], str | None] | None = None
    validation_doc: Callable[[Mapping[str, Any]], Mapping[str, Any]] | None = None
    snapshots: bool = False


class _Refused(ToolUseGymError):
    """A call the runtime refuses before running it."""


@dataclass(frozen=True)
class CallRecord:
    """One executed (or refused) call and its result string."""

    call: ToolCall
    result: str
    executed: bool


def stringify_result(result: Any) -> str:
    """BFCL's conversion of a return value to the tool-result string."""
    if type(result) is str:
        return result
    if type(result) is dict:
        try:
            return _json_dumps(result)
        except Exception:
            return str(result)
    return str(result)


def _json_dumps(value: dict[Any, Any]) -> str:
    """``json.dumps(value)`` for a dict, or an exception where json.dumps raises one.

    One C encoder with json.dumps' settings serves every call. It skips the circular-reference
    check, so a circular value raises RecursionError instead of ValueError: `stringify_result`
    turns either into ``str(value)``, as BFCL does.

    A dict with string keys holding a long list (BFCL's long-context stock history: two lists
    of 2,000 floats in every ``get_stock_info``) is written item by item, as the encoder writes
    it, and a long list that is the very object written before, with the very same content
    (the same `marshal` bytes: the same values of the same types), reuses its text.
    """
    encoder = _C_ENCODER
    if encoder is None:
        return json.dumps(value)
    long_values = False
    for key, item in value.items():
        if type(key) is not str:
            break
        if (type(item) is list or type(item) is tuple) and len(item) >= _LONG:
            long_values = True
    else:
        if long_values:
            items = (encode_basestring_ascii(key) + ": " + _value_text(item, encoder) for key, item in value.items())
            return "{" + ", ".join(items) + "}"
    return "".join(encoder(value, 0))


_LONG = 128
_LONG_TEXTS: dict[int, tuple[Any, bytes, str]] = {}


def _value_text(value: Any, encoder: _Encoder) -> str:
    if (type(value) is not list and type(value) is not tuple) or len(value) < _LONG:
        return "".join(encoder(value, 0))
    try:
        content = marshal.dumps(value, 2)  # version 2: no back-references, so only the content counts
    except ValueError:
        return "".join(encoder(value, 0))
    known = _LONG_TEXTS.get(id(value))
    if known is not None and known[0] is value and known[1] == content:
        return known[2]
    text = "".join(encoder(value, 0))
    if len(_LONG_TEXTS) >= 256:
        _LONG_TEXTS.clear()
    _LONG_TEXTS[id(value)] = (value, content, text)  # holding `value` keeps its id from being reused
    return text


_Encoder = Callable[[Any, int], Iterable[str]]
"""A C encoder: ``encoder(value, 0)`` gives the pieces of ``json.dumps(value)``."""


def _make_c_encoder() -> _Encoder | None:
    """The C encoder with json.dumps' settings (None where the `_json` accelerator is missing)."""
    # json.encoder always defines c_make_encoder (None without _json); typeshed leaves it out.
    make_encoder = getattr(json.encoder, "c_make_encoder", None)
    if make_encoder is None:
        return None
    encoder: _Encoder = make_encoder(
        None,  # no circular-reference markers
        json.JSONEncoder().default,
        encode_basestring_ascii,
        None,  # indent
        ": ",
        ", ",
        False,  # sort_keys
        False,  # skipkeys
        True,  # allow_nan
    )
    return encoder


_C_ENCODER = _make_c_encoder()


def copy_state(value: Any) -> Any:
    """Deep copy of JSON-like data (dicts, lists, scalars); other types go through deepcopy."""
    kind = type(value)
    if kind is dict:
        return {k: copy_state(v) for k, v in value.items()}
    if kind is list:
        return [copy_state(v) for v in value]
    if kind in (str, int, float, bool) or value is None:
        return value
    if kind is tuple:
        return tuple(copy_state(v) for v in value)
    return copy.deepcopy(value)


def copy_initial_state(value: Any, from_json: bool) -> Any:
    """`copy_state` of a backend's initial state; in C (a marshal round trip) for data loaded from JSON.

    JSON gives dicts, lists, strings, numbers, booleans and None, each object in one place;
    for such data the marshal copy is `copy_state`'s: equal values of the same types, in the
    same order, sharing nothing with `value`. (marshal would turn a bytearray or an array into
    bytes, so other data goes through `copy_state`.)
    """
    if from_json:
        try:
            return marshal.loads(marshal.dumps(value))
        except ValueError:
            pass
    return copy_state(value)


def _too_big_int(value: Any) -> bool:
    kind = type(value)
    if kind is int:
        return abs(value) > MAX_INT_MAGNITUDE
    if kind is str or kind is float or kind is bool or value is None:
        return False
    if kind is dict:
        items = value.values()
    elif isinstance(value, (list, tuple)):
        items = value
    elif isinstance(value, Mapping):
        items = value.values()
    else:
        return False
    for item in items:  # a loop rather than any(): no generator frame per level
        if _too_big_int(item):
            break
    else:
        return False
    return True


def _load(task: Task, backend: str, cls: type, stateful: bool, hooks: BackendHooks) -> Any:
    """A new instance of `cls` with the task's initial state loaded, isolated from module-level data."""
    instance = cls()
    if stateful:
        state = copy_initial_state(task.initial_config.get(backend, {}), from_json=task.source == "bfcl")
        if hasattr(instance, "_load_scenario"):
            instance._load_scenario(state, long_context=task.long_context)
        else:
            instance.load_state(state)
        if hooks.isolate is not None:
            hooks.isolate(backend, instance, task.long_context)
    return instance


class ToolRuntime:
    """The backend instances of one episode (or one ground-truth replay) and call dispatch.

    Args:
        task: The task whose backends and initial state to load.
        classes: Backend name -> class (e.g. the BFCL simulators).
        stateless: Backends that have no `_load_scenario` to call.
        validate: Validate arguments against the function docs before calling.
        hooks: Backend-specific adjustments (see `BackendHooks`).
        snapshots: Where this env keeps its tasks' freshly loaded instances, to start from them
            instead of loading again (used only when `hooks.snapshots` allows it).
    """

    def __init__(
        self,
        task: Task,
        classes: Mapping[str, type],
        stateless: Iterable[str] = (),
        *,
        validate: bool = True,
        hooks: BackendHooks | None = None,
        snapshots: InstanceSnapshots | None = None,
    ):
        stateless = frozenset(stateless)
        hooks = hooks or BackendHooks()
        snapshots = snapshots if hooks.snapshots else None
        self.instances: dict[str, Any] = {}
        self._owner: dict[str, str] = {}
        for backend in task.backends:
            if backend not in classes:
                raise KeyError(f"task {task.task_id} needs tool backend {backend!r}, which is not registered")
            cls = classes[backend]
            stateful = backend not in stateless
            instance = snapshots.restore(task, backend, cls) if snapshots is not None and stateful else None
            if instance is None:
                instance = _load(task, backend, cls, stateful, hooks)
                if snapshots is not None and stateful:
                    snapshots.take(task, backend, instance)
            self.instances[backend] = instance
            methods = public_methods(cls)
            if not self._owner.keys().isdisjoint(methods):
                for name in methods:
                    if name in self._owner and self._owner[name] != backend:
                        raise ValueError(f"function {name!r} is defined by both {self._owner[name]} and {backend}")
            self._owner.update(dict.fromkeys(methods, backend))
        self._task = task
        self._relax = hooks.validation_doc
        self._docs: dict[str, Mapping[str, Any] | None] = {}  # name -> doc to validate against, as needed
        self._validate = validate
        self._guard = hooks.guard

    def execute(self, calls: Iterable[ToolCall], offered: frozenset[str] | None = None) -> list[CallRecord]:
        """Run calls in order; `offered` (if given) is the set of names the model may call."""
        return [self.execute_one(call, offered) for call in calls]

    def execute_one(self, call: ToolCall, offered: frozenset[str] | None = None) -> CallRecord:
        """Run one call; every failure comes back as an ``Error during execution: ...`` result, never raised.

        A call with a BFCL call string (`ToolCall.source`) runs as BFCL's executor would. Any
        other call is refused unexecuted when it carries an `error`, names a function not defined
        or not in `offered`, or has arguments that do not bind or pass the checks (size, validation,
        the backend's guard); an exception from the function becomes its result. Results longer
        than `MAX_RESULT_CHARS` are truncated.
        """
        if call.source is not None:
            return self._execute_source(call, call.source, offered)
        if call.error is not None:
            return CallRecord(call, f"Error during execution: {call.error}", executed=False)
        backend = self._owner.get(call.name)
        if backend is None or (offered is not None and call.name not in offered):
            return CallRecord(call, f"Error during execution: name '{call.name}' is not defined", executed=False)
        instance = self.instances[backend]
        try:
            kwargs = self._bind(type(instance), call)
        except TypeError as e:
            return CallRecord(call, f"Error during execution: {call.name}(): {e}", executed=False)
        problem = self._check(backend, call.name, kwargs)
        if problem is not None:
            return CallRecord(
                call, f"Error during execution: invalid arguments for {call.name}: {problem}", executed=False
            )
        try:  # simulators may mutate their arguments: never hand them the call's own values
            result = stringify_result(getattr(instance, call.name)(**copy_state(kwargs)))
        except Exception as e:
            result = f"Error during execution: {e}"
        if len(result) > MAX_RESULT_CHARS:
            result = result[:MAX_RESULT_CHARS] + "...[truncated]"
        return CallRecord(call, result, executed=True)

    def _execute_source(self, call: ToolCall, source: str, offered: frozenset[str] | None) -> CallRecord:
        """Run a BFCL call string (``decoder="bfcl"``) as BFCL's executor would, without eval."""
        methods = self._owner.keys() if offered is None else self._owner.keys() & offered
        invoked = []

        def invoke(name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
            method = getattr(self.instances[self._owner[name]], name)
            problem = self._check_bound(name, method, args, kwargs)
            if problem is not None:
                raise _Refused(f"invalid arguments for {name}: {problem}")
            invoked.append(name)
            return method(*args, **kwargs)

        if plain_call(source, call.name, call.arguments):  # the same result, without a parse
            result = run_plain_call(call.name, call.arguments, methods, invoke, stringify_result)
        else:
            result = run_call_string(source, methods, invoke, stringify_result)
        if len(result) > MAX_RESULT_CHARS:
            result = result[:MAX_RESULT_CHARS] + "...[truncated]"
        return CallRecord(call, result, executed=bool(invoked))

    def _check_bound(self, name: str, method: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> str | None:
        """The runtime's refusals for a call given by position and keyword (None: run it)."""
        try:
            bound = bound_arguments(method, args, kwargs)
        except TypeError:  # the method itself raises Python's own TypeError for these
            return "integer arguments must lie within +-2**63" if _too_big_int([args, kwargs]) else None
        return self._check(self._owner[name], name, bound)

    def keyword_arguments(self, call: ToolCall) -> dict[str, Any]:
        """The call's arguments by parameter name (positional ones bound by the signature)."""
        backend = self._owner.get(call.name)
        if backend is None:
            raise KeyError(f"unknown function {call.name!r}")
        return self._bind(type(self.instances[backend]), call)

    def state(self) -> dict[str, dict[str, Any]]:
        """Public attributes of every stateful instance (what the checker compares)."""
        return {
            backend: {k: v for k, v in vars(instance).items() if not k.startswith("_")}
            for backend, instance in self.instances.items()
        }

    @staticmethod
    def _bind(cls: type, call: ToolCall) -> dict[str, Any]:
        return call_arguments(cls, call, refuse_variadic=True)

    def _validation_doc(self, name: str) -> Mapping[str, Any] | None:
        """The (relaxed) doc of `name`: the task's last doc of that name, as a name -> doc dict would keep."""
        found = None
        for doc in self._task.all_functions():
            if doc["name"] == name:
                found = doc
        if found is not None and self._relax is not None:
            found = self._relax(found)
        self._docs[name] = found
        return found

    def _check(self, backend: str, name: str, kwargs: Mapping[str, Any]) -> str | None:
        if _too_big_int(kwargs):
            return "integer arguments must lie within +-2**63"
        if self._validate:
            doc = self._docs[name] if name in self._docs else self._validation_doc(name)
            if doc is not None:
                problem = validation_error(doc, kwargs)
                if problem is not None:
                    return problem
        return self._guard(backend, name, kwargs) if self._guard else None
