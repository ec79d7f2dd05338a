"""`SingleTurnEnv`: a BFCL single-turn entry as a one-step Gymnasium environment."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

import gymnasium as gym
from gymnasium import spaces

from tooluse_gym.checking import languages
from tooluse_gym.checking.single_turn import AstVerdict, verdict
from tooluse_gym.decoding.base import AstDecoded, Decoder
from tooluse_gym.decoding.dispatch import decoder_for
from tooluse_gym.decoding.json_values import json_copy
from tooluse_gym.decoding.limits import MAX_MESSAGE_CHARS
from tooluse_gym.envs.base import TaskEnv
from tooluse_gym.envs.knobs import Knobs
from tooluse_gym.prompt_formats import PromptFormat
from tooluse_gym.protocol import ProtocolCard
from tooluse_gym.spaces import AssistantAction, Conversation, ToolSchemas
from tooluse_gym.tasks.bfcl_single_turn import SingleTurnTask
from tooluse_gym.tasks.task import Task
from tooluse_gym.tools.schemas import openai_tool
from tooluse_gym.types import StepRecord

FIXED_KNOBS = ("tool_results", "strict_tools", "validate_args", "max_steps_per_turn")
"""Knobs about executing calls: single-turn executes nothing, so only their defaults are accepted."""


def resolve_single_turn_knobs(knobs: Knobs, env_id: str) -> Knobs:
    """The knobs a single-turn env plays under: `validate_args` unset is off; a knob that cannot apply is refused.

    Nothing executes, so nothing is validated before a call: BFCL's checker judges the arguments,
    under either decoder (the card says ``validate_args: false``; the ``lenient`` decoder's default
    elsewhere is on). Then `check_single_turn_knobs`.
    """
    if knobs.validate_args is None:
        knobs = dataclasses.replace(knobs, validate_args=False)
    check_single_turn_knobs(knobs, env_id)
    return knobs


def check_single_turn_knobs(knobs: Knobs, env_id: str) -> None:
    """Refuse knobs that cannot apply to one message judged without executing anything (`ValueError`).

    The knobs about executing calls (`FIXED_KNOBS`) keep the defaults of `Knobs` (a card never
    records a value that changed nothing), and ``decoder="lenient"`` takes no ``prompt_format``
    but those whose calls are a bare Python list (the others are decoded in BFCL's return format).
    """
    defaults = Knobs()
    for knob in FIXED_KNOBS:
        value = knobs.validates_args if knob == "validate_args" else getattr(knobs, knob)
        default = defaults.validates_args if knob == "validate_args" else getattr(defaults, knob)
        if value != default:
            raise ValueError(
                f"{env_id} executes no call in a single-turn task, so {knob} cannot apply: leave it at "
                f"{default!r}, got {value!r}"
            )
    lenient_format = knobs.decoder == "lenient" and knobs.prompt_format is not None
    if lenient_format and not PromptFormat.parse(str(knobs.prompt_format)).python_calls:
        raise ValueError(
            f"{env_id}: prompt_format {knobs.prompt_format!r} asks for calls in its own return format, which "
            "BFCL's decoder for it reads (decoder='bfcl'); decoder='lenient' reads Python call lists, so it takes "
            "only the configurations with ret_fmt=python&tool_call_tag=False"
        )


class SingleTurnEnv(TaskEnv):
    """One request, one assistant message, scored like BFCL's single-turn evaluation.

    ## Description
    Each episode is one BFCL single-turn entry: the request (one or more messages) and the
    functions offered. The agent's one message is decoded as BFCL's handlers decode it
    (``decoder="bfcl"``: `tooluse_gym.decoding.bfcl_ast`) or by the lenient parser
    (``lenient``: `tooluse_gym.decoding.lenient_ast`), and judged by BFCL's AST checker or
    its relevance rules (`tooluse_gym.checking.single_turn`). Nothing is executed.

    ## Action Space
    `AssistantAction`: the message as text (decoded in the ``tool_format`` knob's syntax, or
    in the return format of the ``prompt_format`` knob's configuration when set), or an
    OpenAI-shaped dict ``{"content": str, "tool_calls": [...]}``.

    ## Observation Space
    ``Dict(messages=Conversation, tools=ToolSchemas)``: the request and the OpenAI tool schemas
    (names with dots written with underscores when the tasks expect them so).

    ## Rewards
    1.0 if BFCL's checker marks the message valid, else 0.0.

    ## Starting State
    `reset(seed=..., options={"task_id": ...})`: the given entry, or one drawn with the seed.

    ## Episode End
    After the one step. `info` follows the multi-turn env's contract: ``step_record``,
    ``turn_verdict``, ``checker`` (``valid``, ``error_type`` with BFCL's names, ``error_message``,
    ``turns``) and ``tooluse``.
    """

    # gymnasium declares `metadata` an instance attribute (a property on wrappers): not a ClassVar here
    metadata: dict[str, Any] = {"render_modes": ["ansi"], "render_fps": 4}  # noqa: RUF012

    def __init__(
        self,
        tasks: Sequence[Task],
        *,
        knobs: Knobs,
        protocol: ProtocolCard,
        render_mode: str | None = None,
    ):
        if not tasks:
            raise ValueError("SingleTurnEnv needs at least one task")
        if not all(isinstance(t, SingleTurnTask) for t in tasks):
            raise TypeError("SingleTurnEnv plays SingleTurnTask tasks only")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']}, got {render_mode!r}")
        self.tasks = list(tasks)
        self.knobs = knobs
        self.protocol = protocol
        self._protocol_dict = protocol.to_dict()
        self.render_mode = render_mode
        self.action_space = AssistantAction(MAX_MESSAGE_CHARS)
        self.observation_space = spaces.Dict({"messages": Conversation(), "tools": ToolSchemas()})
        self.call_records = {}
        self.task = None
        self.messages: list[dict[str, Any]] = []
        self._verdict: AstVerdict | None = None
        self._done = True
        self._parts: _TaskParts | None = None  # the episode's task's, set by reset
        self._task_parts: dict[str, _TaskParts] = {}  # by task id, made at its first episode
        scored = [t for t in self.tasks if isinstance(t, SingleTurnTask)]  # all of them (checked above)
        other = sorted({t.category for t in scored if languages.language_of(t.test_category) != "python"})
        if other and knobs.prompt_format is not None:
            raise ValueError(
                f"prompt_format applies to BFCL's Python categories (its format grid draws from them); "
                f"{', '.join(other)} read calls as Java or JavaScript text: choose Python categories or task_ids"
            )
        if other and knobs.decoder == "lenient":
            raise ValueError(
                f"decoder='lenient' reads Python call syntax and JSON; {', '.join(other)} answer with Java or "
                "JavaScript call text, which only BFCL's own parsers read: pass decoder='bfcl', or choose Python "
                "categories or task_ids"
            )

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """Start an episode on ``options["task_id"]``, or on an entry drawn with the seed, and show its request.

        `info` holds ``task_id``, ``turn`` and ``steps_in_turn`` (both 0), ``protocol`` (the card with
        this seed) and ``task``, the `SingleTurnTask` played (in-process only).
        """
        task = self.task = self.draw_task(seed, options)
        self.messages = list(map(dict, task.turns[0]))
        self._verdict = None
        parts = self._task_parts.get(task.task_id)
        if parts is None:
            assert isinstance(task, SingleTurnTask)  # the constructor takes no other
            parts = self._task_parts[task.task_id] = _TaskParts.of(task, self.knobs)
        self._parts = parts
        self._done = False
        card = self._protocol_dict
        protocol = card.copy()  # the card's keys in order (``seed`` among them), its nested dicts copied too
        protocol["seed"] = seed
        protocol["extra"] = dict(card["extra"])
        protocol["task_data"] = dict(card["task_data"])
        info = {"task_id": task.task_id, "turn": 0, "steps_in_turn": 0, "protocol": protocol, "task": task}
        return {"messages": list(self.messages), "tools": list(parts.tools)}, info  # a new list of each

    def step(self, action: Any):
        """Decode and judge the assistant's message; the episode ends.

        `info` holds ``task_id``, ``turn`` and ``steps_in_turn`` (0), ``step_record`` (the message and the
        calls decoded from it), ``parse_failure`` when decoding failed, ``env_messages`` (empty),
        ``turn_verdict``, ``checker`` and ``tooluse``. Raises `gymnasium.error.ResetNeeded` after the end.
        """
        if self._done:
            raise gym.error.ResetNeeded("the episode has ended; call reset() before step()")
        task, parts = self.task, self._parts
        assert task is not None and parts is not None  # reset sets them (and clears `_done`)
        decoded = parts.decoder.decode(action)
        result = self._verdict = parts.judge(decoded)
        content, failure = decoded.content, decoded.failure
        self.messages.append(_assistant_message(action, content))
        self._done = True
        reward = 1.0 if result.valid else 0.0
        turn = {"turn": 0, "checked": True, "valid": result.valid, "error_type": result.error_type}
        if result.message is not None:
            turn["message"] = result.message
        info: dict[str, Any] = {"task_id": task.task_id, "turn": 0}
        if failure:
            info["parse_failure"] = failure
        info.update(
            step_record=StepRecord(0, content, decoded.shown_calls(), (), failure),
            turn_verdict=turn,
            checker={**result.to_dict(), "turns": [dict(turn)]},
            tooluse={"task_id": task.task_id, "reward": reward, "turns": 1, "steps": 0},
            steps_in_turn=0,
            env_messages=[],
        )
        return {"messages": list(self.messages), "tools": list(parts.tools)}, reward, True, False, info

    def _shown_verdict(self) -> Any:
        return self._verdict

    def close(self) -> None:
        """End the current episode: `step` needs a `reset` again."""
        self._done = True

    @property
    def result(self) -> AstVerdict | None:
        """The checker's verdict once the episode has ended."""
        return self._verdict


class _TaskParts(NamedTuple):
    """What an env makes once per task and uses at each of its episodes (none of it holds episode state)."""

    decoder: Decoder[AstDecoded]
    """`decoder_for` the env's knobs and the task (decoders hold no state)."""
    judge: Callable[[AstDecoded], AstVerdict]
    """`verdict` with the task's answer, docs and category bound."""
    tools: tuple[dict[str, Any], ...]
    """The task's tool schemas (`openai_tool`'s, shared: the observation gets a new list of them)."""

    @classmethod
    def of(cls, task: SingleTurnTask, knobs: Knobs) -> _TaskParts:
        judge = functools.partial(
            verdict,
            check=task.check,
            functions=task.checker_docs,
            answer=task.answer,
            test_category=task.test_category,
            underscore_to_dot=task.underscore_to_dot,
        )
        tools = tuple(_tool(d, task.underscore_to_dot) for d in task.functions)
        return cls(decoder_for(knobs, task), judge, tools)


def _tool(doc: Mapping[str, Any], underscore_to_dot: bool) -> dict[str, Any]:
    tool = openai_tool(doc)
    name = tool["function"]["name"]
    if underscore_to_dot and "." in name:
        return {**tool, "function": {**tool["function"], "name": name.replace(".", "_")}}
    return tool


def _assistant_message(action: Any, content: str) -> dict[str, Any]:
    """The assistant message as the transcript shows it: its text and its tool calls as given (JSON-safe)."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if type(action) is str or not isinstance(action, Mapping):
        return message
    if isinstance(action.get("reasoning_content"), str):
        message["reasoning_content"] = action["reasoning_content"]
    raw = action.get("tool_calls")
    if isinstance(raw, list) and raw:
        try:
            message["tool_calls"] = json_copy(raw[:64])
        except (TypeError, ValueError, RecursionError):
            pass
        else:
            if not all(_shown_call(c) for c in message["tool_calls"]):
                del message["tool_calls"]
    return message


def _shown_call(call: Any) -> bool:
    fn = call.get("function") if isinstance(call, dict) else None
    return isinstance(fn, dict) and isinstance(fn.get("name"), str) and isinstance(fn.get("arguments"), str)
