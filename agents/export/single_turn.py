"""A run's BFCL single-turn episodes as BFCL result files, scored by BFCL's own `bfcl evaluate`.

`FORMAT` is how `tooluse_agents.export.pipeline.export_bfcl` writes a run of
``ToolUse-SingleTurn-v0``: one BFCL project root per seed, as for multi-turn runs, with the
layout `bfcl generate` writes for single-turn categories::

    OUT/seed_<seed>/result/<model dir>/non_live/BFCL_v4_<category>_result.json   simple_python ... irrelevance
    OUT/seed_<seed>/result/<model dir>/live/BFCL_v4_<category>_result.json       live_simple ... live_relevance
    OUT/export.json

One JSON line per episode, ``{"id": entry_id, "result": response}``, in BFCL's data order, where
the response is what BFCL's handler stores for one single-turn answer and then hands to its
``decode_ast``:

* ``python`` and ``json`` text: the message after its last ``</think>`` (as the multi-turn export);
* structured calls (function calling): ``[{name: arguments_json}]``, one dict per call, the
  arguments as the record shows them (a JSON object decodes to the same object); a call whose
  parameters were JSON but not an object (the record keeps no raw value) is written ``"null"``,
  which BFCL reads as it read the original: not function-calling output. A message without
  structured calls is its text, as BFCL's FC handlers store a text reply (decoding it fails
  unless it is empty, as in the env); one whose structured calls the env could not decode
  (arguments that are not JSON) and without text is written ``"Undecodable function calls:
  <the env's decoding error>"``: the record keeps no raw arguments, and BFCL fails to decode
  that text as the env failed on the calls (written empty, BFCL would read no call);
* an agent error: BFCL's failed inference, ``"Error during inference: ..."``.

The registered name depends on the step encoding and on how function names were expected:
BFCL's checker converts dotted names to underscores only for names whose config says
``underscore_to_dot``, and the env expects underscores exactly when the tools travel in the
``tools`` field (the system prompt does not carry them). Python text and ``<tool_call>`` text
are written under ``Qwen/Qwen3-8B`` and ``Qwen/Qwen3-8B-FC`` (dots kept); structured calls under
``gpt-4o-2024-11-20-FC`` (underscores) or ``qwen3-235b-a22b-instruct-2507-FC`` (dots, an
OpenAI-compatible handler whose constructor wants ``QWEN_API_KEY``: a placeholder is set, never
used). No registered prompting name expects underscores: a text run whose tools were not in its
prompt is exported with a warning that counts the entries with dotted function names.

Where BFCL's verdict may differ, the export says so: BFCL scores a failed inference on an
irrelevance entry as a correct abstention (its decoder finds no call in the error text), where
the run scored the episode 0; the self-check decodes each written response again with the
eval-free copy of the target's decoder (`tooluse_gym.decoding.bfcl_ast`) and lists the
entries whose calls differ from those the env decoded (text replies of a function-calling run
without ``--text-replies fc``, which the env read in its tool format).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from tooluse_agents.export.base import (
    TARGETS,
    StepMismatch,
    Target,
    encoding_of,
    failed_inference,
    failed_inference_text,
    is_structured,
)
from tooluse_agents.export.folders import ExportError
from tooluse_agents.runs.records import EpisodeRecord, StepEntry
from tooluse_gym.checking import languages
from tooluse_gym.decoding.base import NOT_AN_OBJECT
from tooluse_gym.decoding.bfcl_ast import decode_ast_action
from tooluse_gym.decoding.text import visible_response
from tooluse_gym.envs import SINGLE_TURN_ID
from tooluse_gym.prompts import system_prompt_spec
from tooluse_gym.tasks import bfcl
from tooluse_gym.tasks.bfcl_single_turn import CATEGORIES, LIVE, load_single_turn_tasks

__all__ = [
    "FORMAT",
    "SINGLE_TURN_TARGETS",
    "UNDECODABLE",
    "expects_underscores",
    "is_single_turn_episode",
    "result_folder",
    "single_turn_result",
]

Response = str | list[dict[str, str]]
"""One single-turn answer as a result file holds it: text, or ``[{name: arguments_json}]``."""

SINGLE_TURN_TARGETS: Mapping[tuple[str, bool], Target] = {
    ("python", False): TARGETS["python"],
    ("json", False): TARGETS["json"],
    ("fc", True): TARGETS["fc"],
    ("fc", False): Target(
        "fc",
        "structured tool calls as {name: arguments_json}",
        "qwen3-235b-a22b-instruct-2507-FC",
        "QwenAPIHandler, function calling: OpenAICompletionsHandler.decode_ast, dotted names",
        (("QWEN_API_KEY", "unused"),),
    ),
}
"""The registered name for each (step encoding, function names expected with underscores)."""

_NOT_DECODED = "<not decodable>"
UNDECODABLE = "Undecodable function calls: "
"""How a function-calling response the env could not decode, and without text, is written (module docstring)."""


def is_single_turn_episode(record: EpisodeRecord) -> bool:
    """Whether an episode plays a BFCL single-turn entry."""
    return record.protocol.get("env_id") == SINGLE_TURN_ID and record.category in CATEGORIES


def result_folder(category: str) -> str:
    """BFCL's folder for a single-turn category's result and score files: ``live`` or ``non_live``."""
    return "live" if category in LIVE else "non_live"


def expects_underscores(protocol: Mapping[str, Any]) -> bool:
    """Whether a run's env expected dotted names with underscores: its system prompt did not carry the tools."""
    try:
        spec = system_prompt_spec(
            str(protocol.get("system_prompt", "bfcl")), str(protocol.get("tool_format", "python"))
        )
    except ValueError:
        return True
    return not spec.carries_tools


