"""`CandidateActions`: the text environment as a `Discrete(K)` choice among candidate messages.

For classic RL (PPO, DQN, ...) and for measuring how much of a score language understanding
earns. At every step the agent picks one of K candidate messages; the wrapper sends that
message, in the env's tool format, to the wrapped `ToolUseEnv`. The observation is a `Box`
vector in [0, 1] (`tooluse_gym.wrappers.features`): a few numbers about the conversation,
then the same numbers for each candidate.

## The candidates
One candidate always ends the turn (a message without calls). The others come in groups of
`group_size` calls to one function: a *base* call and perturbations of it (one argument value
changed: another word or number of the chat, a number moved, a boolean flipped, a list
shortened; or an optional argument added). The base calls are, in this order:

1. the *correct next call*, when the ground truth of the current turn has one left. As in
   `tooluse_agents.backends.oracle`, the turn's ground-truth calls are played in order, here one per step; a
   correct pick moves to the next one, any other pick leaves it in place. When none is left,
   ending the turn is the correct candidate;
2. the last call executed in this turn, repeated exactly (if any);
3. calls to other offered functions, their required arguments filled with words and numbers
   taken from the user's message (or type defaults) - the way a naive agent would fill them.

The candidates are shuffled with the wrapper's generator, seeded by `reset(seed=...)`, so the
same seed and the same picks give the same candidates, and the correct candidate's position
is uniform over the K slots.

## What this setting leaks (diagnostic, not leaderboard)
Scores under this wrapper are not comparable with text-agent scores; the protocol card says
so (``extra.candidate_actions``). Specifically:

- *answer in the set*: the correct next call is always one of the K candidates, so the agent
  never has to produce a function name or an argument value, only recognise them;
- *ground-truth values*: the correct call carries the ground truth's argument values, even
  ones the conversation never states; its perturbations share all but one of them, so values
  common to a group point to the ground truth;
- *group structure*: a group whose base call is neither a repeat nor filled from the user's
  words is the ground-truth group; while a ground-truth call remains there is one such
  group more than after the turn's last one (which hints at the turn's length);
- *feedback*: the shaped reward (``reward="shaped"``) and ``info["candidate_correct"]`` say
  after each step whether the pick matched the ground truth; `answer_index` says it before
  (for tests and diagnostics; an agent that reads it is cheating, as one reading
  ``env.unwrapped.task.ground_truth`` would be).

It does not leak the answer's position (uniform, seeded shuffle) and the observation's
features read only the chat, the function docs and the candidates themselves.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from tooluse_gym.envs.tool_env import ToolUseEnv, tool_use_env
from tooluse_gym.prompts import json_call_block
from tooluse_gym.protocol import ProtocolCard
from tooluse_gym.types import ToolCall
from tooluse_gym.wrappers.features import STOPWORDS, conversation_state, featurize, observation_size, quoted_phrases

REWARDS = ("terminal", "shaped")
LEAKS = ("answer_in_set", "ground_truth_values", "group_structure", "feedback")
_TOKEN = re.compile(r"[\w./~-]{2,60}")
_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?![\w.])")
_MAX_TRIES = 64


@dataclass(frozen=True, kw_only=True)
class CandidateConfig:
    """Knobs of `CandidateActions` (all recorded on the protocol card).

    Attributes:
        num_candidates: K, the size of the action space (one candidate ends the turn).
        group_size: Calls per function group: a base call and ``group_size - 1`` perturbations.
        reward: ``terminal`` (the wrapped env's reward: 1.0 when the checker marks the episode
            valid) or ``shaped`` (plus 1/D for each pick that matches the ground truth and minus
            1/D for each that does not, D being the task's ground-truth calls plus one end of
            turn per turn; labelled, opt-in). The penalty matters: BFCL's checker accepts extra
            calls that change no state, so under the terminal reward alone calling candidates
            until the step limit is a winning strategy on read-only and stateless tasks.
        end_on_mistake: End the episode (``terminated``) at the first pick that does not match
            the ground truth, before the checker runs (a training aid: short episodes, and no
            reward for calling candidates until the step limit; never for evaluation).
        end_text: The message that ends a turn.
    """

    num_candidates: int = 7
    group_size: int = 2
    reward: str = "terminal"
    end_on_mistake: bool = False
    end_text: str = "Done."

    def __post_init__(self) -> None:
        if self.num_candidates < 2:
            raise ValueError(f"num_candidates must be >= 2, got {self.num_candidates}")
        if self.group_size < 1:
            raise ValueError(f"group_size must be >= 1, got {self.group_size}")
        if self.reward not in REWARDS:
            raise ValueError(f"reward must be one of {', '.join(REWARDS)}, got {self.reward!r}")

    def card(self) -> dict[str, Any]:
        """The protocol-card entry: these knobs and the list of leaks."""
        return {
            "num_candidates": self.num_candidates,
            "group_size": self.group_size,
            "reward": self.reward,
            "end_on_mistake": self.end_on_mistake,
            "leaks": list(LEAKS),
            "comparable_to_text_agents": False,
        }


# --- argument values -----------------------------------------------------------------------


def value_pool(text: str) -> tuple[list[str], list[float]]:  # numbers keep their written form (int or float)
    """Strings (quoted phrases, then words other than stopwords) and numbers in a text, in order, without repeats."""
    strings = quoted_phrases(text)
    strings += [t.strip(".") for t in _TOKEN.findall(text) if t.lower() not in STOPWORDS]
    numbers = [float(n) if "." in n else int(n) for n in _NUMBER.findall(text)]
    return list(dict.fromkeys(s for s in strings if s)), list(dict.fromkeys(numbers))


def _type_of(spec: Mapping[str, Any]) -> str:
    kind = spec.get("type", "string")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "string")
    return {"number": "float", "object": "dict", "tuple": "array", "bool": "boolean", "int": "integer"}.get(kind, kind)


def generate_value(spec: Mapping[str, Any], pool: tuple[list[str], list[float]], rng: np.random.Generator) -> Any:
    """A value of the parameter's type: an enum member, or a string or number of the pool, else a default."""
    strings, numbers = pool
    if spec.get("enum"):
        return copy.deepcopy(spec["enum"][int(rng.integers(len(spec["enum"])))])
    kind = _type_of(spec)
    if kind == "integer":
        ints = [n for n in numbers if isinstance(n, int)]
        return ints[int(rng.integers(len(ints)))] if ints else int(rng.integers(0, 10))
    if kind == "float":
        return numbers[int(rng.integers(len(numbers)))] if numbers else round(float(rng.uniform(0, 10)), 2)
    if kind == "boolean":
        return bool(rng.integers(2))
    if kind == "array":
        item = spec.get("items") or {"type": "string"}
        return [generate_value(item, pool, rng)] if rng.integers(2) else []
    if kind == "dict":
        return {}
    return strings[int(rng.integers(len(strings)))] if strings else "value"


