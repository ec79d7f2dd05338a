"""verifiers (PrimeIntellect) environments over tooluse-gym's envs, on verifiers 0.4's ``verifiers.v1`` stack.

    from tooluse_agents.integrations.verifiers import load_environment

    env = load_environment("ToolUse-MultiTurn-v0", category="base", limit=5, seed=0,
                           system_prompt="strong", tool_format="json")
    # then verifiers' own machinery runs it: `vf-eval`, prime-rl, or
    #     async with env.serving():
    #         episode = await env.run_episode(task, vf.ModelContext(model=..., client=...))

How one verifiers rollout plays one env episode:

- `ToolUseTaskset` yields one task per env task (``data.id`` is the task id) with no prompt: the
  env opens the conversation.
- `ToolUseVerifiersEnv.run` plays the env as the run's user, as verifiers' own TextArena and
  OpenEnv tasksets play their game engines: it resets a tooluse-gym env on the task, opens the
  interaction with the env's first chat, steps the env with each assistant message and answers
  with the env's next messages (tool results, or the next user message) until the env ends the
  episode.
- `ToolUseHarness` makes one model request per turn, through verifiers' interception endpoint
  (which records the trace), carrying the env's whole chat and the tools the env offers at that
  moment; it runs no tool: the env does, exactly as for any other agent.
- `ToolUseTask.valid` is the reward: the env's own (1.0 when the checker marks the episode
  valid). The verdict, the protocol card and the step count are on ``trace.info["tooluse"]``.

verifiers finds an environment by importing a top-level module named by the taskset id (a dotted
id cannot be imported by its loader), so `load_environment` registers this module under
`PLUGIN_ID` in the running process. In other processes (``vf-eval``, env servers) the packages
under ``environments/`` name the modules for the env ids: ``vf-eval ToolUse-MultiTurn-v0``
(`tooluse_agents.integrations.verifiers_hub`).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from typing import Any

import gymnasium as gym
from pydantic import Field, model_validator

from tooluse_agents.integrations.chat_episode import ChatEpisode, ChatView, task_ids_of
from tooluse_gym.envs import MULTI_TURN_ID
from tooluse_gym.envs.knobs import Knobs, optional_knobs_model
from tooluse_gym.envs.settings import SETTINGS_ENV_IDS, make_env
from tooluse_gym.errors import DependencyNotInstalled

try:
    import httpx
    import verifiers.v1 as vf
except ImportError as e:
    raise DependencyNotInstalled(
        'the verifiers integration needs verifiers 0.4 (Python >= 3.11): pip install "tooluse-gym[verifiers]"'
    ) from e

PLUGIN_ID = "tooluse_gym_verifiers"
"""The taskset (and harness) id verifiers knows this module by."""
INFO_KEY = "tooluse"
"""The key of ``trace.info`` holding the env's outcome (`ChatEpisode.outcome`)."""

__all__ = [
    "INFO_KEY",
    "PLUGIN_ID",
    "KnobsConfig",
    "ToolUseEnvConfig",
    "ToolUseHarness",
    "ToolUseHarnessConfig",
    "ToolUseState",
    "ToolUseTask",
    "ToolUseTaskset",
    "ToolUseTasksetConfig",
    "ToolUseVerifiersEnv",
    "load_environment",
    "to_chat_message",
]


# --- configuration (``--env.taskset.*``) ---------------------------------------------------


_KnobFields = optional_knobs_model(vf.BaseConfig, "_KnobFields", exclude=("tokenizer", "chat_template"))


class KnobsConfig(_KnobFields):  # type: ignore[misc,valid-type]
    """The protocol knobs of `tooluse_gym.envs.knobs.Knobs`, under ``--env.taskset.knobs.*``: one field per knob.

    The fields are generated from `Knobs` (`optional_knobs_model`), each None by default: None
    keeps the env id's default. ``tokenizer`` and ``chat_template`` are not here: the model's
    server applies its own chat template.
    """

    @model_validator(mode="after")
    def _check_knobs(self) -> KnobsConfig:
        Knobs().with_defaults(**self.given())  # raises ValueError naming the knob and its values
        return self

    def given(self) -> dict[str, Any]:
        """The knobs that are set, for `make_env`."""
        return self.model_dump(exclude_none=True)


