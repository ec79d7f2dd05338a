"""`SystemPrompt`: the system message (and whether the tool list travels in it)."""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from tooluse_gym.prompts import system_prompt_spec


class SystemPrompt(gym.ObservationWrapper, gym.utils.RecordConstructorArgs):
    """Prepend a system message.

    - ``bfcl``: BFCL's prompting-mode prompt, built from bfcl_eval's own text, with the task's
      functions as indented JSON; the ``tools`` field is then empty.
    - ``strong``: our prompt (call format, planning, schema checks, error recovery, stop and
      summarize) with the functions one JSON doc per line; ``tools`` empty.
    - ``none``: no system message; the functions travel only in ``tools``.
    - any other text: used literally; a ``{functions}`` placeholder in it receives the function
      list (and ``tools`` is emptied), otherwise ``tools`` is kept.

    When the prompt carries the function list, the ``tools`` field cannot announce the functions
    a held-out turn adds, so this wrapper also rewrites the env's held-out notice into BFCL's
    prompting-mode one, which shows the new functions' docs.
    """

    def __init__(self, env: gym.Env, prompt: str = "bfcl", tool_format: str = "python"):
        gym.utils.RecordConstructorArgs.__init__(self, prompt=prompt, tool_format=tool_format)
        gym.ObservationWrapper.__init__(self, env)
        self.prompt = system_prompt_spec(prompt, tool_format)
        self._rendered: tuple[str, str | None, tuple[str, ...]] | None = None

    def observation(self, observation: dict[str, Any]) -> dict[str, Any]:
        task = self.env.unwrapped.task
        if self._rendered is None or self._rendered[0] != task.task_id:
            self._rendered = (task.task_id, self.prompt.render(task.functions), self._notices(task))
        _, text, notices = self._rendered
        if text is None:
            return observation
        messages = list(observation["messages"])
        if self.prompt.carries_tools and notices:
            messages = self._with_notices(messages, notices)
        tools = [] if self.prompt.carries_tools else observation["tools"]
        return {**observation, "messages": [{"role": "system", "content": text}, *messages], "tools": tools}

    @staticmethod
    def _notices(task: Any) -> tuple[str, ...]:
        """Prompting-mode notices of the task's turns without a user message (the base env's notices), in order."""
        from tooluse_gym.tasks import bfcl

        template = bfcl.holdout_notice_template(prompting=True)
        return tuple(
            template.replace("{functions}", str([dict(d) for d in task.held_out.get(t, ())]))
            for t in range(task.num_turns)
            if not task.turns[t]
        )

    def _with_notices(self, messages: list[dict[str, Any]], notices: tuple[str, ...]) -> list[dict[str, Any]]:
        plain = self.env.unwrapped.config.holdout_notice
        pending = iter(notices)
        out = []
        for m in messages:
            if m.get("role") == "user" and m.get("content") == plain:
                m = {**m, "content": next(pending, plain)}
            out.append(m)
        return out
