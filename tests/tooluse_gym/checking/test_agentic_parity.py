"""Differential test: `agentic_check`'s ``valid`` equals bfcl_eval's ``agentic_checker``, case by case.

* hand-made cases: case, the punctuation BFCL drops (``,./-_*^()``) inside and around answers, word
  boundaries (``35`` in ``135``, ``Seattle`` in ``Seattles``), several candidates, ``'`` vs ``"``,
  unicode, empty strings, answers that are only punctuation (they standardize to ``""``, which BFCL's
  ``\\b\\b`` finds in any message holding a word character), regex metacharacters, long messages;
* every gold answer of BFCL's memory and web-search data, perturbed (upper/lower case, in BFCL's
  ``{'answer': ..., 'context': ...}`` format, with punctuation inserted, cut by one character, inside a
  sentence, glued to a word) against its own question's gold list and another question's;
* hypothesis-made messages and answers over alphabets of letters, digits, BFCL's punctuation, regex
  metacharacters, quotes and unicode;
* no last message: ``None`` and ``""`` are BFCL's runner's ``agentic:no_last_message``, and on a
  message the runner checks, its (valid, error_type) equals ours.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests._reference.bfcl_agentic import bfcl_valid, gold, runner_verdict
from tooluse_gym.checking.agentic import agentic_check, standardize


def _same(message: str, answers: list[str]) -> None:
    ours = agentic_check(message, answers).valid
    theirs = bfcl_valid(message, answers)
    assert ours == theirs, (message, answers, ours, theirs)


HAND_MADE = [
    ("The answer is Seattle.", ["Seattle"]),
    ("the answer is SEATTLE", ["seattle"]),
    ("sEaTtLe", ["SeAtTlE"]),
    ("I live in Seattles", ["Seattle"]),
    ("I live in Seattle's suburbs", ["Seattle"]),
    ("He is 135 years old", ["35"]),
    ("He is 35.", ["35"]),
    ("He is 3.5", ["35"]),
    ("He is 3,5", ["35"]),
    ("He is 3-5", ["35"]),
    ("He is 3 5", ["35"]),
    ("He is (35)", ["35"]),
    ("He is *35*", ["35"]),
    ("He is ^35^", ["35"]),
    ("He is _35_", ["35"]),
    ("He is x35", ["35"]),
    ("He is 35x", ["35"]),
    ("thirty-five", ["thirty five"]),
    ("thirty five", ["thirty-five"]),
    ("thirtyfive", ["thirty-five"]),
    ("thirty  five", ["thirty five"]),
    ("April 1, 2024", ["April 1 2024"]),
    ("April 1,2024", ["April 1 2024"]),
    ("April 12024", ["April 1, 2024"]),
    ("april 1 2024", ["April 1, 2024"]),
    ("It's Zhang Yiming", ["Zhang Yiming"]),
    ("It's Zhang-Yiming", ["Zhang Yiming"]),
    ("It's ZhangYiming", ["Zhang Yiming"]),
    ("Dallas, Texas", ["Dallas Texas", "Houston"]),
    ("Houston", ["Dallas Texas", "Houston"]),
    ("Austin", ["Dallas Texas", "Houston"]),
    ("O'Brien", ['O"Brien']),
    ('O"Brien', ["O'Brien"]),
    ("O'Brien", ["O'Brien"]),
    ("OBrien", ["O'Brien"]),
    ("{'answer': 'Michael', 'context': 'he said so'}", ["Michael"]),
    ('{"answer": "Michael", "context": "he said so"}', ["Michael"]),
    ("{'answer': 'Michaels', 'context': ''}", ["Michael"]),
    ("café au lait", ["café"]),
    ("CAFÉ", ["café"]),
    ("cafés", ["café"]),
    ("Straße", ["STRASSE"]),
    ("straße", ["Straße"]),
    ("İstanbul", ["istanbul"]),
    ("ΟΔΟΣ", ["οδος"]),
    ("ΟΔΟΣ", ["οδοσ"]),
    ("北京是首都", ["北京"]),
    ("在北京", ["北京"]),
    ("I ❤ NY", ["❤"]),
    ("naïve", ["naive"]),
    ("", ["Seattle"]),
    ("", [""]),
    ("Seattle", [""]),
    ("   ", [""]),
    ("...", [""]),
    ("...", ["..."]),
    ("a", ["..."]),
    ("a", ["()"]),
    ("()", ["()"]),
    ("-", ["-_-"]),
    ("!", ["!"]),
    ("say !", ["!"]),
    ("x!", ["!"]),
    ("Seattle", []),
    ("c++ rocks", ["c++"]),
    ("c+ rocks", ["c++"]),
    ("a[b]c", ["[b]"]),
    ("a [b] c", ["[b]"]),
    ("1+1=2", ["1+1"]),
    ("$100", ["$100"]),
    ("cost is $100", ["$100"]),
    ("cost is 100$", ["100$"]),
    ("\\d", ["\\d"]),
    ("9", ["\\d"]),
    ("a|b", ["a|b"]),
    ("a", ["a|b"]),
    ("x?", ["x?"]),
    ("one\ntwo", ["one two"]),
    ("one\ttwo", ["one two"]),
    ("one\ntwo", ["one\ntwo"]),
    ("the answer: 7", ["7", "seven"]),
    ("the answer: seven", ["7", "seven"]),
    ("the answer: 77", ["7", "seven"]),
    ("the answer: sevens", ["7", "seven"]),
    ("x" * 70000 + " Seattle", ["Seattle"]),
    ("Seattle " + "x" * 70000, ["Seattle"]),
    ("x " * 40000 + "Seattle", ["Seattle"]),
]


@pytest.mark.parametrize(("message", "answers"), HAND_MADE, ids=[f"case{i}" for i in range(len(HAND_MADE))])
def test_hand_made_cases(message, answers):
    """Longer messages than the decoders read (`MAX_MESSAGE_CHARS`) are searched whole, as BFCL does."""
    _same(message, answers)


def test_an_answer_that_standardizes_to_nothing_passes_any_message_with_a_word_character():
    for answers in ([""], ["..."], ["()"], ["-_*^"]):
        assert standardize(answers[0]) == ""
        for message in ("a", "Seattle", "(x)", "é"):
            assert agentic_check(message, answers).valid and bfcl_valid(message, answers)
        for message in ("!", "...", "  ", "()"):
            assert not agentic_check(message, answers).valid and not bfcl_valid(message, answers)


def _perturbed(answer: str) -> list[str]:
    mid = max(1, len(answer) // 2)
    return [
        answer,
        answer.upper(),
        answer.lower(),
        answer.swapcase(),
        str({"answer": answer, "context": "from what you told me"}),
        json.dumps({"answer": answer, "context": "from what you told me"}),
        answer[:mid] + "-" + answer[mid:],
        answer[:mid] + "." + answer[mid:],
        answer[:mid] + " " + answer[mid:],
        answer[:mid] + "!" + answer[mid:],
        f"({answer})",
        f"*{answer}*",
        f"'{answer}'",
        answer[:-1],
        answer[1:],
        f"I believe the answer is {answer}, as you mentioned earlier.",
        f"I believe the answer is {answer}s.",
        f"I believe the answer is x{answer}.",
        f"I believe the answer is {answer}1.",
        f"Answer:{answer}.",
        f"{answer}\n",
    ]


def _gold_cases(category: str) -> list[tuple[str, list[str], list[str]]]:
    entries = list(gold(category).items())
    # each entry's answers against its own gold list and the next entry's
    return [(i, answers, entries[(n + 1) % len(entries)][1]) for n, (i, answers) in enumerate(entries)]


@pytest.mark.parametrize("category", ["memory", "web_search"])
def test_gold_answers_perturbed(category):
    cases = _gold_cases(category)
    assert len(cases) == {"memory": 155, "web_search": 100}[category]
    seen = 0
    for _, answers, other in cases:
        for answer in answers:
            for message in _perturbed(answer):
                _same(message, answers)
                _same(message, other)
                seen += 1
    assert seen > 20 * len(cases)


ALPHABETS = [
    "ab 5",
    "abcXYZ 0123456789",
    "ab5 ,./-_*^()",
    "ab5 []{}+?|\\$.^*()",
    "ab5 '\"`",
    "aé ßİΣσς北京❤\u0301 ",
    "a\n\t \u00a0\u2003",
]
_text = st.sampled_from(ALPHABETS).flatmap(lambda alphabet: st.text(alphabet=alphabet, max_size=24))


@settings(max_examples=400, deadline=None)
@given(message=_text, answers=st.lists(_text, max_size=4))
def test_hypothesis_free_text(message, answers):
    _same(message, answers)


@settings(max_examples=400, deadline=None)
@given(
    before=_text,
    answer=_text,
    after=_text,
    noise=st.sampled_from(["", ",", ".", "-", "_", "*", "^", "(", ")", " ", "'", '"', "s", "1"]),
    where=st.integers(min_value=0, max_value=30),
    upper=st.booleans(),
    others=st.lists(_text, max_size=3),
)
def test_hypothesis_answer_inside_the_message(before, answer, after, noise, where, upper, others):
    cut = min(where, len(answer))
    shown = answer[:cut] + noise + answer[cut:]
    message = before + (shown.upper() if upper else shown) + after
    _same(message, [answer, *others])
    _same(message, [*others, answer])


@pytest.mark.parametrize(
    ("steps", "answers"),
    [
        (['[archival_memory_retrieve(key="answer_2")]'], ["Seattle"]),
        (['[archival_memory_retrieve(key="answer_2")]', "[core_memory_list_keys()]"], ["Seattle"]),
        ([""], ["Seattle"]),
        ([""], [""]),
        (['[archival_memory_retrieve(key="answer_2")]', ""], ["Seattle"]),
    ],
)
def test_no_last_message_as_bfcl_runner(steps, answers):
    """No message without calls (ours: None) or an empty one: BFCL's runner's ``agentic:no_last_message``."""
    valid, error_type = runner_verdict(steps, answers)
    assert (valid, error_type) == (False, "agentic:no_last_message")
    last = steps[-1] if not steps[-1].startswith("[") else None
    verdict = agentic_check(last, answers)
    assert (verdict.valid, verdict.error_type) == (valid, error_type)
    assert verdict.error_message == "Cannot find the last chat message that is not a function call."


@pytest.mark.parametrize(
    ("steps", "answers"),
    [
        (["Seattle"], ["Seattle"]),
        (['[archival_memory_retrieve(key="answer_2")]', "You live in Seattle."], ["Seattle"]),
        (['[archival_memory_retrieve(key="answer_2")]', "You live in Portland."], ["Seattle"]),
        (["{'answer': 'Seattle', 'context': 'you said so'}"], ["Seattle"]),
        (["[]"], ["Seattle"]),
        (["  "], ["Seattle"]),
        (["  "], [""]),
        (["x"], [""]),
    ],
)
def test_checked_message_as_bfcl_runner(steps, answers):
    """The runner checks the last message that decodes to no call; our verdict on it is the runner's."""
    valid, error_type = runner_verdict(steps, answers)
    verdict = agentic_check(steps[-1], answers)
    assert (verdict.valid, verdict.error_type) == (valid, error_type)
