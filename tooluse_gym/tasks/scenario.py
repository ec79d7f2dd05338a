"""Scenario files: declarative tool-use tasks (YAML or JSON) turned into `Task` objects.

A scenario is multi-turn (``turns``, below) or single-turn (a ``single_turn`` block: one request
and BFCL's possible answers, judged by BFCL's AST checker without executing anything;
`tooluse_gym.tasks.scenario_single_turn`).

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

Loading checks the schema; unknown backends; initial-state keys the backend does not read
and values of the wrong kind (`scenario_state`); unknown or not-offered functions;
ground-truth calls that do not parse (a call list YAML split at its commas is recognised) or
whose arguments do not validate; and (unless ``replay=False``, and only for a scenario with no
other problem) ground truth that fails when replayed on the scenario's own initial state. It
raises one `ScenarioError` listing every problem found, each with the file, its path in the
file (``scenarios[2].turns[0]``), the scenario id, the reason and, where one helps, a fix hint.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from tooluse_gym.decoding.lenient import parse_call_string
from tooluse_gym.decoding.limits import MAX_SCENARIO_DEPTH, MAX_SCENARIO_FILE_BYTES
from tooluse_gym.errors import TaskLoadError
from tooluse_gym.tasks import bounded_yaml
from tooluse_gym.tasks.scenario_hints import quoted_list, rejoin_calls, schema_problems
from tooluse_gym.tasks.scenario_single_turn import single_turn_task
from tooluse_gym.tasks.scenario_state import state_problems
from tooluse_gym.tasks.task import Task
from tooluse_gym.tools.binding import call_arguments
from tooluse_gym.tools.registry import ToolBackend, combined_hooks, get_backend
from tooluse_gym.tools.runtime import BackendHooks, ToolRuntime
from tooluse_gym.tools.schemas import validation_error
from tooluse_gym.types import ToolCall

SUFFIXES = (".yaml", ".yml", ".json")
DEFAULT_CATEGORY = "scenario"
MAX_FILE_BYTES = MAX_SCENARIO_FILE_BYTES
"""A larger scenario file is refused before it is read (`tooluse_gym.decoding.limits`)."""

Fail = Callable[..., None]
"""Records a problem: ``fail(field, kind, reason, hint="")``."""


@cache
def scenario_schema() -> dict[str, Any]:
    """The JSON Schema of scenario files (shipped as ``tooluse_gym/tasks/scenario.schema.json``)."""
    text = resources.files("tooluse_gym.tasks").joinpath("scenario.schema.json").read_text(encoding="utf-8")
    return json.loads(text)


@dataclass(frozen=True)
class ScenarioProblem:
    """One problem of a scenario file.

    Attributes:
        file: The file.
        scenario_id: The scenario's id ("" when the problem is not inside one scenario).
        field: Path of the offending field inside the scenario, e.g. ``turns[1].ground_truth[0].arguments``
            (inside the file when `index` is None).
        kind: ``parse``, ``schema``, ``duplicate_id``, ``unknown_backend``, ``unknown_function``,
            ``bad_call``, ``invalid_arguments``, ``bad_state`` or ``replay_failed`` (a single-turn
            scenario's reference answer fails BFCL's checker).
        reason: What is wrong.
        hint: How to fix it ("" when there is nothing to add).
        index: The scenario's position in the file's ``scenarios`` list (None outside a scenario).
    """

    file: str
    scenario_id: str
    field: str
    kind: str
    reason: str
    hint: str = ""
    index: int | None = None

    @property
    def location(self) -> str:
        """The field's path inside the file, e.g. ``scenarios[2].turns[0]``."""
        if self.index is None:
            return self.field
        head = f"scenarios[{self.index}]"
        return head + (f"{'' if self.field.startswith('[') else '.'}{self.field}" if self.field else "")

    def describe(self) -> str:
        """The problem without its file: location, scenario id, reason, kind and (on a second line) the hint."""
        where = " ".join(
            p for p in (self.location, f"(scenario {self.scenario_id!r})" if self.scenario_id else "") if p
        )
        text = f"{where + ': ' if where else ''}{self.reason} [{self.kind}]"
        return text + (f"\n    hint: {self.hint}" if self.hint else "")

    def __str__(self) -> str:
        return f"{self.file}: {self.describe()}"