def _perturb_value(value: Any, spec: Mapping[str, Any], pool: tuple[list[str], list[float]], rng) -> Any:
    if spec.get("enum") and len(spec["enum"]) > 1:
        others = [v for v in spec["enum"] if v != value]
        return copy.deepcopy(others[int(rng.integers(len(others)))])
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + int(rng.choice([-2, -1, 1, 2]))
    if isinstance(value, float):
        return round(value * float(rng.choice([0.5, 1.5, 2.0])) + (1.0 if value == 0 else 0.0), 2)
    if isinstance(value, str):
        others = [s for s in pool[0] if s != value]
        if others:
            return others[int(rng.integers(len(others)))]
        return value[::-1] if len(set(value)) > 1 else value + "1"
    if isinstance(value, (list, tuple)):
        return list(value[:-1]) if value else [generate_value(spec.get("items") or {}, pool, rng)]
    if isinstance(value, Mapping):
        keys = list(value)
        return {k: v for k, v in value.items() if k != keys[-1]} if keys else {"key": "value"}
    return generate_value(spec, pool, rng)


def _properties(doc: Mapping[str, Any] | None) -> tuple[dict[str, Any], list[str]]:
    params = (doc or {}).get("parameters") or {}
    return dict(params.get("properties") or {}), list(params.get("required") or [])


def perturb_call(call: ToolCall, doc: Mapping[str, Any] | None, pool, rng: np.random.Generator) -> ToolCall | None:
    """The call with one argument value changed, or one optional argument added; None if neither is possible."""
    props, required = _properties(doc)
    names = sorted(call.arguments)
    optional = sorted(p for p in props if p not in call.arguments and p not in required)
    choices = [("change", n) for n in names] + [("add", n) for n in optional]
    if not choices:
        return None
    action, name = choices[int(rng.integers(len(choices)))]
    arguments = dict(call.arguments)
    if action == "change":
        arguments[name] = _perturb_value(arguments[name], props.get(name) or {}, pool, rng)
    else:
        arguments[name] = generate_value(props[name] or {}, pool, rng)
    return ToolCall(name=call.name, arguments=arguments)


def generate_call(doc: Mapping[str, Any], pool, rng: np.random.Generator) -> ToolCall:
    """A call to `doc`'s function with its required arguments filled from the pool."""
    props, required = _properties(doc)
    return ToolCall(name=doc["name"], arguments={p: generate_value(props.get(p) or {}, pool, rng) for p in required})


