"""A run's BFCL multi-turn episodes as BFCL result files, scored by BFCL's own `bfcl evaluate`.

`export_bfcl(run, out)` reads ``RUN/episodes.jsonl`` and writes one BFCL project root per seed (BFCL
scores one line per task id, so two seeds cannot share a file). A run of single-turn entries is
written by `tooluse_agents.bfcl_single_export` (its layout and model names)::

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
ids) or its ``run.json`` says ``text_replies: fc`` (`tooluse-eval run --text-replies fc`), else its
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
import os
import re
import shlex
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tooluse_agents.bfcl_evaluator import (
    BFCL_EVALUATOR_PACKAGES,
    evaluator_program,
    install_command,
    missing_evaluator_packages,
)
from tooluse_agents.export_folders import ExportError, prepare_out, read_run, run_setting
from tooluse_agents.runs.records import EpisodeRecord, StepEntry
from tooluse_gym.checking.multi_turn import FORCE_TERMINATED
from tooluse_gym.decoding.bfcl import decode_function_calls, decode_python, decode_tool_call_tags
from tooluse_gym.decoding.lenient import parse_call_string
from tooluse_gym.decoding.text import visible_response
from tooluse_gym.envs import SCENARIO_ID, SINGLE_TURN_ID
from tooluse_gym.protocol import MAX_STEPS_PER_TURN
from tooluse_gym.tasks import bfcl

__all__ = [
    "BFCL_EVALUATOR_PACKAGES",
    "EXPORT_FORMATS",
    "TARGETS",
    "BfclCommand",
    "BfclExport",
    "ExportError",
    "StepMismatch",
    "Target",
    "bfcl_result",
    "decode_payload",
    "encoding_of",
    "export_bfcl",
    "failed_inference",
    "failed_inference_text",
    "is_bfcl_episode",
    "is_structured",
    "step_mismatch",
    "step_payload",
]

EXPORT_FORMATS = ("bfcl",)
"""The formats `tooluse-eval export` writes."""

INFERENCE_ERROR = "Error during inference: "
"""How BFCL's generator begins the ``result`` of an entry whose inference failed."""

Payload = str | list[dict[str, str]]
"""One step as a result file holds it: text, or ``[{name: arguments_json}]``."""

_BFCL_ID = re.compile(rf"multi_turn_(?P<category>{'|'.join(bfcl.CATEGORIES)})_(?P<index>\d+)")
_SHOWN_MISMATCHES = 10


@dataclass(frozen=True)
class Target:
    """A registered BFCL model name whose handler decodes one step encoding.

    Attributes:
        encoding: ``python``, ``json`` or ``fc`` (module docstring).
        steps: The steps it holds, in words.
        model: The name in bfcl_eval's ``MODEL_CONFIG_MAPPING``.
        handler: The handler and decoder BFCL uses for it, in words.
        environment: Variables the handler's constructor needs (values never used).
    """

    encoding: str
    steps: str
    model: str
    handler: str
    environment: tuple[tuple[str, str], ...] = ()

    @property
    def directory(self) -> str:
        """The result folder's name: the model name with ``/`` as ``_``."""
        return self.model.replace("/", "_")


TARGETS: Mapping[str, Target] = {
    "python": Target("python", "Python call lists in text", "Qwen/Qwen3-8B", "QwenHandler: prompting decoder"),
    "json": Target("json", "<tool_call> blocks in text", "Qwen/Qwen3-8B-FC", "QwenFCHandler: <tool_call> blocks"),
    "fc": Target(
        "fc",
        "structured tool calls as {name: arguments_json}",
        "gpt-4o-2024-11-20-FC",
        "OpenAIResponsesHandler, function calling: convert_to_function_call",
        (("OPENAI_API_KEY", "unused"),),
    ),
}
"""The registered name for each step encoding."""


@dataclass(frozen=True)
class StepMismatch:
    """A written step that decodes to other calls than the env executed for it.

    Attributes:
        task_id, seed: The episode.
        turn, step: The user turn, and the step's position in it.
        executed: The calls the env executed.
        decoded: The calls BFCL's handler decodes from the written step (none: it drops the step).
    """

    task_id: str
    seed: int
    turn: int
    step: int
    executed: tuple[str, ...]
    decoded: tuple[str, ...]

    def describe(self) -> str:
        """One line for a report."""
        return (
            f"{self.task_id} seed {self.seed} turn {self.turn} step {self.step}: "
            f"the env executed {list(self.executed)}, BFCL decodes {list(self.decoded)}"
        )


