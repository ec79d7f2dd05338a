"""The knobs of every env id: each knob's values and default declared once, and checked once.

`Knobs` holds the protocol (what the model sees: template, reasoning history, system prompt,
tool format, where tool results go, the tokenizer's rendering) and the env's own rules (how a
message is decoded, which calls are refused, the step cap). An env id differs from another only
by the defaults it overrides (`Knobs.with_defaults`). This module imports neither gymnasium nor
torch, so a training config can hold a `Knobs` without loading either.
"""

from __future__ import annotations

import dataclasses
import difflib
import inspect
import re
import typing
import warnings
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from types import MappingProxyType
from typing import Any

from tooluse_gym.envs.ids import MEMORY_ID, MULTI_TURN_ID, SCENARIO_ID, SINGLE_TURN_ID, TASKS_ID, WEB_SEARCH_ID
from tooluse_gym.prompts import SYSTEM_PROMPTS, SystemPromptSpec, system_prompt_spec
from tooluse_gym.protocol import MAX_STEPS_PER_TURN, sha256_text

TEMPLATES = ("native", "context")
REASONING_MODES = ("keep", "strip", "last")
TOOL_FORMATS = ("python", "json")
TOOL_RESULT_PLACEMENTS = ("tool_messages", "user_message")
DECODERS = ("bfcl", "lenient")
CHOICES: Mapping[str, tuple[str, ...]] = {
    "template": TEMPLATES,
    "reasoning": REASONING_MODES,
    "tool_format": TOOL_FORMATS,
    "tool_results": TOOL_RESULT_PLACEMENTS,
    "decoder": DECODERS,
}
"""The knobs that take one of a fixed set of values."""

__all__ = [
    "CHOICES",
    "DECODERS",
    "ENV_DEFAULTS",
    "MAX_STEPS_PER_TURN",
    "Knobs",
    "check_choice",
    "check_type",
    "env_defaults",
    "knob_docs",
    "optional_knobs_model",
]


def check_choice(knob: str, value: object, choices: Sequence[str]) -> None:
    """Raise `ValueError` naming `knob` and its allowed values unless `value` is one of `choices`."""
    if value not in choices:
        raise ValueError(f"{knob} must be one of {', '.join(map(repr, choices))}; got {value!r}")


_TYPE_WORDS = {bool: "a bool (True or False)", int: "an integer", str: "a string", type(None): "None"}


def check_type(knob: str, value: object, hint: object) -> None:
    """Raise `ValueError` naming `knob` unless `value` is of its declared type `hint` (``bool`` is not an ``int``).

    `hint` is a plain type or a union of them (``bool | None``), as `Knobs` declares its fields.
    """
    allowed = typing.get_args(hint) or (hint,)
    for kind in allowed:
        if kind is int and isinstance(value, bool):
            continue
        if isinstance(value, kind):
            return
    wanted = " or ".join(_TYPE_WORDS.get(kind, getattr(kind, "__name__", str(kind))) for kind in allowed)
    raise ValueError(f"{knob} must be {wanted}; got {value!r} ({type(value).__name__})")


_NAME_LIKE = re.compile(r"[\w.-]{1,32}")


def warn_if_mistyped_prompt(prompt: str) -> None:
    """Warn when a `system_prompt` that is not a named prompt looks like one (a short single word): likely a typo."""
    if prompt in SYSTEM_PROMPTS or not _NAME_LIKE.fullmatch(prompt):
        return
    close = difflib.get_close_matches(prompt.lower(), SYSTEM_PROMPTS, n=1, cutoff=0.5)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    # One place and one registry for every `Knobs` made with this prompt (a config is built, replaced and
    # resolved several times): under the default filters the warning shows once per process, not once per copy.
    warnings.warn_explicit(
        f"system_prompt {prompt!r} is not a named prompt ({', '.join(SYSTEM_PROMPTS)}), so it is used as the literal "
        f"prompt text{hint}",
        UserWarning,
        filename="system_prompt",
        lineno=0,
        module=__name__,
        registry=_PROMPT_WARNINGS,
    )


_PROMPT_WARNINGS: dict = {}
"""The warning registry of `warn_if_mistyped_prompt` (what it has shown)."""


