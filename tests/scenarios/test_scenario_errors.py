"""Each kind of bad scenario file fails at load with its file, scenario id, field path and reason."""

from __future__ import annotations

import textwrap

import pytest

from tooluse_gym.errors import TaskLoadError
from tooluse_gym.tasks.scenario import ScenarioError, load_scenarios
from tooluse_gym.tasks.scenario_cli import main as cli_main

GOOD_TURN = """
    turns:
      - user: "Add 3 and 4."
        ground_truth: ["add(a=3, b=4)"]
"""

CASES = {
    "schema_missing_turns": (
        "scenarios:\n  - id: s1\n    tools: {MathAPI: {}}\n",
        ("schema", "s1", "", "'turns' is a required property"),
    ),
    "schema_wrong_type": (
        "scenarios:\n  - id: s1\n    tools: {MathAPI: {}}\n    turns:\n      - user: 3\n        ground_truth: []\n",
        ("schema", "s1", "turns[0].user", "3 is not of type 'string'"),
    ),
    "schema_unknown_key": (
        "scenarios:\n  - id: s1\n    tool: {MathAPI: {}}\n" + GOOD_TURN,
        ("schema", "s1", "", "Additional properties"),
    ),
    "parse_error": ("scenarios: [\n  - id: s1\n", ("parse", "", "", "cannot parse")),
    "python_tag_refused": (
        "scenarios:\n  - !!python/object/apply:os.system ['echo hacked']\n",
        ("parse", "", "", "cannot parse"),
    ),
    "unknown_backend": (
        "scenarios:\n  - id: s1\n    tools: {NoSuchAPI: {}}\n" + GOOD_TURN,
        ("unknown_backend", "s1", "tools.NoSuchAPI", "unknown tool backend 'NoSuchAPI'"),
    ),
    "unknown_offered_function": (
        "scenarios:\n  - id: s1\n    tools: {MathAPI: {}}\n    functions: [add, fly]\n" + GOOD_TURN,
        ("unknown_function", "s1", "functions[1]", "'fly' is not a function of MathAPI"),
    ),
    "unknown_function_in_ground_truth": (
        "scenarios:\n  - id: s1\n    tools: {MathAPI: {}}\n    turns:\n"
        "      - user: hi\n        ground_truth: ['fly(height=3)']\n",
        ("unknown_function", "s1", "turns[0].ground_truth[0]", "'fly' is not a function"),
    ),
    "ground_truth_not_offered": (
        "scenarios:\n  - id: s1\n    tools: {MathAPI: {}}\n    functions: [multiply]\n" + GOOD_TURN,
        ("unknown_function", "s1", "turns[0].ground_truth[0]", "'add' is not offered at turn 0"),
    ),
    "bad_call_syntax": (
        "scenarios:\n  - id: s1\n    tools: {MathAPI: {}}\n    turns:\n"
        "      - user: hi\n        ground_truth: ['add(a=__import__(\"os\"), b=1)']\n",
        ("bad_call", "s1", "turns[0].ground_truth[0]", "cannot parse call"),
    ),
    "invalid_argument_type": (
        "scenarios:\n  - id: s1\n    tools: {MathAPI: {}}\n    turns:\n"
        "      - user: hi\n        ground_truth: [\"add(a='three', b=4)\"]\n",
        ("invalid_arguments", "s1", "turns[0].ground_truth[0].arguments", "'three' is not of type 'number'"),
    ),
    "unknown_parameter": (
        "scenarios:\n  - id: s1\n    tools: {MathAPI: {}}\n    turns:\n"
        "      - user: hi\n        ground_truth: [{name: add, arguments: {a: 1, b: 2, c: 3}}]\n",
        ("invalid_arguments", "s1", "turns[0].ground_truth[0].arguments", "unexpected keyword argument 'c'"),
    ),
    "replay_fails": (
        "scenarios:\n  - id: s1\n    tools:\n      TwitterAPI: {username: a, password: b, authenticated: false}\n"
        "    turns:\n      - user: post hi\n        ground_truth: [\"post_tweet(content='hi')\"]\n",
        ("replay_failed", "s1", "turns[0].ground_truth[0]", "ground truth fails on replay"),
    ),
    "held_out_unknown": (
        "scenarios:\n  - id: s1\n    tools: {MathAPI: {}}\n    turns:\n"
        "      - user: hi\n        ground_truth: []\n      - held_out: [fly]\n        ground_truth: []\n",
        ("unknown_function", "s1", "turns[1].held_out[0]", "'fly' is not a function"),
    ),
    "duplicate_id": (
        "scenarios:\n  - id: s1\n    tools: {MathAPI: {}}\n"
        + GOOD_TURN
        + "  - id: s1\n    tools: {MathAPI: {}}\n"
        + GOOD_TURN,
        ("duplicate_id", "s1", "id", "id already used"),
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_bad_file_reports_kind_id_field_and_reason(tmp_path, name):
    text, (kind, scenario_id, field, reason) = CASES[name]
    path = tmp_path / f"{name}.yaml"
    path.write_text(textwrap.dedent(text))
    with pytest.raises(ScenarioError) as info:
        load_scenarios(path)
    error = info.value
    assert (error.kind, error.scenario_id, error.field) == (kind, scenario_id, field), str(error)
    assert reason in error.reason
    assert str(path) in str(error)


def test_replay_check_can_be_skipped(tmp_path):
    text, _ = CASES["replay_fails"]
    path = tmp_path / "s.yaml"
    path.write_text(text)
    assert [t.task_id for t in load_scenarios(path, replay=False)] == ["s1"]


def test_missing_and_empty_paths(tmp_path):
    with pytest.raises(TaskLoadError, match="no such file"):
        load_scenarios(tmp_path / "nope.yaml")
    with pytest.raises(TaskLoadError, match="no scenario files"):
        load_scenarios(tmp_path)


def test_json_files_load_like_yaml(tmp_path):
    path = tmp_path / "s.json"
    path.write_text(
        '{"version": 1, "scenarios": [{"id": "j1", "tools": {"MathAPI": {}}, '
        '"turns": [{"user": "Add 1 and 2", "ground_truth": [{"name": "add", "arguments": {"a": 1, "b": 2}}]}]}]}'
    )
    (task,) = load_scenarios(path)
    assert task.ground_truth[0][0].arguments == {"a": 1, "b": 2}
    assert task.category == "scenario"


def test_validate_cli_exit_codes(tmp_path, capsys):
    good = tmp_path / "good.yaml"
    good.write_text("scenarios:\n  - id: s1\n    tools: {MathAPI: {}}\n" + GOOD_TURN)
    assert cli_main(["validate", str(good)]) == 0
    assert "1 scenarios valid" in capsys.readouterr().out
    bad = tmp_path / "bad.yaml"
    bad.write_text(CASES["unknown_backend"][0])
    assert cli_main(["validate", str(good), str(bad)]) == 1
    out = capsys.readouterr().out
    assert "FAIL" in out and "NoSuchAPI" in out and "1 file(s) failed" in out
