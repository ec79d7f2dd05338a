"""Scenario files: declarative tool-use tasks (YAML or JSON) turned into `Task` objects.

A file holds ``{"version": 1, "scenarios": [...]}``; the JSON Schema that defines it ships
with the package (`scenario.schema.json`, also `SCENARIO_SCHEMA`). A scenario names its tool
backends by registry name with their initial state, may restrict the functions offered, and
lists turns of user messages and ground-truth calls (optionally held-out functions per turn):

    scenarios:
      - id: add_two_numbers
        category: literal
        tools: {MathAPI: {}}
        functions: [add, multiply]
        turns:
          - user: "Add 3 and 4."
            ground_truth: ["add(a=3, b=4)"]

Loading checks, in order, and stops at the first problem with a `ScenarioError` that names
the file, the scenario id, the field path and the reason: the schema; unknown backends;
unknown or not-offered functions; ground-truth calls that do not parse or whose arguments do
not validate; and (unless ``replay=False``) ground truth that fails when replayed on the
scenario's own initial state.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from tooluse_gym.errors import TaskLoadError
from tooluse_gym.tasks.task import Task
from tooluse_gym.tools.binding import call_arguments
from tooluse_gym.tools.parsing import parse_call_string
from tooluse_gym.tools.registry import ToolBackend, combined_hooks, get_backend
from tooluse_gym.tools.runtime import BackendHooks, ToolRuntime
from tooluse_gym.tools.schemas import validation_error
from tooluse_gym.types import ToolCall

SUFFIXES = (".yaml", ".yml", ".json")
DEFAULT_CATEGORY = "scenario"
MAX_FILE_BYTES = 50_000_000


@cache
def scenario_schema() -> dict[str, Any]:
    """The JSON Schema of scenario files (shipped as ``tooluse_gym/tasks/scenario.schema.json``)."""
    text = resources.files("tooluse_gym.tasks").joinpath("scenario.schema.json").read_text(encoding="utf-8")
    return json.loads(text)


class ScenarioError(TaskLoadError):
    """A scenario file is invalid.

    Attributes:
        file: The file.
        scenario_id: The scenario's id ("" when the problem is not inside one scenario).
        field: Path of the offending field, e.g. ``turns[1].ground_truth[0].arguments``.
        kind: ``parse``, ``schema``, ``duplicate_id``, ``unknown_backend``, ``unknown_function``,
            ``bad_call``, ``invalid_arguments``, ``bad_state`` or ``replay_failed``.
        reason: What is wrong.
    """

    def __init__(self, file: str | Path, scenario_id: str, field: str, kind: str, reason: str):
        self.file, self.scenario_id, self.field, self.kind, self.reason = str(file), scenario_id, field, kind, reason
        where = f"scenario {scenario_id!r}: " if scenario_id else ""
        at = f"{field}: " if field else ""
        super().__init__(f"{file}: {where}{at}{reason} [{kind}]")


@dataclass(frozen=True)
class ScenarioSet:
    """Tasks loaded from scenario files, with what an env needs to run them."""

    tasks: tuple[Task, ...]
    backends: tuple[ToolBackend, ...]
    files: tuple[Path, ...]
    sha256: str
    """Hash of the files' bytes (in path order): two runs used the same tasks iff it matches."""

    def classes(self) -> dict[str, type]:
        """Backend name -> class, for every backend the tasks use."""
        return {b.name: b.cls for b in self.backends}

    def stateless(self) -> frozenset[str]:
        """The names of the backends that take no initial state."""
        return frozenset(b.name for b in self.backends if b.stateless)

    def hooks(self) -> BackendHooks:
        """The backends' hooks as one `BackendHooks` (`combined_hooks`)."""
        return combined_hooks(self.backends)


def scenario_files(path: str | Path) -> list[Path]:
    """The scenario files at `path`: the file itself, or every .yaml/.yml/.json below a folder (sorted)."""
    path = Path(path)
    if not path.exists():
        raise TaskLoadError(f"{path}: no such file or folder")
    if path.is_file():
        return [path]
    files = sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in SUFFIXES)
    if not files:
        raise TaskLoadError(f"{path}: no scenario files ({', '.join(SUFFIXES)}) in this folder")
    return files