def _structured_call(call: Mapping[str, Any]) -> dict[str, str]:
    arguments = "null" if call.get("error") == NOT_AN_OBJECT else json.dumps(dict(call.get("arguments") or {}))
    return {str(call.get("name", "")): arguments}


def single_turn_result(record: EpisodeRecord, encoding: str) -> Response:
    """The ``result`` of an episode's line (module docstring): text, structured calls, or a failed inference."""
    if failed_inference(record) or not record.steps:
        return failed_inference_text(record)
    step = record.steps[0]
    if encoding == "fc" and is_structured(step):
        return [_structured_call(call) for call in step.calls]
    text = visible_response(step.assistant)
    if encoding == "fc" and step.parse_failure and not text:  # BFCL would decode "" as no call
        return f"{UNDECODABLE}{step.parse_failure}"
    return text


# --- self-check ----------------------------------------------------------------------------


def _rendered(calls: Iterable[Mapping[str, Any]]) -> tuple[str, ...]:
    out = []
    for call in calls:
        if call.get("error") == NOT_AN_OBJECT:
            out.append(f"{call.get('name')}(<{NOT_AN_OBJECT}>)")
        else:
            arguments = dict(call.get("arguments") or {})
            out.append(f"{call.get('name')}({', '.join(f'{k}={v!r}' for k, v in arguments.items())})")
    return tuple(out)


def decode_response(response: Response, encoding: str, category: str) -> tuple[str, ...]:
    """The calls the target handler's ``decode_ast`` makes of a written response (``<not decodable>`` when it fails)."""
    if isinstance(response, list):
        raw = [
            {"function": {"name": name, "arguments": arguments}}
            for item in response
            for name, arguments in item.items()
        ]
        action: Any = {"content": "", "tool_calls": raw}
    elif encoding == "fc":
        action = {"content": response, "tool_calls": None}  # BFCL's FC handler stored the text
    else:
        action = response
    tool_format = "json" if encoding == "json" else "python"
    parsed = decode_ast_action(action, tool_format, languages.language_of(category)).parsed()
    if parsed.failure:
        return (_NOT_DECODED,)
    return _rendered(c.to_dict() for c in parsed.calls)


def _decoded_by_env(step: StepEntry) -> tuple[str, ...]:
    return (_NOT_DECODED,) if step.parse_failure else _rendered(step.calls)


def _self_check(records: Sequence[EpisodeRecord], encoding: str) -> tuple[int, list[StepMismatch]]:
    checked, mismatches = 0, []
    for r in records:
        if failed_inference(r) or not r.steps:
            continue
        checked += 1
        executed = _decoded_by_env(r.steps[0])
        decoded = decode_response(single_turn_result(r, encoding), encoding, r.category)
        if executed != decoded:
            mismatches.append(StepMismatch(r.task_id, r.seed, 0, 0, executed, decoded))
    return checked, mismatches


# --- checks and writing ----------------------------------------------------------------------


def _tasks(records: Sequence[EpisodeRecord]) -> dict[str, Any]:
    """The BFCL entries the episodes play, by id (refusing ids BFCL lacks and duplicate episodes)."""
    seen: set[tuple[str, int]] = set()
    for r in records:
        if (r.task_id, r.seed) in seen:
            raise ExportError(f"{r.task_id} seed {r.seed} appears twice in episodes.jsonl; BFCL scores one line per id")
        seen.add((r.task_id, r.seed))
    tasks = {t.task_id: t for c in sorted({r.category for r in records}) for t in load_single_turn_tasks(c)}
    for r in records:
        if r.task_id not in tasks:
            raise ExportError(
                f"{r.task_id} is not a {r.category} entry of the installed bfcl-eval {bfcl.bfcl_version()}"
            )
    return tasks


