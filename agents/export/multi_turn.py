"""A run's BFCL multi-turn episodes as BFCL result files, scored by BFCL's own `bfcl evaluate`.

`export_bfcl(run, out)` reads ``RUN/episodes.jsonl`` and writes one BFCL project root per seed (BFCL
scores one line per task id, so two seeds cannot share a file). A run of single-turn entries is
written by `tooluse_agents.export.single_turn` (its layout and model names)::

    OUT/seed_<seed>/result/<model dir>/multi_turn/BFCL_v4_multi_turn_<category>_result.json
    OUT/export.json    what was written, the self-check, the commands

Each file holds one JSON line per episode, ``{"id": task_id, "result": turns}``, as `bfcl generate`
writes them: per user turn played (miss_func's held-out-function turn included), every assistant
message the env received, in order, the turn-ending one and those that failed to decode included.
An episode force-quit after 20 executing steps in a turn before the last has only the turns up to
that one (BFCL: ``multi_turn:force_terminated``, as the env). An agent error is written as BFCL
writes a failed inference, ``"Error during inference: ..."`` (``multi_turn:inference_error``:
invalid, like its reward of 0). Token counts and latencies are left out.

`bfcl evaluate` scores only names in its ``MODEL_CONFIG_MAPPING`` and decodes every step with that
name's ``handler.decode_execute``. The step encodings and the names written under:

* ``python`` text, ``[f(a=1)]``: the text after the last ``</think>``, as BFCL's Qwen handler
  stores it. ``Qwen/Qwen3-8B``: ``QwenHandler``, prompting, ``default_decode_execute_prompting``.
* ``json`` text, ``<tool_call>`` blocks: the same text. ``Qwen/Qwen3-8B-FC``: ``QwenFCHandler``.
* structured ``tool_calls`` (FC): ``[{name: arguments_json}]``, one dict per call, as BFCL's OpenAI
  handlers store them; a message without structured calls is its text. ``gpt-4o-2024-11-20-FC``:
  ``OpenAIResponsesHandler`` in FC mode, ``convert_to_function_call``. Its constructor wants
  ``OPENAI_API_KEY`` set (never used to score): the printed command sets a placeholder.

Why these: their decoders are the three `tooluse_gym.decoding.bfcl` reproduces (the env's
``decoder="bfcl"``), so BFCL reads each message as the env did; their constructors contact
nothing (the Qwen ones build a client for a local server that is never called); no name holds
``_``, which BFCL maps back to ``/``. BFCL's tables label the results with the proxy's name
("Qwen3-8B (Prompt)"). A run is ``fc`` when a step carried structured calls (the record keeps their
ids) or its ``run.json`` says ``text_replies: fc`` (`tooluse eval run --text-replies fc`), else its
protocol's ``tool_format``.

BFCL's verdicts equal episodes.jsonl's under the BFCL env id's rules (``decoder`` bfcl,
``strict_tools`` and ``validate_args`` off, 20 steps per turn, terminal reward); other runs are
exported with a warning. The self-check decodes every written step again with the eval-free copy
of the target's decoder (`tooluse_gym.decoding.bfcl`, which the parity tests compare with
bfcl_eval's) and lists each step whose calls differ from those the env executed: a lenient run's,
or text replies of a function-calling run without ``--text-replies fc`` that the env parsed as
calls. bfcl_eval's prompting decoder is not run here: it evaluates arithmetic in model text with
``eval`` (`bfcl evaluate`, a separate process, does). Scenario episodes, and ids BFCL lacks, are
skipped and counted.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path

from tooluse_agents.export.base import (
    TARGETS,
    Payload,
    StepMismatch,
    Target,
    check_steps,
    decode_payload,
    encoding_of,
    failed_inference,
    failed_inference_text,
    step_mismatch,
    step_payload,
)
from tooluse_agents.export.folders import ExportError
from tooluse_agents.runs.records import EpisodeRecord
from tooluse_gym.checking.multi_turn import FORCE_TERMINATED
from tooluse_gym.envs import SCENARIO_ID
from tooluse_gym.protocol import MAX_STEPS_PER_TURN
from tooluse_gym.tasks import bfcl

__all__ = ["FORMAT", "bfcl_result", "decode_payload", "is_bfcl_episode", "step_mismatch"]

_BFCL_ID = re.compile(rf"multi_turn_(?P<category>{'|'.join(bfcl.CATEGORIES)})_(?P<index>\d+)")


def bfcl_result(record: EpisodeRecord, encoding: str) -> list[list[Payload]] | str:
    """The ``result`` of an episode's line: turns of step payloads, or BFCL's failed-inference string.

    An episode without a checker verdict (an agent error, or a run cut short) is a failed
    inference: reward 0 here, ``multi_turn:inference_error`` in BFCL.
    """
    if failed_inference(record):
        return failed_inference_text(record)
    return [[step_payload(step, encoding) for step in turn.steps] for turn in record.turns]


def is_bfcl_episode(record: EpisodeRecord) -> bool:
    """Whether an episode plays a BFCL multi-turn task (not a scenario, not an id BFCL lacks)."""
    return record.protocol.get("env_id") != SCENARIO_ID and _BFCL_ID.fullmatch(record.task_id) is not None


# --- self-check ----------------------------------------------------------------------------


# --- checks on the run -------------------------------------------------------------------


def _task_key(task_id: str) -> tuple[str, int]:
    """A BFCL id's category and index."""
    match = _BFCL_ID.fullmatch(task_id)
    assert match is not None  # only BFCL episodes get here
    return match["category"], int(match["index"])