class ToolUseTasksetConfig(vf.TasksetConfig):
    """Which env, which of its tasks, and its protocol (``--env.taskset.*``)."""

    env_id: str = MULTI_TURN_ID
    """``ToolUse-MultiTurn-v0`` (BFCL multi-turn) | ``ToolUse-SingleTurn-v0`` (BFCL single-turn) |
    ``ToolUse-Scenario-v0`` (scenario files)."""
    category: str | None = None
    """BFCL category or group, as ``gym.make`` takes it (multi-turn ``base`` ... ``all``; single-turn
    ``simple_python`` ... ``single_turn``). Unset: every category when `task_ids` are given (they name
    their categories), else ``base`` (multi-turn) or ``simple_python`` (single-turn)."""
    scenario_path: list[str] = Field(default_factory=list)
    """Scenario files or folders (``ToolUse-Scenario-v0``)."""
    task_ids: list[str] | None = None
    """Only these tasks (None: every task of the category or the scenario files)."""
    limit: int | None = Field(None, ge=1)
    """The first `limit` tasks only."""
    seed: int | None = None
    """Seeds each episode's reset and each model request as ``tooluse eval --seeds`` does (None:
    unseeded). Every rollout of a task then samples with the same seeds: leave it None for groups
    of different rollouts (``-r``)."""
    knobs: KnobsConfig = KnobsConfig()
    """The protocol knobs."""

    @model_validator(mode="after")
    def _check(self) -> ToolUseTasksetConfig:
        if self.env_id not in SETTINGS_ENV_IDS:
            raise ValueError(f"env_id must be one of {', '.join(SETTINGS_ENV_IDS)}; got {self.env_id!r}")
        if self.system_prompt is not None:
            raise ValueError(
                "the system prompt is a protocol knob of the env: set knobs.system_prompt (literal text works) "
                "instead of system_prompt (a file)"
            )
        return self

    def make_env(self) -> gym.Env:
        """A fresh env with these settings."""
        return make_env(
            self.env_id,
            category=self.category,
            scenario_path=self.scenario_path,
            task_ids=self.task_ids,
            **self.knobs.given(),
        )


# --- task and taskset ------------------------------------------------------------------------


class ToolUseState(vf.State):
    """One rollout's next model request, set by `ToolUseVerifiersEnv` and sent by `ToolUseHarness`."""

    chat: list[dict[str, Any]] = Field(default_factory=list)
    """The env's whole chat, in the chat-completions shape (`ChatView.messages`)."""
    tools: list[dict[str, Any]] = Field(default_factory=list)
    """The tool schemas the env offers now (empty: the functions are in the system prompt)."""
    request_seed: int | None = None
    """The request's ``seed`` (None: unseeded)."""


class ToolUseTask(vf.Task[vf.TaskData, ToolUseState]):
    """One env task; ``data.id`` is its task id. The reward is the env's."""

    @property
    def key(self) -> str:
        """The env task id: stable across runs and selections."""
        return self.data.id or self.hash

    @vf.reward(weight=1.0)
    async def valid(self, trace: vf.Trace) -> float:
        """The env's reward: 1.0 when its checker marks the episode valid, else 0.0.

        Raises:
            vf.TaskError: The env did not end the episode (the exchange stopped first: a verifiers
                limit, a timeout, a model error), so there is no verdict to report.
        """
        outcome = trace.info.get(INFO_KEY)
        if not outcome or not outcome["finished"]:
            raise vf.TaskError(
                f"the episode on {self.data.id} did not finish (stop: {trace.stop_condition}); it has no verdict"
            )
        return float(outcome["reward"])


class ToolUseTaskset(vf.Taskset[ToolUseTask, ToolUseTasksetConfig]):
    """The env's tasks, in the env's order: one verifiers task each, opened by the env (no prompt)."""

    def load(self) -> Iterator[ToolUseTask]:
        """One task per env task id (the first `limit` ones when set)."""
        env = self.config.make_env()
        try:
            ids = task_ids_of(env)
        finally:
            env.close()
        if self.config.limit is not None:
            ids = ids[: self.config.limit]
        for task_id in ids:
            yield ToolUseTask(vf.TaskData(id=task_id, name=task_id), self.config.task)