@dataclass(frozen=True)
class BfclCommand:
    """The `bfcl evaluate` call that scores one project root.

    Attributes:
        root: The project root (``BFCL_PROJECT_ROOT``).
        target: The registered name the files are written under.
        categories: BFCL's test categories in the root (``multi_turn_base``, ...).
        program: How to start `bfcl` (`evaluator_program`: this environment's own, by its full path).
    """

    root: Path
    target: Target
    categories: tuple[str, ...]
    program: tuple[str, ...] = ("bfcl",)

    def argv(self) -> list[str]:
        """The command line: ``bfcl evaluate --model ... --test-category ... --partial-eval``."""
        flags = ["--model", self.target.model, "--test-category", ",".join(self.categories), "--partial-eval"]
        return [*self.program, "evaluate", *flags]

    def environment(self) -> dict[str, str]:
        """The variables to set: ``BFCL_PROJECT_ROOT`` and the handler's placeholders."""
        return {"BFCL_PROJECT_ROOT": str(self.root), **dict(self.target.environment)}

    def shell(self) -> str:
        """The command as one shell line, variables first."""
        assignments = " ".join(f"{k}={shlex.quote(v)}" for k, v in self.environment().items())
        return f"{assignments} {shlex.join(self.argv())}"

    def score_folder(self) -> Path:
        """Where `bfcl evaluate` writes the score files (``BFCL_v4_<category>_score.json``)."""
        return self.root / "score" / self.target.directory / "multi_turn"


@dataclass(frozen=True)
class BfclExport:
    """What `export_bfcl` wrote.

    Attributes:
        run, out: The run folder read and the folder written.
        target: The registered name and encoding of the steps.
        exported: BFCL episodes written.
        skipped_scenario: Episodes left out: scenario tasks, or other ids BFCL does not have.
        inference_errors: Episodes written as failed inferences (an agent error, or no verdict).
        corrupt_lines: Lines of episodes.jsonl that could not be read.
        steps_checked: Written steps the self-check decoded.
        mismatches: Steps that decode to other calls than the env executed.
        warnings: Why BFCL's verdicts may differ from the run's (its protocol, its turn counts).
        commands: One `bfcl evaluate` per seed.
        missing_packages: What `bfcl evaluate` needs that this environment cannot import.
    """

    run: Path
    out: Path
    target: Target
    exported: int
    skipped_scenario: int
    inference_errors: int
    corrupt_lines: int
    steps_checked: int
    mismatches: tuple[StepMismatch, ...]
    warnings: tuple[str, ...]
    commands: tuple[BfclCommand, ...]
    missing_packages: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The manifest written to ``OUT/export.json``."""
        return {
            "run": str(self.run),
            "format": "bfcl",
            "model": self.target.model,
            "encoding": self.target.encoding,
            "handler": self.target.handler,
            "exported": self.exported,
            "skipped_scenario": self.skipped_scenario,
            "inference_errors": self.inference_errors,
            "corrupt_lines": self.corrupt_lines,
            "self_check": {
                "steps_checked": self.steps_checked,
                "mismatches": [m.describe() for m in self.mismatches],
            },
            "warnings": list(self.warnings),
            "roots": {c.root.name: str(c.root) for c in self.commands},
            "commands": [c.shell() for c in self.commands],
            "missing_packages": list(self.missing_packages),
        }

    def report(self) -> str:
        """What `tooluse-eval export` prints: counts, the self-check, warnings and the commands."""
        seeds = ", ".join(c.root.name.removeprefix("seed_") for c in self.commands)
        skipped = f"; skipped {self.skipped_scenario} scenario episodes" if self.skipped_scenario else ""
        lines = [
            f"exported {self.exported} BFCL episodes (seeds {seeds}) to {self.out}{skipped}",
            f"steps written as {self.target.steps} under {self.target.model} ({self.target.handler})",
        ]
        if self.corrupt_lines:
            lines.append(f"WARNING: {self.corrupt_lines} unreadable lines of episodes.jsonl were skipped")
        if self.inference_errors:
            lines.append(
                f"{self.inference_errors} episodes ended in an agent error (no checker verdict): written as BFCL's "
                "failed inferences (invalid, as their reward of 0)"
            )
        if self.mismatches:
            lines.append(
                f"WARNING: self-check: {len(self.mismatches)} of {self.steps_checked} written steps decode to other "
                "calls than the env played, so BFCL's verdicts may differ:"
            )
            lines += [f"  {m.describe()}" for m in self.mismatches[:_SHOWN_MISMATCHES]]
            if len(self.mismatches) > _SHOWN_MISMATCHES:
                lines.append(f"  ... all {len(self.mismatches)} in {self.out / 'export.json'}")
        else:
            lines.append(f"self-check: all {self.steps_checked} written steps decode to the calls the env played")
        lines += [f"WARNING: {w}" for w in self.warnings]
        if self.missing_packages:
            lines.append(f"BFCL's evaluator needs packages missing here: {install_command(self.missing_packages)}")
        lines += [
            "score them with BFCL's own evaluator, one BFCL_PROJECT_ROOT per seed:",
            *(f"  {c.shell()}" for c in self.commands),
            f"scores: {self.out}/seed_*/score/{self.target.directory}/*/BFCL_v4_*_score.json",
        ]
        return "\n".join(lines)


# --- steps and episodes ------------------------------------------------------------------


def is_structured(step: StepEntry) -> bool:
    """Whether a step's calls came as structured ``tool_calls`` (only those carry an ``id`` in the record)."""
    return any("id" in call for call in step.calls)


