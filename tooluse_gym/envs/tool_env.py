"""`ToolUseEnv`: a multi-turn tool-calling task as a Gymnasium environment."""

from __future__ import annotations

import copy
import json
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
from gymnasium import spaces

from tooluse_gym.checking.multi_turn import (
    CheckResult,
    EpisodeChecker,
    LiveTruth,
    TruthTurn,
    TruthTurns,
    play_ground_truth,
)
from tooluse_gym.decoding.base import Decoder
from tooluse_gym.decoding.dispatch import decoder_for
from tooluse_gym.decoding.limits import MAX_MESSAGE_CHARS
from tooluse_gym.envs.base import TaskEnv, task_env
from tooluse_gym.envs.knobs import Knobs
from tooluse_gym.protocol import ProtocolCard
from tooluse_gym.spaces import AssistantAction, Conversation, ToolSchemas
from tooluse_gym.tasks.task import Task
from tooluse_gym.tools.runtime import BackendHooks, CallRecord, ToolRuntime
from tooluse_gym.tools.schemas import openai_tool
from tooluse_gym.tools.snapshots import InstanceSnapshots
from tooluse_gym.types import ParsedAction, StepRecord

"""The keys `ToolUseEnv.reset` understands in ``options``; any other is refused."""


@dataclass(frozen=True, kw_only=True)
class EnvConfig:
    """The base environment's configuration: its knobs, and the settings that are the env's own.

    Attributes:
        knobs: The knobs (`tooluse_gym.envs.knobs.Knobs`); the base env applies ``tool_format``,
            ``decoder``, ``strict_tools``, ``validate_args`` and ``max_steps_per_turn``, the
            wrappers the rest. ``decoder="bfcl"`` decodes and executes each message exactly as
            bfcl_eval does (`tooluse_gym.decoding.bfcl`: keyword arguments only, a message
            that fails to decode ends the turn, no argument validation), without eval.
        truth_cache_size: Tasks whose ground-truth replay is kept once they are played a
            second time (about 20 kB each for BFCL), and whose freshly loaded simulators are
            kept as snapshots to start later episodes from (`tooluse_gym.tools.snapshots`).
        holdout_notice: User message sent when held-out functions are added; ``{functions}``
            in it is replaced by the Python repr of their docs (BFCL's prompting mode). The
            builder picks BFCL's notice for the system prompt: the prompting-mode one (showing
            the new functions' docs) when the prompt carries the function list.
    """

    knobs: Knobs = field(default_factory=Knobs)
    truth_cache_size: int = 1024
    holdout_notice: str = "More functions are available now."


