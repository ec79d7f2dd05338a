"""Per-turn checking equivalent to BFCL's `multi_turn_checker`, written for this project.

After every user turn whose ground truth is non-empty:

1. the turn must contain at least one executing step (``multi_turn:empty_turn_model_response``);
2. every public attribute of every backend instance must equal the ground-truth
   instance's (``multi_turn:instance_state_mismatch``);
3. the ground-truth results of the turn must be an unordered sub-multiset of all the
   model's results so far (``multi_turn:execution_response_mismatch``).

Turns with empty ground truth are executed (they shape later state) but not checked. The
episode is valid when every checked turn passes; its error is the first failing turn's.

The ground truth is replayed on its own runtime, either alongside the episode (`LiveTruth`,
no copies) or once per task with a copy of its state after each checked turn
(`play_ground_truth`). Simulators are seeded, so the replay is the same for every episode of a
task, and the env caches it for tasks it plays more than once.
An episode cut short by the step limit before its last turn fails with
``multi_turn:force_terminated`` (BFCL's runner checks the turn count before anything else).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from tooluse_gym.tasks.task import Task
from tooluse_gym.tools.runtime import ToolRuntime

EMPTY_TURN = "multi_turn:empty_turn_model_response"
STATE_MISMATCH = "multi_turn:instance_state_mismatch"
RESPONSE_MISMATCH = "multi_turn:execution_response_mismatch"
FORCE_TERMINATED = "multi_turn:force_terminated"

_MAX_DIFF_DEPTH = 16
_MAX_LEAF_CHARS = 2000


@dataclass(frozen=True)
class TurnVerdict:
    """The checker's verdict on one user turn."""

    turn: int
    checked: bool
    valid: bool
    error_type: str | None = None
    message: str | None = None
    state_diff: Mapping[str, Any] | None = None
    missing_results: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The verdict as a JSON-able dict; `message`, `state_diff` and `missing_results` only when set."""
        out: dict[str, Any] = {
            "turn": self.turn,
            "checked": self.checked,
            "valid": self.valid,
            "error_type": self.error_type,
        }
        if self.message:
            out["message"] = self.message
        if self.state_diff is not None:
            out["state_diff"] = self.state_diff
        if self.missing_results:
            out["missing_results"] = list(self.missing_results)
        return out


@dataclass(frozen=True)
class CheckResult:
    """The verdict on a whole episode: BFCL's ``valid`` / ``error_type`` plus per-turn detail."""

    valid: bool
    error_type: str | None
    error_message: str | None
    turns: tuple[TurnVerdict, ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        """The result as a JSON-able dict, per-turn verdicts included (the shape of ``info["checker"]``)."""
        return {
            "valid": self.valid,
            "error_type": self.error_type,
            "error_message": self.error_message,
            "turns": [t.to_dict() for t in self.turns],
        }


@dataclass(frozen=True)
class TruthTurn:
    """The ground truth's results in one turn and its state after it (None: turn not checked)."""

    results: tuple[str, ...]
    state: Mapping[str, Mapping[str, Any]] | None


class TruthTurns(Protocol):
    """The ground truth of a task's turns, read by index: `play_ground_truth`'s tuple or a `LiveTruth`."""

    def __len__(self) -> int: ...

    def __getitem__(self, turn: int, /) -> TruthTurn: ...


def play_ground_truth(task: Task, runtime: ToolRuntime) -> tuple[TruthTurn, ...]:
    """Execute the task's ground truth on a fresh `runtime`, turn by turn."""
    turns = []
    for calls in task.ground_truth:
        results = tuple(r.result for r in runtime.execute(calls))
        turns.append(TruthTurn(results, copy.deepcopy(runtime.state()) if calls else None))
    return tuple(turns)


class LiveTruth:
    """The ground truth replayed alongside one episode, a turn at a time, without copies.

    Turns must be read in order; a turn's `state` is the live runtime state, valid until
    the next turn is read.
    """

    def __init__(self, task: Task, runtime: ToolRuntime):
        self._task = task
        self._runtime = runtime
        self._next = 0
        self._last: TruthTurn | None = None

    def __len__(self) -> int:
        return self._task.num_turns

    def __getitem__(self, turn: int) -> TruthTurn:
        if turn == self._next - 1 and self._last is not None:
            return self._last
        if turn != self._next:
            raise IndexError(f"LiveTruth turns must be read in order (next is {self._next}, asked {turn})")
        calls = self._task.ground_truth[turn]
        results = tuple(r.result for r in self._runtime.execute(calls))
        self._last = TruthTurn(results, self._runtime.state() if calls else None)
        self._next += 1
        return self._last


class EpisodeChecker:
    """Checks each turn of an episode as it ends, against the replayed ground truth.

    Args:
        task: The task being played.
        truth: `play_ground_truth(task, ...)` (never mutated, so episodes may share it) or a
            `LiveTruth` for this episode alone.
    """

    def __init__(self, task: Task, truth: TruthTurns):
        if len(truth) != task.num_turns:
            raise ValueError(f"truth replay has {len(truth)} turns, task {task.task_id} has {task.num_turns}")
        self.task = task
        self._truth = truth
        self._model_results: list[str] = []
        self._verdicts: list[TurnVerdict] = []
        self._force_terminated_at: int | None = None

    def record(self, results: Iterable[str]) -> None:
        """Add the results of one executing model step."""
        self._model_results.extend(results)

    def end_turn(self, turn: int, model: ToolRuntime, steps: int) -> TurnVerdict:
        """Check `turn` after the model took `steps` executing steps in it."""
        truth = self._truth[turn]
        if truth.state is None:
            verdict = TurnVerdict(turn, checked=False, valid=True)
        elif steps == 0:
            verdict = TurnVerdict(turn, True, False, EMPTY_TURN, f"no tool call in turn {turn}")
        else:
            verdict = self._compare(turn, model, truth.state, truth.results)
        self._verdicts.append(verdict)
        return verdict

    def force_terminate(self, turn: int) -> None:
        """The step limit was hit in `turn` and later turns will not be played."""
        self._force_terminated_at = turn

    def result(self) -> CheckResult:
        """The episode's verdict so far: force-terminated, else the first failing turn's error, else valid."""
        if self._force_terminated_at is not None:
            return CheckResult(
                False,
                FORCE_TERMINATED,
                f"step limit exceeded in turn {self._force_terminated_at}",
                tuple(self._verdicts),
            )
        for v in self._verdicts:
            if not v.valid:
                return CheckResult(False, v.error_type, v.message, tuple(self._verdicts))
        return CheckResult(True, None, None, tuple(self._verdicts))

    def _compare(
        self, turn: int, model: ToolRuntime, truth_state: Mapping[str, Mapping[str, Any]], truth_results: Sequence[str]
    ) -> TurnVerdict:
        model_state = model.state()
        for backend in self.task.backends:
            diff = {
                attr: state_diff(model_state[backend].get(attr), value)
                for attr, value in truth_state[backend].items()
                if model_state[backend].get(attr, _MISSING) != value
            }
            if diff:
                return TurnVerdict(
                    turn,
                    True,
                    False,
                    STATE_MISMATCH,
                    f"{backend} state differs from the ground truth after turn {turn}",
                    state_diff={backend: diff},
                )
        missing = _missing(truth_results, self._model_results)
        if missing:
            return TurnVerdict(
                turn,
                True,
                False,
                RESPONSE_MISMATCH,
                f"{len(missing)} ground-truth result(s) of turn {turn} not among the model's results",
                missing_results=tuple(_clip(m) for m in missing),
            )
        return TurnVerdict(turn, checked=True, valid=True)


_MISSING = object()


def _missing(needed: Sequence[str], available: Sequence[str]) -> list[str]:
    """Items of `needed` not matched one-to-one by equal items of `available` (any order)."""
    pool = list(available)
    out = []
    for item in needed:
        try:
            pool.remove(item)
        except ValueError:
            out.append(item)
    return out


def _clip(text: str) -> str:
    return text if len(text) <= _MAX_LEAF_CHARS else text[:_MAX_LEAF_CHARS] + "..."


def _public(obj: Any) -> dict[str, Any]:
    return {k: v for k, v in vars(obj).items() if not k.startswith("_")}


def _is_object(value: Any) -> bool:
    return hasattr(value, "__dict__") and not isinstance(value, type)


def jsonable(value: Any, depth: int = 0, _ancestors: frozenset[int] = frozenset()) -> Any:
    """A JSON-able rendering of simulator state (objects become their public attributes).

    References back to an enclosing object (a directory's ``parent``) are shown as
    ``"<Class>"`` instead of being followed.
    """
    if value is None or isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, str):
        return _clip(value)
    if depth >= _MAX_DIFF_DEPTH:
        return _clip(repr(value))
    if isinstance(value, Mapping):
        return {str(k): jsonable(v, depth + 1, _ancestors) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [jsonable(v, depth + 1, _ancestors) for v in value]
    if _is_object(value):
        if id(value) in _ancestors:
            return f"<{type(value).__name__}>"
        inner = _ancestors | {id(value)}
        public = {k: jsonable(v, depth + 1, inner) for k, v in _public(value).items()}
        return {"__class__": type(value).__name__, **public}
    return _clip(repr(value))


def state_diff(model: Any, truth: Any, depth: int = 0, _ancestors: frozenset[int] = frozenset()) -> Any:
    """Only the parts of two values that differ, as ``{"model": ..., "ground_truth": ...}`` leaves.

    Attributes pointing back to an enclosing object (a directory's ``parent``) are skipped.
    """
    if depth < _MAX_DIFF_DEPTH:
        if isinstance(model, Mapping) and isinstance(truth, Mapping):
            keys = list(truth) + [k for k in model if k not in truth]
            out = {}
            for k in keys:
                m, t = model.get(k, _MISSING), truth.get(k, _MISSING)
                if id(m) in _ancestors or id(t) in _ancestors or m == t:
                    continue
                out[str(k)] = state_diff(m, t, depth + 1, _ancestors)
            return out
        if type(model) is type(truth) and _is_object(truth):
            inner = _ancestors | {id(model), id(truth)}
            return state_diff(_public(model), _public(truth), depth + 1, inner)
    return {
        "model": "<missing>" if model is _MISSING else jsonable(model, 0, _ancestors),
        "ground_truth": "<missing>" if truth is _MISSING else jsonable(truth, 0, _ancestors),
    }