def render_message(call: ToolCall | None, tool_format: str, end_text: str) -> str:
    """The assistant message for a call (None: the message that ends the turn) in the env's tool format."""
    if call is None:
        return end_text
    if tool_format == "python":
        return "[" + call.render() + "]"
    return json_call_block(call.name, dict(call.arguments))


# --- the candidate set ---------------------------------------------------------------------


@dataclass(frozen=True)
class CandidateSet:
    """The K candidates of one step: calls (None = end the turn), their messages, the correct index."""

    calls: tuple[ToolCall | None, ...]
    messages: tuple[str, ...]
    answer: int


def build_candidates(
    config: CandidateConfig,
    *,
    answer: ToolCall | None,
    repeat: ToolCall | None,
    docs: Sequence[Mapping[str, Any]],
    pool: tuple[list[str], list[float]],
    tool_format: str,
    rng: np.random.Generator,
) -> CandidateSet:
    """Build and shuffle K candidates: the end of turn, then groups of calls around base calls.

    `answer` is the correct next call (None: ending the turn is correct); `repeat` is the last
    call executed in this turn; `docs` are the offered function docs.
    """
    by_name = {d["name"]: d for d in docs}
    chosen: list[ToolCall | None] = [None]
    seen = {render_message(None, tool_format, config.end_text)}

    def add(call: ToolCall | None) -> bool:
        if call is None or len(chosen) >= config.num_candidates:
            return False
        text = render_message(call, tool_format, config.end_text)
        if text in seen:
            return False
        seen.add(text)
        chosen.append(call)
        return True

    def add_group(base: ToolCall) -> None:
        if not add(base) and len(chosen) >= config.num_candidates:
            return
        members = 1
        for _ in range(_MAX_TRIES):
            if members >= config.group_size or len(chosen) >= config.num_candidates:
                return
            members += add(perturb_call(base, by_name.get(base.name), pool, rng))

    bases = [c for c in (answer, repeat) if c is not None]
    for base in bases:
        add_group(base)
    taken = {c.name for c in bases}
    others = [d for d in docs if d["name"] not in taken]
    for i in rng.permutation(len(others)):
        if len(chosen) >= config.num_candidates:
            break
        add_group(generate_call(others[int(i)], pool, rng))
    for _ in range(_MAX_TRIES):  # few functions: more variants of any group
        if len(chosen) >= config.num_candidates or len(chosen) == 1:
            break
        source = chosen[1 + int(rng.integers(len(chosen) - 1))]
        assert source is not None  # only slot 0 ends the turn until the padding below
        add(perturb_call(source, by_name.get(source.name), pool, rng))
    while len(chosen) < config.num_candidates:  # no distinct variant left: repeat the end of turn
        chosen.append(None)
    order = rng.permutation(len(chosen))
    calls = tuple(chosen[int(i)] for i in order)
    answer_slot = 1 if answer is not None else 0
    answer_index = int(np.flatnonzero(order == answer_slot)[0])
    messages = tuple(render_message(c, tool_format, config.end_text) for c in calls)
    return CandidateSet(calls=calls, messages=messages, answer=answer_index)


# --- the wrapper ---------------------------------------------------------------------------


