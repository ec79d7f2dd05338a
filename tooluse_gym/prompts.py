"""System prompts: BFCL's (imported from bfcl_eval at run time), our `strong` prompt, none, or literal text.

Every prompt is a template with ``{functions}`` where the task's function list goes; its
sha256 (of the template, before the task's functions are inserted) goes on the protocol card,
so it is the same for every task of a run.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from tooluse_gym.protocol import sha256_text

FUNCTIONS_PLACEHOLDER = "{functions}"
SYSTEM_PROMPTS = ("bfcl", "strong", "none")
"""Named prompts; any other string is used as literal prompt text."""

JSON_CALL_FORMAT = '<tool_call>\n{"name": "func_name1", "arguments": {"param1": "value1"}}\n</tool_call>'
"""One call in the ``json`` format: each block on lines of its own, as the Qwen/Hermes chat format (and BFCL's
handlers for it) expect."""


def json_call_block(name: str, arguments: object) -> str:
    """One call written in the ``json`` tool format (the shape `JSON_CALL_FORMAT` shows)."""
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}) + "\n</tool_call>"


_CALL_RULES = {
    "python": (
        "Write the calls as one Python list with keyword arguments: "
        "[func_name1(param1=value1, param2=value2), func_name2(param=value)]. "
        "Use literal values only (quoted strings, numbers, True/False/None, lists, dicts). "
        "A message that calls functions contains nothing but that list."
    ),
    "json": (
        "Write each call as a JSON object inside tool_call tags: " + JSON_CALL_FORMAT + ". "
        "For several calls, write several tags one after another. "
        "A message that calls functions contains nothing but those tags."
    ),
}

STRONG_TEMPLATE = """You are an assistant that completes the user's requests by calling functions (tools).

# Calling functions
{call_rules}

# How to work
1. Plan the steps. Break the request into the calls it needs. Calls that do not depend on each other go in one message; a call that needs another call's result waits for that result and goes in a later message.
2. Check every call against its schema. Call only functions from the list below, with only the parameters they define. Give each required parameter a value of the type the schema names. Take values from the request, the conversation or earlier tool results; never make them up. If a needed value is missing and no function can find it, say so instead of calling.
3. Recover from errors. When a tool result reports an error, read it, then fix the arguments or use another function. Never repeat a call that failed in the same way.
4. Stop and summarize. When the request is done, or cannot be done with these functions, reply with a short summary for the user and no function call. A message without a function call ends your turn.

# Functions
{functions}
"""


def _one_per_line(functions: Sequence[Mapping[str, Any]]) -> str:
    return "\n".join(json.dumps(doc) for doc in functions)


@dataclass(frozen=True)
class SystemPromptSpec:
    """A resolved system prompt.

    Attributes:
        name: ``bfcl``, ``strong``, ``none`` or ``literal``.
        template: The text, with ``{functions}`` where the tool list goes; None for ``none``.
        format_functions: Renders the function docs that replace ``{functions}``.
        hashed: What `sha256` hashes in place of the template, for a prompt that `format_functions`
            builds whole (the template is then just ``{functions}``: BFCL's format-sensitivity
            builder, `tooluse_gym.prompt_formats`); None hashes the template.
    """

    name: str
    template: str | None
    format_functions: Callable[[Sequence[Mapping[str, Any]]], str] = _one_per_line
    hashed: str | None = None

    @cached_property
    def carries_tools(self) -> bool:
        """Whether the function list is in the prompt (then the ``tools`` field is left empty)."""
        return self.template is not None and FUNCTIONS_PLACEHOLDER in self.template

    @cached_property
    def _pieces(self) -> list[str]:
        """The template split at each ``{functions}`` (joining them with the list is ``str.replace``)."""
        return self.template.split(FUNCTIONS_PLACEHOLDER) if self.template is not None else []

    @property
    def sha256(self) -> str:
        """The template's sha256, before functions are inserted ("" for ``none``): the card's `system_prompt_sha256`."""
        if self.hashed is not None:
            return sha256_text(self.hashed)
        return sha256_text(self.template) if self.template is not None else ""

    def render(self, functions: Sequence[Mapping[str, Any]]) -> str | None:
        """The prompt for these function docs: the template with each ``{functions}`` replaced; None for ``none``."""
        if self.template is None:
            return None
        if not self.carries_tools:
            return self.template
        return self.format_functions(functions).join(self._pieces)


def system_prompt_spec(prompt: str, tool_format: str) -> SystemPromptSpec:
    """Resolve a `system_prompt` knob value for the given tool format."""
    from tooluse_gym.tasks import bfcl  # imports bfcl_eval lazily

    if not isinstance(prompt, str) or not prompt:
        raise ValueError(f"system_prompt must be one of {', '.join(SYSTEM_PROMPTS)} or non-empty prompt text")
    if tool_format not in _CALL_RULES:
        raise ValueError(f"tool_format must be one of {', '.join(_CALL_RULES)}, got {tool_format!r}")
    if prompt == "none":
        return SystemPromptSpec("none", None)
    if prompt == "bfcl":
        call_format = None if tool_format == "python" else JSON_CALL_FORMAT
        return SystemPromptSpec("bfcl", bfcl.system_prompt_template(call_format), bfcl.format_functions)
    if prompt == "strong":
        template = STRONG_TEMPLATE.replace("{call_rules}", _CALL_RULES[tool_format])
        return SystemPromptSpec("strong", template)
    return SystemPromptSpec("literal", prompt)