def load_scenario_set(path: str | Path | Sequence[str | Path], *, replay: bool = True) -> ScenarioSet:
    """Load and check every scenario at `path` (a file, a folder, or a list of them)."""
    paths = [path] if isinstance(path, (str, Path)) else list(path)
    files = [f for p in paths for f in scenario_files(p)]
    digest = hashlib.sha256()
    tasks: list[Task] = []
    backends: dict[str, ToolBackend] = {}
    seen: dict[str, Path] = {}
    for file in files:
        raw = file.read_bytes()
        digest.update(raw)
        for task, used in _load_file(file, raw, replay):
            if task.task_id in seen:
                raise ScenarioError(
                    file, task.task_id, "id", "duplicate_id", f"id already used in {seen[task.task_id]}"
                )
            seen[task.task_id] = file
            tasks.append(task)
            backends.update((b.name, b) for b in used)
    return ScenarioSet(tuple(tasks), tuple(backends.values()), tuple(files), digest.hexdigest())


def load_scenarios(path: str | Path | Sequence[str | Path], *, replay: bool = True) -> list[Task]:
    """The tasks of every scenario at `path` (see `load_scenario_set`)."""
    return list(load_scenario_set(path, replay=replay).tasks)


def _read(file: Path, raw: bytes) -> Any:
    if len(raw) > MAX_FILE_BYTES:
        raise ScenarioError(file, "", "", "parse", f"file is larger than {MAX_FILE_BYTES} bytes")
    try:
        text = raw.decode("utf-8")
        return json.loads(text) if file.suffix == ".json" else yaml.safe_load(text)
    except (UnicodeDecodeError, json.JSONDecodeError, yaml.YAMLError) as e:
        raise ScenarioError(file, "", "", "parse", f"cannot parse: {e}") from None


def _field(path: Iterable[Any]) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _load_file(file: Path, raw: bytes, replay: bool) -> list[tuple[Task, list[ToolBackend]]]:
    data = _read(file, raw)
    validator = jsonschema.Draft202012Validator(scenario_schema())
    errors = list(validator.iter_errors(data))
    error = jsonschema.exceptions.best_match(errors)
    if error is not None:
        siblings = [e.message for e in errors if e.absolute_path == error.absolute_path and e is not error]
        path = list(error.absolute_path)
        scenario_id = ""
        if len(path) >= 2 and path[0] == "scenarios" and isinstance(path[1], int):
            item = data["scenarios"][path[1]]
            scenario_id = str(item.get("id", f"#{path[1]}")) if isinstance(item, dict) else f"#{path[1]}"
            path = path[2:]
        reason = "; ".join([error.message, *siblings[:2]])
        raise ScenarioError(file, scenario_id, _field(path), "schema", reason)
    return [_build(file, spec, replay) for spec in data["scenarios"]]