class CandidateActions(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """A `ToolUseEnv` as a choice among K candidate messages, with a numeric observation.

    ## Action Space
    `Discrete(K)`: the index of the candidate message to send.

    ## Observation Space
    `Box(0, 1, (C + K * F,), float32)`: C context features, then F features per candidate
    (`tooluse_gym.wrappers.features`).

    ## Rewards
    The wrapped env's (1.0 at the end when the checker marks the episode valid), plus with
    ``reward="shaped"`` +1/D per pick that matches the ground truth and -1/D per pick that does not.

    ## Info
    ``candidates`` (the K messages), and after a step ``candidate_correct`` (see the leaks in
    the module docstring). ``protocol.extra.candidate_actions`` records the knobs and leaks.
    """

    # gymnasium declares `metadata` an instance attribute (a property on wrappers): not a ClassVar here
    metadata: dict[str, Any] = {"render_modes": ["ansi"], "render_fps": 4}  # noqa: RUF012

    def __init__(self, env: gym.Env, config: CandidateConfig | None = None):
        gym.utils.RecordConstructorArgs.__init__(self, config=config)
        gym.Wrapper.__init__(self, env)
        self.config = config or CandidateConfig()
        k = self.config.num_candidates
        self._obs_shape = (observation_size(k),)
        self.action_space = spaces.Discrete(k)
        self.observation_space = spaces.Box(0.0, 1.0, self._obs_shape, np.float32)
        self._rng = np.random.default_rng()
        self._set: CandidateSet | None = None
        self._progress = 0
        self._turn = 0
        self._bonus = 0.0

    @property
    def base(self) -> ToolUseEnv:
        """The wrapped `ToolUseEnv` (``env.unwrapped``)."""
        return tool_use_env(self.env)

    @property
    def candidates(self) -> tuple[str, ...]:
        """The current K candidate messages."""
        return self._set.messages if self._set else ()

    @property
    def answer_index(self) -> int:
        """Index of the correct candidate (diagnostics and tests only; reading it is cheating)."""
        if self._set is None:
            raise gym.error.ResetNeeded("call reset() first")
        return self._set.answer

    @property
    def protocol(self) -> ProtocolCard:
        """The wrapped env's card with this wrapper's reward and its entry in ``extra``."""
        card = self.base.protocol
        extra = tuple(sorted({**dict(card.extra), "candidate_actions": self.config.card()}.items()))
        return card.replace(reward=self.config.reward, extra=extra)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """Reset the wrapped env and offer the first candidates; a seed also seeds their shuffle.

        `info` is the wrapped env's, with ``candidates`` added and this wrapper's reward and knobs
        on its ``protocol`` card.
        """
        _, info = self.env.reset(seed=seed, options=options)
        if seed is not None:
            self._rng = np.random.default_rng(np.random.SeedSequence([seed, 0xCA2D]))
        task = self.base.episode_task()
        self._progress, self._turn = 0, 0
        self._bonus = 1.0 / (sum(len(t) for t in task.ground_truth) + task.num_turns)
        extra = {**info["protocol"]["extra"], "candidate_actions": self.config.card()}
        info["protocol"] = {**info["protocol"], "reward": self.config.reward, "extra": extra}
        return self._observe(info)

    def step(self, action: Any):
        """Send candidate number `action` to the wrapped env and offer the next candidates.

        With ``end_on_mistake``, a wrong pick terminates the episode. The observation after the
        end is all zeros. Raises `gymnasium.error.ResetNeeded` outside an episode and
        `ValueError` for an index outside ``[0, K)``.
        """
        if self._set is None:
            raise gym.error.ResetNeeded("call reset() before step()")
        index = int(action)
        if not 0 <= index < self.config.num_candidates:
            raise ValueError(f"action must be in [0, {self.config.num_candidates}), got {action!r}")
        correct = self._set.messages[index] == self._set.messages[self._set.answer]
        picked = self._set.calls[index]
        _, reward, terminated, truncated, info = self.env.step(self._set.messages[index])
        if correct and picked is not None:
            self._progress += 1
        if self.base.turn != self._turn:
            self._turn, self._progress = self.base.turn, 0
        if self.config.reward == "shaped":
            reward = float(reward) + (self._bonus if correct else -self._bonus)
        info["candidate_correct"] = correct
        if self.config.end_on_mistake and not correct:
            terminated = True  # the training task ends in failure here: no value to bootstrap
        if terminated:
            self._set = None
            info["candidates"] = ()
            return np.zeros(self._obs_shape, np.float32), reward, terminated, truncated, info
        obs, info = self._observe(info)
        return obs, reward, terminated, truncated, info

    def _observe(self, info: dict[str, Any]) -> tuple[np.ndarray, dict[str, Any]]:
        base = self.base
        task, turn = base.episode_task(), base.turn
        truth = task.ground_truth[turn]
        answer = truth[self._progress] if self._progress < len(truth) else None
        in_turn = [c for s in base.step_log if s.turn == turn for c in s.calls]
        repeat = in_turn[-1] if in_turn else None
        offered = task.offered_names(turn) - frozenset(task.excluded_functions)
        docs = [d for d in task.all_functions() if d["name"] in offered]
        state = conversation_state(base)
        self._set = build_candidates(
            self.config,
            answer=answer,
            repeat=repeat,
            docs=docs,
            pool=value_pool(state.user_text),
            tool_format=base.config.knobs.tool_format,
            rng=self._rng,
        )
        info["candidates"] = self._set.messages
        obs = featurize(state, self._set.calls, {d["name"]: d for d in task.all_functions()})
        return obs, info

    def render(self) -> str | None:
        """The wrapped env's rendering followed by the numbered candidates, while there are any."""
        text = self.env.render()
        if text is not None and not isinstance(text, str):
            raise TypeError(f"CandidateActions renders text ('ansi'); the wrapped env rendered {type(text).__name__}")
        if text is None or not self._set:
            return text
        lines = [f"  [{i}] {m}" for i, m in enumerate(self._set.messages)]
        return text + "candidates:\n" + "\n".join(lines) + "\n"
