"""A typed OpenEnv client of `tooluse serve-env`: openenv-core's ``EnvClient`` over one WebSocket session.

    from tooluse_gym.server.client import ToolUseEnvClient

    with ToolUseEnvClient(base_url="http://127.0.0.1:8000").sync() as client:
        result = client.reset(seed=0, task_id="multi_turn_base_0", tool_format="json")
        result.observation.protocol                      # the protocol card
        while not result.done:
            result = client.step(my_model(result.observation.messages, result.observation.tools))
        result.reward, result.observation.checker        # the env's verdict

(``async with ToolUseEnvClient(...) as client: await client.reset(...)`` without ``.sync()``.) A step
takes a `ToolUseAction`, the assistant's text, or an OpenAI-shaped ``{"content", "tool_calls"}``
dict; a reset takes the server's reset arguments (`tooluse_gym.server.server`).
A refused request raises openenv's ``RuntimeError("Server error: ... (code: ...)")`` and the
session stays usable. A session the server ended (it stopped or restarted, or closed the connection
over a message too big) raises `SessionLost`, a ``ConnectionError`` that says so: the episode is
gone, and the next ``reset`` connects again (a new session). A server that cannot be reached raises
openenv's ``ConnectionError("Failed to connect to ...")``.

The client asks for the lighter wire (``observation="delta"`` at reset, `tooluse_gym.server.wire`):
after the reset each step brings only what changed, and the client rebuilds the whole observation,
so ``result.observation`` holds the same messages, tools and prompt as a whole one. A delta that
does not follow the last observation raises `WireGap` rather than build a wrong chat.
``ToolUseEnvClient(url, observation="full")`` (or ``reset(..., observation="full")``) asks for
whole observations instead: the form a server from before the option (it refuses the key) needs.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

from openenv.core.client_types import StepResult
from openenv.core.env_client import EnvClient
from websockets.exceptions import ConnectionClosed

from tooluse_gym.errors import ToolUseGymError
from tooluse_gym.server.models import ToolUseAction, ToolUseObservation, ToolUseState
from tooluse_gym.server.wire import OBSERVATION_MODES, DeltaDecoder, WireGap

__all__ = ["SessionLost", "ToolUseAction", "ToolUseEnvClient", "ToolUseObservation", "ToolUseState", "WireGap"]


class SessionLost(ToolUseGymError, ConnectionError):
    """The server ended the session (it stopped, restarted or closed the connection): its episode is lost."""


class ToolUseEnvClient(EnvClient[ToolUseAction, ToolUseObservation, ToolUseState]):
    """One session of a tool-use env server; `sync()` gives the blocking form.

    Args:
        base_url: The server's URL (``http://`` or ``ws://``).
        observation: ``"delta"`` (default: steps send what changed, rebuilt here) or ``"full"``.
        **kwargs: openenv's ``EnvClient`` arguments (timeouts, message size, ...).
    """

    def __init__(self, base_url: str, *, observation: str = "delta", **kwargs: Any):
        if observation not in OBSERVATION_MODES:
            raise ValueError(f"observation must be one of {', '.join(OBSERVATION_MODES)}, got {observation!r}")
        super().__init__(base_url, **kwargs)
        self.observation_mode = observation
        self._decoder = DeltaDecoder()

    async def reset(self, **kwargs: Any) -> StepResult[ToolUseObservation]:
        """Start an episode (the server's reset arguments); connects first when the last session was lost."""
        kwargs.setdefault("observation", self.observation_mode)  # a reset's observation starts the rebuild afresh
        async with self._session():
            return await super().reset(**kwargs)

    async def step(self, action: Any, **kwargs: Any) -> StepResult[ToolUseObservation]:
        """Play the assistant's message (a `ToolUseAction`, text, or an OpenAI-shaped dict)."""
        async with self._session():
            return await super().step(action, **kwargs)

    async def state(self) -> ToolUseState:
        """Where the session's episode stands."""
        async with self._session():
            return await super().state()

    @asynccontextmanager
    async def _session(self) -> AsyncIterator[None]:
        try:
            yield
        except ConnectionClosed as e:
            said = await self._last_error()  # e.g. CAPACITY_REACHED: sent just before the server closed
            await self.disconnect()  # the next reset connects again: a new session
            self._decoder.forget()
            close = e.rcvd or e.sent
            why = f"code {close.code}{f': {close.reason}' if close.reason else ''}" if close else "no close frame"
            if said is not None:
                why = f"{said.get('message', '')} (code: {said.get('code', 'UNKNOWN')})"
            raise SessionLost(
                f"the env server at {self._ws_url} ended this session ({why}): its episode is lost; "
                "a reset starts a new session"
            ) from e

    async def _last_error(self) -> dict[str, Any] | None:
        """The error message the server sent before it closed the connection, if one is still unread."""
        try:
            message = json.loads(await asyncio.wait_for(self._ws.recv(), timeout=1.0))
        except (ConnectionClosed, TimeoutError, asyncio.TimeoutError, ValueError, AttributeError):
            return None
        return message.get("data") if isinstance(message, dict) and message.get("type") == "error" else None

    def _step_payload(self, action: ToolUseAction | str | Mapping[str, Any]) -> dict[str, Any]:
        return ToolUseAction.of(action).model_dump(exclude_none=True, exclude={"metadata"})

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[ToolUseObservation]:
        reward, done = payload.get("reward"), bool(payload.get("done", False))
        observation = self._decoder.decode(
            ToolUseObservation(**payload.get("observation", {}), reward=reward, done=done)
        )
        return StepResult(observation=observation, reward=reward, done=done)

    def _parse_state(self, payload: dict[str, Any]) -> ToolUseState:
        return ToolUseState(**payload)
