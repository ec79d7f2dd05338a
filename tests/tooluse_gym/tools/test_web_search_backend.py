"""Web-search backends (`tooluse_gym.tools.web_search`) against BFCL's own ``WebSearchAPI``.

BFCL's class is the oracle: it runs with its transport replaced (SerpAPI's ``GoogleSearch`` answers
from a recorded organic-results list, ``requests.get`` from a recorded page), which is the only part
of it that needs the network. ``serpapi`` and ``bs4`` are not installed here, so stand-in modules let
BFCL's module import; everything BFCL's code does with the answers (snippets, ``max_results``,
``raw`` and ``markdown`` pages through the real ``html2text``, its error results) is its own. The replay
must give what BFCL gave, and a recording made through BFCL's class must replay it exactly.
"""

from __future__ import annotations

import contextlib
import json
import sys
import types
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tooluse_gym.tasks.bfcl import _import
from tooluse_gym.tools.web_search import (
    RecordingWriter,
    SearchBackendUnavailable,
    live_backend,
    read_recording,
    recording_backend,
    replay_backend,
    search_key,
)

DATA = Path(__file__).parent / "data" / "web_search_recording.jsonl"
MODULE = "bfcl_eval.eval_checker.multi_turn_eval.func_source_code.web_search"
PAGES = {
    "https://example.org/usher": "<html><body><h1>Usher</h1><p>Born in <b>Dallas</b>, Texas.</p></body></html>",
    "https://example.org/cowboys-2024": "<html><body><table><tr><td>Wins</td><td>7</td></tr></table></body></html>",
}
QUERIES = {
    "2024 Super Bowl halftime show performer": [
        {"title": f"Result {i}", "link": f"https://example.org/r{i}", "snippet": f"Snippet number {i}."}
        for i in range(14)
    ],
    "Usher birthplace": [{"title": "Usher", "link": "https://example.org/usher", "snippet": "Born in Dallas."}],
}


class _Response:
    def __init__(self, url: str):
        self.url = url
        self.text = PAGES.get(url, "")

    def raise_for_status(self) -> None:
        if self.url not in PAGES:
            raise RuntimeError(f"404 Client Error: Not Found for url: {self.url}")


@pytest.fixture
def bfcl_web_search(monkeypatch):
    """BFCL's own ``WebSearchAPI`` class, its SerpAPI and HTTP transport answering from `QUERIES` and `PAGES`."""

    class GoogleSearch:
        def __init__(self, params):
            self.params = params

        def get_dict(self):
            found = QUERIES.get(self.params["q"])
            return {"organic_results": found} if found is not None else {"error": "no results"}

    monkeypatch.setitem(sys.modules, "serpapi", types.SimpleNamespace(GoogleSearch=GoogleSearch))
    monkeypatch.setitem(sys.modules, "bs4", types.SimpleNamespace(BeautifulSoup=None))
    monkeypatch.delitem(sys.modules, MODULE, raising=False)
    module = _import(MODULE)
    monkeypatch.setattr(module.requests, "get", lambda url, **_: _Response(url))
    yield module.WebSearchAPI
    sys.modules.pop(MODULE, None)  # the stand-ins must not outlive the test


def _bfcl(cls, show_snippet):
    instance = cls()
    instance._load_scenario({"show_snippet": show_snippet})
    return instance


def test_a_recording_made_through_bfcls_class_replays_exactly_what_it_answered(tmp_path, bfcl_web_search):
    path = tmp_path / "rec.jsonl"
    recorder = recording_backend(bfcl_web_search, RecordingWriter(path, "serpapi"))
    asked = []
    for show in (True, False):
        live = _bfcl(recorder, show)
        for query in QUERIES:
            for n in (1, 3, 10):
                asked.append((show, "search", query, n, live.search_engine_query(query, max_results=n)))
        for url in [*PAGES, "https://example.org/missing"]:
            for mode in ("raw", "markdown", "bogus"):
                asked.append((show, "fetch", url, mode, live.fetch_url_content(url, mode)))
    replay_cls = replay_backend(read_recording(path))
    for show, kind, key, arg, got in asked:
        replay, bfcl = _bfcl(replay_cls, show), _bfcl(bfcl_web_search, show)
        if kind == "search":
            want = bfcl.search_engine_query(key, max_results=arg)
            assert got == want == replay.search_engine_query(key, max_results=arg)
        else:
            want = bfcl.fetch_url_content(key, arg)
            assert got == want == replay.fetch_url_content(key, arg)
    markdown = _bfcl(replay_cls, True).fetch_url_content("https://example.org/usher", "markdown")
    assert "**Dallas**" in markdown["content"]  # html2text's own rendering, replayed


def test_the_replay_gives_bfcls_result_shapes_for_any_max_results_and_snippet_setting(bfcl_web_search, tmp_path):
    path = tmp_path / "rec.jsonl"
    writer = RecordingWriter(path, "serpapi")
    for query, results in QUERIES.items():
        writer.search(query, "wt-wt", [{"title": r["title"], "href": r["link"], "body": r["snippet"]} for r in results])
    replay_cls = replay_backend(read_recording(path))
    for show in (True, False):
        for query in QUERIES:
            for n in (None, 0, 1, 5, 14, 20, -2):
                want = _bfcl(bfcl_web_search, show).search_engine_query(query, max_results=n)
                assert _bfcl(replay_cls, show).search_engine_query(query, max_results=n) == want, (show, query, n)


