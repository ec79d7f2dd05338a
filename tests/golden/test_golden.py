"""The episode paths give what they gave before the "one house" restructuring (`tests/golden/record.py`).

Each case replays its episodes through today's code and compares them, as data, with the file
recorded on the code before the first structural commit. Timings, versions and paths are left out
on both sides; everything else (every step, call, result, verdict, token count and metric) must be equal.
"""

from __future__ import annotations

import json

import pytest

from tests.golden import record

ADDED_SINCE_RECORDING = {
    "bfcl_scores": "BFCL's summary scores in a run's summary (issue 39): new, and no recorded field changed",
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
    if name in record.MACHINE_DEPENDENT:
        if expected["machine"] != record.machine():
            pytest.skip(f"recorded on {expected['machine']}; sampled tokens and float metrics differ across CPUs")
        expected = expected["data"]
    actual = _without_added(json.loads(json.dumps(record.CASES[name](), sort_keys=True)), expected)
    if actual != expected:
        diff = _first_difference(expected, actual)
        pytest.fail(f"{name}: differs from tests/golden/data/{name}.json at {diff}")


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