class ScenarioError(TaskLoadError):
    """Scenario files are invalid: `problems` lists every problem found.

    The attributes `file`, `scenario_id`, `field`, `kind`, `reason` and `hint` are those of the first
    problem (see `ScenarioProblem`).
    """

    def __init__(self, problems: Sequence[ScenarioProblem]):
        self.problems = tuple(problems)
        first = self.problems[0]
        self.file, self.scenario_id, self.field = first.file, first.scenario_id, first.field
        self.kind, self.reason, self.hint = first.kind, first.reason, first.hint
        if len(self.problems) == 1:
            super().__init__(str(first))
        else:
            lines = "\n".join(str(p) for p in self.problems)
            super().__init__(f"{len(self.problems)} problems in scenario files:\n{lines}")


@dataclass(frozen=True)
class ScenarioSet:
    """Tasks loaded from scenario files, with what an env needs to run them."""

    tasks: tuple[Task, ...]
    backends: tuple[ToolBackend, ...]
    files: tuple[Path, ...]
    sha256: str
    """Hash of the files' bytes (in path order): two runs used the same tasks iff it matches."""
    file_digests: tuple[tuple[str, str], ...] = ()
    """Each file's sha256, under its name (a file given: its name; in a folder given: the folder's name and
    the path below it), for the protocol card's ``task_data``."""

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
    """Load and check every scenario at `path` (a file, a folder, or a list of them).

    Raises `ScenarioError` listing every problem of every file (see the module docstring).
    """
    paths = [path] if isinstance(path, (str, Path)) else list(path)
    named = [(_file_label(Path(p), f), f) for p in paths for f in scenario_files(p)]
    files = [f for _, f in named]
    labels = {f: label for label, f in named}
    file_digests: dict[str, str] = {}
    digest = hashlib.sha256()
    tasks: list[Task] = []
    backends: dict[str, ToolBackend] = {}
    seen: dict[str, Path] = {}
    problems: list[ScenarioProblem] = []
    for file in files:
        if file.stat().st_size > MAX_FILE_BYTES:  # refused unread
            problems.append(_too_large(file))
            continue
        raw = file.read_bytes()
        digest.update(raw)
        file_digests[labels[file]] = hashlib.sha256(raw).hexdigest()
        loaded, found = _load_file(file, raw, replay)
        problems += found
        for index, task, used in loaded:
            if task.task_id in seen:
                reason = f"id already used in {seen[task.task_id]}"
                problems.append(ScenarioProblem(str(file), task.task_id, "id", "duplicate_id", reason, index=index))
                continue
            seen[task.task_id] = file
            tasks.append(task)
            backends.update((b.name, b) for b in used)
    if problems:
        raise ScenarioError(problems)
    digests = tuple(sorted(file_digests.items()))
    return ScenarioSet(tuple(tasks), tuple(backends.values()), tuple(files), digest.hexdigest(), digests)


def _file_label(given: Path, file: Path) -> str:
    """A scenario file's name on a card: its name, or below a folder given, the folder's name and the path in it."""
    if given.is_dir():
        return (Path(given.resolve().name) / file.relative_to(given)).as_posix()
    return file.name


def load_scenarios(path: str | Path | Sequence[str | Path], *, replay: bool = True) -> list[Task]:
    """The tasks of every scenario at `path` (see `load_scenario_set`)."""
    return list(load_scenario_set(path, replay=replay).tasks)


def _too_large(file: Path) -> ScenarioProblem:
    return ScenarioProblem(str(file), "", "", "parse", f"file is larger than {MAX_FILE_BYTES} bytes; refused")


def _read(file: Path, raw: bytes) -> Any:
    """A scenario file's data: JSON, or YAML within `bounded_yaml`'s bounds; a `ScenarioError` of one problem."""
    if len(raw) > MAX_FILE_BYTES:
        raise ScenarioError([_too_large(file)])
    try:
        text = raw.decode("utf-8")
        return json.loads(text) if file.suffix == ".json" else bounded_yaml.load(text)
    except bounded_yaml.YamlLimitError as e:
        raise ScenarioError([ScenarioProblem(str(file), "", "", "parse", f"refused: {e}")]) from None
    except RecursionError:  # JSON nested past what Python's parser recurses through
        reason = f"refused: values nested deeper than {MAX_SCENARIO_DEPTH} levels"
        raise ScenarioError([ScenarioProblem(str(file), "", "", "parse", reason)]) from None
    except (UnicodeDecodeError, json.JSONDecodeError, yaml.YAMLError) as e:
        reason = f"cannot parse: {' '.join(str(e).split())}"
        raise ScenarioError([ScenarioProblem(str(file), "", "", "parse", reason)]) from None


