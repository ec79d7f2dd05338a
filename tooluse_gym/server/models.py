"""The OpenEnv wire types of the tool-use envs: the action (the assistant's message), the observation and the state.

Shared by the server (`tooluse_gym.server.server`) and the client
(`tooluse_gym.server.client`); they derive from openenv-core's pydantic ``Action``,
``Observation`` and ``State``, so ``GET /schema`` describes them and OpenEnv's own tooling validates them.

The action is the in-process env's action, field for field: ``{"content": text}`` is the text
the in-process ``step(text)`` takes; with ``tool_calls`` (and ``reasoning_content``) it is the OpenAI-shaped
dict. Any other field is refused (openenv's ``Action`` forbids extra fields), and so is a
``content`` longer than `MAX_MESSAGE_CHARS` (the in-process env answers such a message with a
parse failure; over the wire it never gets that far).

The observation is what ``reset`` and ``step`` return in-process, as JSON: the observation's
``messages``, ``tools`` (and ``prompt`` with a tokenizer), where the episode stands (``task_id``,
``turn``, ``steps_in_turn``), what the env answered (``env_messages``), the protocol card at reset
(``protocol``), the checker's verdict at the end (``checker``), and the rest of the step's info
(``info``: ``step_record``, ``parse_failure``, ``step``, ``turn_verdict``, ``tooluse``). A session that
asked for deltas at reset gets, after the reset, only what each step changed, and ``delta`` says how
to rebuild the rest (`tooluse_gym.server.wire`); otherwise ``delta`` is None and every observation is whole.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import Field

from tooluse_gym.decoding.limits import MAX_MESSAGE_CHARS
from tooluse_gym.errors import DependencyNotInstalled

try:
    from openenv.core.env_server.types import Action, Observation, State
except ImportError as e:  # pragma: no cover - the extra is installed in the project's venv
    raise DependencyNotInstalled(
        'the OpenEnv server and client need openenv-core: pip install "tooluse-gym[openenv]" and '
        "pip install --no-deps openenv-core==0.3.0 (docs/integrations/openenv.md)"
    ) from e

__all__ = ["MAX_MESSAGE_CHARS", "ToolUseAction", "ToolUseObservation", "ToolUseState"]


class ToolUseAction(Action):
    """The assistant's message: its text, and structured tool calls when the model's API returned them.

    Attributes:
        content: The message's text (python or JSON calls in the env's tool format, or prose).
        tool_calls: OpenAI-shaped calls (``{"id", "type": "function", "function": {"name",
            "arguments"}}``); None for a text-only message.
        reasoning_content: The model's separate reasoning field, when its API has one.
    """

    content: str = Field(default="", max_length=MAX_MESSAGE_CHARS, description="the assistant message's text")
    tool_calls: list[dict[str, Any]] | None = Field(
        default=None, description="structured calls in the OpenAI chat shape (None: the text carries them)"
    )
    reasoning_content: str | None = Field(
        default=None, max_length=MAX_MESSAGE_CHARS, description="the model's separate reasoning, if any"
    )

    def env_action(self) -> str | dict[str, Any]:
        """The in-process action: the text alone, or the dict of the fields that are set."""
        if self.tool_calls is None and self.reasoning_content is None:
            return self.content
        out: dict[str, Any] = {"content": self.content}
        if self.tool_calls is not None:
            out["tool_calls"] = self.tool_calls
        if self.reasoning_content is not None:
            out["reasoning_content"] = self.reasoning_content
        return out

    @classmethod
    def of(cls, action: str | Mapping[str, Any] | ToolUseAction) -> ToolUseAction:
        """The wire action for an in-process action (text, or a ``{"content", "tool_calls"}`` dict)."""
        if isinstance(action, ToolUseAction):
            return action
        if isinstance(action, str):
            return cls(content=action)
        fields = {k: action[k] for k in ("content", "tool_calls", "reasoning_content") if k in action}
        if fields.get("content") is None:
            fields["content"] = ""
        return cls(**fields)


class ToolUseObservation(Observation):
    """What ``reset`` and ``step`` return: the chat for the next message, and what happened.

    ``reward`` is None at reset, then the env's reward (1.0 at the end when the checker marks the
    episode valid, else 0.0); ``done`` is terminated or truncated.
    """

    messages: list[dict[str, Any]] = Field(default_factory=list, description="the chat so far, shaped by the protocol")
    tools: list[dict[str, Any]] = Field(
        default_factory=list, description="OpenAI tool schemas offered now (empty when the prompt carries them)"
    )
    prompt: str | None = Field(default=None, description="the chat rendered with the server's tokenizer, if any")
    env_id: str = Field(default="", description="the env id played (ToolUse-MultiTurn-v0, ...)")
    task_id: str = Field(default="", description="the task played")
    turn: int = Field(default=0, description="the user turn the next message answers")
    steps_in_turn: int = Field(default=0, description="executing steps so far in that turn")
    truncated: bool = Field(default=False, description="the episode was cut short (done is also true)")
    env_messages: list[dict[str, Any]] = Field(
        default_factory=list, description="what the env answered to the last message: tool results or the next turn"
    )
    protocol: dict[str, Any] | None = Field(default=None, description="the protocol card (at reset)")
    checker: dict[str, Any] | None = Field(
        default=None, description="the checker's verdict at the end: valid, error_type, per-turn verdicts"
    )
    info: dict[str, Any] = Field(
        default_factory=dict,
        description="the rest of the step's info: step_record, parse_failure, step, turn_verdict, tooluse",
    )
    delta: dict[str, Any] | None = Field(
        default=None,
        description=(
            "None: a whole observation; else this one holds only what changed since the last, and this header "
            "says how to rebuild it (a session that asked for observation='delta' at reset; tooluse_gym.server.wire)"
        ),
    )


class ToolUseState(State):
    """Where the session's episode stands (``episode_id`` and ``step_count`` are openenv's)."""

    env_id: str | None = Field(default=None, description="the env id of the current episode")
    task_id: str | None = Field(default=None, description="the task of the current episode")
    seed: int | None = Field(default=None, description="the reset's seed")
    turn: int = Field(default=0, description="the user turn the next message answers")
    steps_in_turn: int = Field(default=0, description="executing steps so far in that turn")
    done: bool = Field(default=True, description="no episode is in progress (before the first reset, or ended)")
    knobs: dict[str, Any] = Field(default_factory=dict, description="the knobs given at reset (over the server's)")
