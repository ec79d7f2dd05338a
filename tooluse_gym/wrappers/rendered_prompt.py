"""`RenderedPrompt`: the observation also carries `prompt`, rendered with a tokenizer's chat template."""

from __future__ import annotations

import warnings
from functools import lru_cache
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import gymnasium as gym
from gymnasium import spaces

from tooluse_gym.errors import DependencyNotInstalled, ToolUseGymError
from tooluse_gym.spaces import ChatText

MAX_PROMPT_CHARS = 50_000_000


RESOLVERS = "tooluse_gym.model_resolvers"
"""Entry-point group of functions ``name -> folder or hub id`` for short model names (the agents package
registers one for ``smollm2-135m`` and its siblings); the env package ships no model code of its own."""


def resolve_name(name: str) -> str:
    """A short model name as the installed resolvers give it, else the name unchanged (a folder or hub id)."""
    for entry in sorted(entry_points(group=RESOLVERS), key=lambda e: e.name):
        resolved = entry.load()(name)
        if resolved is not None:
            return str(resolved)
    return name


@lru_cache(maxsize=8)
def load_tokenizer(name: str) -> Any:
    """A transformers tokenizer for a local folder, a hub id already in the local cache, or ``smollm2-135m``."""
    try:
        from transformers import AutoTokenizer
    except ImportError as e:
        raise DependencyNotInstalled('rendering prompts needs transformers: pip install "tooluse-gym[hf]"') from e
    return AutoTokenizer.from_pretrained(resolve_name(name))


class ToolsNotShownWarning(ToolUseGymError, UserWarning):
    """The observation offers tools but the chat template has no place for them: the model never sees them.

    It happens with ``system_prompt="none"`` (or literal text without ``{functions}``), where the
    functions travel only in ``obs["tools"]``, and a template that does not render ``tools``
    (SmolLM2's, for one). Use a prompt that lists the functions (``strong``, ``bfcl``, text with
    ``{functions}``) or a chat template that renders ``tools``.
    """


def template_renders_tools(chat_template: Any) -> bool:
    """Whether a chat template (text, or a tokenizer's dict of named templates) refers to ``tools``."""
    if isinstance(chat_template, dict):
        chat_template = chat_template.get("tool_use") or chat_template.get("default")
    return isinstance(chat_template, str) and "tools" in chat_template


def warn_tools_not_shown(num_tools: int, *, stacklevel: int = 2) -> None:
    """Warn that ``num_tools`` offered tools are dropped by a chat template without a tools slot."""
    warnings.warn(
        f"{num_tools} tool(s) in the observation are not in the prompt: the chat template does not render "
        "`tools` and the system prompt does not list the functions (system_prompt='none' or literal text "
        "without {functions}), so the model sees no tools; use system_prompt='strong' or 'bfcl', "
        "or a chat template that renders tools",
        ToolsNotShownWarning,
        stacklevel=stacklevel + 1,
    )


def _template_text(chat_template: str | None) -> str | None:
    if chat_template is None or "{%" in chat_template or "{{" in chat_template:
        return chat_template
    return Path(chat_template).read_text()


class RenderedPrompt(gym.ObservationWrapper, gym.utils.RecordConstructorArgs):
    """Add ``prompt``: the messages rendered with the tokenizer's chat template, ready for generation.

    Tools are passed to the template when the observation has any and the template refers
    to ``tools``. `chat_template` (Jinja text or a file path) replaces the tokenizer's own.
    """

    def __init__(self, env: gym.Env, tokenizer: str, chat_template: str | None = None):
        gym.utils.RecordConstructorArgs.__init__(self, tokenizer=tokenizer, chat_template=chat_template)
        gym.ObservationWrapper.__init__(self, env)
        self.tokenizer = load_tokenizer(tokenizer)
        self.chat_template = _template_text(chat_template) or self.tokenizer.chat_template
        if not self.chat_template:
            raise ValueError(f"tokenizer {tokenizer!r} has no chat template; pass chat_template=")
        self._uses_tools = template_renders_tools(self.chat_template)
        inner = self.env.observation_space
        if not isinstance(inner, spaces.Dict):
            raise TypeError(f"RenderedPrompt needs a Dict observation space, got {type(inner).__name__}")
        self.observation_space = spaces.Dict({**inner.spaces, "prompt": ChatText(MAX_PROMPT_CHARS)})

    def render_prompt(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]] | None = None,
        *,
        add_generation_prompt: bool = True,
    ) -> str:
        """Render messages with this wrapper's chat template.

        Not named ``render``: that is `gymnasium.Env.render`, which this wrapper passes through.
        Tools the template cannot show raise a `ToolsNotShownWarning`.
        """
        if tools and not self._uses_tools:
            warn_tools_not_shown(len(tools))
        return self.tokenizer.apply_chat_template(
            messages,
            tools=tools if tools and self._uses_tools else None,
            chat_template=self.chat_template,
            tokenize=False,
            add_generation_prompt=add_generation_prompt,
        )

    def observation(self, observation: dict[str, Any]) -> dict[str, Any]:
        """The observation with ``prompt`` added: its messages and tools rendered by `render_prompt`."""
        return {**observation, "prompt": self.render_prompt(observation["messages"], observation["tools"])}


def prefix_breaks(prompts: list[str], completions: list[str]) -> list[int]:
    """Steps k whose next prompt does not start with ``prompts[k] + completions[k]``.

    Token-level multi-turn training needs an empty result: then the text the model
    generated at step k appears verbatim, right after the prompt it saw, in every later prompt.
    """
    return [k for k in range(len(prompts) - 1) if not prompts[k + 1].startswith(prompts[k] + completions[k])]
