"""Episodes as token sequences: the multi-turn loop that token-level trainer adapters share.

`play` runs a batch of episodes in lockstep. At each round, every active episode asks for its
next assistant message. `play` steps the env with it and appends the env's answer to that
episode's sequence. An episode ends up as **one** sequence: the prompt (everything before the
policy's first message), then the completion (the policy's tokens, mask 1, and the env's tokens,
mask 0). Which generator writes the messages is a parameter (`Generate`). A trainer's model, a
scripted agent and the oracle all go through the same code, and the verdict is always the env's
own. The episode record (`tooluse_agents.episode`) says what happened.

**How the tokens stay consistent with the env's rendering.** The policy always continues its
own token sequence; it is never re-tokenized. So the tokens trained on are exactly the tokens
it saw and sampled. After each step, the new observation is rendered with the chat template,
the same way our agents render it (`tooluse_agents.base.chat_prompt`: ``obs["prompt"]`` when the
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

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym

from tooluse_agents.base import AgentError, AgentRequest, chat_prompt
from tooluse_agents.episode import StepCost, episode_record
from tooluse_agents.oracle import OracleAgent
from tooluse_agents.rollout import RolloutJob, request_for
from tooluse_gym.envs.knobs import check_choice

PREFIX_BREAK_MODES = ("cut", "raise")

__all__ = [
    "PREFIX_BREAK_MODES",
    "Context",
    "EpisodeTokens",
    "Generate",
    "PrefixBreak",
    "Sample",
    "play",
    "with_scripted",
]


class PrefixBreak(RuntimeError):
    """The env's rendering after a step does not extend the episode's sequence (under ``on_prefix_break="raise"``)."""


@dataclass(frozen=True)
class Context:
    """One episode waiting for its next assistant message.

    Attributes:
        request: What scripted agents read: the observation, the task, the turn, the step in the turn.
        input_ids: The tokens to continue. This is the episode's sequence so far or, after a cut, the
            tokens of the current rendering.
        max_new_tokens: The most tokens this message may have.
    """

    request: AgentRequest
    input_ids: tuple[int, ...]
    max_new_tokens: int


@dataclass(frozen=True)
class Sample:
    """One assistant message.

    Attributes:
        text: What the env receives.
        token_ids: The tokens the policy sampled, including the stop token when generation stopped
            on one. Empty for a scripted message: its text then enters the sequence as env text.
        logprobs: One per token: its log-probability under the sampling distribution.
    """

    text: str
    token_ids: tuple[int, ...] = ()
    logprobs: tuple[float, ...] = ()

    def __post_init__(self) -> None:
        if len(self.logprobs) != len(self.token_ids):
            raise ValueError(f"{len(self.token_ids)} token ids but {len(self.logprobs)} logprobs")


Generate = Callable[[Sequence[Context]], Sequence[Sample]]
"""Writes the next message of each waiting episode: one `Sample` per `Context`, in order."""


@dataclass(frozen=True)
class EpisodeTokens:
    """One episode as a training sequence.

    Attributes:
        prompt_ids: The rendering before the policy's first message (scripted messages before it included).
        completion_ids: Everything after the prompt: the policy's tokens and the env's (tool results,
            later user turns, the template's markers). Empty if the policy wrote nothing.
        logprobs: One per completion token: the sampling log-probability for a policy token, 0.0 for an env token.
        env_mask: One per completion token: 1 for a policy token, 0 for an env token.
        record: The episode record (`tooluse_agents.episode.episode_record`): reward, checker summary,
            error, every step.
        checker: The env's final ``info["checker"]``, per-turn verdicts included. None when the episode
            stopped before the env ended it.
        untrained: Policy messages played after a cut. They are in the record but not in the sequence.
    """

    prompt_ids: tuple[int, ...]
    completion_ids: tuple[int, ...]
    logprobs: tuple[float, ...]
    env_mask: tuple[int, ...]
    record: Mapping[str, Any]
    checker: Mapping[str, Any] | None
    untrained: int = 0

    @property
    def reward(self) -> float:
        """The episode's reward: 1.0 when the checker marked it valid and it ended without error, else 0.0."""
        return float(self.record["reward"])

    @property
    def error(self) -> Mapping[str, str] | None:
        """Why the episode stopped before the env ended it (``type`` and ``message``), or None."""
        return self.record["error"]


def with_scripted(generate: Generate, when: Callable[[AgentRequest], bool] | None) -> Generate:
    """Let the oracle answer the requests for which `when` holds, and `generate` the others.

    An example of `when` is `tooluse_agents.grpo.rollouts.before_last_turn`, the paper's
    next-turn prompts. The oracle's messages carry no tokens, so they enter the sequence as env
    text. When they come before the policy's first message, they are part of the prompt.
    """
    if when is None:
        return generate
    oracle = OracleAgent()

    def scripted_or_policy(contexts: Sequence[Context]) -> list[Sample]:
        out: list[Sample | None] = [None] * len(contexts)
        policy = []
        for i, context in enumerate(contexts):
            if when(context.request):
                out[i] = Sample(oracle.message(context.request))
            else:
                policy.append(i)
        if policy:
            samples = list(generate([contexts[i] for i in policy]))
            if len(samples) != len(policy):
                raise RuntimeError(f"the generator returned {len(samples)} samples for {len(policy)} contexts")
            for i, sample in zip(policy, samples, strict=True):
                out[i] = sample
        return [s for s in out if s is not None]

    return scripted_or_policy


@dataclass
class _Episode:
    env: gym.Env
    job: RolloutJob
    observation: dict[str, Any]
    protocol: dict[str, Any]
    text: str  # what prompt_ids + completion_ids spell
    prompt_ids: list[int]
    started: float
    completion_ids: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    env_mask: list[int] = field(default_factory=list)
    fresh: list[int] | None = None  # after a cut: the current rendering's tokens
    costs: list[StepCost] = field(default_factory=list)
    untrained: int = 0
    result: EpisodeTokens | None = None


@dataclass(frozen=True)
class _Player:
    tokenizer: Any
    max_new_tokens: int
    max_completion_length: int | None
    max_context: int | None
    on_prefix_break: str
    agent: Mapping[str, Any]

    def encode(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def start(self, env: gym.Env, job: RolloutJob) -> _Episode:
        started = time.perf_counter()
        observation, info = env.reset(seed=job.seed, options={"task_id": job.task_id})
        text = chat_prompt(self.tokenizer, observation)
        return _Episode(env, job, observation, info["protocol"], text, self.encode(text), started)

    def context(self, episode: _Episode) -> Context | None:
        """The episode's next request, or None when a length limit stopped it (then it is finished)."""
        ids = [*episode.prompt_ids, *episode.completion_ids] if episode.fresh is None else episode.fresh
        room = self.max_new_tokens
        if episode.fresh is None and self.max_completion_length is not None:
            used = len(episode.completion_ids)
            if used >= self.max_completion_length:
                self.finish(episode, _too_long(used, self.max_completion_length))
                return None
            room = min(room, self.max_completion_length - used)
        if self.max_context is not None:
            if len(ids) >= self.max_context:
                message = f"{len(ids)} tokens fill the model's context of {self.max_context}"
                self.finish(episode, AgentError("context_length_exceeded", message))
                return None
            room = min(room, self.max_context - len(ids))
        request = request_for(episode.env, episode.observation, episode.job.seed)
        return Context(request, tuple(ids), room)

    def advance(self, episode: _Episode, context: Context, sample: Sample) -> None:
        """Add the message to the sequence (when it is the policy's and the sequence is open), then step the env."""
        if sample.token_ids and episode.fresh is None:
            episode.text += self.spelled(context.input_ids, sample.token_ids)
            episode.completion_ids.extend(sample.token_ids)
            episode.logprobs.extend(sample.logprobs)
            episode.env_mask.extend([1] * len(sample.token_ids))
        elif sample.token_ids:
            episode.untrained += 1
        episode.costs.append(StepCost(len(context.input_ids), len(sample.token_ids)))
        try:
            observation, _, terminated, truncated, info = episode.env.step(sample.text)
        except Exception as e:  # a bug must not lose the batch: the episode records it
            self.finish(episode, AgentError("env_error", f"{type(e).__name__}: {e}"))
            return
        if terminated or truncated:
            self.finish(episode, None, info.get("checker"))
            return
        episode.observation = observation
        self.extend(episode, chat_prompt(self.tokenizer, observation))

    def extend(self, episode: _Episode, rendered: str) -> None:
        """Append the env's part of the new rendering as env tokens, or cut (see the module docstring)."""
        if episode.fresh is None and not episode.completion_ids:  # nothing sampled yet: the prompt is the rendering
            episode.prompt_ids, episode.text = self.encode(rendered), rendered
            return
        if episode.fresh is None:
            if rendered.startswith(episode.text):
                ids = self.encode(rendered[len(episode.text) :])
                limit = self.max_completion_length
                if limit is not None and len(episode.completion_ids) + len(ids) > limit:
                    self.finish(episode, _too_long(len(episode.completion_ids) + len(ids), limit))
                    return
                episode.completion_ids.extend(ids)
                episode.logprobs.extend([0.0] * len(ids))
                episode.env_mask.extend([0] * len(ids))
                episode.text = rendered
                return
            if self.on_prefix_break == "raise":
                base = episode.env.unwrapped
                turn, step = getattr(base, "turn", "?"), getattr(base, "steps_in_turn", "?")
                raise PrefixBreak(
                    f"{episode.job.task_id} turn {turn}, step {step}: the rendering does not "
                    f"extend the sequence at character {_divergence(episode.text, rendered)}"
                )
        episode.fresh = self.encode(rendered)

    def spelled(self, before: Sequence[int], new: Sequence[int]) -> str:
        """The text `new` adds after `before`, decoded in context (special tokens kept)."""
        head = self.tokenizer.decode(list(before), skip_special_tokens=False)
        whole = self.tokenizer.decode([*before, *new], skip_special_tokens=False)
        if whole.startswith(head):
            return whole[len(head) :]
        return self.tokenizer.decode(list(new), skip_special_tokens=False)

    def finish(self, episode: _Episode, error: AgentError | None, checker: Mapping[str, Any] | None = None) -> None:
        record = episode_record(
            episode.env.unwrapped,
            protocol=episode.protocol,
            seed=episode.job.seed,
            agent=self.agent,
            costs=episode.costs,
            error=error,
            duration_s=time.perf_counter() - episode.started,
        )
        episode.result = EpisodeTokens(
            prompt_ids=tuple(episode.prompt_ids),
            completion_ids=tuple(episode.completion_ids),
            logprobs=tuple(episode.logprobs),
            env_mask=tuple(episode.env_mask),
            record=record,
            checker=checker,
            untrained=episode.untrained,
        )


def _too_long(tokens: int, limit: int) -> AgentError:
    return AgentError("max_completion_length", f"{tokens} completion tokens reach the limit of {limit}")


def _divergence(a: str, b: str) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))


