"""The lighter wire: after the reset, a step's observation carries only what changed, and the client rebuilds the rest.

A whole observation carries the chat so far and every tool schema again at every step (a BFCL
multi-turn reset is about 40 KB of JSON, and each step repeats it). A session that asks for it at
reset (``{"type": "reset", "data": {..., "observation": "delta"}}``) gets its observations as deltas
instead; `tooluse_gym.server.client.ToolUseEnvClient` asks for it and rebuilds the whole observation
(`DeltaDecoder`), so its users see exactly what the whole observation would have held.

The default stays ``"full"``: a generic OpenEnv client (openenv-core's ``EnvClient``,
``GenericEnvClient``, a plain WebSocket JSON client) does not know the delta fields, and would read a
delta's ``messages`` (the new messages only) as the chat, and act on a wrong prompt. So deltas are
opt-in, per episode, and only a client that rebuilds asks for them. The option is a wire setting,
not a protocol knob: it changes what is sent, never what the env does or a verdict, so it is not in
`tooluse_gym.envs.knobs.Knobs` and not on the protocol card.

A delta observation is the whole observation with these changes:

- ``messages``: the messages after the first ``delta["keep"]`` of the last observation (usually the
  ones the step added; a wrapper that rewrites earlier messages, such as ``reasoning="strip"`` or
  ``template="context"``, moves ``keep`` back to the first message that changed). When that first
  message differs from the one it replaces only in a text ``content`` that shares a beginning with it
  (``template="context"``'s one user message, which each step extends), it goes as the rest of its
  content after the first ``delta["content_keep"]`` characters of the old one;
- ``tools``: the whole list when ``delta["tools"]`` is true (it changed, or this is the reset), else
  ``[]`` (unchanged);
- ``prompt`` (with a server tokenizer): per ``delta["prompt"]``: ``"whole"`` (the whole prompt, or
  None), ``"splice"`` (the text that follows the first ``delta["prompt_keep"]`` characters, Unicode
  code points, of the last prompt: all of it when the prompt only grew, less when a wrapper rewrote
  earlier text), ``"same"`` (None: unchanged);
- ``env_messages`` (the env's answer to the step, most often the last of the new messages, as they
  are): ``[]`` when ``delta["env_messages"]`` is a count n (they are the last n messages), else as
  they are (None in the header);
- ``delta``: the header ``{"step", "keep", "content_keep", "length", "tools", "prompt", "prompt_keep",
  "prompt_length", "env_messages"}``. ``step`` is 0 at the reset and counts the episode's steps; ``length`` and
  ``prompt_length`` are the whole observation's number of messages and prompt characters.

Every other field (``protocol``, ``checker``, ``info``, ``reward``, ``done``, ...) is per step already
and goes as it is. The rebuild checks the header against what it holds: a delta
that does not follow the last observation (a step missed or answered twice, a decoder reused across
sessions, a count that does not add up) raises `WireGap` instead of building a wrong chat.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tooluse_gym.errors import ToolUseGymError
from tooluse_gym.server.models import ToolUseObservation

OBSERVATION_MODES = ("full", "delta")
"""What a reset's ``observation`` wire option may ask for; ``full`` is the default."""
WIRE_KEYS = ("observation",)
"""The reset arguments that set the wire, not the env: no knob, not on the protocol card."""

__all__ = ["OBSERVATION_MODES", "WIRE_KEYS", "DeltaDecoder", "DeltaEncoder", "WireGap"]


class WireGap(ToolUseGymError, RuntimeError):
    """A delta observation that does not follow the observation the client holds: nothing can be rebuilt from it."""


@dataclass(frozen=True)
class _Whole:
    """The last whole observation's cumulative parts, and its step."""

    step: int
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    prompt: str | None


def _shared(before: str, after: str) -> int:
    """The length of the longest common prefix of two strings (a binary search over C-speed comparisons)."""
    lo, hi = 0, min(len(before), len(after))
    if before[:hi] == after[:hi]:
        return hi
    while hi - lo > 1:  # before[:lo] == after[:lo], before[:hi] != after[:hi]
        mid = (lo + hi) // 2
        if before[:mid] == after[:mid]:
            lo = mid
        else:
            hi = mid
    return lo


def _kept(before: list[dict[str, Any]], after: list[dict[str, Any]]) -> int:
    """How many leading messages `after` shares with `before`."""
    n = min(len(before), len(after))
    i = 0
    while i < n and (before[i] is after[i] or before[i] == after[i]):
        i += 1
    return i


def _content_shared(before: dict[str, Any], after: dict[str, Any]) -> int | None:
    """How much of `before`'s text content `after`'s begins with, when the two differ in nothing else (else None)."""
    old, new = before.get("content"), after.get("content")
    if not isinstance(old, str) or not isinstance(new, str) or before.keys() != after.keys():
        return None
    if any(before[k] != after[k] for k in before if k != "content"):
        return None
    return _shared(old, new) or None


