"""The protocol knobs shared by every env id, and the wrapper stack that applies them."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import gymnasium as gym

from tooluse_gym.prompts import SystemPromptSpec, system_prompt_spec
from tooluse_gym.protocol import sha256_text
from tooluse_gym.wrappers import (
    REASONING_MODES,
    TEMPLATES,
    TOOL_RESULT_PLACEMENTS,
    ContextTemplate,
    ReasoningHistory,
    RenderedPrompt,
    SystemPrompt,
    ToolResultPlacement,
)

TOOL_FORMATS = ("python", "json")


def check_choice(knob: str, value: object, choices: Sequence[str]) -> None:
    if value not in choices:
        raise ValueError(f"{knob} must be one of {', '.join(map(repr, choices))}; got {value!r}")


@dataclass(frozen=True, kw_only=True)
class ProtocolKnobs:
    """The knobs of the evaluation protocol (see `make_multi_turn_env` for their meaning)."""

    template: str = "native"
    reasoning: str = "keep"
    system_prompt: str = "bfcl"
    tool_format: str = "python"
    tool_results: str = "tool_messages"
    tokenizer: str | None = None
    chat_template: str | None = None

    def __post_init__(self) -> None:
        check_choice("template", self.template, TEMPLATES)
        check_choice("reasoning", self.reasoning, REASONING_MODES)
        check_choice("tool_format", self.tool_format, TOOL_FORMATS)
        check_choice("tool_results", self.tool_results, TOOL_RESULT_PLACEMENTS)

    @property
    def prompt(self) -> SystemPromptSpec:
        return system_prompt_spec(self.system_prompt, self.tool_format)

    def card_fields(self, **extra: str) -> dict[str, object]:
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
            "extra": tuple(sorted(extra.items())),
        }

    def wrap(self, env: gym.Env) -> gym.Env:
        """Wrap a base env (one concern per wrapper, innermost first)."""
        if self.reasoning != "keep":
            env = ReasoningHistory(env, self.reasoning)
        if self.tool_results != "tool_messages":
            env = ToolResultPlacement(env, self.tool_results)
        if self.prompt.name != "none":
            env = SystemPrompt(env, self.system_prompt, self.tool_format)
        if self.template == "context":
            env = ContextTemplate(env)
        if self.tokenizer is not None:
            env = RenderedPrompt(env, self.tokenizer, self.chat_template)
        return env
