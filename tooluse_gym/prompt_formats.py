"""BFCL's format-sensitivity grid: its configuration strings, its system prompt for each, what each asks for.

BFCL v4's non-scoring ``format_sensitivity`` category asks 200 single-turn entries under 26
system-prompt configurations and reports the accuracy of each, their standard deviation and
their spread. A configuration is a string such as
``ret_fmt=json&tool_call_tag=True&func_doc_fmt=xml&prompt_fmt=plaintext&style=classic``:

* ``ret_fmt``: how calls are written (``python`` lists, a ``json`` list, ``verbose_xml`` or
  ``concise_xml`` markup), decoded by `tooluse_gym.decoding.bfcl_format`;
* ``tool_call_tag``: whether they go inside ``<TOOLCALL>...</TOOLCALL>``;
* ``func_doc_fmt``: how the function docs are shown (``python``, ``xml``, ``json``);
* ``prompt_fmt`` (``plaintext`` | ``markdown``) and ``style`` (``classic`` | ``experimental``):
  the prompt's layout and wording.

The list of configurations and the prompt text are bfcl_eval's, read at run time
(``get_all_format_sensitivity_configs`` and ``formulate_system_prompt``); nothing is copied.
BFCL's prompt builder lives in ``bfcl_eval.model_handler.utils``, whose import needs
``tenacity`` and ``tree_sitter`` with its Java and JavaScript grammars (the ``dev`` extra).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any
from xml.sax.saxutils import escape, quoteattr

from tooluse_gym.prompts import FUNCTIONS_PLACEHOLDER, SystemPromptSpec

ALL = "all"
"""Shorthand for every configuration of BFCL's grid (command lines: ``--prompt-format all``)."""
RETURN_FORMATS = ("python", "json", "verbose_xml", "concise_xml")
"""The ``ret_fmt`` values: how the model writes its calls."""

__all__ = [
    "ALL",
    "RETURN_FORMATS",
    "PromptFormat",
    "check_prompt_format",
    "default_prompt_format",
    "expand",
    "grid_task_ids",
    "prompt_format_spec",
    "prompt_formats",
]


@cache
def prompt_formats() -> tuple[str, ...]:
    """BFCL's 26 configuration strings, in its order (``bfcl_eval.utils.get_all_format_sensitivity_configs``)."""
    from tooluse_gym.tasks import bfcl

    return tuple(bfcl._import("bfcl_eval.utils").get_all_format_sensitivity_configs())


def default_prompt_format() -> str:
    """BFCL's default configuration (``DEFAULT_SYSTEM_PROMPT_FORMAT``): the prompt every other category gets."""
    from tooluse_gym.tasks import bfcl

    return str(bfcl._import("bfcl_eval.constants.default_prompts").DEFAULT_SYSTEM_PROMPT_FORMAT)


@cache
def grid_task_ids() -> tuple[str, ...]:
    """The 200 entry ids BFCL asks under every configuration, in its id file's order (``FORMAT_SENSITIVITY_IDS_PATH``).

    They are `ToolUse-SingleTurn-v0` task ids (``category="single_turn"``); the grid as BFCL runs it is
    ``tooluse eval sweep --vary --categories single_turn --task-ids ... --prompt-format BASE all``.
    """
    from tooluse_gym.tasks import bfcl

    path = bfcl._import("bfcl_eval.constants.eval_config").FORMAT_SENSITIVITY_IDS_PATH
    with open(path) as f:
        return tuple(i for ids in json.load(f).values() for i in ids)


def check_prompt_format(value: object) -> None:
    """Raise `ValueError` listing BFCL's configuration strings unless `value` is one of them."""
    valid = prompt_formats()
    if value not in valid:
        listed = "\n  ".join(valid)
        raise ValueError(f"prompt_format must be one of BFCL's {len(valid)} configurations:\n  {listed}\ngot {value!r}")


def expand(values: Sequence[str]) -> list[str]:
    """Command-line values with `ALL` replaced by every configuration (duplicates dropped, order kept)."""
    out: list[str] = []
    for value in values:
        for item in prompt_formats() if value == ALL else (value,):
            if item not in out:
                out.append(item)
    return out