# --- harness: one model request per turn ---------------------------------------------------------


class ToolUseHarnessConfig(vf.HarnessConfig):
    """The harness's knobs (``--env.agent.harness.*``)."""

    request_timeout_s: float = Field(600.0, gt=0)
    """Seconds one model request may take."""


class ToolUseHarness(vf.Harness[ToolUseHarnessConfig]):
    """Each turn, one chat-completions request with the env's chat and tools; the env runs the tools.

    The request goes to the rollout's interception endpoint, which forwards it to the model
    (adding the run's model and sampling settings) and records it on the trace. The chat is the
    env's own (`ToolUseState.chat`), not the trace's transcript, so every protocol knob holds:
    a context template or stripped reasoning rewrites earlier messages, which verifiers records
    as a new branch of the trace.
    """

    APPENDS_SYSTEM_PROMPT = True
    EXECUTES_CODE = False
    NEEDS_CONTAINER = False

    async def launch(
        self,
        ctx: vf.ModelContext,
        trace: vf.Trace,
        runtime: vf.Runtime,
        endpoint: str,
        secret: str,
        mcp_urls: dict[str, str],
        data: vf.TaskData,
    ) -> vf.ProgramResult:
        """Send the env's current request; the interception records the model's answer on the trace.

        Raises:
            httpx.HTTPStatusError: The interception refused the request or the model call failed
                (verifiers records the cause on the trace).
        """
        state = _state(trace)
        body: dict[str, Any] = {"model": ctx.model, "messages": state.chat}
        if state.tools:
            body["tools"] = state.tools
        if state.request_seed is not None:
            body["seed"] = state.request_seed
        async with httpx.AsyncClient(timeout=self.config.request_timeout_s) as client:
            response = await client.post(
                endpoint.rstrip("/") + "/chat/completions",
                json=body,
                headers={"Authorization": f"Bearer {secret}"},
            )
        response.raise_for_status()
        return vf.ProgramResult(exit_code=0, stdout="", stderr="")

    async def resume(
        self,
        ctx: vf.ModelContext,
        trace: vf.Trace,
        runtime: vf.Runtime,
        endpoint: str,
        secret: str,
        mcp_urls: dict[str, str],
        data: vf.TaskData,
        messages: list[Any],
        tool_interception_url: str | None = None,
    ) -> vf.ProgramResult:
        """The next turn: the env's request again (the turn's `messages` are already part of its chat)."""
        return await self.launch(ctx, trace, runtime, endpoint, secret, mcp_urls, data)


# --- the env: plays a tooluse-gym env as the run's user --------------------------------------------


class ToolUseEnvConfig(vf.EnvConfig):
    """The env's config: one ``agent`` seat, on the local subprocess runtime (the harness runs no code)."""

    agent: vf.AgentConfig = vf.AgentConfig(runtime=vf.SubprocessConfig())
    """The policy under evaluation or training (``--env.agent.*``)."""


class ToolUseVerifiersEnv(vf.Env[ToolUseEnvConfig]):
    """Each episode resets a tooluse-gym env on the task and plays it with the ``agent`` seat.

    The gym envs are kept for later episodes (their task and ground-truth caches make later
    resets fast); one env plays one episode at a time.
    """

    def __init__(self, config: ToolUseEnvConfig) -> None:
        super().__init__(config)
        self._idle: list[gym.Env] = []

    async def run(self, task: vf.Task, agents: vf.Agents) -> None:
        """Play one episode of `task` (its ``data.id``) and record the env's outcome on the trace."""
        settings = self.config.taskset
        if not isinstance(settings, ToolUseTasksetConfig):
            raise TypeError(f"expected a ToolUseTasksetConfig, got {type(settings).__name__}")
        if task.data.id is None:
            raise ValueError("a tooluse task names its env task in data.id")
        env = self._idle.pop() if self._idle else settings.make_env()
        try:
            await self._play(ChatEpisode(env, task.data.id, settings.seed), task, agents.agent)
        finally:
            self._idle.append(env)

    async def stop(self) -> None:
        """Close the kept gym envs."""
        while self._idle:
            self._idle.pop().close()

    async def _play(self, episode: ChatEpisode, task: vf.Task, agent: vf.Agent) -> None:
        view: ChatView | None = episode.reset()
        async with agent.interaction(task) as interaction:
            trace = interaction.trace
            state = _state(trace)
            try:
                while view is not None:
                    state.chat, state.tools, state.request_seed = view.messages, view.tools, view.seed
                    segment = await interaction.turn(view.new_messages)
                    if segment.terminated:
                        break
                    view = episode.step(to_chat_message(_last_reply(segment)))
            finally:
                # before the interaction closes: its scoring reads the outcome
                trace.info[INFO_KEY] = episode.outcome()


