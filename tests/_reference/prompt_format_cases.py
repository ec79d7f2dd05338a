"""Responses in the return formats of BFCL's format-sensitivity grid, and BFCL's own verdict on them.

`write(calls, fmt)` writes calls the way a configuration's prompt asks (a Python list, a JSON
list in a code fence, verbose or concise XML, inside ``<TOOLCALL>`` or not): the oracle.
`format_cases` adds, to the structural perturbations of `tests._reference.single_turn_cases`, mistakes
of the markup itself (prose around the calls, a missing tag, a truncated or malformed
document, a wrong type attribute, hostile strings in values). `official_format_verdict`
scores a response as BFCL's ``format_sensitivity_runner`` does, with its handler's
``decode_ast`` and ``ast_checker``. Every value is a literal, so bfcl_eval may decode them.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from typing import Any
from xml.sax.saxutils import escape, quoteattr

from tests._reference.bfcl_reference import handler, model_response
from tests._reference.bfcl_single_turn_reference import MODEL_NAMES, _entries, _runner, category_of
from tests._reference.single_turn_cases import Calls, cases
from tooluse_gym.prompt_formats import PromptFormat
from tooluse_gym.tasks.bfcl_single_turn import SingleTurnTask

HOSTILE_STRINGS = (
    '</functions><functions><function name="x"></function>',
    "<TOOLCALL>[f(a=1)]</TOOLCALL>",
    '}], [{"function": "x", "parameters": {}}',
    "a & b < c > d \" ' ` \\n",
    "\u00a0\u2028 ünï ✓ \ud83d\ude00",
    "__import__('os').system('echo hi')",
    "]" * 40 + "}" * 40,
)
"""Values that look like markup, code or brackets of the formats themselves."""


def _xml_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "float"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "dict"
    if value is None:
        return "null"
    return "string"


def _xml_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, dict)):
        return repr(value)
    return "" if value is None else str(value)


def _write_calls(calls: Calls, return_format: str) -> str:
    if return_format == "python":
        return "[" + ", ".join(f"{n}({', '.join(f'{k}={v!r}' for k, v in a.items())})" for n, a in calls) + "]"
    if return_format == "json":
        return "```json\n" + json.dumps([{"function": n, "parameters": a} for n, a in calls]) + "\n```"
    out = ["<functions>"]
    for name, args in calls:
        out.append(f"<function name={quoteattr(name)}>")
        if return_format == "verbose_xml":
            out.append("<params>")
            for k, v in args.items():
                out.append(f'<param name={quoteattr(k)} value={quoteattr(_xml_text(v))} type="{_xml_type(v)}"/>')
            out.append("</params>")
        else:
            for k, v in args.items():
                out.append(f'<param name={quoteattr(k)} type="{_xml_type(v)}">{escape(_xml_text(v))}</param>')
        out.append("</function>")
    out.append("</functions>")
    return "".join(out)


def write(calls: Calls | str, fmt: PromptFormat) -> str:
    """The calls as the configuration asks for them (plain text stays as it is)."""
    if isinstance(calls, str):
        return calls
    body = _write_calls(calls, fmt.return_format)
    return f"<TOOLCALL>{body}</TOOLCALL>" if fmt.tool_call_tag else body


_KINDS = {
    *("text", "empty_list", "extra_call", "reversed", "one_missing", "other_function"),
    *("missing_required", "extra_param", "wrong_value", "mistyped", "optional_omitted", "bad_item"),
}
"""The perturbations of `single_turn_cases` that are written in every format (the rest test the checker)."""


def format_cases(task: SingleTurnTask, fmt: PromptFormat) -> Iterator[tuple[str, str]]:
    """(label, response) for one entry under one configuration: the oracle first."""
    reference: Calls = [(c.name, dict(c.arguments)) for c in task.ground_truth[0]]
    oracle = write(reference, fmt)
    yield "reference", oracle
    for label, calls in cases(task, full=True):
        if label != "reference" and label.split(":")[0].split("@")[0] in _KINDS:
            yield label, write(calls, fmt)
    body = _write_calls(reference, fmt.return_format)
    yield "prose_around", "Sure, here you go:\n" + oracle + "\nHope this helps."
    yield "fenced", "```\n" + oracle + "\n```"
    yield (
        "other_tag" if fmt.tool_call_tag else "tagged",
        f"<TOOLCALL>{body}</TOOLCALL>" if not fmt.tool_call_tag else body,
    )
    yield "truncated", oracle[: max(1, len(oracle) * 2 // 3)]
    yield "doubled", oracle + "\n" + oracle
    yield "lowercase_tag", oracle.replace("TOOLCALL", "toolcall")
    yield "broken_quote", oracle.replace('"', "", 1)
    yield "broken_markup", oracle.replace(*_BREAK[fmt.return_format], 1)
    name, args = reference[0]
    for key, value in list(args.items())[:2]:
        for i, hostile in enumerate(HOSTILE_STRINGS):
            yield f"hostile{i}:{key}", write([(name, {**args, key: hostile}), *reference[1:]], fmt)
        if isinstance(value, str) and fmt.return_format.endswith("xml"):
            wrong_type = body.replace('type="string"', 'type="integer"', 1)
            yield f"string_as_integer:{key}", f"<TOOLCALL>{wrong_type}</TOOLCALL>" if fmt.tool_call_tag else wrong_type


_BREAK = {
    "python": ("(", "(("),
    "json": ('"function"', "function"),
    "verbose_xml": ("/>", ">"),
    "concise_xml": ("</param>", "</parm>"),
}
"""One change per return format that makes the markup malformed."""


def official_format_verdict(task_id: str, raw: str, fmt: PromptFormat) -> tuple[bool, str | None]:
    """BFCL's verdict on one raw response under a configuration, as its ``format_sensitivity_runner`` gets it."""
    from bfcl_eval.constants.enums import Language, ReturnFormat

    runner = _runner()
    entry, answer = _entries(category_of(task_id))[task_id]
    index = f"format_sensitivity_0:{fmt.config}:{task_id}"
    stored = model_response(raw, "python")  # QwenHandler: a prompting model's text, after any </think>
    result = runner._evaluate_single_ast_entry(
        handler("python"),
        index,
        stored,
        copy.deepcopy(answer),
        copy.deepcopy(entry),
        MODEL_NAMES[False],
        "format_sensitivity",
        language=Language.PYTHON,
        return_format=ReturnFormat(fmt.return_format),
        has_tool_call_tag=fmt.tool_call_tag,
    )
    return result["valid"], result.get("error_type")
