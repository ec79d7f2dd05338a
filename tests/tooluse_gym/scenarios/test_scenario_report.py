"""A bad scenario file reports every problem at once, each with its path in the file and a fix hint."""

from __future__ import annotations

import pytest

from tooluse_gym.tasks.scenario import ScenarioError, load_scenarios
from tooluse_gym.tasks.scenario_cli import main as cli_main
from tooluse_gym.tasks.scenario_hints import rejoin_calls
from tooluse_gym.tasks.scenario_state import state_fields, state_problems

MANY = """\
scenarios:
  - id: fine
    tools: {MathAPI: {}}
    turns:
      - user: "Add 3 and 4."
        ground_truth: ["add(a=3, b=4)"]
  - id: no_user
    tools: {MathAPI: {}}
    turns:
      - ground_truth: []
      - user: "Add 2 and 3."
        ground_truth: [add(a=2, b=3)]
  - id: typo
    tools:
      TwitterAPI: {usernme: alice, password: pw123}
    turns:
      - user: "Log in."
        ground_truth: ["authenticate_twitter(username='alice', password='pw123')"]
  - id: wrong_type
    tools:
      TwitterAPI: {username: alice, password: pw123, tweets: [1, 2]}
    turns:
      - user: "Log in."
        ground_truth: ["authenticate_twitter(username='alice', password='pw123')", "fly(to='moon')"]
"""


@pytest.fixture
def many(tmp_path):
    path = tmp_path / "many.yaml"
    path.write_text(MANY)
    return path


def test_every_problem_of_a_file_is_reported_with_its_path_and_hint(many):
    with pytest.raises(ScenarioError) as info:
        load_scenarios(many)
    problems = {p.location: p for p in info.value.problems}
    assert sorted(problems) == [
        "scenarios[1].turns[0]",
        "scenarios[1].turns[1].ground_truth",
        "scenarios[2].tools.TwitterAPI.usernme",
        "scenarios[3].tools.TwitterAPI.tweets",
        "scenarios[3].turns[0].ground_truth[1]",
    ]
    assert "a turn needs `user`" in problems["scenarios[1].turns[0]"].hint
    assert problems["scenarios[1].turns[1].ground_truth"].hint == 'quote each call: ground_truth: ["add(a=2, b=3)"]'
    typo = problems["scenarios[2].tools.TwitterAPI.usernme"]
    assert typo.kind == "bad_state" and typo.hint.startswith("did you mean 'username'? known keys: ")
    assert "tweet_counter" in typo.hint
    wrong = problems["scenarios[3].tools.TwitterAPI.tweets"]
    assert wrong.reason == "TwitterAPI.tweets takes a mapping, got a list: [1, 2]"
    assert "Error" not in str(info.value)  # no raw exception text (AttributeError, ...) anywhere
    assert problems["scenarios[3].turns[0].ground_truth[1]"].kind == "unknown_function"


def test_validate_cli_prints_every_problem(many, capsys):
    assert cli_main(["validate", str(many)]) == 1
    out = capsys.readouterr().out
    assert f"FAIL {many}: 5 problems" in out
    for where in ("scenarios[1].turns[0] (scenario 'no_user')", "scenarios[2].tools.TwitterAPI.usernme", "hint: "):
        assert where in out


def test_state_problems_of_a_user_backend():
    class Shelf:
        def load_state(self, state):
            self.books = list(state.get("books", []))
            self.owner = state.get("owner", "")

    assert dict(state_fields(Shelf).kinds) == {"books": "a list", "owner": "a string"}
    assert state_problems("Shelf", Shelf, {"books": ["x"], "owner": "me"}) == []
    ((key, reason, hint),) = state_problems("Shelf", Shelf, {"bokks": []})
    assert (key, reason) == ("bokks", "Shelf has no state key 'bokks'")
    assert hint == "did you mean 'books'? known keys: books, owner"
    ((key, reason, _),) = state_problems("Shelf", Shelf, {"owner": 3})
    assert reason == "Shelf.owner takes a string, got a number: 3"


def test_a_loader_that_copies_its_state_accepts_any_key():
    class Bag:
        def load_state(self, state):
            self.__dict__.update(state)

    assert state_fields(Bag).open
    assert state_problems("Bag", Bag, {"anything": 1}) == []


@pytest.mark.parametrize(
    ("items", "calls"),
    [
        (["add(a=2", "b=3)"], ["add(a=2, b=3)"]),
        (["f(a=1", "b=2)", "g(c=3)"], ["f(a=1, b=2)", "g(c=3)"]),
        (["add(a=2, b=3)"], None),  # quoted: nothing to rejoin
        (["add(a=2"], None),  # broken, but not by a split
        ([{"name": "add"}], None),
    ],
)
def test_rejoin_calls(items, calls):
    assert rejoin_calls(items) == calls
