"""Episodes as token sequences: what token-level trainer adapters (TRL) train on, kept on the one rollout loop.

`play` runs episodes through `tooluse_agents.rollout.loop.run_rollouts` (lockstep) with an agent that
keeps one token sequence per episode around the policy's agent. At each request it appends the
env's answer to that episode's sequence, then asks the policy to continue the sequence. An
episode ends up as **one** sequence: the prompt (everything before the policy's first message),
then the completion (the policy's tokens, mask 1, and the env's tokens, mask 0). The policy is any
`tooluse_agents.backends.base.Agent` that continues `AgentRequest.prompt_token_ids` (a trainer's model, a
scripted writer in tests); the oracle answers scripted turns (`scripted=`), and the verdict is
always the env's own. The episode record (`tooluse_agents.rollout.episode`) says what happened.

**How the tokens stay consistent with the env's rendering.** The policy always continues its
own token sequence; it is never re-tokenized. So the tokens trained on are exactly the tokens
it saw and sampled. After each step, the new observation is rendered with the chat template,
the same way our agents render it (`tooluse_agents.backends.base.chat_prompt`: ``obs["prompt"]`` when the
env has a ``tokenizer`` knob, else the tokenizer's own template, with the tools the env offers).
If that text begins with the text the sequence spells so far, the rest is tokenized and appended
as env tokens. The rest is everything the template and the env add after the policy's message:
the end-of-message marker (when the message hit its token limit), the tool results, the next
user turn, the generation prompt. The text the policy sees at each step is therefore exactly the
env's rendering: the *prefix property* of ``docs/environments.md``. Only the token boundaries
between policy text and env text can differ from a fresh tokenization.

**When the rendering does not extend the sequence** (a *prefix break*), `on_prefix_break`
decides what happens.

Causes of a prefix break:

- ``template="context"``;
- ``reasoning`` ``strip`` or ``last`` with ``<think>`` content;
- a template that re-renders earlier turns, or that renders the tool list in a header which a
  miss_func reveal changes;
- a special token the policy wrote that its message text drops.

The two modes:

- ``cut`` (the default). The sequence ends after the policy's last message in it. The episode
  still plays on to its verdict, and every later prompt is rendered and tokenized afresh.
  Those later messages are counted as ``untrained``; the sequence does not hold them.
- ``raise``. Raise `PrefixBreak`.

Before the policy's first token nothing is cut: the prompt is simply rendered again.

**Tools that change mid-episode.** The tools are whatever the env offers in the observation.

- Under a system prompt that carries the functions (``bfcl``, ``strong``), a miss_func reveal
  arrives as BFCL's user message with the new functions' docs. That message is env text.
- Under ``system_prompt="none"``, the tools go to the template, and the template decides.
  SmolLM2's template does not render tools, so the reveal is the notice message alone. A template
  that renders the tool list at the top re-renders it, which is a prefix break.

**Lengths.** ``max_completion_length`` bounds everything after the prompt, policy and env tokens
alike. Each message may have at most ``min(max_new_tokens, room left)`` tokens. An episode stops
when it runs out of room, or when the model's context is full. It is then recorded with the
error ``max_completion_length`` or ``context_length_exceeded`` and reward 0, which is how our
agents and BFCL treat an inference that could not go on. Its sequence keeps what fit. A message
cut by ``max_new_tokens`` reaches the env as it is, and the template's end-of-message marker
becomes env text.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym

from tooluse_agents.backends.base import Agent, AgentError, AgentRequest, Generation, SamplingConfig, chat_prompt
from tooluse_agents.backends.scripted import ScriptedTurns
from tooluse_agents.rollout.loop import Episode, RolloutJob, run_rollouts
from tooluse_agents.runs.records import EpisodeRecord
from tooluse_gym.envs.knobs import check_choice
from tooluse_gym.errors import ToolUseGymError

PREFIX_BREAK_MODES = ("cut", "raise")

__all__ = ["PREFIX_BREAK_MODES", "EpisodeTokens", "PrefixBreak", "play"]


class PrefixBreak(ToolUseGymError, RuntimeError):
    """The env's rendering after a step does not extend the episode's sequence (under ``on_prefix_break="raise"``)."""


@dataclass(frozen=True)
class EpisodeTokens:
    """One episode as a training sequence.

    Attributes:
        prompt_ids: The rendering before the policy's first message (scripted messages before it included).
        completion_ids: Everything after the prompt: the policy's tokens and the env's (tool results,
            later user turns, the template's markers). Empty if the policy wrote nothing.
        logprobs: One per completion token: the sampling log-probability for a policy token, 0.0 for an env token.
        env_mask: One per completion token: 1 for a policy token, 0 for an env token.
        record: The episode record (`tooluse_agents.rollout.episode.episode_record`): reward, checker summary,
            error, every step.
        checker: The env's final ``info["checker"]``, per-turn verdicts included. None when the episode
            stopped before the env ended it.
        untrained: Policy messages played after a cut. They are in the record but not in the sequence.
    """

    prompt_ids: tuple[int, ...]
    completion_ids: tuple[int, ...]
    logprobs: tuple[float, ...]
    env_mask: tuple[int, ...]
    record: EpisodeRecord
    checker: Mapping[str, Any] | None
    untrained: int = 0

    @property
    def reward(self) -> float:
        """The episode's reward: 1.0 when the checker marked it valid and it ended without error, else 0.0."""
        return self.record.reward

    @property
    def error(self) -> Mapping[str, Any] | None:
        """Why the episode stopped before the env ended it (``type`` and ``message``), or None."""
        return self.record.error


@dataclass
class _Sequence:
    text: str  # what prompt_ids + completion_ids spell
    prompt_ids: list[int]
    completion_ids: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    env_mask: list[int] = field(default_factory=list)
    fresh: list[int] | None = None  # after a cut: the current rendering's tokens
    untrained: int = 0


class TokenSequences:
    """An agent that keeps one token sequence per episode around another agent (the module docstring).

    Each request is rendered with the tokenizer's chat template; the part of the rendering after the
    sequence so far is appended as env tokens (or the sequence is cut), and the inner agent is asked
    to continue ``prompt_token_ids`` with at most ``max_tokens`` tokens. A message that carries token
    ids (the policy's) extends the sequence; one without (a scripted message) enters as env text with
    the next rendering. An episode out of room gets a generation with an error, which ends it.
    """

    def __init__(
        self,
        inner: Agent,
        tokenizer: Any,
        *,
        max_new_tokens: int,
        max_completion_length: int | None = None,
        max_context: int | None = None,
        on_prefix_break: str = "cut",
    ) -> None:
        check_choice("on_prefix_break", on_prefix_break, PREFIX_BREAK_MODES)
        if max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be >= 1, got {max_new_tokens}")
        self.inner = inner
        self.name = inner.name
        self.tokenizer = tokenizer
        self.max_new_tokens = max_new_tokens
        self.max_completion_length = max_completion_length
        self.max_context = max_context
        self.on_prefix_break = on_prefix_break
        self.sequences: dict[int, _Sequence] = {}
        self.broken: PrefixBreak | None = None

    def describe(self) -> dict[str, Any]:
        """The inner agent's identity."""
        return self.inner.describe()

    def close(self) -> None:
        """Nothing to release (the inner agent belongs to the caller)."""

    def generate(self, requests: Sequence[AgentRequest], sampling: SamplingConfig) -> list[Generation]:
        """Extend each episode's sequence with the env's answer, then let the inner agent continue it."""
        out: list[Generation | None] = [None] * len(requests)
        waiting: list[tuple[int, _Sequence, AgentRequest]] = []
        for i, request in enumerate(requests):
            sequence, error = self._advance(request)
            if error is not None:
                out[i] = Generation(error=error)
                continue
            ids = [*sequence.prompt_ids, *sequence.completion_ids] if sequence.fresh is None else sequence.fresh
            room, error = self._room(sequence, ids)
            if error is not None:
                out[i] = Generation(error=error)
                continue
            waiting.append((i, sequence, dataclasses.replace(request, prompt_token_ids=tuple(ids), max_tokens=room)))
        if waiting:
            generations = list(self.inner.generate([r for _, _, r in waiting], sampling))
            if len(generations) != len(waiting):
                raise RuntimeError(f"the agent returned {len(generations)} generations for {len(waiting)} requests")
            for (i, sequence, request), generation in zip(waiting, generations, strict=True):
                out[i] = self._add(sequence, request, generation)
        return [g for g in out if g is not None]

    def tokens(self, episode: Episode) -> EpisodeTokens:
        """The finished episode's sequence (and forget it)."""
        sequence = self.sequences.pop(episode.number)
        return EpisodeTokens(
            prompt_ids=tuple(sequence.prompt_ids),
            completion_ids=tuple(sequence.completion_ids),
            logprobs=tuple(sequence.logprobs),
            env_mask=tuple(sequence.env_mask),
            record=episode.record,
            checker=episode.checker,
            untrained=sequence.untrained,
        )

    def _encode(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def _advance(self, request: AgentRequest) -> tuple[_Sequence, AgentError | None]:
        """The episode's sequence with the current rendering in it: its first, its env tokens, or a cut."""
        rendered = chat_prompt(self.tokenizer, request.observation)
        sequence = self.sequences.get(request.episode)
        if sequence is None:
            sequence = self.sequences[request.episode] = _Sequence(rendered, self._encode(rendered))
            return sequence, None
        if sequence.fresh is None and not sequence.completion_ids:  # nothing sampled yet: the prompt is the rendering
            sequence.prompt_ids, sequence.text = self._encode(rendered), rendered
            return sequence, None
        if sequence.fresh is None:
            if rendered.startswith(sequence.text):
                ids = self._encode(rendered[len(sequence.text) :])
                limit = self.max_completion_length
                if limit is not None and len(sequence.completion_ids) + len(ids) > limit:
                    return sequence, _too_long(len(sequence.completion_ids) + len(ids), limit)
                sequence.completion_ids.extend(ids)
                sequence.logprobs.extend([0.0] * len(ids))
                sequence.env_mask.extend([0] * len(ids))
                sequence.text = rendered
                return sequence, None
            if self.on_prefix_break == "raise":
                task_id = request.task.task_id if request.task is not None else "?"
                self.broken = PrefixBreak(
                    f"{task_id} turn {request.turn}, step {request.steps_in_turn}: the rendering does not "
                    f"extend the sequence at character {_divergence(sequence.text, rendered)}"
                )
                raise self.broken
        sequence.fresh = self._encode(rendered)
        return sequence, None

    def _room(self, sequence: _Sequence, ids: Sequence[int]) -> tuple[int, AgentError | None]:
        """How many tokens the next message may have, or why the episode cannot go on."""
        room = self.max_new_tokens
        if sequence.fresh is None and self.max_completion_length is not None:
            used = len(sequence.completion_ids)
            if used >= self.max_completion_length:
                return 0, _too_long(used, self.max_completion_length)
            room = min(room, self.max_completion_length - used)
        if self.max_context is not None:
            if len(ids) >= self.max_context:
                message = f"{len(ids)} tokens fill the model's context of {self.max_context}"
                return 0, AgentError("context_length_exceeded", message)
            room = min(room, self.max_context - len(ids))
        return room, None

    def _add(self, sequence: _Sequence, request: AgentRequest, generation: Generation) -> Generation:
        """Add a policy message to the open sequence (or count it untrained after a cut); its cost."""
        assert request.prompt_token_ids is not None
        sampled = tuple(generation.token_ids or ())
        if sampled and sequence.fresh is None:
            sequence.text += self._spelled(request.prompt_token_ids, sampled)
            sequence.completion_ids.extend(sampled)
            sequence.logprobs.extend(generation.logprobs or ())
            sequence.env_mask.extend([1] * len(sampled))
        elif sampled:
            sequence.untrained += 1
        return dataclasses.replace(
            generation, prompt_tokens=len(request.prompt_token_ids), completion_tokens=len(sampled), latency_s=0.0
        )

    def _spelled(self, before: Sequence[int], new: Sequence[int]) -> str:
        """The text `new` adds after `before`, decoded in context (special tokens kept)."""
        head = self.tokenizer.decode(list(before), skip_special_tokens=False)
        whole = self.tokenizer.decode([*before, *new], skip_special_tokens=False)
        if whole.startswith(head):
            return whole[len(head) :]
        return self.tokenizer.decode(list(new), skip_special_tokens=False)


def _too_long(tokens: int, limit: int) -> AgentError:
    return AgentError("max_completion_length", f"{tokens} completion tokens reach the limit of {limit}")


def _divergence(a: str, b: str) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))