def play(
    envs: Sequence[gym.Env],
    jobs: Sequence[RolloutJob],
    tokenizer: Any,
    generate: Generate,
    *,
    max_new_tokens: int = 256,
    max_completion_length: int | None = None,
    max_context: int | None = None,
    on_prefix_break: str = "cut",
    agent: Mapping[str, Any] | None = None,
) -> list[EpisodeTokens]:
    """Play each job in its own env, in lockstep, and return one token sequence per job, in job order.

    At each round, the next message of every active episode comes from one `generate` call.

    Args:
        envs: One env per job, at least (each plays one episode).
        jobs: The episodes: a task id and the reset's seed.
        tokenizer: A transformers tokenizer, whose chat template renders the observations (unless
            the env renders ``prompt`` itself).
        generate: Writes the messages (`Generate`).
        max_new_tokens: The most tokens per message.
        max_completion_length: The most completion tokens (policy and env) per episode. None: no limit.
        max_context: The model's context, in tokens. None: no limit.
        on_prefix_break: ``cut`` | ``raise`` (see the module docstring).
        agent: The identity the episode records carry (default ``{"name": "policy"}``).

    Raises:
        PrefixBreak: Under ``on_prefix_break="raise"``, when a rendering does not extend its sequence.
    """
    check_choice("on_prefix_break", on_prefix_break, PREFIX_BREAK_MODES)
    if max_new_tokens < 1:
        raise ValueError(f"max_new_tokens must be >= 1, got {max_new_tokens}")
    if len(envs) < len(jobs):
        raise ValueError(f"{len(jobs)} jobs need as many envs, got {len(envs)}")
    identity = dict(agent or {"name": "policy"})
    player = _Player(tokenizer, max_new_tokens, max_completion_length, max_context, on_prefix_break, identity)
    episodes = [player.start(env, job) for env, job in zip(envs, jobs, strict=False)]
    while active := [e for e in episodes if e.result is None]:
        waiting: list[tuple[_Episode, Context]] = []
        for episode in active:
            context = player.context(episode)
            if context is not None:
                waiting.append((episode, context))
        if not waiting:
            continue
        samples = list(generate([c for _, c in waiting]))
        if len(samples) != len(waiting):
            raise RuntimeError(f"the generator returned {len(samples)} samples for {len(waiting)} contexts")
        for (episode, context), sample in zip(waiting, samples, strict=True):
            player.advance(episode, context, sample)
    return [e.result for e in episodes if e.result is not None]