class ToolUseEnv(TaskEnv):
    """Multi-turn tool calling over a list of tasks, scored like BFCL's multi-turn checker.

    ## Description
    Each episode is one task: scripted user turns over stateful tool backends. The agent
    answers each user turn with assistant messages; a message with tool calls is executed
    (one *step*), a message without calls ends the turn and the next user turn is shown.

    ## Action Space
    `AssistantAction`: the assistant message as text, or an OpenAI-shaped dict
    ``{"content": str, "tool_calls": [...]}``. Any string is a valid action.

    ## Observation Space
    ``Dict(messages=Conversation, tools=ToolSchemas)``: the chat so far (user, assistant
    and ``tool`` messages) and the OpenAI tool schemas offered at this point.

    ## Rewards
    0.0 on every step but the last; at the end 1.0 if the checker marks the episode valid.

    ## Starting State
    `reset(seed=..., options={"task_id": ...})`: the given task, or one drawn with the seed.

    ## Episode End
    Terminates after the last user turn, or when more than `max_steps_per_turn` steps
    execute in one turn before the last (``multi_turn:force_terminated``).
    `info["checker"]` then holds ``valid``, ``error_type`` and per-turn verdicts, and
    `info["tooluse"]` the episode summary (``task_id``, ``reward``, ``turns``, ``steps``);
    ``info["episode"]`` is left free for `gymnasium.wrappers.RecordEpisodeStatistics`.
    """

    # gymnasium declares `metadata` an instance attribute (a property on wrappers): not a ClassVar here
    metadata: dict[str, Any] = {"render_modes": ["ansi"], "render_fps": 4}  # noqa: RUF012

    def __init__(
        self,
        tasks: Sequence[Task],
        backends: Mapping[str, type],
        *,
        config: EnvConfig | None = None,
        protocol: ProtocolCard,
        stateless_backends: frozenset[str] = frozenset(),
        hooks: BackendHooks | None = None,
        render_mode: str | None = None,
    ):
        if not tasks:
            raise ValueError("ToolUseEnv needs at least one task")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']}, got {render_mode!r}")
        self.config = config or EnvConfig()
        self.tasks = list(tasks)
        self._by_id = {t.task_id: i for i, t in enumerate(self.tasks)}
        self._backends = dict(backends)
        self._stateless = stateless_backends
        self._hooks = hooks or BackendHooks()
        self.protocol = protocol
        self._protocol_dict = protocol.to_dict()
        self._truth_cache: OrderedDict[str, tuple[TruthTurn, ...]] = OrderedDict()
        self._played_once: OrderedDict[str, None] = OrderedDict()
        # per task of this env (by id: `tasks` holds them): names offered from a turn on, and their tool
        # schemas (shared, never mutated)
        self._offered_cache: dict[tuple[int, int], frozenset[str]] = {}
        self._tools_cache: dict[tuple[int, frozenset[str]], list[dict[str, Any]]] = {}
        # tasks' freshly loaded simulators, to start their later episodes from
        self._snapshots = InstanceSnapshots(max_entries=2 * self.config.truth_cache_size)
        self._replay = False
        self.render_mode = render_mode
        self.action_space = AssistantAction(MAX_MESSAGE_CHARS)
        self.observation_space = spaces.Dict({"messages": Conversation(), "tools": ToolSchemas()})
        self.task: Task | None = None
        self._decoder: Decoder[ParsedAction] | None = None  # the episode's (`decoder_for`), set by reset
        self._done = True

    # --- Gymnasium API -------------------------------------------------------------------

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """Start an episode on ``options["task_id"]``, or on a task drawn with the seed, and show its first turn.

        `info` holds ``task_id``, ``turn`` and ``steps_in_turn`` (both 0), ``protocol`` (the protocol
        card with this seed) and ``task``, the `Task` played (in-process only: ground truth for scripted
        agents, the user turns for episode records). An unknown ``task_id``, or an option other than
        those in `tooluse_gym.envs.base.RESET_OPTIONS`, raises `ValueError`.
        """
        task = self.task = self.draw_task(seed, options)
        self._decoder = decoder_for(self.config.knobs, task)
        # a task's first episode loads its simulators; later ones start from snapshots of them
        key = task.task_id
        self._replay = key in self._truth_cache or key in self._played_once
        self.runtime = self._new_runtime(task)
        self.checker = EpisodeChecker(task, self._truth_for(task))
        self.messages: list[dict[str, Any]] = []
        self.call_records: dict[str, CallRecord] = {}
        self.step_log: list[StepRecord] = []
        self.turn = 0
        self.steps_in_turn = 0
        self.total_steps = 0
        self._done = False
        self._result: CheckResult | None = None
        self._offered = self._offered_names(0)
        self._tools: list[dict[str, Any]] | None = None
        self._present_turn()
        info = {"task_id": task.task_id, "turn": 0, "steps_in_turn": 0, "protocol": self._protocol(seed), "task": task}
        return self._obs(), info

    def step(self, action: Any):
        """Decode one assistant message, execute its calls, or end the user turn when it has none.

        `info` says what happened: ``step_record`` (a `StepRecord`: the message's text, the calls
        decoded from it, their results, the parse failure), ``env_messages`` (what the env answered:
        tool results, or the next turn's user messages), ``task_id``, ``turn`` and ``steps_in_turn``
        (where the episode stands now: the next message answers them), ``parse_failure`` when decoding
        failed, ``step`` (executing steps so far in the turn) after calls, ``turn_verdict`` when a turn
        ends, and ``checker`` and ``tooluse`` at the end. Raises `gymnasium.error.ResetNeeded` after the end.
        """
        if self._done:
            raise gym.error.ResetNeeded("the episode has ended; call reset() before step()")
        task = self.episode_task()
        decoder = self._decoder
        assert decoder is not None  # reset sets it with the task
        parsed = decoder.decode(action)
        self.messages.append(assistant_message(action, parsed, self.turn, self.steps_in_turn))
        answered = len(self.messages)
        info: dict[str, Any] = {"task_id": task.task_id, "turn": self.turn}
        if parsed.failure:
            info["parse_failure"] = parsed.failure
        turn = self.turn
        results = self._execute(parsed) if parsed.calls else ()
        record = StepRecord(turn, parsed.content, parsed.calls, results, parsed.failure)
        self.step_log.append(record)
        info["step_record"] = record
        if parsed.calls:
            info["step"] = self.steps_in_turn
            if self.steps_in_turn <= self.config.knobs.max_steps_per_turn:
                return self._answer(info, answered, 0.0, False)
            if self.turn < task.num_turns - 1:
                self.checker.force_terminate(self.turn)
                return self._finish(info, answered)
        info["turn_verdict"] = self.checker.end_turn(self.turn, self.runtime, self.steps_in_turn).to_dict()
        if self.turn == task.num_turns - 1:
            return self._finish(info, answered)
        self.turn += 1
        self.steps_in_turn = 0
        self._present_turn()
        info["turn"] = self.turn
        return self._answer(info, answered, 0.0, False)

    def _shown_verdict(self) -> Any:
        return self._result

    def close(self) -> None:
        """End the current episode: `step` needs a `reset` again."""
        self._done = True

    # --- internals -------------------------------------------------------------------------

    def _new_runtime(self, task: Task) -> ToolRuntime:
        return ToolRuntime(
            task,
            self._backends,
            self._stateless,
            validate=self.config.knobs.validates_args,
            hooks=self._hooks,
            snapshots=self._snapshots if self._replay else None,
        )

    def _protocol(self, seed: int | None) -> dict[str, Any]:
        """A copy of the protocol card for `info`, with this reset's seed."""
        card = self._protocol_dict
        return {**card, "seed": seed, "extra": copy.deepcopy(card["extra"]), "task_data": dict(card["task_data"])}

    def _truth_for(self, task: Task) -> TruthTurns:
        """A task's first episode replays the ground truth live; later ones share a cached copy."""
        key = task.task_id
        truth = self._truth_cache.get(key)
        if truth is not None:
            self._truth_cache.move_to_end(key)
            return truth
        if key not in self._played_once:
            self._played_once[key] = None
            if len(self._played_once) > 4 * self.config.truth_cache_size:
                self._played_once.popitem(last=False)
            return LiveTruth(task, self._new_runtime(task))
        truth = self._truth_cache[key] = play_ground_truth(task, self._new_runtime(task))
        if len(self._truth_cache) > self.config.truth_cache_size:
            self._truth_cache.popitem(last=False)
        return truth

    def _present_turn(self) -> None:
        task = self.episode_task()
        if self.turn in task.held_out:
            self._offered = self._offered_names(self.turn)
            self._tools = None
        user = task.turns[self.turn]
        if user:
            self.messages.extend(dict(m) for m in user)
        else:
            docs = str([dict(d) for d in task.held_out.get(self.turn, ())])
            self.messages.append({"role": "user", "content": self.config.holdout_notice.replace("{functions}", docs)})

    def _execute(self, parsed: ParsedAction) -> tuple[str, ...]:
        offered = self._offered if self.config.knobs.strict_tools else None
        if offered is not None:
            offered = offered - frozenset(self.episode_task().excluded_functions)
        records = self.runtime.execute(parsed.calls, offered)
        self.steps_in_turn += 1
        self.total_steps += 1
        self.checker.record(r.result for r in records)
        return self._show_results(records)

    def _offered_names(self, turn: int) -> frozenset[str]:
        task = self.episode_task()
        key = (id(task), turn)
        names = self._offered_cache.get(key)
        if names is None:
            names = self._offered_cache[key] = task.offered_names(turn)
        return names

    def _obs(self) -> dict[str, Any]:
        if self._tools is None:
            task = self.episode_task()
            key = (id(task), self._offered)
            tools = self._tools_cache.get(key)
            if tools is None:
                offered = self._offered
                tools = [openai_tool(d) for d in task.all_functions() if d["name"] in offered]
                self._tools_cache[key] = tools
            self._tools = tools
        return {"messages": list(self.messages), "tools": list(self._tools)}

    @property
    def result(self) -> CheckResult | None:
        """The checker's verdict once the episode has ended."""
        return self._result

    def _answer(self, info: dict[str, Any], answered: int, reward: float, terminated: bool):
        """The step's return: the observation, and `info` completed with where the episode stands."""
        info["steps_in_turn"] = self.steps_in_turn
        info["env_messages"] = [dict(m) for m in self.messages[answered:]]
        return self._obs(), reward, terminated, False, info

    def _finish(self, info: dict[str, Any], answered: int):
        self._done = True
        self._result = self.checker.result()
        reward = 1.0 if self._result.valid else 0.0
        info["checker"] = self._result.to_dict()
        info["tooluse"] = {
            "task_id": self.episode_task().task_id,
            "reward": reward,
            "turns": self.turn + 1,
            "steps": self.total_steps,
        }
        return self._answer(info, answered, reward, True)