def _field(path: Iterable[Any]) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


Loaded = tuple[int, Task, list[ToolBackend]]


def _load_file(file: Path, raw: bytes, replay: bool) -> tuple[list[Loaded], list[ScenarioProblem]]:
    """The file's valid scenarios (with their positions) and every problem found in the others."""
    try:
        data = _read(file, raw)
    except ScenarioError as e:
        return [], list(e.problems)
    validator = jsonschema.Draft202012Validator(scenario_schema())
    errors = sorted(validator.iter_errors(data), key=lambda e: [(isinstance(p, str), p) for p in e.absolute_path])
    problems: list[ScenarioProblem] = []
    broken: dict[int, set[int] | None] = {}  # scenario -> its turns that the schema refused (None: all of it)
    for path, reason, hint in schema_problems(errors):
        index = path[1] if len(path) >= 2 and path[0] == "scenarios" and isinstance(path[1], int) else None
        scenario_id = ""
        if index is not None:
            in_turn = len(path) >= 4 and path[2] == "turns" and isinstance(path[3], int)
            turns = broken.get(index, set())
            broken[index] = turns | {path[3]} if in_turn and turns is not None else None
            item = data["scenarios"][index]
            scenario_id = str(item.get("id", f"#{index}")) if isinstance(item, dict) else f"#{index}"
            path = path[2:]
        problems.append(ScenarioProblem(str(file), scenario_id, _field(path), "schema", reason, hint, index))
    specs = data.get("scenarios") if isinstance(data, dict) else None
    loaded: list[Loaded] = []
    if not isinstance(specs, list):
        return loaded, problems
    for index, spec in enumerate(specs):
        skip = broken.get(index, set())
        if skip is None or not isinstance(spec, dict):
            continue
        task, used, found = _build(file, index, spec, replay, frozenset(skip))
        problems += found
        if task is not None and not skip:
            loaded.append((index, task, used))
    return loaded, problems


def _build(
    file: Path, index: int, spec: Mapping[str, Any], replay: bool, skip: frozenset[int] = frozenset()
) -> tuple[Task | None, list[ToolBackend], list[ScenarioProblem]]:
    """The scenario's task (None when it has problems), its backends, and its problems.

    The turns in `skip` (refused by the schema) are not checked; the task is then not used.
    """
    sid = spec["id"]
    problems: list[ScenarioProblem] = []

    def fail(field: str, kind: str, reason: str, hint: str = "") -> None:
        problems.append(ScenarioProblem(str(file), sid, field, kind, reason, hint, index))

    backends = _backends(spec["tools"], fail)
    check_names = len(backends) == len(spec["tools"])  # an unknown backend's functions cannot be told apart
    docs = {doc["name"]: (doc, b) for b in backends for doc in b.docs}
    relax = combined_hooks(backends).validation_doc  # the same argument checks the runtime applies
    offered = list(spec.get("functions") or docs)
    for i, name in enumerate(offered):
        if name not in docs and check_names:
            fail(f"functions[{i}]", "unknown_function", f"{name!r} is not a function of {_names(backends)}")
    if "single_turn" in spec:
        single = single_turn_task(
            spec,
            tuple(docs[name][0] for name in offered if name in docs),
            fail=fail,
            validate=lambda doc, args: validation_error(doc if relax is None else relax(doc), args),
            source=str(file),
            backends=tuple(b.name for b in backends),
            replay=replay and not problems,
        )
        return (None if problems else single), backends, problems
    held_out: dict[int, tuple[Mapping[str, Any], ...]] = {}
    for t, turn in enumerate(spec["turns"]):
        if t in skip:
            continue
        names = []
        for i, name in enumerate(turn.get("held_out", ())):
            if name not in docs:
                if check_names:
                    fail(
                        f"turns[{t}].held_out[{i}]",
                        "unknown_function",
                        f"{name!r} is not a function of {_names(backends)}",
                    )
            elif any(name in {d["name"] for d in h} for h in held_out.values()):
                fail(f"turns[{t}].held_out[{i}]", "unknown_function", f"{name!r} is held out twice")
            else:
                names.append(name)
        if names:
            held_out[t] = tuple(docs[name][0] for name in names)
    withheld = {d["name"] for h in held_out.values() for d in h}
    initial = tuple(docs[name][0] for name in offered if name in docs and name not in withheld)
    ground_truth = []
    for t, turn in enumerate(spec["turns"]):
        available = {d["name"] for d in initial} | {d["name"] for k, h in held_out.items() if k <= t for d in h}
        if t in skip:
            continue
        rejoined = rejoin_calls(turn["ground_truth"])
        if rejoined is not None:
            shown = ", ".join(repr(c) for c in turn["ground_truth"])
            reason = f"YAML split the unquoted calls at their commas into {shown:.120}"
            fail(
                f"turns[{t}].ground_truth",
                "bad_call",
                reason,
                f"quote each call: ground_truth: {quoted_list(rejoined)}",
            )
            continue
        calls = []
        for i, raw_call in enumerate(turn["ground_truth"]):
            field = f"turns[{t}].ground_truth[{i}]"
            call = _call(raw_call, field, fail)
            if call is None:
                continue
            if call.name not in docs:
                if check_names:
                    fail(field, "unknown_function", f"{call.name!r} is not a function of {_names(backends)}")
                continue
            if call.name not in available:
                fail(field, "unknown_function", f"{call.name!r} is not offered at turn {t}")
                continue
            doc, backend = docs[call.name]
            call = _bind(call, backend.cls, field, fail)
            if call is None:
                continue
            problem = validation_error(doc if relax is None else relax(doc), call.arguments)
            if problem is not None:
                fail(f"{field}.arguments", "invalid_arguments", problem)
                continue
            calls.append(call)
        ground_truth.append(tuple(calls))
    if problems or skip:
        return None, backends, problems
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
    return (None if problems else task), backends, problems