@dataclass(frozen=True, kw_only=True)
class Knobs:
    """Every choice that changes what the model sees or how its messages are scored.

    Every value is checked against its declared type (`check_type`: ``strict_tools="yes"`` is a
    `ValueError` naming the knob) and, for the knobs in `CHOICES`, against their values.

    Attributes:
        template: ``native`` (role-separated messages) | ``context`` (history in one user message).
        reasoning: Earlier ``<think>`` content: ``keep`` | ``strip`` (all but the current turn's) | ``last``.
        system_prompt: ``bfcl`` | ``strong`` | ``none`` | any other text (a literal prompt; a
            ``{functions}`` placeholder in it receives the function list; a short single word
            warns, as a likely mistyped name).
        tool_format: ``python`` (``[f(a=1)]``) | ``json`` (``<tool_call>{...}</tool_call>`` blocks).
        tool_results: ``tool_messages`` | ``user_message`` (BFCL's prompting handlers).
        decoder: ``bfcl`` (messages decoded, executed and ended exactly as bfcl_eval does,
            without eval) | ``lenient`` (a friendlier parser: positional arguments bound, code
            fences and ``<think>`` blocks ignored, each malformed call answered with its own
            error; on single-turn tasks prose around the call list is read too, a malformed
            call fails the whole message, and BFCL's checker judges the calls).
        strict_tools: Refuse held-out functions before their turn and excluded functions.
        validate_args: Validate arguments against the function schema before calling
            (None: off under ``bfcl``, which runs every call BFCL would; on under ``lenient``;
            off on single-turn tasks, which execute nothing).
        max_steps_per_turn: Executing steps allowed per turn (BFCL: 20).
        tokenizer: Add ``prompt`` rendered with this tokenizer's chat template (a local
            folder, a cached hub id, or ``smollm2-135m``).
        chat_template: Jinja text or a file path replacing the tokenizer's template.
        prompt_format: One of the 26 configuration strings of BFCL's format-sensitivity grid
            (``ret_fmt=json&tool_call_tag=True&func_doc_fmt=xml&prompt_fmt=plaintext&style=classic``):
            the system prompt is the one BFCL builds for it and messages are decoded in its
            return format (`tooluse_gym.prompt_formats`); None (default): BFCL's default prompt.
            Needs ``system_prompt='bfcl'`` and ``tool_format='python'``; on multi-turn envs and
            under ``decoder='lenient'`` only the configurations whose calls are bare Python lists apply.
    """

    template: str = "native"
    reasoning: str = "keep"
    system_prompt: str = "bfcl"
    tool_format: str = "python"
    tool_results: str = "tool_messages"
    decoder: str = "bfcl"
    strict_tools: bool = False
    validate_args: bool | None = None
    max_steps_per_turn: int = MAX_STEPS_PER_TURN
    tokenizer: str | None = None
    chat_template: str | None = None
    prompt_format: str | None = None

    def __post_init__(self) -> None:
        for knob, choices in CHOICES.items():
            check_choice(knob, getattr(self, knob), choices)
        for knob, hint in _knob_types().items():
            check_type(knob, getattr(self, knob), hint)
        if not self.system_prompt:
            raise ValueError(f"system_prompt must be one of {', '.join(SYSTEM_PROMPTS)} or non-empty prompt text")
        warn_if_mistyped_prompt(self.system_prompt)
        if self.max_steps_per_turn < 1:
            raise ValueError(f"max_steps_per_turn must be >= 1, got {self.max_steps_per_turn}")
        if self.prompt_format is not None:
            self._check_prompt_format()

    def _check_prompt_format(self) -> None:
        from tooluse_gym.prompt_formats import check_prompt_format

        check_prompt_format(self.prompt_format)
        for knob, needed in (("system_prompt", "bfcl"), ("tool_format", "python")):
            if getattr(self, knob) != needed:
                raise ValueError(
                    f"prompt_format sets the system prompt and the call format (BFCL's builder and its return "
                    f"format), so {knob} must stay {needed!r}; got {getattr(self, knob)!r}"
                )

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """Every knob's name, in declaration order."""
        return tuple(f.name for f in dataclasses.fields(cls))

    def with_defaults(self, **given: Any) -> Knobs:
        """These knobs (an env id's defaults) with the given ones replacing them; unknown names are an error."""
        unknown = sorted(set(given) - set(self.names()))
        if unknown:
            raise TypeError(f"unknown knobs {unknown}; the knobs are: {', '.join(self.names())}")
        return dataclasses.replace(self, **given)

    def to_dict(self) -> dict[str, Any]:
        """Every knob, name -> value (JSON-able; what `gym.make` takes as keywords)."""
        return {name: getattr(self, name) for name in self.names()}

    def changed_from(self, defaults: Knobs) -> dict[str, Any]:
        """The knobs whose value differs from `defaults`', name -> value, in declaration order."""
        return {k: v for k, v in self.to_dict().items() if v != getattr(defaults, k)}

    @property
    def validates_args(self) -> bool:
        """`validate_args` resolved: off under ``bfcl`` (BFCL runs every call it decodes), else on, unless set."""
        return self.decoder != "bfcl" if self.validate_args is None else bool(self.validate_args)

    @cached_property
    def prompt(self) -> SystemPromptSpec:
        """The system prompt, resolved once (``bfcl`` reads bfcl_eval's text; `prompt_format`, its builder's)."""
        if self.prompt_format is not None:
            from tooluse_gym.prompt_formats import prompt_format_spec

            return prompt_format_spec(self.prompt_format)
        return system_prompt_spec(self.system_prompt, self.tool_format)

    def card_fields(self, **extra: str) -> dict[str, Any]:
        """The protocol-card fields these knobs set; ``extra`` holds the tokenizer (if any) and the given items."""
        if self.tokenizer is not None:
            extra["tokenizer"] = self.tokenizer
            if self.chat_template is not None:
                extra["chat_template_sha256"] = sha256_text(self.chat_template)
        if self.prompt_format is not None:  # in `extra`: cards without it keep their fingerprints
            extra["prompt_format"] = self.prompt_format
        prompt = self.prompt
        return {
            "template": self.template,
            "reasoning": self.reasoning,
            "system_prompt": prompt.name,
            "system_prompt_sha256": prompt.sha256,
            "tool_format": self.tool_format,
            "tool_results": self.tool_results,
            "decoder": self.decoder,
            "strict_tools": self.strict_tools,
            "validate_args": self.validates_args,
            "max_steps_per_turn": self.max_steps_per_turn,
            "extra": tuple(sorted(extra.items())),
        }


