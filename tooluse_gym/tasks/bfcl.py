"""The BFCL multi-turn data, simulators and prompt constants, imported from `bfcl_eval`.

This is the only module that knows where things live inside the `bfcl-eval` package and
which quirks its data has. Everything else sees `Task` objects and backend classes.

`bfcl_eval` creates folders under ``BFCL_PROJECT_ROOT`` when imported (by default inside
site-packages). Before the first import this module points that variable to a cache
folder (``$XDG_CACHE_HOME/tooluse-gym/bfcl``) unless the user has set it.
"""

from __future__ import annotations

import copy
import importlib
import json
import os
from collections.abc import Mapping, Sequence
from functools import cache, lru_cache
from importlib import metadata
from pathlib import Path
from types import ModuleType
from typing import Any

from tooluse_gym.decoding.lenient import parse_call_string
from tooluse_gym.errors import DependencyNotInstalled, TaskLoadError
from tooluse_gym.tasks import bfcl_data
from tooluse_gym.tasks.selection import select_tasks
from tooluse_gym.tasks.task import Task
from tooluse_gym.tools.binding import call_arguments
from tooluse_gym.tools.runtime import BackendHooks, copy_state
from tooluse_gym.tools.schemas import DocCache
from tooluse_gym.types import ToolCall

BFCL_VERSION = "2026.3.23"
CATEGORIES = ("base", "miss_func", "miss_param", "long_context")

_INSTALL_HINT = (
    f"bfcl-eval is not installed; run `pip install --no-deps bfcl-eval=={BFCL_VERSION}` "
    "(or `make setup`, which does it)"
)


def bfcl_project_root() -> Path:
    """Where `bfcl_eval` may write (its import creates result/, score/ and .file_locks/)."""
    configured = os.environ.get("BFCL_PROJECT_ROOT")
    if configured:
        return Path(configured)
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "tooluse-gym" / "bfcl"


def _import(module: str) -> ModuleType:
    if "BFCL_PROJECT_ROOT" not in os.environ:
        root = bfcl_project_root()
        root.mkdir(parents=True, exist_ok=True)
        os.environ["BFCL_PROJECT_ROOT"] = str(root)
    try:
        loaded = importlib.import_module(module)
    except ModuleNotFoundError as e:
        if e.name and e.name.split(".")[0] == "bfcl_eval":
            raise DependencyNotInstalled(_INSTALL_HINT) from e
        raise
    bfcl_data.redirect(loaded)  # a TOOLUSE_BFCL_DATA copy of the data, when one is named
    return loaded


def bfcl_version() -> str:
    """The installed bfcl-eval version (recorded on every protocol card)."""
    try:
        return metadata.version("bfcl-eval")
    except metadata.PackageNotFoundError as e:
        raise DependencyNotInstalled(_INSTALL_HINT) from e


@lru_cache(maxsize=1)
def backend_classes() -> dict[str, type]:
    """The eight multi-turn simulator classes, by the names BFCL data uses."""
    config = _import("bfcl_eval.constants.executable_backend_config")
    names = (
        "GorillaFileSystem",
        "MathAPI",
        "MessageAPI",
        "TwitterAPI",
        "TicketAPI",
        "TradingBot",
        "TravelAPI",
        "VehicleControlAPI",
    )
    return {name: getattr(_import(config.CLASS_FILE_PATH_MAPPING[name]), name) for name in names}


@lru_cache(maxsize=1)
def function_docs() -> dict[str, tuple[Mapping[str, Any], ...]]:
    """The published function docs of each simulator class (BFCL format), from bfcl_eval's doc files."""
    config = _import("bfcl_eval.constants.executable_backend_config")
    folder = Path(_import("bfcl_eval.constants.eval_config").MULTI_TURN_FUNC_DOC_PATH)
    docs = {}
    for name in backend_classes():
        with open(folder / config.MULTI_TURN_FUNC_DOC_FILE_MAPPING[name], encoding="utf-8") as f:
            docs[name] = tuple(json.loads(line) for line in f if line.strip())
    return docs


@lru_cache(maxsize=1)
def stateless_backends() -> frozenset[str]:
    """Backends with no state to load (BFCL skips their `_load_scenario`)."""
    return frozenset(_import("bfcl_eval.constants.executable_backend_config").STATELESS_CLASSES)


def normalize_category(category: str) -> str:
    """``base`` / ``multi_turn_base`` -> ``base``; raises on anything else."""
    short = category.removeprefix("multi_turn_")
    if short not in CATEGORIES:
        raise ValueError(f"unknown BFCL category {category!r}; expected one of {', '.join(CATEGORIES)} or 'all'")
    return short