def _backends(tools: Mapping[str, Mapping[str, Any]], fail: Fail) -> list[ToolBackend]:
    """The registered backends named in `tools`; unknown names and bad initial states reported through `fail`."""
    backends = []
    for name, state in tools.items():
        try:
            backend = get_backend(name)
        except KeyError as e:
            fail(f"tools.{name}", "unknown_backend", str(e.args[0]))
            continue
        backends.append(backend)
        if backend.stateless:
            for key in state:
                fail(f"tools.{name}.{key}", "bad_state", f"{name} keeps no state", f"give it no state: {name}: {{}}")
            continue
        for key, reason, hint in state_problems(name, backend.cls, state):
            fail(f"tools.{name}.{key}", "bad_state", reason, hint)
    return backends


def _names(backends: Sequence[ToolBackend]) -> str:
    return ", ".join(b.name for b in backends)


def _call(raw: Any, field: str, fail: Fail) -> ToolCall | None:
    if isinstance(raw, str):
        try:
            return parse_call_string(raw)
        except (ValueError, TypeError, SyntaxError) as e:
            fail(field, "bad_call", f"cannot parse call {raw!r:.80}: {e}")
            return None
    return ToolCall(name=raw["name"], arguments=dict(raw.get("arguments", {})))


def _bind(call: ToolCall, cls: type, field: str, fail: Fail) -> ToolCall | None:
    """Positional arguments bound to parameter names; unknown parameters refused."""
    try:
        arguments = call_arguments(cls, call, bind_keywords=True)
    except TypeError as e:
        fail(f"{field}.arguments", "invalid_arguments", str(e))
        return None
    return ToolCall(name=call.name, arguments=arguments)


def _check_replay(task: Task, backends: Sequence[ToolBackend], fail: Fail) -> None:
    classes = {b.name: b.cls for b in backends}
    stateless = frozenset(b.name for b in backends if b.stateless)
    try:
        runtime = ToolRuntime(task, classes, stateless, validate=True, hooks=combined_hooks(backends))
    except Exception as e:
        fail("tools", "bad_state", f"loading the initial state failed: {type(e).__name__}: {e}")
        return
    for t, calls in enumerate(task.ground_truth):
        for i, call in enumerate(calls):
            result = runtime.execute_one(call).result
            if _is_failure(result):  # later calls depend on this one's effect: stop here
                fail(f"turns[{t}].ground_truth[{i}]", "replay_failed", f"ground truth fails on replay: {result:.300}")
                return


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