@dataclass(frozen=True)
class PromptFormat:
    """One configuration of BFCL's grid, read into its parts.

    Attributes:
        config: The configuration string (one of `prompt_formats`).
        return_format: ``python`` | ``json`` | ``verbose_xml`` | ``concise_xml``.
        tool_call_tag: Calls go inside ``<TOOLCALL>...</TOOLCALL>``.
        function_doc_format: ``python`` | ``xml`` | ``json``.
        layout: ``plaintext`` | ``markdown`` (BFCL's ``prompt_fmt``).
        style: ``classic`` | ``experimental``.
    """

    config: str
    return_format: str
    tool_call_tag: bool
    function_doc_format: str
    layout: str
    style: str

    @classmethod
    def parse(cls, config: str) -> PromptFormat:
        """The configuration's parts; a string that is not one of BFCL's is a `ValueError` listing them."""
        check_prompt_format(config)
        fields = dict(part.split("=", 1) for part in config.split("&"))
        return cls(
            config=config,
            return_format=fields["ret_fmt"],
            tool_call_tag=fields["tool_call_tag"] == "True",
            function_doc_format=fields["func_doc_fmt"],
            layout=fields["prompt_fmt"],
            style=fields["style"],
        )

    @property
    def short(self) -> str:
        """The values alone, for folder names: ``json.tag.xml.plaintext.classic``."""
        tag = "tag" if self.tool_call_tag else "notag"
        return ".".join((self.return_format, tag, self.function_doc_format, self.layout, self.style))

    @property
    def python_calls(self) -> bool:
        """Whether calls are a bare Python list: what BFCL's multi-turn decoder (``decode_execute``) reads."""
        return self.return_format == "python" and not self.tool_call_tag

    def write(self, calls: Sequence[tuple[str, Mapping[str, Any]]]) -> str:
        """Calls (name, arguments) written as this configuration's prompt asks: what the oracle agent sends.

        Python: ``[f(a=1)]``; JSON: a ``json`` code fence around
        ``[{"function": ..., "parameters": {...}}]``; XML: ``<functions>`` with one ``<function>``
        per call, each parameter typed (``string``, ``integer``, ``float``, ``boolean``,
        ``array``, ``dict``, ``null``; lists and dicts as Python literals); inside
        ``<TOOLCALL>...</TOOLCALL>`` when the configuration has the tag.
        """
        body = _WRITERS[self.return_format](calls)
        return f"<TOOLCALL>{body}</TOOLCALL>" if self.tool_call_tag else body


def _python_list(calls: Sequence[tuple[str, Mapping[str, Any]]]) -> str:
    return "[" + ", ".join(f"{n}({', '.join(f'{k}={v!r}' for k, v in a.items())})" for n, a in calls) + "]"


def _json_list(calls: Sequence[tuple[str, Mapping[str, Any]]]) -> str:
    return "```json\n" + json.dumps([{"function": n, "parameters": dict(a)} for n, a in calls]) + "\n```"


_XML_TYPES = ((bool, "boolean"), (int, "integer"), (float, "float"), (list, "array"), (dict, "dict"), (str, "string"))


def _xml_param(name: str, value: Any, verbose: bool) -> str:
    kind = "null" if value is None else next((t for cls, t in _XML_TYPES if isinstance(value, cls)), "string")
    if isinstance(value, bool):
        text = "true" if value else "false"
    else:
        text = repr(value) if isinstance(value, (list, dict)) else "" if value is None else str(value)
    if verbose:
        return f'<param name={quoteattr(name)} value={quoteattr(text)} type="{kind}"/>'
    return f'<param name={quoteattr(name)} type="{kind}">{escape(text)}</param>'


def _xml(calls: Sequence[tuple[str, Mapping[str, Any]]], verbose: bool) -> str:
    out = ["<functions>"]
    for name, args in calls:
        params = "".join(_xml_param(k, v, verbose) for k, v in args.items())
        out.append(f"<function name={quoteattr(name)}>" + (f"<params>{params}</params>" if verbose else params))
        out.append("</function>")
    return "".join([*out, "</functions>"])


_WRITERS = {
    "python": _python_list,
    "json": _json_list,
    "verbose_xml": lambda calls: _xml(calls, verbose=True),
    "concise_xml": lambda calls: _xml(calls, verbose=False),
}


def _builder() -> Any:
    """bfcl_eval's ``formulate_system_prompt`` (its module needs ``tenacity`` and ``tree_sitter``)."""
    from tooluse_gym.tasks import bfcl

    try:
        module = bfcl._import("bfcl_eval.model_handler.utils")
    except ImportError as e:
        raise ImportError(
            "prompt_format builds the system prompt with bfcl_eval's own prompt builder, whose module imports "
            f"tenacity and tree_sitter (with tree-sitter-java and tree-sitter-javascript): {e}. "
            "Install them, e.g. pip install 'tooluse-gym[dev]'"
        ) from e
    return module.formulate_system_prompt


def prompt_format_spec(config: str) -> SystemPromptSpec:
    """The system prompt BFCL builds for `config`, as a prompt spec (name ``bfcl``).

    The whole prompt is BFCL's builder's output for the task's functions; the card's sha256
    hashes the configuration string with the prompt BFCL builds for no functions, so it
    differs between configurations and is the same for every task of a run.
    """
    PromptFormat.parse(config)
    build = _builder()

    def render(functions: Sequence[Mapping[str, Any]]) -> str:
        return str(build(format_sensitivity_config=config, functions=[dict(f) for f in functions]))

    hashed = config + "\n" + render([])
    return SystemPromptSpec("bfcl", FUNCTIONS_PLACEHOLDER, render, hashed=hashed)
