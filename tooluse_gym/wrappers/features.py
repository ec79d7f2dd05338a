"""Numeric features of a conversation and of candidate messages, for classic RL agents.

`CandidateActions` turns the text environment into a choice among K candidate messages; its
observation is the vector built here: a few numbers about the state of the conversation,
then the same fixed list of numbers for each candidate, every value in [0, 1].

Every feature is computed from what an agent can see: the chat so far (user messages,
its own calls, tool results), the offered function docs and the candidate messages. None
reads the ground truth. (The candidate *set* is built from the ground truth; what that leaks
is documented in `tooluse_gym.wrappers.candidates`.)
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tooluse_gym.tools.schemas import validation_error
from tooluse_gym.types import ToolCall

CONTEXT_FEATURES = (
    "steps_in_turn",  # executing steps so far in this turn / max_steps_per_turn
    "first_step_of_turn",  # 1 before the first message of a turn
    "last_result_error",  # the latest tool result reports an error
    "errors_in_turn",  # tool results of this turn that report errors (/3, clipped)
    "turn",  # index of the current user turn (/10, clipped)
)
CANDIDATE_FEATURES = (
    "is_end",  # the candidate ends the turn (no call)
    "name_in_user",  # share of the function name's words found in this turn's user text
    "description_overlap",  # share of the user's content words found in the function description
    "args_in_user",  # share of argument values that occur in this turn's user text
    "args_quoted",  # share of argument values equal to a phrase quoted in this turn's user text
    "args_in_history",  # share of argument values that occur earlier in the chat (user, tool results)
    "no_args",  # the call has no arguments
    "num_args",  # number of arguments (/4, clipped)
    "required_coverage",  # share of the function's required parameters given
    "valid_args",  # the arguments validate against the function's schema
    "done_in_turn",  # the same call (name and arguments) already ran in this turn
    "done_in_episode",  # the same call already ran earlier in the episode
    "name_in_turn",  # calls to this function so far in this turn (/3, clipped)
    "name_in_episode",  # the function was called before in the episode
)

QUOTED = re.compile(r"'([^'\n]{1,80})'|\"([^\"\n]{1,80})\"")
_WORD = re.compile(r"[A-Za-z0-9]+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_STOPWORD_TEXT = """the a an and or of to in on for with from by at is are be it this that my me i you your can could
would should please want need also then now into out all any its as so if do does did"""
STOPWORDS = frozenset(_STOPWORD_TEXT.split())
_ERROR_MARKERS = ("error", "failed", "not found", "no such", "invalid", "cannot")


def words(text: str) -> list[str]:
    """Lowercased alphanumeric words of a text, camelCase and snake_case split."""
    return [w.lower() for w in _WORD.findall(_CAMEL.sub(" ", text.replace("_", " ")))]


def content_words(text: str) -> set[str]:
    """Words that carry meaning: not stopwords, at least three characters."""
    return {w for w in words(text) if len(w) >= 3 and w not in STOPWORDS}


def quoted_phrases(text: str) -> list[str]:
    """Phrases between single or double quotes, in order."""
    return [a or b for a, b in QUOTED.findall(text)]


def call_key(call: ToolCall) -> str:
    """A canonical key for a call: its name and arguments (order of keyword arguments ignored)."""
    return call.name + json.dumps(dict(call.arguments), sort_keys=True, default=str)


def leaf_values(value: Any) -> list[str]:
    """String forms of the scalar values inside an argument value (booleans and None left out)."""
    if isinstance(value, Mapping):
        return [v for x in value.values() for v in leaf_values(x)]
    if isinstance(value, (list, tuple)):
        return [v for x in value for v in leaf_values(x)]
    if value is None or isinstance(value, bool):
        return []
    return [str(value).lower()]


def _is_error(text: str) -> bool:
    head = text[:300].lower()
    return any(m in head for m in _ERROR_MARKERS)


@dataclass(frozen=True)
class ConversationState:
    """What the features need to know about the conversation at one decision point."""

    user_text: str
    history_text: str
    turn: int
    steps_in_turn: int
    max_steps_per_turn: int
    executed_in_turn: tuple[ToolCall, ...]
    executed_before: tuple[ToolCall, ...]
    results_in_turn: tuple[str, ...]
    last_result: str | None


def conversation_state(env: Any) -> ConversationState:
    """The state of an unwrapped `ToolUseEnv` (its raw messages and step log)."""
    turn = env.turn
    user_text = "\n".join(str(m.get("content") or "") for m in env.task.turns[turn])
    history: list[str] = []
    for m in env.messages:
        if m["role"] == "tool" or (m["role"] == "user" and m.get("content") not in (None, user_text)):
            history.append(str(m.get("content") or ""))
    in_turn = [s for s in env.step_log if s.turn == turn]
    before = [s for s in env.step_log if s.turn < turn]
    results = tuple(r for s in in_turn for r in s.results)
    last_result = next((r for s in reversed(env.step_log) for r in reversed(s.results)), None)
    return ConversationState(
        user_text=user_text,
        history_text="\n".join(history).lower(),
        turn=turn,
        steps_in_turn=env.steps_in_turn,
        max_steps_per_turn=env.config.knobs.max_steps_per_turn,
        executed_in_turn=tuple(c for s in in_turn for c in s.calls),
        executed_before=tuple(c for s in before for c in s.calls),
        results_in_turn=results,
        last_result=last_result,
    )


def context_features(state: ConversationState) -> np.ndarray:
    """The `CONTEXT_FEATURES` of `state`, each scaled into [0, 1]."""
    out = np.zeros(len(CONTEXT_FEATURES), dtype=np.float32)
    out[0] = min(state.steps_in_turn / max(state.max_steps_per_turn, 1), 1.0)
    out[1] = float(state.steps_in_turn == 0)
    out[2] = float(state.last_result is not None and _is_error(state.last_result))
    out[3] = min(sum(_is_error(r) for r in state.results_in_turn) / 3, 1.0)
    out[4] = min(state.turn / 10, 1.0)
    return out


class _Scorer:
    """Per-state caches (user words, executed-call keys) shared by the candidates of one step."""

    def __init__(self, state: ConversationState, docs: Mapping[str, Mapping[str, Any]]):
        self.state = state
        self.docs = docs
        self.user_lower = state.user_text.lower()
        self.user_words = set(words(state.user_text))
        self.user_content = content_words(state.user_text)
        self.quoted = {q.lower() for q in quoted_phrases(state.user_text)}
        self.keys_turn = {call_key(c) for c in state.executed_in_turn}
        self.keys_before = {call_key(c) for c in state.executed_before}
        self.names_turn = Counter(c.name for c in state.executed_in_turn)
        self.names_before = {c.name for c in state.executed_before} | set(self.names_turn)
        self._description_words: dict[str, set[str]] = {}

    def description_words(self, name: str) -> set[str]:
        if name not in self._description_words:
            doc = self.docs.get(name) or {}
            self._description_words[name] = content_words(f"{name} {doc.get('description', '')}")
        return self._description_words[name]

    def candidate(self, call: ToolCall | None) -> np.ndarray:
        out = np.zeros(len(CANDIDATE_FEATURES), dtype=np.float32)
        if call is None:
            out[0] = 1.0
            return out
        name_words = words(call.name)
        out[1] = sum(w in self.user_words for w in name_words) / max(len(name_words), 1)
        if self.user_content:
            out[2] = len(self.user_content & self.description_words(call.name)) / len(self.user_content)
        values = [v for a in call.arguments.values() for v in leaf_values(a)]
        if values:
            out[3] = sum(v in self.user_lower for v in values) / len(values)
            out[4] = sum(v in self.quoted for v in values) / len(values)
            out[5] = sum(v in self.state.history_text for v in values) / len(values)
        out[6] = float(not call.arguments)
        out[7] = min(len(call.arguments) / 4, 1.0)
        doc = self.docs.get(call.name)
        required = (doc or {}).get("parameters", {}).get("required", []) if doc else []
        out[8] = sum(r in call.arguments for r in required) / len(required) if required else 1.0
        out[9] = float(doc is not None and validation_error(doc, call.arguments) is None)
        key = call_key(call)
        out[10] = float(key in self.keys_turn)
        out[11] = float(key in self.keys_before)
        out[12] = min(self.names_turn[call.name] / 3, 1.0)
        out[13] = float(call.name in self.names_before)
        return out


def featurize(
    state: ConversationState, calls: Sequence[ToolCall | None], docs: Mapping[str, Mapping[str, Any]]
) -> np.ndarray:
    """The observation vector: context features, then each candidate's features (None = end the turn)."""
    scorer = _Scorer(state, docs)
    parts = [context_features(state), *(scorer.candidate(c) for c in calls)]
    return np.clip(np.concatenate(parts), 0.0, 1.0).astype(np.float32)


def observation_size(num_candidates: int) -> int:
    """Length of the observation vector for `num_candidates` candidates."""
    return len(CONTEXT_FEATURES) + num_candidates * len(CANDIDATE_FEATURES)