_KNOB_TYPES: dict[str, Any] = {}


def _knob_types() -> dict[str, Any]:
    """Each knob's declared type (`Knobs`' annotations, evaluated once)."""
    if not _KNOB_TYPES:
        _KNOB_TYPES.update(typing.get_type_hints(Knobs))
    return _KNOB_TYPES


ENV_DEFAULTS: Mapping[str, Knobs] = MappingProxyType(
    {
        # BFCL's own protocol: its prompt, Python calls, decoded and executed exactly as bfcl_eval does
        MULTI_TURN_ID: Knobs(),
        # BFCL's single-turn protocol: its prompt, Python call lists, decoded as its handlers decode them
        SINGLE_TURN_ID: Knobs(),
        # BFCL's memory protocol: its prompt, Python calls, decoded and executed as in multi-turn
        MEMORY_ID: Knobs(),
        # BFCL's web-search protocol: the same (the search backend is the env's own setting, on the card)
        WEB_SEARCH_ID: Knobs(),
        # tasks of your own have no official score to match, and training gets a denser signal when
        # each malformed call is answered with its own error
        SCENARIO_ID: Knobs(decoder="lenient"),
        TASKS_ID: Knobs(decoder="lenient"),
    }
)
"""Each env id's knob defaults: the env ids differ only in their tasks and in these."""


def env_defaults(env_id: str) -> Knobs:
    """The knob defaults of an env id (`ENV_DEFAULTS`); an unknown id is a `ValueError` naming the known ones."""
    try:
        return ENV_DEFAULTS[env_id]
    except KeyError:
        raise ValueError(f"unknown env id {env_id!r}; known: {', '.join(ENV_DEFAULTS)}") from None


def knob_docs() -> dict[str, str]:
    """Each knob's description from the ``Attributes:`` section of `Knobs`' docstring, as one line of text."""
    out: dict[str, str] = {}
    current = None
    section = inspect.cleandoc(Knobs.__doc__ or "").split("Attributes:", 1)[1]
    for line in section.splitlines():
        if line.strip() and not line.startswith(" "):  # the section ends at the next unindented line
            break
        match = re.match(r"^ {4}(\w+): (.*)$", line)
        if match:
            current = match.group(1)
            out[current] = match.group(2).strip()
        elif current and line.strip():
            out[current] += " " + line.strip()
    return out


def optional_knobs_model(base: type[Any], name: str, *, exclude: Collection[str] = ()) -> type[Any]:
    """A pydantic model class deriving from `base` with one field per knob (but `exclude`), generated from `Knobs`.

    Each field is the knob's type or None, None by default (unset: the env id's default), and
    carries the knob's description (`knob_docs`). pydantic is imported only here (the verifiers
    adapter's ``--env.taskset.knobs.*`` config is such a model).

    Args:
        base: The pydantic model class to derive from.
        name: The new class's name.
        exclude: Knobs left out.

    Returns:
        The model class.
    """
    from pydantic import Field, create_model

    hints = typing.get_type_hints(Knobs)
    docs = knob_docs()
    fields: dict[str, Any] = {
        knob: (hints[knob] | None, Field(None, description=docs[knob])) for knob in Knobs.names() if knob not in exclude
    }
    return create_model(name, __base__=base, **fields)