def step_payload(step: StepEntry, encoding: str) -> Payload:
    """A step as a result file of `encoding` holds it (module docstring).

    Text is what follows the last ``</think>``; under ``fc`` a step with structured calls is
    ``[{name: arguments_json}]`` and any other step its text.
    """
    if encoding not in TARGETS:
        raise ValueError(f"encoding must be one of {', '.join(TARGETS)}, got {encoding!r}")
    if encoding == "fc" and is_structured(step):
        return [{str(call.get("name", "")): json.dumps(_fc_arguments(call))} for call in step.calls]
    return visible_response(step.assistant)


def _fc_string(name: str, arguments: Mapping[str, Any]) -> str:
    """The call string ``convert_to_function_call`` writes for these arguments."""
    return f"{name}({','.join(f'{k}={v!r}' for k, v in arguments.items())})"


def _fc_arguments(call: Mapping[str, Any]) -> dict[str, Any]:
    """A structured call's arguments as the model sent them.

    The record shows only plain literal arguments (``arguments`` may be empty for nested ones);
    under the bfcl decoder its ``source`` is the call string BFCL wrote from the sent arguments,
    so they are read back from it (literals only) when the shown ones do not reproduce it.
    """
    shown = call.get("arguments")
    arguments = dict(shown) if isinstance(shown, Mapping) else {}
    name, source = str(call.get("name", "")), call.get("source")
    if not isinstance(source, str) or _fc_string(name, arguments) == source:
        return arguments
    try:
        recovered = dict(parse_call_string(source).arguments)
    except ValueError:
        return arguments
    return recovered if _fc_string(name, recovered) == source else arguments


def failed_inference(record: EpisodeRecord) -> bool:
    """Whether BFCL sees an episode as a failed inference: it has no checker verdict (an agent error, or cut short)."""
    return record.error is not None or record.checker is None


def failed_inference_text(record: EpisodeRecord) -> str:
    """The ``result`` BFCL's generator writes for a failed inference, for an episode without a verdict."""
    if record.error is not None:
        kind = record.error.get("type") or "agent_error"
        return f"{INFERENCE_ERROR}{kind}: {record.error.get('message', '')}"
    return f"{INFERENCE_ERROR}the episode ended without a checker verdict"


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


def encoding_of(records: Sequence[EpisodeRecord]) -> str:
    """The step encoding of a run: ``fc`` when any step carried structured calls, else its ``tool_format``."""
    if any(is_structured(step) for record in records for step in record.steps):
        return "fc"
    formats = sorted({str(r.protocol.get("tool_format", "python")) for r in records})
    if len(formats) > 1:
        raise ExportError(f"the episodes mix tool formats {formats}: export each run on its own")
    encoding = formats[0] if formats else "python"
    if encoding not in ("python", "json"):
        raise ExportError(f"unknown tool_format {encoding!r} in the episodes' protocol")
    return encoding


# --- self-check ----------------------------------------------------------------------------


def decode_payload(payload: Payload, encoding: str) -> tuple[str, ...]:
    """The call strings the target handler's ``decode_execute`` makes of a written step (none: dropped).

    Uses the eval-free copies in `tooluse_gym.decoding.bfcl`, never bfcl_eval's own.
    """
    try:
        if encoding == "fc":
            return tuple(decode_function_calls(payload))
        if not isinstance(payload, str):
            return ()
        decode = decode_python if encoding == "python" else decode_tool_call_tags
        return tuple(decode(payload))
    except (ValueError, RecursionError):  # DecodeError: BFCL's decoder raises, the step is dropped
        return ()


