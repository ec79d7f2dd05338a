"""The one internal task type. Loaders (BFCL, scenarios) produce it; the env consumes it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tooluse_gym.prompts import json_call_block
from tooluse_gym.types import ToolCall

END_OF_TURN = "Done."
"""The reference answer's closing message of a turn (a message without calls ends the turn, as in BFCL)."""


@dataclass(frozen=True)
class Task:
    """A multi-turn tool-use task with ground truth.

    Attributes:
        task_id: Unique id, e.g. ``multi_turn_base_0``.
        category: Short category name, e.g. ``base`` or ``miss_func``.
        turns: User messages per turn (``{"role": "user", "content": ...}``). A turn with no
            message is a held-out-function turn: its functions are offered and the env
            sends a fixed notice instead of a user message.
        ground_truth: Calls per turn that solve the task. An empty turn is not checked.
        functions: Function docs (BFCL format) offered from the first turn.
        held_out: Turn index -> function docs first offered at that turn.
        excluded_functions: Functions listed as excluded by the task (refused only with
            ``strict_tools=True``).
        backends: Tool backend names (BFCL class names) whose instances the task uses.
        initial_config: Backend name -> initial state, passed to the backend's loader.
        long_context: Whether backends load their long-context padding.
        source: Where the task came from (``bfcl``: bfcl_eval's JSON data, or a scenario file path).
    """

    task_id: str
    category: str
    turns: tuple[tuple[Mapping[str, Any], ...], ...]
    ground_truth: tuple[tuple[ToolCall, ...], ...]
    functions: tuple[Mapping[str, Any], ...]
    backends: tuple[str, ...]
    initial_config: Mapping[str, Any]
    held_out: Mapping[int, tuple[Mapping[str, Any], ...]] = field(default_factory=dict)
    excluded_functions: tuple[str, ...] = ()
    long_context: bool = False
    source: str = "bfcl"

    def __post_init__(self) -> None:
        if len(self.turns) != len(self.ground_truth):
            raise ValueError(
                f"task {self.task_id}: {len(self.turns)} turns but {len(self.ground_truth)} ground-truth turns"
            )

    @property
    def num_turns(self) -> int:
        """The number of user turns."""
        return len(self.turns)

    def all_functions(self) -> tuple[Mapping[str, Any], ...]:
        """Every function doc the task ever offers (initial plus held-out)."""
        extra = tuple(doc for turn in sorted(self.held_out) for doc in self.held_out[turn])
        return self.functions + extra

    def offered_names(self, turn: int) -> frozenset[str]:
        """Names of the functions offered at `turn` (held-out ones appear from their turn on)."""
        names = {doc["name"] for doc in self.functions}
        for t, docs in self.held_out.items():
            if t <= turn:
                names.update(doc["name"] for doc in docs)
        return frozenset(names)

    def reference_message(self, turn: int, steps_in_turn: int, tool_format: str) -> str:
        """The ground truth as the next assistant message: all of `turn`'s calls, then `END_OF_TURN` once they ran.

        The calls are written in the env's `tool_format` (``python``: ``[f(a=1), g(b='x')]``;
        ``json``: one ``<tool_call>`` block each). A turn with no ground-truth calls gets only the
        closing message. This is what the oracle agent sends, and what env tests play.
        """
        calls = self.ground_truth[turn]
        if steps_in_turn > 0 or not calls:
            return END_OF_TURN
        if tool_format == "python":
            return "[" + ", ".join(c.render() for c in calls) + "]"
        return "\n".join(json_call_block(c.name, dict(c.arguments)) for c in calls)
