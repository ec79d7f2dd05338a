"""Each kind of bad scenario file fails at load with its file, scenario id, field path and reason."""

from __future__ import annotations

from pathlib import Path

import pytest

from tooluse_gym.errors import TaskLoadError
from tooluse_gym.tasks.scenario import ScenarioError, load_scenarios
from tooluse_gym.tasks.scenario_cli import main as cli_main

GOOD = """\
scenarios:
  - id: s1
    tools: {MathAPI: {}}
    turns:
      - user: "Add 3 and 4."
        ground_truth: ["add(a=3, b=4)"]
"""
BAD = Path(__file__).parent / "bad"
"""One bad scenario file per kind of mistake; `EXPECTED` holds what loading each must report."""

GT0 = "turns[0].ground_truth[0]"
GT_ARGS = f"{GT0}.arguments"
ANSWER0 = "single_turn.possible_answer[0]"

EXPECTED = {  # file stem: (kind, scenario id, field path, part of the reason)
    "schema_missing_turns": ("schema", "s1", "", "a scenario needs `turns` or `single_turn`"),
    "schema_wrong_type": ("schema", "s1", "turns[0].user", "3 is not of type 'string'"),
    "schema_unknown_key": ("schema", "s1", "", "Additional properties"),
    "parse_error": ("parse", "", "", "cannot parse"),
    "python_tag_refused": ("parse", "", "", "cannot parse"),
    "unknown_backend": ("unknown_backend", "s1", "tools.NoSuchAPI", "unknown tool backend 'NoSuchAPI'"),
    "unknown_offered_function": ("unknown_function", "s1", "functions[1]", "'fly' is not a function of MathAPI"),
    "unknown_function_in_ground_truth": ("unknown_function", "s1", GT0, "'fly' is not a function"),
    "ground_truth_not_offered": ("unknown_function", "s1", GT0, "'add' is not offered at turn 0"),
    "bad_call_syntax": ("bad_call", "s1", GT0, "cannot parse call"),
    "invalid_argument_type": ("invalid_arguments", "s1", GT_ARGS, "'three' is not of type 'number'"),
    "unknown_parameter": ("invalid_arguments", "s1", GT_ARGS, "unexpected keyword argument 'c'"),
    "replay_fails": ("replay_failed", "s1", GT0, "ground truth fails on replay"),
    "held_out_unknown": ("unknown_function", "s1", "turns[1].held_out[0]", "'fly' is not a function"),
    "duplicate_id": ("duplicate_id", "s1", "id", "id already used"),
    "schema_turn_without_user": ("schema", "s1", "turns[0]", "a turn needs `user` or `held_out`"),
    "unknown_state_key": ("bad_state", "s1", "tools.TwitterAPI.usernme", "TwitterAPI has no state key 'usernme'"),
    "wrong_state_type": ("bad_state", "s1", "tools.TwitterAPI.tweets", "takes a mapping, got a list"),
    "state_on_stateless_backend": ("bad_state", "s1", "tools.MathAPI.precision", "MathAPI keeps no state"),
    "unquoted_call_list": ("bad_call", "s1", "turns[0].ground_truth", "YAML split the unquoted calls"),
    # single-turn scenarios (a `single_turn` block: one request and BFCL's possible answers)
    "single_turn_and_turns": ("schema", "s1", "", "takes one of `turns` or `single_turn`"),
    "single_turn_value_not_a_list": ("schema", "s1", f"{ANSWER0}.add.a", "3 is not of type 'array'"),
    "single_turn_two_functions_in_one_call": ("schema", "s1", ANSWER0, "has too many properties"),
    "single_turn_request_without_user": ("schema", "s1", "single_turn.request", "is not a request"),
    "single_turn_answer_not_offered": ("unknown_function", "s1", ANSWER0, "'multiply' is not offered"),
    "single_turn_unknown_parameter": ("invalid_arguments", "s1", f"{ANSWER0}.add.c", "add has no parameter 'c'"),
    "single_turn_required_without_value": (
        "invalid_arguments",
        "s1",
        f"{ANSWER0}.add",
        "required parameter 'b' has no acceptable value",
    ),
    "single_turn_value_wrong_type": ("invalid_arguments", "s1", f"{ANSWER0}.add.b[1]", "'four' does not validate"),
    "single_turn_state_given": ("bad_state", "s1", "tools.TwitterAPI", "a single-turn scenario executes nothing"),
}


