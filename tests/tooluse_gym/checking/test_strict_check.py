"""`strict_check`: gold answers pass in BFCL's answer format, candidate lists do not, and it passes no more than BFCL.

* each gold answer of BFCL's memory and web-search data, as ``{'answer': <gold>, 'context': ...}``
  (Python and JSON literals, in a sentence, with BFCL's punctuation), passes; so does a field naming
  all of a question's gold answers (``frothing pitcher and filters``): the candidate rule sets gold
  answers aside before it splits, so a gold answer's own comma or ``and`` is never cut;
* a field listing the gold answer among other candidates (commas, semicolons, ``or``, ``and``, line
  breaks, slashes) fails as ``agentic:many_candidates``; a list written with spaces only is one item
  (the documented gap);
* strict passes nothing BFCL's checker fails (hypothesis over fields and escapes: a JSON ``\\u00e9`` in
  the reply is not BFCL's ``é``).
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests._reference.bfcl_agentic import bfcl_valid, gold
from tooluse_gym.checking.agentic import STRICT_MAX_CANDIDATES, agentic_check, candidates, strict_check


def _formats(answer: str) -> list[str]:
    return [
        str({"answer": answer, "context": "you told me earlier"}),
        json.dumps({"answer": answer, "context": "you told me earlier"}),
        json.dumps({"answer": answer, "context": "you told me earlier"}, ensure_ascii=False),
        "Here it is: " + str({"answer": answer, "context": "from memory"}),
        str({"answer": f"It is {answer}.", "context": "from memory"}),
        str({"answer": answer.upper(), "context": ""}),
    ]


@pytest.mark.parametrize("category", ["memory", "web_search"])
def test_every_gold_answer_passes_in_bfcl_format(category):
    failed = []
    for entry_id, answers in gold(category).items():
        for answer in answers:
            for reply in _formats(answer):
                verdict = strict_check(reply, answers)
                theirs = bfcl_valid(reply, answers)
                # JSON's \\u escapes can hide a non-ASCII gold from BFCL's checker: then both fail
                assert theirs or "\\u" in reply, reply
                if verdict.valid != theirs:
                    failed.append((entry_id, answer, reply, verdict.error_type))
    assert not failed, failed[:5]


@pytest.mark.parametrize("category", ["memory", "web_search"])
@pytest.mark.parametrize("joiner", [", ", " and ", "; ", " or ", ", and ", "\n"])
def test_a_field_naming_only_gold_answers_passes(category, joiner):
    failed = []
    for entry_id, answers in gold(category).items():
        reply = str({"answer": joiner.join(answers), "context": "both"})
        assert bfcl_valid(reply, answers), reply
        if not strict_check(reply, answers).valid:
            failed.append((entry_id, reply))
    assert not failed, failed[:5]


@pytest.mark.parametrize("joiner", [", ", "; ", " or ", " and ", " \n ", " / ", " | ", " & "])
def test_gold_among_other_candidates_fails(joiner):
    for answers in gold("memory").values():
        reply = json.dumps({"answer": joiner.join(["Portland", answers[0], "Boston"]), "context": "one of these"})
        assert agentic_check(reply, answers).valid
        verdict = strict_check(reply, answers)
        assert (verdict.valid, verdict.error_type) == (False, "agentic:many_candidates"), reply


def test_gold_answers_with_their_own_separators():
    answers = ["Dallas, Texas"]
    for field in ("Dallas, Texas", "dallas texas", "Usher was born in Dallas, Texas.", "(DALLAS, TEXAS)"):
        reply = str({"answer": field, "context": ""})
        assert strict_check(reply, answers).valid and bfcl_valid(reply, answers), field
    assert len(candidates("Dallas, Texas and Austin", answers)) == 2
    assert not strict_check(str({"answer": "Dallas, Texas and Austin", "context": ""}), answers).valid
    answers = ["salt and pepper"]
    assert strict_check(str({"answer": "Salt and pepper", "context": ""}), answers).valid
    assert not strict_check(str({"answer": "salt, pepper", "context": ""}), answers).valid  # not the gold


def test_space_separated_list_is_one_item():
    """The documented gap: without separators the field is one item, and BFCL's match finds the gold in it."""
    assert STRICT_MAX_CANDIDATES == 1
    reply = str({"answer": "Portland Seattle Boston", "context": ""})
    assert strict_check(reply, ["Seattle"]).valid


def test_format_and_no_message():
    assert strict_check(None, ["x"]).error_type == "agentic:no_last_message"
    assert strict_check("", ["x"]).error_type == "agentic:no_last_message"
    assert strict_check("The answer is Seattle.", ["Seattle"]).error_type == "agentic:answer_format"
    assert strict_check("{'answer': 3, 'context': 'x'}", ["3"]).error_type == "agentic:answer_format"
    assert strict_check("{'answer': 'Seattle', 'context': 'x'", ["Seattle"]).error_type == "agentic:answer_format"
    verdict = strict_check("{'answer': 'Portland', 'context': 'not Seattle'}", ["Seattle"])
    assert (verdict.valid, verdict.error_type) == (False, "agentic:answer_not_found")


def test_an_escape_bfcl_does_not_read_does_not_pass():
    reply = '{"answer": "caf\\u00e9", "context": "x"}'
    assert not bfcl_valid(reply, ["café"])
    assert not strict_check(reply, ["café"]).valid


_field = st.text(alphabet="ab5 ,;/|&\n'\"\\éÉ()-.", max_size=20) | st.sampled_from(
    ["Seattle", "Seattle, Portland", "a and b", "a or b", "caf\u00e9", "35", "thirty five"]
)


@settings(max_examples=300, deadline=None)
@given(
    field=_field,
    context=_field,
    answers=st.lists(_field, min_size=1, max_size=3),
    as_json=st.booleans(),
    ascii_only=st.booleans(),
)
def test_strict_passes_nothing_bfcl_fails(field, context, answers, as_json, ascii_only):
    data = {"answer": field, "context": context}
    reply = json.dumps(data, ensure_ascii=ascii_only) if as_json else str(data)
    if strict_check(reply, answers).valid:
        assert bfcl_valid(reply, answers)
        assert agentic_check(field, answers).valid