def _build(file: Path, spec: Mapping[str, Any], replay: bool) -> tuple[Task, list[ToolBackend]]:
    sid = spec["id"]

    def fail(field: str, kind: str, reason: str) -> ScenarioError:
        return ScenarioError(file, sid, field, kind, reason)

    backends = []
    for name in spec["tools"]:
        try:
            backends.append(get_backend(name))
        except KeyError as e:
            raise fail(f"tools.{name}", "unknown_backend", str(e.args[0])) from None
    docs = {doc["name"]: (doc, b) for b in backends for doc in b.docs}
    relax = combined_hooks(backends).validation_doc  # the same argument checks the runtime applies
    offered = list(spec.get("functions") or docs)
    for i, name in enumerate(offered):
        if name not in docs:
            raise fail(f"functions[{i}]", "unknown_function", f"{name!r} is not a function of {_names(backends)}")
    held_out: dict[int, tuple[Mapping[str, Any], ...]] = {}
    for t, turn in enumerate(spec["turns"]):
        for i, name in enumerate(turn.get("held_out", ())):
            if name not in docs:
                raise fail(
                    f"turns[{t}].held_out[{i}]", "unknown_function", f"{name!r} is not a function of {_names(backends)}"
                )
            if any(name in {d["name"] for d in h} for h in held_out.values()):
                raise fail(f"turns[{t}].held_out[{i}]", "unknown_function", f"{name!r} is held out twice")
        if turn.get("held_out"):
            held_out[t] = tuple(docs[name][0] for name in turn["held_out"])
    withheld = {d["name"] for h in held_out.values() for d in h}
    initial = tuple(docs[name][0] for name in offered if name not in withheld)
    ground_truth = []
    for t, turn in enumerate(spec["turns"]):
        available = {d["name"] for d in initial} | {d["name"] for k, h in held_out.items() if k <= t for d in h}
        calls = []
        for i, raw_call in enumerate(turn["ground_truth"]):
            field = f"turns[{t}].ground_truth[{i}]"
            call = _call(raw_call, field, fail)
            if call.name not in docs:
                raise fail(field, "unknown_function", f"{call.name!r} is not a function of {_names(backends)}")
            if call.name not in available:
                raise fail(field, "unknown_function", f"{call.name!r} is not offered at turn {t}")
            doc, backend = docs[call.name]
            call = _bind(call, backend.cls, field, fail)
            problem = validation_error(doc if relax is None else relax(doc), call.arguments)
            if problem is not None:
                raise fail(f"{field}.arguments", "invalid_arguments", problem)
            calls.append(call)
        ground_truth.append(tuple(calls))
    task = Task(
        task_id=sid,
        category=spec.get("category", DEFAULT_CATEGORY),
        turns=tuple(({"role": "user", "content": turn["user"]},) if "user" in turn else () for turn in spec["turns"]),
        ground_truth=tuple(ground_truth),
        functions=initial,
        backends=tuple(b.name for b in backends),
        initial_config={name: dict(state) for name, state in spec["tools"].items()},
        held_out=held_out,
        long_context=bool(spec.get("long_context", False)),
        source=str(file),
    )
    if replay:
        _check_replay(task, backends, fail)
    return task, backends


def _names(backends: Sequence[ToolBackend]) -> str:
    return ", ".join(b.name for b in backends)


def _call(raw: Any, field: str, fail) -> ToolCall:
    if isinstance(raw, str):
        try:
            return parse_call_string(raw)
        except (ValueError, TypeError, SyntaxError) as e:
            raise fail(field, "bad_call", f"cannot parse call {raw!r:.80}: {e}") from None
    return ToolCall(name=raw["name"], arguments=dict(raw.get("arguments", {})))


def _bind(call: ToolCall, cls: type, field: str, fail) -> ToolCall:
    """Positional arguments bound to parameter names; unknown parameters refused."""
    try:
        arguments = call_arguments(cls, call, bind_keywords=True)
    except TypeError as e:
        raise fail(f"{field}.arguments", "invalid_arguments", str(e)) from None
    return ToolCall(name=call.name, arguments=arguments)


def _check_replay(task: Task, backends: Sequence[ToolBackend], fail) -> None:
    classes = {b.name: b.cls for b in backends}
    stateless = frozenset(b.name for b in backends if b.stateless)
    try:
        runtime = ToolRuntime(task, classes, stateless, validate=True, hooks=combined_hooks(backends))
    except Exception as e:
        raise fail("tools", "bad_state", f"loading the initial state failed: {type(e).__name__}: {e}") from None
    for t, calls in enumerate(task.ground_truth):
        for i, call in enumerate(calls):
            result = runtime.execute_one(call).result
            if _is_failure(result):
                raise fail(
                    f"turns[{t}].ground_truth[{i}]", "replay_failed", f"ground truth fails on replay: {result:.300}"
                )


def _is_failure(result: str) -> bool:
    """A call result that reports an error (raised, refused, or returned as ``{"error": ...}``)."""
    if result.startswith("Error during execution"):
        return True
    if result.startswith("{"):
        try:
            value = json.loads(result)
        except json.JSONDecodeError:
            return False
        return isinstance(value, dict) and "error" in value
    return False
