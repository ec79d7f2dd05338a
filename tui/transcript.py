"""An episode record as a transcript: frames to step through and Rich text for each part.

Pure formatting of a typed `tooluse_agents.runs.records.EpisodeRecord` (Rich only, no Textual): the replay
view lays these parts out and reveals them frame by frame. A frame is one assistant step; an
episode that ended before its first step has a single empty frame.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rich.text import Text

from tooluse_agents.runs.records import EpisodeRecord, StepEntry, TurnEntry
from tooluse_tui.data import known_issue

FOLD_CHARS = 240
"""Tool results longer than this are folded to their first `FOLD_CHARS` characters."""

_THINK = re.compile(r"<think>(.*?)(?:</think>|$)", re.DOTALL)


@dataclass(frozen=True)
class Frame:
    """One step of an episode: where it sits and whether its turn ends with it."""

    index: int
    turn: int
    step: StepEntry
    first_in_turn: bool
    last_in_turn: bool


def frames(record: EpisodeRecord) -> list[Frame]:
    """The steps of an episode in order."""
    out: list[Frame] = []
    for turn in record.turns:
        for i, step in enumerate(turn.steps):
            out.append(Frame(len(out), turn.turn, step, i == 0, i == len(turn.steps) - 1))
    return out


def first_failing_frame(record: EpisodeRecord) -> int | None:
    """The last frame of the first turn the checker failed (where its verdict shows), else None."""
    failing = next((t.turn for t in record.turns if (t.verdict or {}).get("valid") is False), None)
    if failing is None:
        return None
    return max((f.index for f in frames(record) if f.turn == failing), default=None)


def split_reasoning(text: str) -> tuple[str, str]:
    """(reasoning, the rest) of an assistant message: ``<think>`` blocks apart from the answer."""
    reasoning = "\n".join(m.group(1).strip() for m in _THINK.finditer(text))
    return reasoning, _THINK.sub("", text).strip()


def header(record: EpisodeRecord) -> Text:
    """Task, seed, outcome and cost of an episode."""
    text = Text()
    text.append(record.task_id, style="bold")
    text.append(f"  category {record.category or '?'}  seed {record.seed}  ")
    text.append(f"reward {record.reward:g}", style="bold green" if record.reward >= 1 else "bold red")
    played = len(record.turns)
    text.append(
        f"  turns {played}/{record.num_turns or played}"
        f"  tokens {record.prompt_tokens} prompt + {record.completion_tokens} completion"
    )
    agent = record.agent
    if agent:
        text.append(f"\nagent {agent.get('name', '?')}" + (f" ({agent['model']})" if agent.get("model") else ""))
    protocol = record.protocol
    if protocol:
        knobs = ("decoder", "tool_format", "system_prompt", "template", "reasoning", "tool_results")
        shown = "  ".join(f"{k} {protocol.get(k, 'lenient' if k == 'decoder' else '?')}" for k in knobs)
        text.append(f"\nprotocol {shown}", style="dim")
    train = record.extra.get("train")
    if isinstance(train, Mapping):
        text.append("\ntraining rollout " + "  ".join(f"{k} {v}" for k, v in train.items()), style="dim")
    text.append_text(issue_text(record.task_id))
    return text


def issue_text(task_id: str) -> Text:
    """Why the BFCL known-issues registry lists the task (kind, summary, source), or empty text."""
    entry = known_issue(task_id)
    if entry is None:
        return Text()
    text = Text()
    text.append(f"\n⚑ known BFCL issue ({entry.kind.replace('_', ' ')}): ", style="bold yellow")
    text.append(entry.summary, style="yellow")
    text.append(f"\n  source {entry.source}", style="dim")
    return text


def user_text(turn: TurnEntry) -> Text:
    """The user's message(s) that open a turn."""
    text = Text()
    label = f"turn {turn.turn} · user"
    if turn.held_out:
        label += " (held-out functions offered)"
    text.append(label + "\n", style="bold cyan")
    text.append("\n".join(turn.user) if turn.user else "(no user message)", style="cyan")
    return text


_BLANK_RUN = re.compile(r"^(?:[ \t]*\n){2,}|\n(?:[ \t]*\n){2,}|(?:\n[ \t]*){2,}$")


def append_folding_blank_lines(text: Text, message: str) -> None:
    """Append `message` with each run of two or more blank lines (inside it or at an end) as one dim line.

    The line says how many blank lines it stands for: a model that writes dozens of newlines must not push
    the rest of the step off the screen.
    """
    start = 0
    for match in _BLANK_RUN.finditer(message):
        if not match.group():
            continue
        text.append(message[start : match.start()])
        newlines = match.group().count("\n")
        at_start, at_end = match.start() == 0, match.end() == len(message)
        blank = newlines if at_start or at_end else newlines - 1
        marker = f"⋯ {blank} blank line{'s' * (blank != 1)} ⋯"
        text.append(("" if at_start else "\n") + marker + ("" if at_end else "\n"), style="dim")
        start = match.end()
    text.append(message[start:])


