"""`decoder_for`: the one place that picks a decoder, from the knobs and the task.

* a multi-turn task (any `Task` but a single-turn one): `BfclDecoder` under ``decoder="bfcl"``
  (BFCL's call strings), `LenientDecoder` under ``decoder="lenient"`` (each malformed call answered
  with its own error);
* a `SingleTurnTask`: `LenientAstDecoder` under ``decoder="lenient"`` (positional arguments bound by
  the task's schemas); under ``decoder="bfcl"``, `BfclFormatDecoder` with a ``prompt_format`` (its
  return format), else `BfclAstDecoder` (the ``tool_format``, in the category's language).

The knobs have been checked by then (`tooluse_gym.envs.knobs.Knobs`, and the single-turn env for
what cannot apply to its tasks).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, overload

from tooluse_gym.checking.languages import language_of
from tooluse_gym.decoding.base import AstDecoded, Decoder
from tooluse_gym.decoding.bfcl import BfclDecoder
from tooluse_gym.decoding.bfcl_ast import BfclAstDecoder
from tooluse_gym.decoding.bfcl_format import BfclFormatDecoder
from tooluse_gym.decoding.lenient import LenientDecoder
from tooluse_gym.decoding.lenient_ast import LenientAstDecoder
from tooluse_gym.prompt_formats import PromptFormat
from tooluse_gym.tasks.bfcl_single_turn import SingleTurnTask
from tooluse_gym.types import ParsedAction

if TYPE_CHECKING:
    from tooluse_gym.envs.knobs import Knobs
    from tooluse_gym.tasks.task import Task

__all__ = ["decoder_for"]


# A SingleTurnTask is a Task: the narrower signature comes first on purpose (mypy calls that an overlap).
@overload
def decoder_for(knobs: Knobs, task: SingleTurnTask) -> Decoder[AstDecoded]: ...  # type: ignore[overload-overlap]


@overload
def decoder_for(knobs: Knobs, task: Task) -> Decoder[ParsedAction]: ...


def decoder_for(knobs: Knobs, task: Task) -> Decoder[AstDecoded] | Decoder[ParsedAction]:
    """The decoder that reads `task`'s messages under `knobs` (``decoder``, ``tool_format``, ``prompt_format``).

    A single-turn task's decoder gives `AstDecoded` (what BFCL's AST checker takes), any other
    task's `ParsedAction` (what the runtime executes).

    Raises:
        ValueError: An unknown ``decoder`` knob.
    """
    if knobs.decoder not in ("bfcl", "lenient"):
        raise ValueError(f"unknown decoder {knobs.decoder!r}; expected 'bfcl' or 'lenient'")
    if not isinstance(task, SingleTurnTask):
        if knobs.decoder == "bfcl":
            return BfclDecoder(knobs.tool_format)
        return LenientDecoder(knobs.tool_format)
    if knobs.decoder == "lenient":  # a prompt_format here asks for Python lists (tool_format python)
        return LenientAstDecoder(knobs.tool_format, task.checker_docs, task.underscore_to_dot)
    if knobs.prompt_format is not None:
        prompt_format = PromptFormat.parse(knobs.prompt_format)
        return BfclFormatDecoder(prompt_format.return_format, prompt_format.tool_call_tag)
    return BfclAstDecoder(knobs.tool_format, language_of(task.test_category))