def test_every_bad_file_has_an_expectation():
    assert sorted(p.stem for p in BAD.glob("*.yaml")) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_bad_file_reports_kind_id_field_and_reason(name):
    kind, scenario_id, field, reason = EXPECTED[name]
    path = BAD / f"{name}.yaml"
    with pytest.raises(ScenarioError) as info:
        load_scenarios(path)
    error = info.value
    found = [p for p in error.problems if (p.kind, p.scenario_id, p.field) == (kind, scenario_id, field)]
    assert any(reason in p.reason for p in found), str(error)
    assert str(path) in str(error)


def test_replay_check_can_be_skipped():
    path = BAD / "replay_fails.yaml"
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
    good.write_text(GOOD)
    assert cli_main(["validate", str(good)]) == 0
    assert "1 scenarios valid" in capsys.readouterr().out
    bad = BAD / "unknown_backend.yaml"
    assert cli_main(["validate", str(good), str(bad)]) == 1
    out = capsys.readouterr().out
    assert "FAIL" in out and "NoSuchAPI" in out and "1 file(s) failed" in out


def _laughs(levels: int = 10, width: int = 9) -> str:
    """A "billion laughs" scenario file: each level's anchor holds `width` aliases of the one below (width**levels)."""
    lines = ['x0: &x0 ["lol"]']
    lines += [f"x{i}: &x{i} [{', '.join([f'*x{i - 1}'] * width)}]" for i in range(1, levels)]
    lines += [f"scenarios: [{{id: s1, tools: {{MathAPI: {{}}}}, turns: [{{user: hi, ground_truth: *x{levels - 1}}}]}}]"]
    return "\n".join(lines) + "\n"


def test_a_file_of_nested_yaml_aliases_is_refused_fast_in_one_line(tmp_path):
    """Issue 60: a billion-laughs file made `tooluse scenarios validate` grow to GBs."""
    import resource
    import subprocess
    import sys

    bomb = tmp_path / "laughs.yaml"
    bomb.write_text(_laughs())

    def cap_memory():  # a regression fails here rather than eating the machine
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))

    command = [sys.executable, "-m", "tooluse_gym.tasks.scenario_cli", "validate", str(bomb)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, preexec_fn=cap_memory)
    assert done.returncode == 1, done.stderr[-2000:]
    head, problem = done.stdout.splitlines()[:2]
    assert head == f"FAIL {bomb}: 1 problem"
    assert problem.startswith("  refused: its aliases would add ") and problem.endswith(
        " nodes, more than the 100000 allowed (a file built of nested aliases); write the repeated values out [parse]"
    )


def test_scenario_files_past_the_size_and_nesting_bounds_are_refused_naming_the_file(tmp_path, monkeypatch):
    from tooluse_gym.tasks import scenario

    with pytest.raises(ScenarioError, match="an alias is used inside its own anchor"):
        (tmp_path / "loop.yaml").write_text("a: &a [*a]\n")
        load_scenarios(tmp_path / "loop.yaml")
    deep = tmp_path / "deep.yaml"
    deep.write_text("scenarios: " + "[" * 5000 + "]" * 5000 + "\n")
    with pytest.raises(ScenarioError, match=rf"^{deep}: refused: values nested deeper than 200 levels \[parse\]$"):
        load_scenarios(deep)
    deep_json = tmp_path / "deep.json"
    deep_json.write_text('{"scenarios": ' + "[" * 100_000 + "]" * 100_000 + "}")
    with pytest.raises(ScenarioError, match="refused: values nested deeper than 200 levels"):
        load_scenarios(deep_json)
    second = '  - id: s2\n    tools: *tools\n    turns:\n      - user: "Add 1 and 2."\n'
    second += '        ground_truth: ["add(a=1, b=2)"]\n'
    (tmp_path / "shared.yaml").write_text(GOOD.replace("tools: {", "tools: &tools {") + second)
    assert len(load_scenarios(tmp_path / "shared.yaml")) == 2  # aliases within the bounds read as before
    monkeypatch.setattr(scenario, "MAX_FILE_BYTES", 10)
    (tmp_path / "big.yaml").write_text(GOOD)
    with pytest.raises(ScenarioError, match=r"big.yaml: file is larger than 10 bytes; refused \[parse\]$"):
        load_scenarios(tmp_path / "big.yaml")