def step_text(frame: Frame, *, show_reasoning: bool, show_full: bool) -> Text:
    """An assistant step: its text (reasoning folded), each parsed call and each tool result.

    A step without calls closes its turn and says so, with the decoder's reason when it gave one.
    """
    step = frame.step
    text = Text()
    tokens = f"{step.prompt_tokens}+{step.completion_tokens} tok"
    text.append(f"step {frame.index + 1} · assistant", style="bold")
    text.append(f"   {tokens}, {step.latency_s:.2f} s\n", style="dim")
    reasoning, answer = split_reasoning(step.assistant)
    if reasoning:
        if show_reasoning:
            text.append("▾ reasoning\n", style="magenta")
            text.append(reasoning + "\n", style="italic magenta")
        else:
            text.append(f"▸ reasoning ({len(reasoning)} chars, r to unfold)\n", style="magenta")
    append_folding_blank_lines(text, answer or "(empty message)")
    if not step.calls:  # a message without calls ends its user turn (as in BFCL): not a failure
        text.append("\n↵ ends the turn", style="bold cyan")
        if step.parse_failure:  # why the decoder found no call (under bfcl, BFCL's error for any text reply)
            text.append(f"  no calls: {step.parse_failure}", style="dim")
    results = step.results
    for i, call in enumerate(step.calls):
        text.append("\n→ ", style="bold blue")
        text.append(render_call(call), style="blue")
        if call.get("error"):
            text.append(f"  ({call['error']})", style="yellow")
        if i < len(results):
            text.append("\n  ← ", style="green")
            text.append(fold(results[i], show_full), style=_result_style(results[i]))
    return text


def render_call(call: Mapping[str, Any]) -> str:
    """``name(arg=value, ...)`` with JSON-style values, as the call was parsed (BFCL's call string under ``bfcl``)."""
    if isinstance(call.get("source"), str):
        return call["source"]
    args = [json.dumps(v, ensure_ascii=False) for v in call.get("positional") or []]
    args += [f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in (call.get("arguments") or {}).items()]
    return f"{call.get('name', '?')}({', '.join(args)})"


def fold(value: str, show_full: bool) -> str:
    """`value`, cut to `FOLD_CHARS` characters unless `show_full`."""
    if show_full or len(value) <= FOLD_CHARS:
        return value
    return f"{value[:FOLD_CHARS]}… (+{len(value) - FOLD_CHARS} chars, o to unfold)"


def _result_style(result: str) -> str:
    return "yellow" if result.startswith('{"error"') else "green"


def verdict_text(turn: TurnEntry, *, show_full: bool = False) -> Text:
    """The checker's verdict on a turn and, on a mismatch, what differs from the ground truth."""
    verdict, index = turn.verdict, turn.turn
    text = Text()
    if not verdict:
        text.append(f"turn {index} · not judged (episode ended first)", style="dim")
        return text
    if "session" in verdict:  # BFCL memory: a prerequisite session ended, with the memory it left
        text.append(f"turn {index} · session {verdict['session']} ended; memory now:", style="bold")
        text.append("\n  " + fold(json.dumps(verdict.get("memory"), ensure_ascii=False), show_full), style="cyan")
        return text
    if "question" in verdict:  # BFCL memory: a question, judged by BFCL's agentic checker
        mark, style = ("✓", "bold green") if verdict.get("valid") else ("✗", "bold red")
        outcome = verdict.get("error_type") or "answered"
        text.append(f"{mark} turn {index} · {verdict['question']} · {outcome}", style=style)
        return text
    if not verdict.get("checked"):
        text.append(f"turn {index} · not checked (empty ground truth)", style="dim")
        return text
    if verdict.get("valid"):
        text.append(f"✓ turn {index} · checker: valid", style="bold green")
        return text
    text.append(f"✗ turn {index} · {verdict.get('error_type')}", style="bold red")
    if verdict.get("message"):
        text.append(f"\n  {verdict['message']}", style="red")
    for path, model, truth in diff_rows(verdict.get("state_diff") or {}):
        text.append(f"\n  {path}", style="bold")
        text.append("\n    model:        ", style="dim")
        text.append(fold(model, show_full), style="red")
        text.append("\n    ground truth: ", style="dim")
        text.append(fold(truth, show_full), style="green")
    for missing in verdict.get("missing_results") or []:
        text.append("\n  missing result: ", style="dim")
        text.append(fold(str(missing), show_full), style="green")
    return text


def diff_rows(diff: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """(dotted path, model value, ground-truth value) for each leaf of a checker state diff."""
    return list(_walk(diff, ()))


def _walk(node: Any, path: Sequence[str]) -> Iterator[tuple[str, str, str]]:
    if isinstance(node, Mapping) and set(node) == {"model", "ground_truth"}:
        yield ".".join(path), _compact(node["model"]), _compact(node["ground_truth"])
        return
    if isinstance(node, Mapping):
        for key, value in node.items():
            yield from _walk(value, (*path, str(key)))
        return
    yield ".".join(path), _compact(node), ""


def _compact(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def ending_text(record: EpisodeRecord) -> Text:
    """How the episode ended: the agent's error, or the checker's overall verdict."""
    text = Text()
    error = record.error
    checker = record.checker or {}
    if error:
        text.append(f"■ agent error {error.get('type')}: {error.get('message', '')}", style="bold red")
    elif checker.get("valid"):
        text.append("■ episode valid", style="bold green")
    elif checker:
        text.append(f"■ episode failed: {checker.get('error_type')}", style="bold red")
        if checker.get("error_message"):
            text.append(f"\n  {checker['error_message']}", style="red")
    else:
        text.append("■ episode not judged", style="dim")
    return text