def test_invalid_urls_raise_as_bfcls_do(bfcl_web_search):
    replay = _bfcl(replay_backend(read_recording(DATA)), True)
    for url in ("ftp://example.org/x", "example.org", ""):
        with pytest.raises(ValueError) as ours:
            replay.fetch_url_content(url)
        with pytest.raises(ValueError) as theirs:
            _bfcl(bfcl_web_search, True).fetch_url_content(url)
        assert str(ours.value) == str(theirs.value)


def test_the_committed_recording_reads_with_its_digest_dates_and_misses_counted():
    recording = read_recording(DATA)
    assert recording.source == "synthetic" and recording.dates == ("2026-12-05", "2026-12-06")
    assert len(recording.digest) == 64 and recording.card()["recorded"] == "2026-12-05..2026-12-06"
    replay = _bfcl(replay_backend(recording), False)
    hits = replay.search_engine_query("  usher   BIRTHPLACE ")  # case and spaces folded
    assert hits == [{"title": "Usher (musician)", "href": "https://example.org/usher"}]
    assert replay.search_engine_query("dallas cowboys wins") == {
        "error": "Failed to retrieve the search results from server. Please try again later."
    }
    assert "error" in replay.search_engine_query("usher birthplace", region="us-en")  # another region: a miss
    assert "not in the replay recording" in replay.fetch_url_content("https://example.org/usher", "markdown")["error"]
    assert replay.report() == {
        "replay_misses": [
            {"search": "usher birthplace", "region": "us-en"},
            {"fetch": "https://example.org/usher", "mode": "markdown"},
        ]
    }


def test_a_success_recorded_after_an_error_wins_and_an_error_never_replaces_a_success(tmp_path):
    path = tmp_path / "rec.jsonl"
    writer = RecordingWriter(path, "serpapi")
    writer.search("q", "wt-wt", {"error": "429"})
    writer.search("q", "wt-wt", [{"title": "t", "href": "https://a.b", "body": "b"}])
    writer.search("q", "wt-wt", {"error": "timeout"})
    writer.fetch("https://a.b", "raw", {"content": "page"})
    writer.fetch("https://a.b", "raw", {"error": "503"})
    recording = read_recording(path)
    assert recording.searches[search_key("q")] == [{"title": "t", "href": "https://a.b", "body": "b"}]
    assert recording.fetches["raw\x00https://a.b"] == {"content": "page"}
    with pytest.raises(ValueError, match="records 'serpapi'"):
        RecordingWriter(path, "ddgs")


def test_the_live_backend_is_refused_with_what_it_needs():
    with pytest.raises(SearchBackendUnavailable, match="serpapi, bs4") as refused:
        live_backend()
    assert "google-search-results" in str(refused.value) and "recording=FILE" in str(refused.value)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty"),
        ('{"format": "other"}\n', "not a web-search recording"),
        ('{"format": "tooluse-web-recording/1", "source": "x"}\nnot json\n', ":2: not JSON"),
        ('{"format": "tooluse-web-recording/1", "source": "x"}\n[1]\n', "each line is a JSON object"),
        ('{"format": "tooluse-web-recording/1", "source": "x"}\n{"search": {}, "results": 3}\n', "'results' must"),
        ('{"format": "tooluse-web-recording/1", "source": "x"}\n{"fetch": {}, "result": "x"}\n', "'result' must"),
        ('{"format": "tooluse-web-recording/1", "source": "x"}\n{"other": 1}\n', "a 'search' or a 'fetch'"),
    ],
)
def test_malformed_recordings_are_refused_by_line(tmp_path, text, message):
    path = tmp_path / "bad.jsonl"
    path.write_text(text)
    with pytest.raises(ValueError, match=message):
        read_recording(path)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=400))
def test_hostile_recording_bytes_are_read_or_refused_never_crash(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("rec") / "r.jsonl"
    path.write_bytes(b'{"format": "tooluse-web-recording/1", "source": "x"}\n' + data)
    with contextlib.suppress(ValueError):
        read_recording(path)


@settings(max_examples=200, deadline=None)
@given(keywords=st.text(max_size=200), url=st.text(max_size=200), mode=st.text(max_size=10), n=st.integers(-5, 50))
def test_hostile_tool_arguments_get_results_or_bfcls_invalid_url_error(keywords, url, mode, n):
    replay = _bfcl(replay_backend(read_recording(DATA)), True)
    result = replay.search_engine_query(keywords, max_results=n)
    assert isinstance(result, (list, dict))
    try:
        page = replay.fetch_url_content(url, mode)
    except ValueError as e:
        assert str(e).startswith("Invalid URL") and not url.startswith(("http://", "https://"))
    else:
        assert set(page) <= {"content", "error"} and json.dumps(page)
