"""Differential test: the env's memory backends (`memory_backend`) behave as bfcl-eval's own classes, used as BFCL does.

For ``MemoryAPI_kv`` and ``MemoryAPI_rec_sum``, the same chain of entries (prerequisite sessions, then
a question) runs on BFCL's class through its snapshot files (`tests._reference.bfcl_memory_reference`)
and on ours through in-memory snapshots. Equal, entry by entry: the core-memory text of the system
prompt at the start and the end (``_dump_core_memory_to_context``), every call's result string, and
the state after each session (the JSON text BFCL's flush writes). The call chains:

* hypothesis-made: any public method of the class, with keys from a small set of valid and invalid
  ones (upper case, spaces, digits first, a trailing ``_``, a trailing line break), values from a small
  alphabet or at and past the limits (300 / 2,000 / 10,000 characters), removes and retrieves of
  missing keys, replaces of text not in memory, ``k`` of any sign for key search;
* scripted: the write phase of `tooluse_gym.tasks.bfcl_memory.write_calls` for each scenario's
  questions, then its read calls; filling core memory past 7 keys and archival memory past 50.
"""

from __future__ import annotations

import inspect

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests._reference.bfcl_memory_reference import bfcl_class, bfcl_memory_run, ours_memory_run
from tooluse_gym.tasks.bfcl_memory import SCENARIOS, _questions, read_call, write_calls
from tooluse_gym.tools.memory import memory_backend

BACKENDS = ["MemoryAPI_kv", "MemoryAPI_rec_sum"]

VALID_KEYS = ["name", "user_age", "a", "b_1", "answer_3", "x_y_z", "a\n"]  # BFCL's re.match accepts "a\n"
KEYS = [*VALID_KEYS, "Name", "user age", "1a", "a_", "a-b", ""]
WRITES = ("add", "append", "update", "replace")
_short = st.text(alphabet="ab _1'\"é\n{}", max_size=6)
_long = st.sampled_from([299, 300, 301, 1999, 2000, 2001, 4000, 9999, 10000, 10001]).map(lambda n: "v" * n)
_value = _short | _short | _long | st.sampled_from(KEYS)
_key = st.sampled_from(VALID_KEYS) | st.sampled_from(VALID_KEYS) | st.sampled_from(KEYS) | st.text("ab_1 A", max_size=5)
_ARGS = {
    "key": _key,
    "value": _value,
    "text": _value,
    "new_text": _value,
    "old_text": st.sampled_from(["", "a", "v", "ab", "answer_", "zzz"]) | _short,
    "query": _short | st.sampled_from(KEYS),
    "k": st.integers(min_value=-3, max_value=10),
}


def _methods(backend: str) -> dict[str, list[inspect.Parameter]]:
    cls = bfcl_class(backend)
    out = {}
    for name, fn in inspect.getmembers(cls, inspect.isfunction):
        if not name.startswith("_"):
            out[name] = [p for p in inspect.signature(fn).parameters.values() if p.name != "self"]
    return out


def test_every_public_method_is_drawn_and_ours_has_the_same():
    for backend in BACKENDS:
        methods = _methods(backend)
        assert len(methods) == {"MemoryAPI_kv": 15, "MemoryAPI_rec_sum": 5}[backend]
        assert {p.name for ps in methods.values() for p in ps} <= set(_ARGS)
        ours = memory_backend(backend)
        assert issubclass(ours, bfcl_class(backend))
        for name in methods:
            assert getattr(ours, name) is getattr(bfcl_class(backend), name)


@st.composite
def _call(draw, backend: str):
    methods = _methods(backend)
    writes = sorted(m for m in methods if m.endswith(WRITES))
    name = draw(st.sampled_from(writes) | st.sampled_from(sorted(methods)))
    kwargs = {}
    for p in methods[name]:
        if p.default is not inspect.Parameter.empty and draw(st.booleans()):
            continue  # optional argument left out
        kwargs[p.name] = draw(_ARGS[p.name])
    return name, kwargs


def _entries(backend: str):
    calls = st.lists(_call(backend), max_size=25)
    return st.lists(calls, min_size=2, max_size=4)  # 1-3 sessions, then a question


def _assert_same(backend, entries):
    theirs = bfcl_memory_run(backend, entries)
    ours = ours_memory_run(backend, entries)
    assert len(theirs) == len(ours) == len(entries)
    for t, o in zip(theirs, ours, strict=True):
        assert o.dump_before == t.dump_before, t.entry_id
        for i, (a, b) in enumerate(zip(o.results, t.results, strict=True)):
            assert a == b, (t.entry_id, i, entries)
        assert o.dump_after == t.dump_after, t.entry_id
        assert o.state == t.state, t.entry_id
    return theirs


@pytest.mark.parametrize("backend", BACKENDS)
def test_hypothesis_call_chains(backend):
    @settings(max_examples=50, deadline=None)
    @given(entries=_entries(backend))
    def check(entries):
        _assert_same(backend, entries)

    check()


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("scenario", SCENARIOS)
def test_scripted_write_and_read_phase(backend, scenario):
    category = "memory_" + backend.split("_", 1)[1]
    questions = _questions(category, scenario)
    writes = [(c.name, dict(c.arguments)) for c in write_calls(backend, questions)]
    reads = [(c.name, dict(c.arguments)) for c in (read_call(backend, q) for q in questions)]
    runs = _assert_same(backend, [writes[: len(writes) // 2], writes[len(writes) // 2 :], reads])
    assert all("error" not in r for r in runs[-1].results)  # every answer is read back


def test_limits():
    kv = [("core_memory_add", {"key": f"k_{i}", "value": "v"}) for i in range(9)]
    kv += [("archival_memory_add", {"key": f"k_{i}", "value": "v" * 2000}) for i in range(52)]
    kv += [("archival_memory_add", {"key": "over", "value": "v" * 2001})]
    runs = _assert_same("MemoryAPI_kv", [kv, [("core_memory_add", {"key": "z", "value": "v"})], []])
    assert "Core memory is full" in runs[0].results[7] and "Long term memory is full" in runs[0].results[-2]
    rec = [("memory_append", {"text": "v" * 4000})] * 3 + [("memory_update", {"text": "w" * 10001})]
    rec += [("memory_replace", {"old_text": "v", "new_text": "x" * 10001}), ("memory_replace", {"old_text": "q"})]
    runs = _assert_same("MemoryAPI_rec_sum", [rec, [("memory_clear", {}), ("memory_retrieve", {})], []])
    assert runs[0].results[2].startswith('{"error": "Entry will be too long after appending')
