"""One episode of a tool-use env played through chat-completions messages: the glue chat adapters share.

An adapter for a framework that talks to a model through an OpenAI-compatible endpoint (verifiers,
an RL trainer's rollout function) needs three things from the env at every generation: the chat
to send, the tool schemas to send with it, and what the env answered to the model's last message
(tool results, or the next user message). `ChatEpisode` gives exactly these, in the shape
`tooluse_agents.backends.openai_compat.OpenAIAgent` sends, so a framework's model sees the prompt
``tooluse eval`` would show it and the verdict is the env's own::

    env = make_env("ToolUse-MultiTurn-v0", task_ids=["multi_turn_base_0"], system_prompt="none")
    episode = ChatEpisode(env, "multi_turn_base_0", seed=0)
    view = episode.reset()
    while view is not None:
        reply = call_the_model(view.messages, view.tools, view.seed)   # an assistant message (a dict)
        view = episode.step(reply)
    episode.reward, episode.outcome()["checker"]

Nothing here imports a framework: tests drive it directly.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import gymnasium as gym

from tooluse_agents.backends.openai_compat import openai_messages
from tooluse_agents.rollout.seeding import derive_seed
from tooluse_gym.envs.tool_env import task_ids

__all__ = ["ChatEpisode", "ChatView", "action_from_chat", "task_ids_of"]


def task_ids_of(env: gym.Env) -> list[str]:
    """The ids of the env's tasks, in the env's order."""
    return task_ids(env)


def action_from_chat(message: Mapping[str, Any]) -> str | dict[str, Any]:
    """The env action for an assistant message in the chat-completions shape, as `OpenAIAgent` builds it.

    A message with ``tool_calls`` becomes ``{"content", "tool_calls"}`` (structured calls); any
    other message becomes its text, which the env parses in its tool format. Reasoning fields are
    dropped, as `OpenAIAgent` drops them.
    """
    content = message.get("content")
    text = content if isinstance(content, str) else ""
    calls = message.get("tool_calls") or []
    if not calls:
        return text
    return {
        "content": text,
        "tool_calls": [
            {
                "id": c["id"],
                "type": "function",
                "function": {"name": c["function"]["name"], "arguments": c["function"]["arguments"]},
            }
            for c in calls
        ],
    }


@dataclass(frozen=True)
class ChatView:
    """What a chat model needs for its next message, and what the env said since its last one.

    Attributes:
        messages: The whole chat in the chat-completions shape (`openai_messages` of the
            observation): what `OpenAIAgent` sends. Tool results that follow a text message
            (prompting protocols) arrive as one user message.
        tools: The OpenAI tool schemas offered now; empty when the protocol puts the functions in
            the system prompt. They change when a held-out turn adds functions.
        new_messages: The env's answer to the last assistant message, as the env wrote it: its
            tool results (``tool`` messages) or the next user message. After a reset: `messages`.
        seed: The per-request seed ``tooluse eval`` sends for this generation (None: unseeded).
    """

    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    new_messages: list[dict[str, Any]]
    seed: int | None


class ChatEpisode:
    """One episode of a tool-use env, driven by assistant messages in the chat-completions shape.

    `reset` starts the episode on its task; `step` plays one assistant message and returns the
    next `ChatView`, or None once the episode has ended. Then `reward` is the env's reward and
    `outcome()` holds its verdict. The env does the parsing, the tool calls and the scoring, so
    the verdict is the one the env gives any agent.

    Args:
        env: A tooluse-gym env (`tooluse_gym.envs.settings.make_env`, or `gymnasium.make` of any of its ids).
        task_id: The task to play.
        seed: The episode's seed: ``reset(seed=...)`` and the per-request seeds of `ChatView.seed`
            (None: neither is seeded).
    """

    def __init__(self, env: gym.Env, task_id: str, seed: int | None = None) -> None:
        self.env = env
        self.task_id = task_id
        self.seed = seed
        self.observation: dict[str, Any] = {}
        self.reward: float | None = None
        self.info: dict[str, Any] = {}
        self.protocol: dict[str, Any] = {}
        self.steps = 0
        self.reset_info: dict[str, Any] = {}
        self.last_info: dict[str, Any] = {}

    @property
    def done(self) -> bool:
        """Whether the episode has ended (its reward and verdict are known)."""
        return self.reward is not None

    def reset(self) -> ChatView:
        """Start the episode on its task; the view's `new_messages` are the whole opening chat."""
        obs, info = self.env.reset(seed=self.seed, options={"task_id": self.task_id})
        self.observation = obs
        self.reward = None
        self.info = {}
        self.protocol = info["protocol"]
        self.steps = 0
        self.reset_info = self.last_info = info
        view = self._view(obs, info, [])
        return replace(view, new_messages=list(view.messages))

    def step(self, message: Mapping[str, Any]) -> ChatView | None:
        """Play one assistant message (``{"role": "assistant", "content": ..., "tool_calls": ...}``).

        Returns:
            The next view, or None when this message ended the episode.

        Raises:
            RuntimeError: The episode has already ended.
        """
        if self.done:
            raise RuntimeError(f"the episode on {self.task_id} has ended; reset() starts a new one")
        obs, reward, terminated, truncated, info = self.env.step(action_from_chat(message))
        self.steps += 1
        self.observation = obs
        self.last_info = info
        if terminated or truncated:
            self.reward = float(reward)
            self.info = info
            return None
        return self._view(obs, info, [dict(m) for m in info["env_messages"]])

    def outcome(self) -> dict[str, Any]:
        """The episode's result, JSON-able.

        Keys: ``task_id``, ``seed``, ``finished``, ``reward`` (None until finished), ``checker``
        (the env's ``info["checker"]``: ``valid``, ``error_type``, per-turn verdicts), ``steps``
        (assistant messages played) and ``protocol`` (the protocol card of the reset).
        """
        return {
            "task_id": self.task_id,
            "seed": self.seed,
            "finished": self.done,
            "reward": self.reward,
            "checker": self.info.get("checker"),
            "steps": self.steps,
            "protocol": self.protocol,
        }

    def _view(self, obs: Mapping[str, Any], info: Mapping[str, Any], new: list[dict[str, Any]]) -> ChatView:
        seed = None
        if self.seed is not None:
            seed = derive_seed(self.seed, self.task_id, info["turn"], info["steps_in_turn"])
        return ChatView(
            messages=openai_messages(obs["messages"]),
            tools=[dict(t) for t in obs["tools"]],
            new_messages=new,
            seed=seed,
        )