def load_bfcl_tasks(category: str = "all", task_ids: Sequence[str] | None = None) -> list[Task]:
    """Load BFCL multi-turn tasks (800 for ``all``), optionally only the given ids, in data order."""
    cats = CATEGORIES if category == "all" else (normalize_category(category),)
    tasks = [t for c in cats for t in _load_category(c)]
    return tasks if task_ids is None else select_tasks(tasks, task_ids=task_ids)


@cache
def _load_category(category: str) -> tuple[Task, ...]:
    utils = _import("bfcl_eval.utils")
    full = f"multi_turn_{category}"
    entries = utils.load_dataset_entry(full, include_language_specific_hint=True)
    truths = {g["id"]: g["ground_truth"] for g in utils.load_ground_truth_entry(full)}
    tasks = []
    for entry in entries:
        if entry["id"] not in truths:
            raise TaskLoadError(f"{full}: no ground truth for {entry['id']}")
        tasks.append(_to_task(entry, truths[entry["id"]], category))
    return tuple(tasks)


def _keyword_call(call: ToolCall, classes: list[type]) -> ToolCall:
    """Bind positional ground-truth arguments to parameter names (160 BFCL calls use them)."""
    if not call.positional:
        return call
    owner = next((c for c in classes if callable(getattr(c, call.name, None))), None)
    if owner is None:
        raise ValueError(f"no involved class defines {call.name}")
    return ToolCall(name=call.name, arguments=call_arguments(owner, call))


_DOC_POOL: dict[str, Mapping[str, Any]] = {}


def _shared_docs(docs: Sequence[Mapping[str, Any]]) -> tuple[Mapping[str, Any], ...]:
    """The docs (loaded from JSON), each replaced by the one object every task with an identical doc shares.

    For data loaded from JSON, the same JSON text means the same keys in the same order and
    values of the same types, so nothing that reads a doc can tell the shared one from the
    task's own; the tasks then share what is derived from a doc (its rendering, its validator,
    its tool schema). Docs are never mutated.
    """
    out = []
    for doc in docs:
        try:
            key = json.dumps(doc)
        except (TypeError, ValueError):
            out.append(doc)
            continue
        out.append(_DOC_POOL.setdefault(key, doc))
    return tuple(out)


def _to_task(entry: dict[str, Any], truth: list[list[str]], category: str) -> Task:
    task_id = entry["id"]
    classes = [backend_classes()[name] for name in entry["involved_classes"]]
    try:
        ground_truth = tuple(tuple(_keyword_call(parse_call_string(c), classes) for c in turn) for turn in truth)
    except (ValueError, TypeError) as e:
        raise TaskLoadError(f"{task_id}: bad ground-truth call: {e}") from e
    turns = []
    for i, messages in enumerate(entry["question"]):
        for m in messages:
            if m.get("role") != "user" or not isinstance(m.get("content"), str):
                raise TaskLoadError(f"{task_id} turn {i}: expected user messages, got {m!r:.80}")
        turns.append(tuple({"role": "user", "content": m["content"]} for m in messages))
    held_out = {int(t): _shared_docs(docs) for t, docs in entry.get("missed_function", {}).items()}
    return Task(
        task_id=task_id,
        category=category,
        turns=tuple(turns),
        ground_truth=ground_truth,
        functions=_shared_docs(entry["function"]),
        backends=tuple(entry["involved_classes"]),
        initial_config=entry["initial_config"],
        held_out=held_out,
        excluded_functions=tuple(entry.get("excluded_function", ())),
        long_context="long_context" in task_id or "composite" in task_id,
        source="bfcl",
    )


# Long-context TravelAPI merges these module-level dicts into its state by reference.
_SHARED_AFTER_LOAD = {"TravelAPI": ("credit_card_list", "booking_record")}


def isolate_instance(backend: str, instance: Any, long_context: bool) -> None:
    """Deep-copy state that a freshly loaded simulator shares with its module.

    The shared state is JSON-like data with no object in it twice (tests/tooluse_gym/tools/test_fast_paths.py
    checks this), for which `copy_state` makes the same copy as `copy.deepcopy`, faster.
    """
    if long_context:
        for attr in _SHARED_AFTER_LOAD.get(backend, ()):
            setattr(instance, attr, copy_state(getattr(instance, attr)))


_PRECISION_LIMIT = 1000
_EXPONENT_LIMIT = 10_000


