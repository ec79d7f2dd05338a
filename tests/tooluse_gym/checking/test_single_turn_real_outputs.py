"""Single-turn parity on real model outputs: published BFCL result files, scored by our env and by bfcl_eval.

The files are BFCL's own result files (``BFCL_v4_<category>_result.json``, one JSON line per
entry with ``id`` and ``result``) of real runs, such as the gpt-oss-20b and gpt-oss-120b runs
behind vLLM in the public repository ``bbrowning/bfcl-vllm-results``. Those runs used BFCL's
function-calling mode with an OpenAI-compatible handler: each ``result`` is the reply as
``OpenAICompletionsHandler`` stores it, ``[{name: arguments JSON}]`` for tool calls (names
with dots written with underscores) or the reply's text when it made none.

That repository carries no license, so none of its files is copied into this one: set
``TOOLUSE_BFCL_RESULTS`` to a folder holding such files (at any depth; multi-turn files and
categories the env does not play are passed over) and every response in them is scored twice:

* by ``ToolUse-SingleTurn-v0`` in function-calling mode (``system_prompt="none"``), through
  `gym.make`, `reset` on the entry and `step` with the reply as an OpenAI message;
* by bfcl_eval's eval runner on the stored response, with the OpenAI function-calling handler
  and a model whose ``underscore_to_dot`` is set (`tests._reference.bfcl_single_turn_reference`).

Valid flag and error type must be equal for every response. Where BFCL's score file for a result
file is present (BFCL's layout: ``score/`` in place of ``result/``, ``_score.json``; it lists the
failed entries with their ``error_type``), the verdicts it recorded when the run was scored must
equal ours too. Without the variable the test skips.
"""

from __future__ import annotations

import collections
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest

import tooluse_gym  # noqa: F401  (registers the ids)
from tests._reference.bfcl_single_turn_reference import stored_verdict
from tooluse_gym.envs.ids import SINGLE_TURN_ID
from tooluse_gym.tasks.bfcl_single_turn import CATEGORIES

RESULTS_VAR = "TOOLUSE_BFCL_RESULTS"
PREFIX, SUFFIX = "BFCL_v4_", "_result.json"

pytest.importorskip("tree_sitter", reason="bfcl_eval's decoders need tree_sitter (the dev extra)")


def result_files(root: Path) -> Iterator[tuple[str, Path]]:
    """(category, path) of every single-turn result file under `root` whose category the env plays."""
    for path in sorted(root.rglob(f"{PREFIX}*{SUFFIX}")):
        category = path.name[len(PREFIX) : -len(SUFFIX)]
        if category in CATEGORIES:
            yield category, path


def as_action(stored: Any) -> Any:
    """A stored function-calling response as the OpenAI message the model sent (the env's action)."""
    if isinstance(stored, str):
        return {"content": stored, "tool_calls": None}
    tool_calls = []
    for i, item in enumerate(stored):
        ((name, arguments),) = item.items()
        tool_calls.append({"id": f"call_{i}", "type": "function", "function": {"name": name, "arguments": arguments}})
    return {"content": "", "tool_calls": tool_calls}


def recorded_verdicts(result_file: Path) -> dict[str, tuple[bool, str | None]] | None:
    """The verdicts in the score file BFCL wrote beside a result file (None when there is none)."""
    parts = ["score" if p == "result" else p for p in result_file.parts[:-1]]
    score = Path(*parts, result_file.name.replace(SUFFIX, "_score.json"))
    if score == result_file or not score.is_file():
        return None
    failed = [json.loads(line) for line in score.read_text(encoding="utf-8").splitlines()[1:]]
    return {f["id"]: (False, f["error_type"]) for f in failed}


def ours(env: gym.Env, task_id: str, stored: Any) -> tuple[bool, str | None]:
    env.reset(options={"task_id": task_id})
    _, reward, terminated, _, info = env.step(as_action(stored))
    assert terminated and reward == (1.0 if info["checker"]["valid"] else 0.0)
    return info["checker"]["valid"], info["checker"]["error_type"]


@pytest.fixture(scope="module")
def results_root() -> Path:
    root = os.environ.get(RESULTS_VAR)
    if not root or not Path(root).is_dir():
        pytest.skip(f"set {RESULTS_VAR} to a folder of BFCL result files (e.g. a copy of bbrowning/bfcl-vllm-results)")
    return Path(root)


def test_every_real_response_agrees_with_bfcl(results_root):
    envs: dict[str, gym.Env] = {}
    counts: collections.Counter[tuple[str, str]] = collections.Counter()
    disagreements = []
    recorded_checked = 0
    for category, path in result_files(results_root):
        if category not in envs:
            envs[category] = gym.make(SINGLE_TURN_ID, category=category, system_prompt="none")
        recorded = recorded_verdicts(path)
        for line in path.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            expected = stored_verdict(record["id"], record["result"], "fc", True)
            got = ours(envs[category], record["id"], record["result"])
            counts[category, expected[1] or "valid"] += 1
            where = f"{path.relative_to(results_root)}:{record['id']}"
            if got != expected:
                disagreements.append((where, "bfcl_eval", got, expected))
            if recorded is not None:
                recorded_checked += 1
                if got != recorded.get(record["id"], (True, None)):
                    disagreements.append((where, "score file", got, recorded.get(record["id"], (True, None))))
    for category in sorted({c for c, _ in counts}):
        rows = {kind: n for (c, kind), n in counts.items() if c == category}
        print(category, sum(rows.values()), dict(sorted(rows.items())))
    print(sum(counts.values()), "responses;", recorded_checked, "also against the score files BFCL wrote")
    assert counts, f"no single-turn result files under {results_root}"
    assert not disagreements, f"{len(disagreements)} disagreements (where, oracle, ours, BFCL): {disagreements[:20]}"