def _executed(call: Mapping[str, Any], encoding: str) -> str:
    """A call the env executed: BFCL's own call string under the bfcl decoder, else written as the target's is."""
    if isinstance(call.get("source"), str):
        return str(call["source"])
    parts = [repr(v) for v in call.get("positional") or ()]
    parts += [f"{k}={v!r}" for k, v in dict(call.get("arguments") or {}).items()]
    return f"{call.get('name')}({(', ' if encoding == 'python' else ',').join(parts)})"


def step_mismatch(record: EpisodeRecord, turn: int, position: int, encoding: str) -> StepMismatch | None:
    """The mismatch of one written step, or None when it decodes to exactly the calls the env executed.

    Under the bfcl decoder the env executed BFCL's own call strings (``source``); a lenient run's
    calls (those without an ``error``: the others did not run) are written from their literal
    arguments, as the target's decoder writes plain ones.
    """
    step = record.turns[turn].steps[position]
    decoded = decode_payload(step_payload(step, encoding), encoding)
    executed = tuple(_executed(c, encoding) for c in step.calls if not c.get("error"))
    return None if executed == decoded else StepMismatch(record.task_id, record.seed, turn, position, executed, decoded)


def _self_check(records: Iterable[EpisodeRecord], encoding: str) -> tuple[int, list[StepMismatch]]:
    steps = [
        (r, t, s)
        for r in records
        if not failed_inference(r)
        for t, turn in enumerate(r.turns)
        for s in range(len(turn.steps))
    ]
    mismatches = [step_mismatch(r, t, s, encoding) for r, t, s in steps]
    return len(steps), [m for m in mismatches if m is not None]


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


def export_bfcl(run: str | os.PathLike[str], out: str | os.PathLike[str], *, force: bool = False) -> BfclExport:
    """Write a run's BFCL episodes as BFCL result files, one project root per seed (module docstring).

    Args:
        run: A run folder (``tooluse-eval run --out``): its ``episodes.jsonl`` is read.
        out: A new or empty folder; ``OUT/seed_<seed>`` becomes each seed's ``BFCL_PROJECT_ROOT``.
        force: Replace what `out` holds.

    Returns:
        What was written, the self-check and the `bfcl evaluate` commands (also in ``OUT/export.json``).

    Raises:
        ExportError: No run folder or episodes, no BFCL episode, duplicate or unknown task ids,
            or `out` not empty (without `force`) or holding the run.
    """
    run_path, out_path = Path(run), Path(out)
    records, corrupt = read_run(run_path)
    episodes = [r for r in records if is_bfcl_episode(r)]
    skipped = len(records) - len(episodes)
    if not episodes and any(r.protocol.get("env_id") == SINGLE_TURN_ID for r in records):
        from tooluse_agents.bfcl_single_export import export_single_turn  # here: it imports this module

        return export_single_turn(run_path, out_path, records, corrupt, force=force)
    if not episodes:
        raise ExportError(f"{run_path}: no BFCL multi-turn episodes to export ({skipped} other episodes skipped)")
    warnings = _protocol_warnings(episodes) + _check_episodes(episodes)
    fc_run = run_setting(run_path, "text_replies") == "fc"  # text replies were FC responses with no calls
    target = TARGETS["fc" if fc_run else encoding_of(episodes)]
    prepare_out(out_path, run_path, force)
    by_seed: dict[int, list[EpisodeRecord]] = defaultdict(list)
    for record in episodes:
        by_seed[record.seed].append(record)
    commands = []
    program = evaluator_program()
    for seed in sorted(by_seed):
        root = (out_path / f"seed_{seed}").resolve()
        commands.append(BfclCommand(root, target, _write_root(root, target, by_seed[seed]), program))
    checked, mismatches = _self_check(episodes, target.encoding)
    export = BfclExport(
        run=run_path,
        out=out_path,
        target=target,
        exported=len(episodes),
        skipped_scenario=skipped,
        inference_errors=sum(failed_inference(r) for r in episodes),
        corrupt_lines=corrupt,
        steps_checked=checked,
        mismatches=tuple(mismatches),
        warnings=tuple(warnings),
        commands=tuple(commands),
        missing_packages=missing_evaluator_packages(),
    )
    (out_path / "export.json").write_text(json.dumps(export.to_dict(), indent=2) + "\n", encoding="utf-8")
    return export
