"""What every BFCL export format shares: the registered targets, the export's record, step payloads.

A format (`tooluse_agents.export.multi_turn`, `tooluse_agents.export.single_turn`,
`tooluse_agents.export.memory`) is an `ExportFormat`: which episodes it writes, the target and warnings
for them, one project root's files, and the self-check.
The one pipeline (`tooluse_agents.export.pipeline.export_bfcl`) does the rest for every format. Formats
import this module, never each other.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from tooluse_agents.export.evaluator import install_command
from tooluse_agents.export.folders import ExportError
from tooluse_agents.runs.records import EpisodeRecord, StepEntry
from tooluse_gym.decoding import bfcl as bfcl_decoding
from tooluse_gym.decoding.lenient import parse_call_string
from tooluse_gym.decoding.text import visible_response

EXPORT_FORMATS = ("bfcl",)
"""The formats `tooluse eval export` writes."""

INFERENCE_ERROR = "Error during inference: "
"""How BFCL's generator begins the ``result`` of an entry whose inference failed."""

Payload = str | list[dict[str, str]]
"""One step as a result file holds it: text, or ``[{name: arguments_json}]``."""

_SHOWN_MISMATCHES = 10


def bfcl_folder(category: str) -> str:
    """BFCL's folder for a test category's result and score files (bfcl_eval's ``get_directory_structure_by_category``).

    ``memory_kv`` -> ``agentic/memory/kv``; ``web_search_base`` -> ``agentic``; ``multi_turn_base`` ->
    ``multi_turn``; ``live_simple`` -> ``live``;
    any other single-turn category -> ``non_live``.
    """
    if category.startswith("memory_"):
        return f"agentic/memory/{category.removeprefix('memory_').removesuffix('_prereq')}"
    if category.startswith("web_search"):
        return "agentic"
    if category.startswith("multi_turn_"):
        return "multi_turn"
    return "live" if category.startswith("live_") else "non_live"


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


def target_reason(target: Target, fc_run: bool, played_by: str | None = None) -> str:
    """Why the export files its steps under `target`'s name: BFCL decodes by the registered name, not by who played.

    Args:
        target: The registered name chosen.
        fc_run: The run's text replies were function-calling responses (``text_replies=fc``).
        played_by: The run's model or agent (``oracle``, ``smollm2-135m``), when known.
    """
    if fc_run:
        source = "the run's replies were function-calling responses (text_replies=fc)"
    elif target.encoding == "fc":
        source = "the steps carried structured tool calls"
    else:
        source = f"the run's tool_format={target.encoding}"
    player = f" ({played_by} played them)" if played_by else ""
    return (
        f"BFCL decodes a result file with the handler registered for the model name it is filed under; "
        f"{target.model}'s ({target.handler}) reads {target.steps}, as this run wrote them ({source}). "
        f"The name picks BFCL's decoder, not the model that played the episodes{player}."
    )


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
        """Where `bfcl evaluate` writes the multi-turn score files (``BFCL_v4_<category>_score.json``)."""
        return self.root / "score" / self.target.directory / "multi_turn"

    def score_file(self, category: str) -> Path:
        """The score file `bfcl evaluate` writes for one of BFCL's test categories."""
        return self.root / "score" / self.target.directory / bfcl_folder(category) / f"BFCL_v4_{category}_score.json"


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
        target_reason: Why the steps are filed under the target's name (`target_reason`).
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
    target_reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        """The manifest written to ``OUT/export.json``."""
        return {
            "run": str(self.run),
            "format": "bfcl",
            "model": self.target.model,
            "encoding": self.target.encoding,
            "handler": self.target.handler,
            "target_reason": self.target_reason,
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
        """What `tooluse eval export` prints: counts, the self-check, warnings and the commands."""
        seeds = ", ".join(c.root.name.removeprefix("seed_") for c in self.commands)
        skipped = f"; skipped {self.skipped_scenario} scenario episodes" if self.skipped_scenario else ""
        lines = [
            f"exported {self.exported} BFCL episodes (seeds {seeds}) to {self.out}{skipped}",
            f"steps written as {self.target.steps} under {self.target.model} ({self.target.handler})",
        ]
        if self.target_reason:
            lines.append(f"why {self.target.model}: {self.target_reason}")
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
            f"scores: {self.out}/seed_*/score/{self.target.directory}/**/BFCL_v4_*_score.json",
        ]
        return "\n".join(lines)


class ExportFormat(Protocol):
    """One env family's BFCL result files: what the pipeline asks of a format."""

    name: str
    """The family, in words (``multi-turn``, ``single-turn``)."""

    def claims(self, records: Sequence[EpisodeRecord]) -> bool:
        """Whether a run's records are this format's to export."""
        ...

    def select(self, records: Sequence[EpisodeRecord]) -> list[EpisodeRecord]:
        """The episodes it writes (the rest are skipped and counted)."""
        ...

    def plan(self, episodes: Sequence[EpisodeRecord], fc_run: bool) -> tuple[Target, list[str]]:
        """The target for these episodes and the warnings; raises `ExportError` on what BFCL cannot score."""
        ...

    def write_root(self, root: Path, target: Target, records: Sequence[EpisodeRecord]) -> tuple[str, ...]:
        """One project root's result files; returns BFCL's test categories in it, in BFCL's order."""
        ...

    def self_check(self, records: Sequence[EpisodeRecord], encoding: str) -> tuple[int, list[StepMismatch]]:
        """Steps checked, and the written steps that decode to other calls than the env played."""
        ...


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


# --- the self-check: a written step decoded again --------------------------------------------


def decode_payload(payload: Payload, encoding: str) -> tuple[str, ...]:
    """The call strings the target handler's ``decode_execute`` makes of a written step (none: dropped).

    Uses the eval-free copies in `tooluse_gym.decoding.bfcl`, never bfcl_eval's own.
    """
    try:
        if encoding == "fc":
            return tuple(bfcl_decoding.decode_function_calls(payload))
        if not isinstance(payload, str):
            return ()
        decode = bfcl_decoding.decode_python if encoding == "python" else bfcl_decoding.decode_tool_call_tags
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


def check_steps(records: Iterable[EpisodeRecord], encoding: str) -> tuple[int, list[StepMismatch]]:
    """The self-check of turn-by-turn episodes: steps checked, and each written step that decodes otherwise."""
    steps = [
        (r, t, s)
        for r in records
        if not failed_inference(r)
        for t, turn in enumerate(r.turns)
        for s in range(len(turn.steps))
    ]
    mismatches = [step_mismatch(r, t, s, encoding) for r, t, s in steps]
    return len(steps), [m for m in mismatches if m is not None]
