"""The knobs of every env id: each knob's values and default declared once, and checked once.

`Knobs` holds the protocol (what the model sees: template, reasoning history, system prompt,
tool format, where tool results go, the tokenizer's rendering) and the env's own rules (how a
message is decoded, which calls are refused, the step cap). An env id differs from another only
by the defaults it overrides (`Knobs.with_defaults`). This module imports neither gymnasium nor
torch, so a training config can hold a `Knobs` without loading either.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from tooluse_gym.prompts import SYSTEM_PROMPTS, SystemPromptSpec, system_prompt_spec
from tooluse_gym.protocol import MAX_STEPS_PER_TURN, sha256_text

TEMPLATES = ("native", "context")
REASONING_MODES = ("keep", "strip", "last")
TOOL_FORMATS = ("python", "json")
TOOL_RESULT_PLACEMENTS = ("tool_messages", "user_message")
DECODERS = ("bfcl", "lenient")
CHOICES: Mapping[str, tuple[str, ...]] = {
    "template": TEMPLATES,
    "reasoning": REASONING_MODES,
    "tool_format": TOOL_FORMATS,
    "tool_results": TOOL_RESULT_PLACEMENTS,
    "decoder": DECODERS,
}
"""The knobs that take one of a fixed set of values."""

__all__ = ["CHOICES", "DECODERS", "MAX_STEPS_PER_TURN", "Knobs", "check_choice"]


def check_choice(knob: str, value: object, choices: Sequence[str]) -> None:
    """Raise `ValueError` naming `knob` and its allowed values unless `value` is one of `choices`."""
    if value not in choices:
        raise ValueError(f"{knob} must be one of {', '.join(map(repr, choices))}; got {value!r}")


@dataclass(frozen=True, kw_only=True)
class Knobs:
    """Every choice that changes what the model sees or how its messages are scored.

    Attributes:
        template: ``native`` (role-separated messages) | ``context`` (history in one user message).
        reasoning: Earlier ``<think>`` content: ``keep`` | ``strip`` (all but the current turn's) | ``last``.
        system_prompt: ``bfcl`` | ``strong`` | ``none`` | any other text (a literal prompt; a
            ``{functions}`` placeholder in it receives the function list).
        tool_format: ``python`` (``[f(a=1)]``) | ``json`` (``<tool_call>{...}</tool_call>`` blocks).
        tool_results: ``tool_messages`` | ``user_message`` (BFCL's prompting handlers).
        decoder: ``bfcl`` (messages decoded, executed and ended exactly as bfcl_eval does,
            without eval) | ``lenient`` (a friendlier parser; see `EnvConfig.decoder`).
        strict_tools: Refuse held-out functions before their turn and excluded functions.
        validate_args: Validate arguments against the function schema before calling
            (None: off under ``bfcl``, which runs every call BFCL would; on under ``lenient``).
        max_steps_per_turn: Executing steps allowed per turn (BFCL: 20).
        tokenizer: Add ``prompt`` rendered with this tokenizer's chat template (a local
            folder, a cached hub id, or ``smollm2-135m``).
        chat_template: Jinja text or a file path replacing the tokenizer's template.
    """

    template: str = "native"
    reasoning: str = "keep"
    system_prompt: str = "bfcl"
    tool_format: str = "python"
    tool_results: str = "tool_messages"
    decoder: str = "bfcl"
    strict_tools: bool = False
    validate_args: bool | None = None
    max_steps_per_turn: int = MAX_STEPS_PER_TURN
    tokenizer: str | None = None
    chat_template: str | None = None

    def __post_init__(self) -> None:
        for knob, choices in CHOICES.items():
            check_choice(knob, getattr(self, knob), choices)
        if not isinstance(self.system_prompt, str) or not self.system_prompt:
            raise ValueError(f"system_prompt must be one of {', '.join(SYSTEM_PROMPTS)} or non-empty prompt text")
        if isinstance(self.max_steps_per_turn, bool) or not isinstance(self.max_steps_per_turn, int):
            raise ValueError(f"max_steps_per_turn must be an integer, got {self.max_steps_per_turn!r}")
        if self.max_steps_per_turn < 1:
            raise ValueError(f"max_steps_per_turn must be >= 1, got {self.max_steps_per_turn}")

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """Every knob's name, in declaration order."""
        return tuple(f.name for f in dataclasses.fields(cls))

    def with_defaults(self, **given: Any) -> Knobs:
        """These knobs (an env id's defaults) with the given ones replacing them; unknown names are an error."""
        unknown = sorted(set(given) - set(self.names()))
        if unknown:
            raise TypeError(f"unknown knobs {unknown}; the knobs are: {', '.join(self.names())}")
        return dataclasses.replace(self, **given)

    @property
    def validates_args(self) -> bool:
        """`validate_args` resolved: off under ``bfcl`` (BFCL runs every call it decodes), else on, unless set."""
        return self.decoder != "bfcl" if self.validate_args is None else bool(self.validate_args)

    @cached_property
    def prompt(self) -> SystemPromptSpec:
        """The system prompt, resolved once (``bfcl`` reads bfcl_eval's text)."""
        return system_prompt_spec(self.system_prompt, self.tool_format)

    def card_fields(self, **extra: str) -> dict[str, Any]:
        """The protocol-card fields these knobs set; ``extra`` holds the tokenizer (if any) and the given items."""
        if self.tokenizer is not None:
            extra["tokenizer"] = self.tokenizer
            if self.chat_template is not None:
                extra["chat_template_sha256"] = sha256_text(self.chat_template)
        prompt = self.prompt
        return {
            "template": self.template,
            "reasoning": self.reasoning,
            "system_prompt": prompt.name,
            "system_prompt_sha256": prompt.sha256,
            "tool_format": self.tool_format,
            "tool_results": self.tool_results,
            "decoder": self.decoder,
            "strict_tools": self.strict_tools,
            "validate_args": self.validates_args,
            "max_steps_per_turn": self.max_steps_per_turn,
            "extra": tuple(sorted(extra.items())),
        }
