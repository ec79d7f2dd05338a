"""The pre-rollout filter's streak logic, including re-entry of skipped prompts."""

from __future__ import annotations

import pytest

from tooluse_agents.train.grpo.filtering import FilterConfig, PromptFilter

IDS = ["a", "b", "c"]
CORRECT, MIXED, WRONG = [1.0] * 4, [1.0, 0.0, 1.0, 1.0], [0.0] * 4


def _epoch(f, outcomes):
    active, skipped = f.start_epoch(IDS)
    for pid in active:
        f.observe(pid, outcomes.get(pid, MIXED))
    return active, skipped


def test_k1_skips_after_one_all_correct_epoch_and_reprobes():
    f = PromptFilter(FilterConfig(k=1, revisit_after=2))
    assert _epoch(f, {"a": CORRECT, "b": WRONG}) == (IDS, [])
    assert f.streak("a") == 1 and f.streak("b") == 0
    assert _epoch(f, {}) == (["b", "c"], ["a"])  # a sits out: epoch 1 of 2
    assert _epoch(f, {}) == (["b", "c"], ["a"])  # epoch 2 of 2
    assert f.streak("a") == 1  # frozen while skipped
    assert _epoch(f, {"a": MIXED}) == (IDS, [])  # probed again, and it is no longer all-correct
    assert f.streak("a") == 0
    assert _epoch(f, {})[1] == []  # stays active


def test_reprobe_that_is_all_correct_again_skips_at_once():
    f = PromptFilter(FilterConfig(k=1, revisit_after=1))
    _epoch(f, {"a": CORRECT})
    assert _epoch(f, {})[1] == ["a"]
    assert _epoch(f, {"a": CORRECT})[0] == IDS  # probe
    assert f.streak("a") == 2
    assert _epoch(f, {})[1] == ["a"]


def test_k2_needs_two_consecutive_all_correct_epochs():
    f = PromptFilter(FilterConfig(k=2, revisit_after=1))
    _epoch(f, {"a": CORRECT})
    assert _epoch(f, {"a": MIXED})[1] == []  # streak 1 < 2, then broken
    _epoch(f, {"a": CORRECT})
    assert _epoch(f, {"a": CORRECT})[1] == []  # streak reaches 2 only at the end of this epoch
    assert _epoch(f, {})[1] == ["a"]


def test_never_revisit_is_the_literal_reading():
    f = PromptFilter(FilterConfig(k=1, revisit_after=None))
    _epoch(f, {"a": CORRECT})
    for _ in range(5):
        assert _epoch(f, {})[1] == ["a"]


def test_all_wrong_skipping_is_optional():
    default, opt_in = PromptFilter(FilterConfig()), PromptFilter(FilterConfig(skip_all_wrong=True))
    for f in (default, opt_in):
        _epoch(f, {"b": WRONG})
    assert _epoch(default, {})[1] == []
    assert _epoch(opt_in, {})[1] == ["b"]


def test_disabled_filter_and_state_round_trip():
    off = PromptFilter(FilterConfig(enabled=False))
    _epoch(off, {"a": CORRECT})
    assert _epoch(off, {})[1] == []
    f = PromptFilter(FilterConfig(k=1, revisit_after=2))
    _epoch(f, {"a": CORRECT})
    _epoch(f, {})
    g = PromptFilter(FilterConfig(k=1, revisit_after=2))
    g.load_state_dict(f.state_dict())
    assert g.state_dict() == f.state_dict()
    assert _epoch(g, {}) == _epoch(f, {})  # both finish a's sit-out the same way
    assert _epoch(g, {}) == _epoch(f, {})


@pytest.mark.parametrize("bad", [{"k": 0}, {"revisit_after": 0}])
def test_bad_config(bad):
    with pytest.raises(ValueError):
        FilterConfig(**bad)