def _check_episodes(records: Sequence[EpisodeRecord]) -> list[str]:
    """Refuse what BFCL cannot align (duplicates, unknown ids); warn on turn counts BFCL would read otherwise."""
    seen: set[tuple[str, int]] = set()
    for r in records:
        if (r.task_id, r.seed) in seen:
            raise ExportError(f"{r.task_id} seed {r.seed} appears twice in episodes.jsonl; BFCL scores one line per id")
        seen.add((r.task_id, r.seed))
    turns: dict[str, int] = {}
    for category in sorted({_task_key(r.task_id)[0] for r in records}):
        turns.update((t.task_id, t.num_turns) for t in bfcl.load_bfcl_tasks(category))
    warnings = []
    for r in records:
        if r.task_id not in turns:
            raise ExportError(f"{r.task_id} is not a task of the installed bfcl-eval {bfcl.bfcl_version()}")
        played, total = len(r.turns), turns[r.task_id]
        cut_short = (r.checker or {}).get("error_type") == FORCE_TERMINATED
        if not failed_inference(r) and (played > total or (played < total) != cut_short):
            warnings.append(
                f"{r.task_id} seed {r.seed}: {played} turns written for a task of {total}"
                f"{' (force-terminated)' if cut_short else ''}; BFCL will judge the turn count its own way"
            )
    return warnings


def _protocol_warnings(records: Iterable[EpisodeRecord]) -> list[str]:
    """Where the runs' rules differ from BFCL's (a card that lacks a field has the card's default)."""
    found: dict[str, str] = {}
    installed = bfcl.bfcl_version()
    for p in (r.protocol for r in records):
        decoder = p.get("decoder", "lenient")
        if decoder != "bfcl":
            found["decoder"] = (
                f"the run decoded messages with decoder={decoder!r}, not 'bfcl': BFCL decodes them its own way, "
                "so its verdicts may differ from episodes.jsonl (the self-check lists the steps that differ)"
            )
        if p.get("strict_tools", False):
            found["strict_tools"] = "the run refused calls to functions not offered yet (strict_tools); BFCL runs them"
        if p.get("validate_args", True):
            found["validate_args"] = "the run refused calls with invalid arguments (validate_args); BFCL runs them"
        steps = p.get("max_steps_per_turn", MAX_STEPS_PER_TURN)
        if steps != MAX_STEPS_PER_TURN:
            found["steps"] = f"the run allowed {steps} steps per turn; BFCL force-quits after {MAX_STEPS_PER_TURN}"
        if p.get("reward", "terminal") != "terminal":
            found["reward"] = f"the run's reward is {p.get('reward')!r}, not BFCL's verdict"
        if p.get("bfcl_version") and p["bfcl_version"] != installed:
            found["version"] = f"the run used bfcl-eval {p['bfcl_version']}; BFCL here is {installed}"
    return list(found.values())


def _write_root(root: Path, target: Target, records: Sequence[EpisodeRecord]) -> tuple[str, ...]:
    """One project root's result files; returns BFCL's test categories in it, in BFCL's order."""
    by_category: dict[str, list[EpisodeRecord]] = defaultdict(list)
    for record in sorted(records, key=lambda r: _task_key(r.task_id)[1]):
        by_category[_task_key(record.task_id)[0]].append(record)
    folder = root / "result" / target.directory / "multi_turn"
    folder.mkdir(parents=True, exist_ok=True)
    categories = [c for c in bfcl.CATEGORIES if c in by_category]
    for category in categories:
        # ASCII JSON (json.dumps' default): BFCL opens the files in the locale's encoding
        lines = [
            json.dumps({"id": r.task_id, "result": bfcl_result(r, target.encoding)}) for r in by_category[category]
        ]
        (folder / f"BFCL_v4_multi_turn_{category}_result.json").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return tuple(f"multi_turn_{c}" for c in categories)


class _MultiTurn:
    """The multi-turn `ExportFormat`."""

    name = "multi-turn"

    def claims(self, records: Sequence[EpisodeRecord]) -> bool:
        return any(is_bfcl_episode(r) for r in records)

    def select(self, records: Sequence[EpisodeRecord]) -> list[EpisodeRecord]:
        return [r for r in records if is_bfcl_episode(r)]

    def plan(self, episodes: Sequence[EpisodeRecord], fc_run: bool) -> tuple[Target, list[str]]:
        warnings = _protocol_warnings(episodes) + _check_episodes(episodes)
        return TARGETS["fc" if fc_run else encoding_of(episodes)], warnings

    def write_root(self, root: Path, target: Target, records: Sequence[EpisodeRecord]) -> tuple[str, ...]:
        return _write_root(root, target, records)

    def self_check(self, records: Sequence[EpisodeRecord], encoding: str) -> tuple[int, list[StepMismatch]]:
        return check_steps(records, encoding)


FORMAT = _MultiTurn()
"""BFCL multi-turn result files (`tooluse_agents.export.pipeline.export_bfcl` picks it by the run's episodes)."""