def play(
    envs: Sequence[gym.Env],
    jobs: Sequence[RolloutJob],
    tokenizer: Any,
    agent: Agent,
    *,
    max_new_tokens: int = 256,
    max_completion_length: int | None = None,
    max_context: int | None = None,
    on_prefix_break: str = "cut",
    scripted: Callable[[AgentRequest], bool] | None = None,
) -> list[EpisodeTokens]:
    """Play each job in its own env, in lockstep on the rollout loop, and return one token sequence per job, in order.

    Args:
        envs: One env per job, at least (each plays one episode; they are reset, not closed for good).
        jobs: The episodes: a task id and the reset's seed.
        tokenizer: A transformers tokenizer, whose chat template renders the observations (unless
            the env renders ``prompt`` itself).
        agent: The policy: continues each request's ``prompt_token_ids`` with at most ``max_tokens``
            tokens and returns the sampled ``token_ids`` with their ``logprobs``.
        max_new_tokens: The most tokens per message.
        max_completion_length: The most completion tokens (policy and env) per episode. None: no limit.
        max_context: The model's context, in tokens. None: no limit.
        on_prefix_break: ``cut`` | ``raise`` (see the module docstring).
        scripted: Requests the oracle answers instead of the policy (`tooluse_agents.backends.scripted`), e.g.
            the turns before a next-turn prompt's last. Their messages enter the sequence as env text.

    Raises:
        PrefixBreak: Under ``on_prefix_break="raise"``, when a rendering does not extend its sequence.
    """
    if len(envs) < len(jobs):
        raise ValueError(f"{len(jobs)} jobs need as many envs, got {len(envs)}")
    inner = ScriptedTurns(agent, scripted) if scripted is not None else agent
    sequences = TokenSequences(
        inner,
        tokenizer,
        max_new_tokens=max_new_tokens,
        max_completion_length=max_completion_length,
        max_context=max_context,
        on_prefix_break=on_prefix_break,
    )
    pool = iter(envs)
    done: list[tuple[int, EpisodeTokens]] = []
    run_rollouts(
        lambda: next(pool),
        sequences,
        jobs,
        sampling=SamplingConfig(max_tokens=max_new_tokens),
        num_envs=max(len(jobs), 1),
        schedule="lockstep",
        on_episode=lambda episode: done.append((episode.number, sequences.tokens(episode))),
    )
    if sequences.broken is not None:
        raise sequences.broken
    return [tokens for _, tokens in sorted(done, key=lambda item: item[0])]
