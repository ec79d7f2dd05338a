"""`SystemPrompt`: the system message (and whether the tool list travels in it)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import gymnasium as gym

from tooluse_gym.envs.base import task_env
from tooluse_gym.prompts import SystemPromptSpec, system_prompt_spec

RENDERED_TASKS = 4096
"""Tasks whose rendered prompt a `SystemPrompt` keeps (BFCL's single-turn entries: about 3.5 kB each)."""


class SystemPrompt(gym.ObservationWrapper, gym.utils.RecordConstructorArgs):
    """Prepend a system message (or put the prompt before the text of a task's own system message, as BFCL does).

    - ``bfcl``: BFCL's prompting-mode prompt, built from bfcl_eval's own text, with the task's
      functions as indented JSON; the ``tools`` field is then empty.
    - ``strong``: our prompt (call format, planning, schema checks, error recovery, stop and
      summarize) with the functions one JSON doc per line; ``tools`` empty.
    - ``none``: no system message; the functions travel only in ``tools``.
    - any other text: used literally; a ``{functions}`` placeholder in it receives the function
      list (and ``tools`` is emptied), otherwise ``tools`` is kept.

    `prompt` and `tool_format` are the knobs' values; `resolved` is the prompt they resolve to when
    the caller has it already (`tooluse_gym.envs.knobs.Knobs.prompt`, as the env builder passes it).

    When the prompt carries the function list, the ``tools`` field cannot announce the functions
    a held-out turn adds: the env builder (`tooluse_gym.envs.builder.build_env`) then gives the
    base env BFCL's prompting-mode held-out notice, which shows the new functions' docs. This
    wrapper only adds the message.
    """

    def __init__(
        self,
        env: gym.Env,
        prompt: str,
        tool_format: str,
        *,
        resolved: SystemPromptSpec | None = None,
    ):
        gym.utils.RecordConstructorArgs.__init__(self, prompt=prompt, tool_format=tool_format)
        gym.ObservationWrapper.__init__(self, env)
        self.prompt = resolved if resolved is not None else system_prompt_spec(prompt, tool_format)
        self._base = task_env(env)
        # task id -> its prompt text (immutable): the last `RENDERED_TASKS` tasks played, oldest dropped first
        self._rendered: dict[str, str | None] = {}

    def observation(self, observation: dict[str, Any]) -> dict[str, Any]:
        """The observation with the system message first (rendered once per task), unchanged under ``none``.

        ``tools`` is emptied when the prompt carries the function list.
        """
        task = self._base.task
        if task is None:
            task = self._base.episode_task()  # raises ResetNeeded
        try:
            text = self._rendered[task.task_id]
        except KeyError:
            text = self._render(task.task_id, task.functions)
        if text is None:
            return observation
        tools = [] if self.prompt.carries_tools else observation["tools"]
        messages = observation["messages"]
        shown = dict(observation)  # ``{**observation, "messages": ..., "tools": ...}`` without a dict in between
        if messages and messages[0]["role"] == "system":  # a task's own system message goes after ours, as BFCL does
            merged = {**messages[0], "content": text + "\n\n" + messages[0]["content"]}
            shown["messages"] = [merged, *messages[1:]]
        else:
            shown["messages"] = [{"role": "system", "content": text}, *messages]
        shown["tools"] = tools
        return shown

    def _render(self, task_id: str, functions: Sequence[Mapping[str, Any]]) -> str | None:
        if len(self._rendered) >= RENDERED_TASKS:
            del self._rendered[next(iter(self._rendered))]
        text = self._rendered[task_id] = self.prompt.render(functions)
        return text