def _warnings(
    records: Sequence[EpisodeRecord], tasks: Mapping[str, Any], target: Target, underscores: bool
) -> list[str]:
    found = []
    versions = sorted({str(r.protocol["bfcl_version"]) for r in records if r.protocol.get("bfcl_version")})
    installed = bfcl.bfcl_version()
    if versions and versions != [installed]:
        found.append(f"the run used bfcl-eval {', '.join(versions)}; BFCL here is {installed}")
    if underscores and target.encoding != "fc":
        dotted = sum(any("." in str(d.get("name", "")) for d in tasks[r.task_id].functions) for r in records)
        if dotted:
            found.append(
                f"the run offered its tools in the `tools` field, so the env expected dotted function names with "
                f"underscores; {target.model} expects the dots: BFCL may fail {dotted} entries with dotted names"
            )
    lenient = sum(r.protocol.get("decoder", "bfcl") != "bfcl" for r in records)
    if lenient:
        found.append(
            f"{lenient} episodes were decoded with decoder='lenient', not 'bfcl': BFCL decodes their messages its own "
            "way (positional arguments dropped, prose and fences not read), so its verdicts may differ from "
            "episodes.jsonl (the self-check lists the entries whose calls differ)"
        )
    aborted = [r for r in records if failed_inference(r) and "irrelevance" in r.category]
    if aborted:
        found.append(
            f"{len(aborted)} irrelevance entries ended in an agent error (reward 0 here): BFCL scores a failed "
            "inference there as a correct abstention (its decoder finds no call in the error text)"
        )
    return found


def _order(task_id: str) -> tuple[int, str]:
    """BFCL's order within a category: the entry's index (``live_simple_12-3-4``: 12)."""
    index = task_id.rsplit("_", 1)[-1].split("-", 1)[0]
    return (int(index) if index.isdigit() else 0, task_id)


def _write_root(root: Path, target: Target, records: Sequence[EpisodeRecord]) -> tuple[str, ...]:
    """One project root's result files; returns BFCL's test categories in it, in BFCL's order."""
    by_category: dict[str, list[EpisodeRecord]] = defaultdict(list)
    for record in sorted(records, key=lambda r: _order(r.task_id)):
        by_category[record.category].append(record)
    categories = [c for c in CATEGORIES if c in by_category]
    for category in categories:
        folder = root / "result" / target.directory / result_folder(category)
        folder.mkdir(parents=True, exist_ok=True)
        lines = [
            json.dumps({"id": r.task_id, "result": single_turn_result(r, target.encoding)})
            for r in by_category[category]
        ]
        (folder / f"BFCL_v4_{category}_result.json").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return tuple(categories)


class _SingleTurn:
    """The single-turn `ExportFormat`."""

    name = "single-turn"

    def claims(self, records: Sequence[EpisodeRecord]) -> bool:
        return any(r.protocol.get("env_id") == SINGLE_TURN_ID for r in records)

    def select(self, records: Sequence[EpisodeRecord]) -> list[EpisodeRecord]:
        return [r for r in records if is_single_turn_episode(r)]

    def plan(self, episodes: Sequence[EpisodeRecord], fc_run: bool) -> tuple[Target, list[str]]:
        underscores = {expects_underscores(r.protocol) for r in episodes}
        if len(underscores) > 1:
            raise ExportError("the episodes mix system prompts with and without the tools: export each run on its own")
        tasks = _tasks(episodes)
        encoding = "fc" if fc_run else encoding_of(episodes)
        underscore = underscores.pop()
        target = SINGLE_TURN_TARGETS.get((encoding, underscore)) or SINGLE_TURN_TARGETS[(encoding, False)]
        return target, _warnings(episodes, tasks, target, underscore)

    def write_root(self, root: Path, target: Target, records: Sequence[EpisodeRecord]) -> tuple[str, ...]:
        return _write_root(root, target, records)

    def self_check(self, records: Sequence[EpisodeRecord], encoding: str) -> tuple[int, list[StepMismatch]]:
        return _self_check(records, encoding)


FORMAT = _SingleTurn()
"""BFCL single-turn result files (`tooluse_agents.export.pipeline.export_bfcl` picks it by the run's episodes)."""