class DeltaEncoder:
    """The server side of one session: each whole observation as the delta from the one it sent last."""

    def __init__(self) -> None:
        self._last: _Whole | None = None

    def encode(self, whole: ToolUseObservation, *, reset: bool) -> ToolUseObservation:
        """`whole` as a delta (a reset's from nothing: everything is sent, with the header)."""
        last = None if reset else self._last
        if last is None and not reset:
            raise WireGap("a delta step with no reset before it")
        messages, tools, prompt = whole.messages, whole.tools, whole.prompt
        keep = 0 if last is None else _kept(last.messages, messages)
        sent, content_keep = messages[keep:], None
        if last is not None and keep < min(len(last.messages), len(messages)):
            content_keep = _content_shared(last.messages[keep], messages[keep])
            if content_keep is not None:
                sent = [{**sent[0], "content": sent[0]["content"][content_keep:]}, *sent[1:]]
        send_tools = last is None or tools != last.tools
        prompt_keep = None
        if last is None or prompt is None or last.prompt is None:
            prompt_mode, sent_prompt = (
                ("same", None) if last is not None and prompt == last.prompt else ("whole", prompt)
            )
        elif prompt == last.prompt:
            prompt_mode, sent_prompt = "same", None
        else:
            prompt_keep = _shared(last.prompt, prompt)
            prompt_mode, sent_prompt = "splice", prompt[prompt_keep:]
        step = 0 if last is None else last.step + 1
        self._last = _Whole(step, messages, tools, prompt)
        answer, tail = whole.env_messages, len(whole.env_messages)
        in_tail = 0 < tail <= len(messages) - keep and messages[len(messages) - tail :] == answer
        header = {
            "step": step,
            "keep": keep,
            "content_keep": content_keep,
            "length": len(messages),
            "tools": send_tools,
            "prompt": prompt_mode,
            "prompt_keep": prompt_keep,
            "prompt_length": None if prompt is None else len(prompt),
            "env_messages": tail if in_tail else None,
        }
        update = {
            "messages": sent,
            "tools": tools if send_tools else [],
            "prompt": sent_prompt,
            "env_messages": [] if in_tail else answer,
        }
        return whole.model_copy(update={**update, "delta": header})


class DeltaDecoder:
    """The client side of one session: rebuilds each whole observation from the deltas, checking every header."""

    def __init__(self) -> None:
        self._last: _Whole | None = None

    def forget(self) -> None:
        """Drop what is held (a new session): the next delta must be a reset's."""
        self._last = None

    def decode(self, obs: ToolUseObservation) -> ToolUseObservation:
        """The whole observation `obs` stands for (`obs` itself when it is whole); `WireGap` when it cannot be."""
        header = obs.delta
        if header is None:
            self._last = None
            return obs
        step, keep, length = (_count(header, k) for k in ("step", "keep", "length"))
        last = self._last
        if step == 0:
            last = _Whole(-1, [], [], None)
        elif last is None or step != last.step + 1:
            held = "nothing" if last is None else f"step {last.step}"
            raise WireGap(f"a delta for step {step} while holding {held} of {obs.task_id}: a step is missing")
        if keep > len(last.messages) or keep + len(obs.messages) != length:
            raise WireGap(
                f"the delta of step {step} keeps {keep} of {len(last.messages)} held messages and adds "
                f"{len(obs.messages)}, but the observation has {length}"
            )
        sent = obs.messages
        if header.get("content_keep") is not None:
            sent = _spliced(header, sent, last.messages, keep, step)
        messages = last.messages[:keep] + sent
        tools = obs.tools if header.get("tools") else last.tools
        prompt = _prompt(header, obs.prompt, last.prompt, step)
        tail = header.get("env_messages")
        if tail is None:
            answer = obs.env_messages
        elif isinstance(tail, int) and not isinstance(tail, bool) and 0 < tail <= len(obs.messages):
            answer = [dict(m) for m in messages[len(messages) - tail :]]
        else:
            raise WireGap(f"the delta of step {step} names {tail!r} env messages among {len(obs.messages)} new ones")
        self._last = _Whole(step, messages, tools, prompt)
        # copies: a caller that edits its observation's messages leaves what is held intact
        return obs.model_copy(
            update={
                "messages": [dict(m) for m in messages],
                "tools": [dict(t) for t in tools],
                "prompt": prompt,
                "env_messages": answer,
                "delta": None,
            }
        )


def _count(header: dict[str, Any], key: str) -> int:
    value = header.get(key)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise WireGap(f"a delta header without its counts ({key}: {value!r}): {header}")
    return value


def _spliced(
    header: dict[str, Any], sent: list[dict[str, Any]], held: list[dict[str, Any]], keep: int, step: int
) -> list[dict[str, Any]]:
    """`sent` with its first message's content completed from the held message it replaces."""
    n = _count(header, "content_keep")
    old = held[keep].get("content") if keep < len(held) else None
    new = sent[0].get("content") if sent else None
    if not isinstance(old, str) or not isinstance(new, str) or n > len(old):
        raise WireGap(f"the delta of step {step} keeps {n} characters of a message content it cannot find")
    return [{**sent[0], "content": old[:n] + new}, *sent[1:]]


def _prompt(header: dict[str, Any], sent: str | None, held: str | None, step: int) -> str | None:
    mode = header.get("prompt")
    if mode == "whole":
        prompt = sent
    elif mode == "same":
        prompt = held
    elif mode == "splice" and held is not None and sent is not None:
        keep = _count(header, "prompt_keep")
        if keep > len(held):
            raise WireGap(f"the delta of step {step} keeps {keep} characters of a held prompt of {len(held)}")
        prompt = held[:keep] + sent
    else:
        raise WireGap(
            f"the delta of step {step} has prompt {mode!r}, which cannot follow a held prompt of {held!r:.40}"
        )
    if (None if prompt is None else len(prompt)) != header.get("prompt_length"):
        raise WireGap(
            f"the delta of step {step} rebuilds a prompt of another length than {header.get('prompt_length')}"
        )
    return prompt
