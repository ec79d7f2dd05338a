"""The episode paths give what they gave before the "one house" restructuring (`tests/golden/record.py`).

Each case replays its episodes through today's code and compares them, as data, with the file
recorded on the code before the first structural commit. Timings, versions and paths are left out
on both sides; everything else (every step, call, result, verdict, token count and metric) must be equal.
The two cases that sample from a model (`record.MACHINE_DEPENDENT`) are equal value for value only on the
kind of CPU they were recorded on; on any other CPU their shape is compared instead (every key at every
level, what holds a mapping, a list or a value), so a field dropped, renamed or moved still fails there.
"""

from __future__ import annotations

import json

import pytest

from tests.golden import record

ADDED_SINCE_RECORDING = {
    "bfcl_scores": "BFCL's summary scores in a run's summary (issue 39): new, and no recorded field changed",
    "autocast": "the HF engine's generation dtype in the agent's settings (HFAgentConfig.autocast): new since",
    "task_data": "the task data files' digests on the protocol card (issue 59): new, and no recorded field changed",
    "checker_version": "the checkers' version on the protocol card (issue 59): new, and no recorded field changed",
    "unscored": "a run summary's episodes a failed model server left unscored (issue 58): new, and no recorded "
    "field changed",
}
"""Keys the replay may hold that the recording predates, with why; anywhere else a new key is a difference."""


def _without_added(value, recorded):
    """`value` without the `ADDED_SINCE_RECORDING` keys that `recorded` lacks at the same place."""
    if isinstance(value, dict) and isinstance(recorded, dict):
        return {
            k: _without_added(v, recorded.get(k))
            for k, v in value.items()
            if k in recorded or k not in ADDED_SINCE_RECORDING
        }
    if isinstance(value, list) and isinstance(recorded, list) and len(value) == len(recorded):
        return [_without_added(v, r) for v, r in zip(value, recorded, strict=True)]
    return value


def _check(name: str) -> None:
    expected = json.loads((record.DATA / f"{name}.json").read_text())
    same_machine = True
    if name in record.MACHINE_DEPENDENT:
        same_machine = expected["machine"] == record.machine()
        expected = expected["data"]
    actual = _without_added(json.loads(json.dumps(record.CASES[name](), sort_keys=True)), expected)
    if not same_machine:  # sampled tokens and float metrics differ across CPUs: the shape must not
        expected, actual = _shape(expected), _shape(actual)
    if actual != expected:
        diff = _first_difference(expected, actual)
        pytest.fail(f"{name}: differs from tests/golden/data/{name}.json at {diff}")


def _shape(value):
    """What holds what: mappings with their keys, lists as the merged shape of their items, values as ``value``.

    A list's items merge key by key (a key some items lack is kept), so episodes that ended differently
    (an error here, a verdict there) give one shape; an item that is a mapping in one place and a value in
    another gives ``mixed``.
    """
    if isinstance(value, dict):
        return {k: _shape(v) for k, v in value.items()}
    if isinstance(value, list):
        merged = None
        for item in value:
            merged = _merge(merged, _shape(item))
        return ["empty" if merged is None else merged]
    return "value"


def _merge(a, b):
    if a is None:
        return b
    if isinstance(a, dict) and isinstance(b, dict):
        return {k: _merge(a.get(k), b.get(k)) if k in a and k in b else a.get(k, b.get(k)) for k in a | b}
    if isinstance(a, list) and isinstance(b, list):
        if a == ["empty"]:
            return b
        return a if b == ["empty"] else [_merge(a[0], b[0])]
    return a if a == b else "mixed"


def _first_difference(a, b, path: str = "") -> str:
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b)):
            if key not in a or key not in b:
                return f"{path}/{key} (only in {'recorded' if key in a else 'replayed'})"
            if a[key] != b[key]:
                return _first_difference(a[key], b[key], f"{path}/{key}")
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return f"{path} (length {len(a)} recorded, {len(b)} replayed)"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            if x != y:
                return _first_difference(x, y, f"{path}/{i}")
    return f"{path}: recorded {a!r:.200}, replayed {b!r:.200}"


def test_oracle_evaluation_is_unchanged():
    _check("oracle_eval")


def test_token_rollout_is_unchanged():
    _check("token_rollout")


def test_chat_episode_is_unchanged():
    _check("chat_episode")


@pytest.mark.slow
def test_grpo_smoke_run_is_unchanged():
    _check("grpo_smoke")


@pytest.mark.slow
def test_seeded_vllm_evaluation_is_unchanged():
    _check("vllm_eval")
