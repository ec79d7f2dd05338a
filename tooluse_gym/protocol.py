"""The protocol card: every choice that moves tool-calling scores, recorded on every result.

Two results are comparable only when their cards match (`ProtocolCard.differences`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

MAX_STEPS_PER_TURN = 20
"""BFCL's step limit: a 21st executing step in one turn force-quits the entry."""

DATA_UNKNOWN = "unknown"
"""`ProtocolCard.data_version` of a card written before the task data were recorded ("data version unknown")."""

WRITTEN_BEFORE: Mapping[str, Any] = MappingProxyType({"decoder": "lenient"})
"""Knob fields that cards written before the knob existed lack, with the value those runs used."""


def sha256_text(text: str) -> str:
    """The hex sha256 of `text` encoded as UTF-8."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def data_version(task_data: Mapping[str, str] | None) -> str:
    """A card's task data (file -> sha256) in 12 hex digits, or `DATA_UNKNOWN` when it has none."""
    if not task_data:
        return DATA_UNKNOWN
    return sha256_text(json.dumps(sorted(task_data.items())))[:12]


@dataclass(frozen=True, kw_only=True)
class ProtocolCard:
    """The evaluation protocol of an environment instance.

    The env builder fills the knob fields from `tooluse_gym.envs.knobs.Knobs.card_fields`; they
    have no defaults of their own.

    Attributes:
        env_id: Registered id, e.g. ``ToolUse-MultiTurn-v0``.
        category: Task category (``base``, ``miss_func``, ``miss_param``, ``long_context``, ``all``).
        template: ``native`` (role-separated messages) or ``context`` (history in one user message).
        reasoning: How earlier ``<think>`` content is carried: ``keep``, ``strip`` or ``last``.
        system_prompt: ``bfcl``, ``strong``, ``none`` or ``literal``.
        system_prompt_sha256: sha256 of the system prompt's template, before the task's functions are
            inserted ("" when none), so it is the same for every task of a run.
        tool_format: What the model is told to emit and the parser expects: ``python`` or ``json``.
        tool_results: How tool results are shown: ``tool_messages`` or ``user_message``.
        decoder: How messages become calls: ``bfcl`` (exactly as bfcl_eval decodes and
            executes them) or ``lenient`` (a friendlier parser). Cards written before this
            knob existed read as ``lenient``, which is what those runs used.
        strict_tools: Held-out and excluded functions are refused when not offered.
        validate_args: Arguments are validated against the function schema before a call.
        max_steps_per_turn: Executing steps allowed in one turn before the episode is force-quit.
        reward: ``terminal`` (official: 1.0 if the checker marks the episode valid), or the
            reward a wrapper put in its place (`CandidateActions`: ``shaped``).
        bfcl_version: Installed bfcl-eval version (data, simulators, prompt text).
        known_issues: Version of the registry of BFCL entries with known-bad ground truth
            (`tooluse_gym.tasks.known_issues`) that reports use for the clean-subset score;
            it does not change the official score, so the fingerprint and `differences` leave it out.
        tooluse_gym_version: This package's version.
        checker_version: The checkers' version (`tooluse_gym.checking.CHECKER_VERSION`; "" on cards
            written before it was recorded).
        task_data: The data files the tasks come from, each with its sha256: BFCL's questions,
            possible answers and function docs (names relative to bfcl_eval's ``data`` folder), or
            the scenario files. Empty on cards written before it was recorded: "data version unknown"
            (`data_version`). Runs on different data are different protocols (`differences`).
        seed: The seed of the reset this card was issued at (None when not seeded).
        extra: Further knobs added by wrappers, name -> JSON value.
    """

    env_id: str
    category: str
    template: str
    reasoning: str
    system_prompt: str
    system_prompt_sha256: str
    tool_format: str
    tool_results: str
    decoder: str
    strict_tools: bool
    validate_args: bool
    max_steps_per_turn: int
    reward: str = "terminal"
    bfcl_version: str = ""
    known_issues: str = ""
    tooluse_gym_version: str = ""
    checker_version: str = ""
    task_data: tuple[tuple[str, str], ...] = ()
    seed: int | None = None
    extra: tuple[tuple[str, Any], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The card as a JSON-able dict, with `extra` and `task_data` as name -> value dicts."""
        out = dataclasses.asdict(self)
        out["extra"] = dict(self.extra)
        out["task_data"] = dict(self.task_data)
        return out

    @property
    def data_version(self) -> str:
        """A short name of the task data: 12 hex digits of a hash over `task_data`, or ``unknown`` (older cards)."""
        return data_version(dict(self.task_data))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ProtocolCard:
        """The card `to_dict` wrote, or an older one (`WRITTEN_BEFORE` fills the knobs it predates).

        Raises:
            ValueError: A field the card class does not know, or a knob the card lacks.
        """
        fields = {f.name: f for f in dataclasses.fields(cls)}
        unknown = set(data) - set(fields)
        if unknown:
            raise ValueError(f"unknown protocol card fields: {sorted(unknown)}")
        data = {**WRITTEN_BEFORE, **data}
        missing = [n for n, f in fields.items() if n not in data and f.default is dataclasses.MISSING]
        if missing:
            raise ValueError(f"the protocol card lacks {missing}")
        data["extra"] = tuple(sorted(dict(data.get("extra", {})).items()))
        data["task_data"] = tuple(sorted(dict(data.get("task_data") or {}).items()))
        return cls(**data)

    def replace(self, **changes: Any) -> ProtocolCard:
        """A copy with the given fields changed."""
        return dataclasses.replace(self, **changes)

    def fingerprint(self) -> str:
        """A short stable hash of the protocol (12 hex digits of sha256), e.g. to name result folders.

        The seed and the known-issues registry version are left out: runs that differ only in
        those share a protocol. The checker version and the task data count where the card has
        them; a card written before they were recorded keeps the fingerprint it had.
        """
        data = self.to_dict()
        del data["seed"], data["known_issues"]
        for name in ("checker_version", "task_data"):
            if not data[name]:
                del data[name]
        return sha256_text(json.dumps(data, sort_keys=True))[:12]

    def data_differences(self, other: ProtocolCard) -> dict[str, tuple[str | None, str | None]]:
        """Task data files whose sha256 differ: name -> (self's, other's), None where a card does not list the file.

        Empty when the data match, and when either card's data version is unknown (`data_version`).
        """
        if not self.task_data or not other.task_data:
            return {}
        a, b = dict(self.task_data), dict(other.task_data)
        return {n: (a.get(n), b.get(n)) for n in sorted(set(a) | set(b)) if a.get(n) != b.get(n)}

    def differences(
        self, other: ProtocolCard, *, ignore: tuple[str, ...] = ("seed", "known_issues")
    ) -> dict[str, tuple[Any, Any]]:
        """Fields whose values differ: name -> (self's, other's); by default the seed and registry version are not."""
        a, b = self.to_dict(), other.to_dict()
        return {k: (a[k], b[k]) for k in a if a[k] != b[k] and k not in ignore}