def _state(trace: vf.Trace) -> ToolUseState:
    state = trace.state
    if not isinstance(state, ToolUseState):
        raise vf.TaskError(f"expected the trace of a ToolUseTask (ToolUseState), got {type(state).__name__}")
    return state


def _last_reply(segment: vf.Segment) -> vf.AssistantMessage:
    replies = [m for m in segment.messages if isinstance(m, vf.AssistantMessage)]
    if not replies:
        raise vf.HarnessError("the turn produced no assistant message")
    return replies[-1]


def to_chat_message(message: vf.AssistantMessage) -> dict[str, Any]:
    """A verifiers assistant message in the chat-completions shape `ChatEpisode.step` takes."""
    wire: dict[str, Any] = {"role": "assistant", "content": message.content or ""}
    if message.tool_calls:
        wire["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in message.tool_calls
        ]
    return wire


def load_environment(
    env_id: str = MULTI_TURN_ID,
    *,
    category: str | None = None,
    scenario_path: str | Sequence[str] = (),
    task_ids: Sequence[str] | None = None,
    limit: int | None = None,
    seed: int | None = None,
    **knobs: Any,
) -> ToolUseVerifiersEnv:
    """A verifiers environment over a tooluse-gym env id, built through verifiers' own loader.

    Registers this module as the verifiers plugin `PLUGIN_ID` in this process first.

    Args:
        env_id: ``ToolUse-MultiTurn-v0``, ``ToolUse-SingleTurn-v0`` (BFCL) or ``ToolUse-Scenario-v0``
            (scenario files).
        category: The BFCL category or group, as ``gym.make`` takes it; unset: every category when
            `task_ids` are given, else ``base`` (multi-turn) or ``simple_python`` (single-turn).
        scenario_path: Scenario files or folders, for ``ToolUse-Scenario-v0``.
        task_ids: Only these tasks.
        limit: Only the first `limit` tasks.
        seed: Seed of each episode and of its model requests (`ToolUseTasksetConfig.seed`).
        **knobs: Protocol knobs (`KnobsConfig`): ``template``, ``reasoning``, ``system_prompt``,
            ``tool_format``, ``tool_results``, ``decoder``, ``strict_tools``, ``validate_args``,
            ``max_steps_per_turn``.

    Returns:
        The environment; its ``taskset`` yields the tasks.

    Raises:
        pydantic.ValidationError: An unknown knob or a value a knob does not take.
    """
    sys.modules.setdefault(PLUGIN_ID, sys.modules[__name__])
    paths = [scenario_path] if isinstance(scenario_path, str) else [str(p) for p in scenario_path]
    taskset: dict[str, Any] = {
        "id": PLUGIN_ID,
        "env_id": env_id,
        "category": category,
        "scenario_path": paths,
        "task_ids": None if task_ids is None else list(task_ids),
        "limit": limit,
        "seed": seed,
        "knobs": dict(knobs),
    }
    env = vf.load_environment(vf.resolve_env_config({"taskset": taskset}))
    if not isinstance(env, ToolUseVerifiersEnv):
        raise TypeError(f"verifiers loaded {type(env).__name__} for {PLUGIN_ID}; another module holds that name")
    return env
