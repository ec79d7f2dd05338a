"""A typed OpenEnv client of `tooluse serve-env`: openenv-core's ``EnvClient`` over one WebSocket session.

    from tooluse_agents.integrations.openenv_client import ToolUseEnvClient

    with ToolUseEnvClient(base_url="http://127.0.0.1:8000").sync() as client:
        result = client.reset(seed=0, task_id="multi_turn_base_0", tool_format="json")
        result.observation.protocol                      # the protocol card
        while not result.done:
            result = client.step(my_model(result.observation.messages, result.observation.tools))
        result.reward, result.observation.checker        # the env's verdict

(``async with ToolUseEnvClient(...) as client: await client.reset(...)`` without ``.sync()``.) A step
takes a `ToolUseAction`, the assistant's text, or an OpenAI-shaped ``{"content", "tool_calls"}``
dict; a reset takes the server's reset arguments (`tooluse_agents.integrations.openenv_server`).
A refused request raises openenv's ``RuntimeError("Server error: ... (code: ...)")`` and the
session stays usable.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from openenv.core.client_types import StepResult
from openenv.core.env_client import EnvClient

from tooluse_agents.integrations.openenv_models import ToolUseAction, ToolUseObservation, ToolUseState

__all__ = ["ToolUseAction", "ToolUseEnvClient", "ToolUseObservation", "ToolUseState"]


class ToolUseEnvClient(EnvClient[ToolUseAction, ToolUseObservation, ToolUseState]):
    """One session of a tool-use env server; `sync()` gives the blocking form."""

    def _step_payload(self, action: ToolUseAction | str | Mapping[str, Any]) -> dict[str, Any]:
        return ToolUseAction.of(action).model_dump(exclude_none=True, exclude={"metadata"})

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[ToolUseObservation]:
        reward, done = payload.get("reward"), bool(payload.get("done", False))
        observation = ToolUseObservation(**payload.get("observation", {}), reward=reward, done=done)
        return StepResult(observation=observation, reward=reward, done=done)

    def _parse_state(self, payload: dict[str, Any]) -> ToolUseState:
        return ToolUseState(**payload)
