"""`AgenticEnv`: BFCL's agentic categories as a Gymnasium environment (`ToolUse-Memory-v0`, `ToolUse-WebSearch-v0`).

## Description
An episode plays one `tooluse_gym.tasks.agentic.AgenticTask`: its segments in order, each its own
conversation, with the system message the task gives it (BFCL's text). A *session* (memory's
prerequisite entries) starts from the memory the previous session left and runs its user turns as
the multi-turn env does: a message with calls is executed on the task's backend, a message without
calls ends the turn. A *question* starts from the final memory of the sessions (memory,
``episode="scenario"``), from a given snapshot (``episode="question"``) or from the backend's
configuration (web search: the search backend the env was built with), and is scored by BFCL's
agentic checker on its last message without calls; what a question writes is dropped, as in BFCL.

## Rewards
0.0 on every step but the last; at the end the fraction of the episode's questions answered
(``answer_check="bfcl"``: BFCL's substring verdict; ``strict``: `tooluse_gym.checking.agentic.strict_check`).

## Episode End
After the last question. `info["checker"]` then holds ``valid`` (every question answered),
``error_type``, per-turn verdicts (``turns``: each question's verdict, and after each session the
memory it left under ``memory``), ``questions`` (BFCL's id and verdict of each) and ``reward``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import gymnasium as gym
from gymnasium import spaces

from tooluse_gym.checking.agentic import AgenticVerdict, agentic_check, strict_check
from tooluse_gym.decoding.dispatch import decoder_for
from tooluse_gym.decoding.limits import MAX_MESSAGE_CHARS
from tooluse_gym.decoding.text import visible_response
from tooluse_gym.envs.base import TaskEnv
from tooluse_gym.envs.knobs import Knobs
from tooluse_gym.envs.tool_env import assistant_message
from tooluse_gym.protocol import ProtocolCard
from tooluse_gym.spaces import AssistantAction, Conversation, ToolSchemas
from tooluse_gym.tasks.agentic import AgenticTask, Segment
from tooluse_gym.tools.memory import snapshot
from tooluse_gym.tools.runtime import ToolRuntime
from tooluse_gym.tools.schemas import openai_tool
from tooluse_gym.types import ParsedAction, StepRecord

__all__ = ["AgenticEnv"]


class AgenticEnv(TaskEnv):
    """BFCL agentic sessions and questions over the tasks' backends, scored by BFCL's agentic checker.

    Args:
        tasks: The agentic tasks.
        backends: BFCL class name -> the class the env instantiates for it (a memory backend, a search backend).
        knobs: The protocol knobs (the base env applies ``decoder``, ``tool_format``, ``validate_args``
            and ``max_steps_per_turn``; the wrappers the rest).
        protocol: The protocol card.
        answer_check: ``bfcl`` | ``strict``.
        snapshots: (category, scenario) -> the memory a question starts from (``episode="question"``).
        render_mode: ``None`` or ``"ansi"``.
    """

    metadata: dict[str, Any] = {"render_modes": ["ansi"], "render_fps": 4}  # noqa: RUF012

    def __init__(
        self,
        tasks: Sequence[AgenticTask],
        *,
        backends: Mapping[str, type],
        knobs: Knobs,
        protocol: ProtocolCard,
        answer_check: str = "bfcl",
        snapshots: Mapping[tuple[str, str], Mapping[str, Any]] | None = None,
        render_mode: str | None = None,
    ):
        if not tasks:
            raise ValueError("AgenticEnv needs at least one task")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be one of {self.metadata['render_modes']}, got {render_mode!r}")
        self.tasks = list(tasks)
        self.backends = dict(backends)
        self.knobs = knobs
        self.protocol = protocol
        self._protocol_dict = protocol.to_dict()
        self._check = strict_check if answer_check == "strict" else agentic_check
        self._snapshots = dict(snapshots or {})
        self.render_mode = render_mode
        self.action_space = AssistantAction(MAX_MESSAGE_CHARS)
        self.observation_space = spaces.Dict({"messages": Conversation(), "tools": ToolSchemas()})
        self.task: AgenticTask | None = None
        self.turn = self.steps_in_turn = self.segment = 0
        self._done = True

    # --- Gymnasium API -------------------------------------------------------------------

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """Start an episode on ``options["task_id"]`` or a task drawn with the seed, at its first segment."""
        task = self.task = self.draw_task(seed, options)  # type: ignore[assignment]
        assert isinstance(task, AgenticTask)
        self._decoder = decoder_for(self.knobs, task)
        self._tools = [openai_tool(d) for d in task.functions]
        start = self._snapshots.get((task.category, getattr(task, "scenario", "")))
        self._memory: dict[str, Any] | None = dict(start) if start is not None else None
        self._final: dict[str, Any] | None = None  # the memory every question starts from
        self.call_records = {}
        self.step_log: list[StepRecord] = []
        self.verdicts: list[dict[str, Any]] = []
        self.questions: list[dict[str, Any]] = []
        self.total_steps = 0
        self._done = False
        self._start_segment(0)
        card = {
            **self._protocol_dict,
            "seed": seed,
            "extra": dict(self._protocol_dict["extra"]),
            "task_data": dict(self._protocol_dict["task_data"]),
        }
        info = {"task_id": task.task_id, "turn": 0, "steps_in_turn": 0, "protocol": card, "task": task}
        return self._obs(), info

    def step(self, action: Any):
        """Decode one assistant message, execute its calls, or end the turn (and maybe the segment) without them."""
        if self._done:
            raise gym.error.ResetNeeded("the episode has ended; call reset() before step()")
        task = self.episode_task()
        assert isinstance(task, AgenticTask)
        parsed: ParsedAction = self._decoder.decode(action)
        self.messages.append(assistant_message(action, parsed, self.turn, self.steps_in_turn))
        answered = len(self.messages)
        info: dict[str, Any] = {"task_id": task.task_id, "turn": self.turn}
        if parsed.failure:
            info["parse_failure"] = parsed.failure
        results = self._execute(parsed) if parsed.calls else ()
        record = StepRecord(self.turn, parsed.content, parsed.calls, results, parsed.failure)
        self.step_log.append(record)
        info["step_record"] = record
        segment = task.segments[self.segment]
        if parsed.calls:
            info["step"] = self.steps_in_turn
            if self.steps_in_turn <= self.knobs.max_steps_per_turn:
                return self._answer(info, answered)
            self._end_segment(segment, None, forced=True)  # BFCL force-quits the entry
        elif self.turn < segment.first_turn + segment.num_turns - 1:
            self.turn += 1
            self.steps_in_turn = 0
            self.messages.extend(dict(m) for m in task.turns[self.turn])
            info["turn"] = self.turn
            return self._answer(info, answered)
        else:
            self._end_segment(segment, parsed.content, forced=False)
        if self.segment == len(task.segments) - 1:
            return self._finish(info, answered)
        self._start_segment(self.segment + 1)
        info["turn"] = self.turn
        return self._answer(info, answered)

    def close(self) -> None:
        """End the current episode: `step` needs a `reset` again."""
        self._done = True

    @property
    def memory(self) -> dict[str, Any] | None:
        """The memory the current segment started from (BFCL's snapshot shape), None for an empty one."""
        return self._memory

    # --- internals -------------------------------------------------------------------------

    def _start_segment(self, index: int) -> None:
        task = self.episode_task()
        assert isinstance(task, AgenticTask)
        segment = task.segments[index]
        self.segment = index
        self.turn = segment.first_turn
        self.steps_in_turn = 0
        if segment.kind == "question" and self._final is None:  # where the sessions ended (or the given snapshot)
            self._final = self._memory
        start = self._final if segment.kind == "question" else self._memory
        config = {**task.initial_config.get(task.backend, {}), **(start or {})}
        loaded = dataclasses.replace(task, initial_config={task.backend: config})
        self.runtime = ToolRuntime(
            loaded, {task.backend: self.backends[task.backend]}, validate=self.knobs.validates_args
        )
        system = task.system_message(segment, self.runtime.instances[task.backend])
        self.messages: list[dict[str, Any]] = [{"role": "system", "content": system}]
        self.messages.extend(dict(m) for m in task.turns[self.turn])

    def _end_segment(self, segment: Segment, last_text: str | None, *, forced: bool) -> None:
        task = self.episode_task()
        assert isinstance(task, AgenticTask)
        if segment.question is None:
            self._memory = snapshot(self.runtime.instances[task.backend])
            self.verdicts.append(
                {"turn": self.turn, "session": segment.entry_id, "forced": forced, "memory": self._memory}
            )
            return
        # BFCL's handlers keep a reasoning model's reply after its last </think>: the answer is judged on that
        answer = visible_response(last_text) if last_text is not None else None
        verdict: AgenticVerdict = self._check(answer, segment.question.answers)
        entry = {"task_id": segment.question.task_id, **verdict.to_dict()}
        self.questions.append(entry)
        self.verdicts.append({"turn": self.turn, "question": segment.question.task_id, **verdict.to_dict()})

    def _execute(self, parsed: ParsedAction) -> tuple[str, ...]:
        records = self.runtime.execute(parsed.calls)
        self.steps_in_turn += 1
        self.total_steps += 1
        return self._show_results(records)

    def _backend_report(self) -> dict[str, Any] | None:
        report = getattr(self.runtime.instances[self.episode_task().backend], "report", None)  # type: ignore[attr-defined]
        return report() if callable(report) else None

    def _obs(self) -> dict[str, Any]:
        return {"messages": list(self.messages), "tools": list(self._tools)}

    def _answer(self, info: dict[str, Any], answered: int, reward: float = 0.0, terminated: bool = False):
        info["steps_in_turn"] = self.steps_in_turn
        info["segment"] = self.segment
        info["env_messages"] = [dict(m) for m in self.messages[answered:]]
        return self._obs(), reward, terminated, False, info

    def _shown_verdict(self) -> Any:
        return self.result

    result: Any = None

    def _finish(self, info: dict[str, Any], answered: int):
        self._done = True
        right = sum(q["valid"] for q in self.questions)
        reward = right / len(self.questions) if self.questions else 0.0
        failed = next((q for q in self.questions if not q["valid"]), None)
        checker = {
            "valid": failed is None and bool(self.questions),
            "error_type": failed["error_type"] if failed else None,
            "error_message": failed["error_message"] if failed else None,
            "turns": list(self.verdicts),
            "questions": list(self.questions),
            "reward": reward,
        }
        report = self._backend_report()
        if report is not None:
            checker["backend"] = report
        self.result = _Verdict(failed is None and bool(self.questions), failed["error_type"] if failed else None)
        info["checker"] = checker
        info["tooluse"] = {
            "task_id": self.episode_task().task_id,
            "reward": reward,
            "turns": self.turn + 1,
            "steps": self.total_steps,
            "questions": len(self.questions),
            "answered": right,
        }
        return self._answer(info, answered, reward, True)


@dataclasses.dataclass(frozen=True)
class _Verdict:
    valid: bool
    error_type: str | None