def assistant_message(action: Any, parsed: ParsedAction, turn: int, steps_in_turn: int) -> dict[str, Any]:
    """The assistant message an action adds: its content and reasoning, and its ``tool_calls`` if it has them."""
    message: dict[str, Any] = {"role": "assistant", "content": parsed.content}
    if isinstance(action, Mapping) and isinstance(action.get("reasoning_content"), str):
        message["reasoning_content"] = action["reasoning_content"]
    if not isinstance(action, Mapping) or not action.get("tool_calls"):
        return message
    message["tool_calls"] = [
        {
            "id": c.call_id or f"call_{turn}_{steps_in_turn + 1}_{i}",
            "type": "function",
            "function": {"name": c.name, "arguments": json.dumps(dict(c.arguments))},
        }
        for i, c in enumerate(parsed.calls)
    ]
    return message


def tool_use_env(env: gym.Env) -> ToolUseEnv:
    """The `ToolUseEnv` under `env`'s wrappers (``env.unwrapped``); `TypeError` if it is another env."""
    base = env.unwrapped
    if not isinstance(base, ToolUseEnv):
        raise TypeError(f"expected a tooluse-gym env, got {type(base).__name__}")
    return base


def task_ids(env: gym.Env) -> list[str]:
    """The ids of the tasks a tooluse-gym env plays (multi- or single-turn), in order (`TypeError` for another env)."""
    return [t.task_id for t in task_env(env).tasks]


def protocol_card(env: gym.Env) -> ProtocolCard:
    """The protocol card a tooluse-gym env issues at every reset (before a reset sets its seed)."""
    return task_env(env).protocol


@dataclass(frozen=True)
class PlayedMessages:
    """What `play_messages` saw: the last step's reward and flags, every step's info, and the reset's info."""

    reward: float
    terminated: bool
    truncated: bool
    infos: tuple[dict[str, Any], ...]
    reset_info: dict[str, Any] = field(default_factory=dict)


def play_messages(env: gym.Env, task_id: str, messages: Iterable[Any], seed: int = 0) -> PlayedMessages:
    """Score a recorded transcript: play `messages` (actions, e.g. the assistant's texts) on task `task_id`.

    Stops when the episode ends; messages left over are not played (``len(infos)`` says how many were).
    """
    _, reset_info = env.reset(seed=seed, options={"task_id": task_id})
    reward, terminated, truncated, infos = 0.0, False, False, []
    for message in messages:
        _, step_reward, terminated, truncated, info = env.step(message)
        reward = float(step_reward)
        infos.append(info)
        if terminated or truncated:
            break
    return PlayedMessages(reward, terminated, truncated, tuple(infos), reset_info)