def argument_guard(backend: str, name: str, kwargs: Mapping[str, Any]) -> str | None:
    """Refuse argument values that make a BFCL simulator run for minutes or exhaust memory.

    ``MathAPI.power`` computes ``base ** exponent`` exactly for integers, and
    ``square_root`` / ``logarithm`` set a global precision from their argument. Values far
    beyond any task's need are refused instead of being run.
    """
    if backend != "MathAPI":
        return None
    if name == "power":
        base, exponent = kwargs.get("base"), kwargs.get("exponent")
        if type(base) is int and type(exponent) is int and abs(exponent) > _EXPONENT_LIMIT and abs(base) > 1:
            return f"integer exponent above {_EXPONENT_LIMIT} is not supported"
    if name in ("square_root", "logarithm"):
        precision = kwargs.get("precision")
        if isinstance(precision, (int, float)) and precision > _PRECISION_LIMIT:
            return f"precision above {_PRECISION_LIMIT} is not supported"
    return None


# TicketAPI's docs type `ticket_id` as an integer, but task data (e.g. long_context_173)
# holds string ids such as 'ticket_001', and its ground truth passes them as strings.
_RELAXED_PARAMETERS = {
    ("close_ticket", "ticket_id"),
    ("edit_ticket", "ticket_id"),
    ("get_ticket", "ticket_id"),
    ("resolve_ticket", "ticket_id"),
}


def _relax(doc: Mapping[str, Any]) -> Mapping[str, Any]:
    relaxed = [p for (fn, p) in _RELAXED_PARAMETERS if fn == doc["name"]]
    if not relaxed:
        return doc
    doc = copy.deepcopy(dict(doc))
    for param in relaxed:
        spec = doc["parameters"]["properties"].get(param)
        if spec is not None:
            spec["type"] = "any"
    return doc


_RELAXED_DOCS = DocCache(_relax)


def validation_doc(doc: Mapping[str, Any]) -> Mapping[str, Any]:
    """The doc to validate arguments against: BFCL's, with the types its own data contradicts widened."""
    return _RELAXED_DOCS.get(doc)


HOOKS = BackendHooks(isolate=isolate_instance, guard=argument_guard, validation_doc=validation_doc, snapshots=True)
"""What the BFCL simulators need from the runtime (see `BackendHooks`)."""


def system_prompt_template(call_format: str | None = None) -> str:
    """BFCL's default prompting-mode system prompt, with ``{functions}`` where the tool list goes.

    Composed at run time from bfcl_eval's own template pieces, exactly as its
    ``formulate_system_prompt`` does for the default config (plaintext, classic style,
    JSON function docs). `call_format` replaces BFCL's Python call-format example, for
    protocols that ask for another call syntax; None keeps BFCL's.
    """
    prompts = _import("bfcl_eval.constants.default_prompts")
    style = prompts.PROMPT_STYLE_TEMPLATES["classic"]
    tool_call = style["tool_call_no_tag"].format(
        output_format=call_format or prompts.OUTPUT_FORMAT_MAPPING["python"],
        param_types=prompts.PARAM_TYPE_MAPPING["python"],
    )
    available = style["available_tools"].format(format="json", functions="{functions}")
    return prompts.PROMPT_TEMPLATE_MAPPING["plaintext"].format(
        persona=style["persona"],
        task=style["task"],
        tool_call_format=tool_call,
        multiturn_behavior=style["multiturn_behavior"],
        available_tools=available,
    )


def format_functions(functions: Sequence[Mapping[str, Any]]) -> str:
    """The function list as BFCL puts it into its system prompt: ``json.dumps(docs, indent=4)``.

    The same text, built from each doc's own rendering, made once per doc object: a list
    item's lines are the doc's lines indented one level (JSON strings hold no raw newline).
    """
    docs = list(functions)
    if not docs:
        return "[]"
    parts = []
    for doc in docs:
        hit = _RENDERED.get(id(doc))
        if hit is None or hit[0] is not doc:
            if type(doc) is not dict:
                return json.dumps(docs, indent=4)
            hit = _render_doc(doc)
        parts.append(hit[1])
    return "[\n    " + ",\n    ".join(parts) + "\n]"


_RENDERED: dict[int, tuple[Mapping[str, Any], str]] = {}


def _render_doc(doc: Mapping[str, Any]) -> tuple[Mapping[str, Any], str]:
    if len(_RENDERED) >= 65536:
        _RENDERED.clear()
    hit = _RENDERED[id(doc)] = (doc, json.dumps(doc, indent=4).replace("\n", "\n    "))  # `doc` keeps its id
    return hit


def holdout_notice_template(prompting: bool) -> str:
    """The message BFCL sends when held-out functions are added, with ``{functions}`` for their docs.

    Function-calling mode sends a fixed sentence (the tools field carries the new functions);
    prompting mode prepends the docs' Python repr to it.
    """
    prompts = _import("bfcl_eval.constants.default_prompts")
    if prompting:
        return prompts.DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_PROMPTING
    return prompts.DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC
