"""Search backends for BFCL's web-search categories: a replay of a recording, BFCL's live SerpAPI, and a recorder.

BFCL's ``WebSearchAPI`` (``func_source_code/web_search.py``) offers two tools: ``search_engine_query``
(SerpAPI's DuckDuckGo engine; a list of ``{"title", "href", "body"}``, ``body`` left out without
snippets) and ``fetch_url_content`` (``requests.get``, then ``raw`` HTML, ``markdown`` or ``truncate``d
text; ``{"content": ...}`` or ``{"error": ...}``). Both answer from the live web, so a score depends on
the backend and the day. Here:

- `replay_backend`: answers from a *recording* (`Recording`): the results of each query and the
  result of each (url, mode) fetch, as a live backend returned them. Queries match after case and
  spacing are folded; anything not recorded is answered with an error result and counted
  (``report()["replay_misses"]``). Nothing leaves the machine.
- `live_backend`: BFCL's own class, run as BFCL runs it (needs ``serpapi``, ``beautifulsoup4``,
  ``html2text``, ``requests`` and ``SERPAPI_API_KEY``; refused with what is missing otherwise). With
  ``record_to`` every query and fetch it answers is appended to a recording.
- `gold_hops_recording`: a synthetic recording built from BFCL's gold file (each hop's subquestion
  finds its source URL, whose page states the hop's answer): the tests' and the oracle's backend. Not
  the web: a score on it is not a BFCL score.

A recording is JSON lines: a header ``{"format": "tooluse-web-recording/1", "source": ..., "recorded": DATE}``,
then one line per answer: ``{"search": {"keywords", "region"}, "results": [...], "date"}`` or
``{"fetch": {"url", "mode"}, "result": {...}, "date"}``. Its digest (sha256 of the file) and dates go
on the protocol card: web-search scores compare only within one recording (or one live backend and day).
"""

from __future__ import annotations

import copy
import datetime
import hashlib
import importlib.util
import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tooluse_gym.errors import ToolUseGymError
from tooluse_gym.tasks.bfcl import _import

RECORDING_FORMAT = "tooluse-web-recording/1"
MAX_RECORDING_BYTES = 512 * 2**20
"""A recording larger than this is refused (a hostile or runaway file)."""
MAX_LINE_BYTES = 32 * 2**20
FETCH_MODES = ("raw", "markdown", "truncate")
LIVE_NEEDS = ("serpapi", "bs4", "html2text", "requests")
LIVE_PACKAGES = "pip install google-search-results beautifulsoup4 html2text requests"
_MODULE = "bfcl_eval.eval_checker.multi_turn_eval.func_source_code.web_search"
BACKEND = "WebSearchAPI"
"""BFCL's class name for the web-search tools."""

__all__ = [
    "BACKEND",
    "RECORDING_FORMAT",
    "Recording",
    "RecordingWriter",
    "SearchBackendUnavailable",
    "gold_hops_recording",
    "live_backend",
    "read_recording",
    "replay_backend",
    "search_key",
]


class SearchBackendUnavailable(ToolUseGymError, ValueError):
    """A search backend that cannot run here (missing packages or key, or no recording)."""


def search_key(keywords: Any, region: Any = "wt-wt") -> str:
    """How a query is matched in a recording: case and runs of spaces folded, then the region."""
    return " ".join(str(keywords).lower().split()) + "\x00" + str(region)


def fetch_key(url: Any, mode: Any = "raw") -> str:
    """How a fetch is matched in a recording: the mode and the exact URL."""
    return f"{mode}\x00{url}"


def _today() -> str:
    return datetime.datetime.now(datetime.timezone.utc).date().isoformat()


@dataclass
class Recording:
    """Query results and fetched pages as a backend answered them (module docstring).

    Attributes:
        source: What answered (``serpapi``, ``gold-hops``, ...).
        searches: `search_key` -> the results (a list of result dicts) or an error result.
        fetches: `fetch_key` -> the fetch's result (``{"content": ...}`` or ``{"error": ...}``).
        dates: The days the answers were recorded on (ISO dates), sorted.
        digest: sha256 of the file it was read from (of its canonical JSON for one built in memory).
    """

    source: str
    searches: dict[str, Any] = field(default_factory=dict)
    fetches: dict[str, dict[str, Any]] = field(default_factory=dict)
    dates: tuple[str, ...] = ()
    digest: str = ""

    def card(self) -> dict[str, Any]:
        """What the protocol card says about the recording: its source, digest and the days it covers."""
        span = self.dates[0] if len(self.dates) == 1 else f"{self.dates[0]}..{self.dates[-1]}" if self.dates else None
        return {"recording_source": self.source, "recording": self.digest[:16], "recorded": span}


def _error_result(value: Any) -> bool:
    return isinstance(value, dict) and "error" in value


def read_recording(path: str | Path) -> Recording:
    """A recording file (module docstring); a successful answer wins over a recorded error for the same key.

    Raises:
        ValueError: A missing, oversized or malformed file.
    """
    path = Path(path)
    try:
        size = path.stat().st_size
    except OSError:
        raise ValueError(f"{path}: no such web-search recording") from None
    if size > MAX_RECORDING_BYTES:
        raise ValueError(f"{path}: {size} bytes, over the {MAX_RECORDING_BYTES} a recording may hold")
    raw = path.read_bytes()
    lines = [line for line in raw.split(b"\n") if line.strip()]
    if not lines:
        raise ValueError(f"{path}: empty; a recording starts with a {RECORDING_FORMAT!r} header line")
    header = _line(path, 1, lines[0])
    if header.get("format") != RECORDING_FORMAT or not isinstance(header.get("source"), str):
        raise ValueError(f"{path}: not a web-search recording (expected a header with format {RECORDING_FORMAT!r})")
    recording = Recording(source=header["source"], digest=hashlib.sha256(raw).hexdigest())
    dates = {str(header.get("recorded"))} if header.get("recorded") else set()
    for number, line in enumerate(lines[1:], start=2):
        entry = _line(path, number, line)
        _add(recording, entry, f"{path}:{number}")
        if entry.get("date"):
            dates.add(str(entry["date"]))
    recording.dates = tuple(sorted(dates))
    return recording


def _line(path: Path, number: int, line: bytes) -> dict[str, Any]:
    if len(line) > MAX_LINE_BYTES:
        raise ValueError(f"{path}:{number}: a line of {len(line)} bytes, over {MAX_LINE_BYTES}")
    try:
        data = json.loads(line)
    except (ValueError, UnicodeDecodeError) as e:
        raise ValueError(f"{path}:{number}: not JSON ({e})") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}:{number}: each line is a JSON object")
    return data


def _add(recording: Recording, entry: Mapping[str, Any], where: str) -> None:
    if isinstance(entry.get("search"), dict):
        query, results = entry["search"], entry.get("results")
        if not (isinstance(results, list) and all(_result_ok(r) for r in results)) and not _error_result(results):
            raise ValueError(f"{where}: 'results' must be a list of {{title, href, body}} objects or an error")
        key = search_key(query.get("keywords", ""), query.get("region", "wt-wt"))
        if not (_error_result(results) and key in recording.searches):
            recording.searches[key] = results
    elif isinstance(entry.get("fetch"), dict):
        request, result = entry["fetch"], entry.get("result")
        if not (isinstance(result, dict) and ("content" in result or "error" in result)):
            raise ValueError(f"{where}: 'result' must be {{'content': ...}} or {{'error': ...}}")
        key = fetch_key(request.get("url", ""), request.get("mode", "raw"))
        if not (_error_result(result) and key in recording.fetches):
            recording.fetches[key] = result
    else:
        raise ValueError(f"{where}: a line records a 'search' or a 'fetch'")


def _result_ok(result: Any) -> bool:
    return isinstance(result, dict) and all(isinstance(result.get(k), str) for k in ("title", "href"))


class RecordingWriter:
    """Appends what a backend answers to a recording file (the header is written when the file is new).

    Raises:
        ValueError: An existing file that is not a recording of the same source.
    """

    def __init__(self, path: str | Path, source: str):
        self.path = Path(path)
        if self.path.exists() and self.path.stat().st_size:
            existing = read_recording(self.path)
            if existing.source != source:
                raise ValueError(f"{self.path}: records {existing.source!r}, not {source!r}; write a new file")
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._append({"format": RECORDING_FORMAT, "source": source, "recorded": _today()})

    def search(self, keywords: Any, region: Any, results: Any) -> None:
        """Record a query's results (a list of result dicts, or an error result)."""
        self._append({"search": {"keywords": keywords, "region": region}, "results": results, "date": _today()})

    def fetch(self, url: Any, mode: Any, result: Any) -> None:
        """Record a fetch's result."""
        self._append({"fetch": {"url": url, "mode": mode}, "result": result, "date": _today()})

    def _append(self, entry: Mapping[str, Any]) -> None:
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(json.dumps(entry, ensure_ascii=False) + "\n")


def _shown(results: list[dict[str, Any]], max_results: Any, show_snippet: bool) -> list[dict[str, Any]]:
    keys = ("title", "href", "body") if show_snippet else ("title", "href")
    return [{k: r.get(k, "") for k in keys} for r in results[:max_results]]


def replay_backend(recording: Recording) -> type:
    """A ``WebSearchAPI`` class answering from `recording` (BFCL's method signatures and result shapes)."""

    class WebSearchAPI:
        """Web search answered from a recording (`tooluse_gym.tools.web_search`)."""

        def __init__(self) -> None:
            self._api_description = (
                "This tool belongs to the Web Search API category. It provides functions to search the web "
                "and browse search results."
            )
            self.show_snippet = True
            self.misses: list[dict[str, Any]] = []

        def _load_scenario(self, initial_config: dict[str, Any], long_context: bool = False) -> None:
            self.show_snippet = initial_config["show_snippet"]

        def search_engine_query(self, keywords: str, max_results: int | None = 10, region: str | None = "wt-wt") -> Any:
            """This function queries the search engine for the provided keywords and region."""
            results = recording.searches.get(search_key(keywords, region))
            if results is None:
                self.misses.append({"search": keywords, "region": region})
                return {
                    "error": "No results for these keywords in the replay recording (it holds only recorded queries)."
                }
            if _error_result(results):
                return dict(results)
            return _shown(results, max_results, self.show_snippet)

        def fetch_url_content(self, url: str, mode: str = "raw") -> Any:
            """This function retrieves content from the provided URL and processes it based on the selected mode."""
            if not url.startswith(("http://", "https://")):
                raise ValueError(f"Invalid URL: {url}")
            result = recording.fetches.get(fetch_key(url, mode))
            if result is None and mode not in FETCH_MODES:  # BFCL fetches first: a failed fetch is its error
                fetched = [recording.fetches.get(fetch_key(url, m)) for m in FETCH_MODES]
                failed = next((f for f in fetched if _error_result(f)), None)
                if failed is not None or any(fetched):
                    return (
                        dict(failed)
                        if failed
                        else {"error": f"An error occurred while fetching {url}: Unsupported mode: {mode}"}
                    )
            if result is None:
                self.misses.append({"fetch": url, "mode": mode})
                return {"error": f"An error occurred while fetching {url}: not in the replay recording"}
            return copy.deepcopy(result)

        def report(self) -> dict[str, Any]:
            """What the episode asked that the recording did not hold."""
            return {"replay_misses": list(self.misses)}

    return WebSearchAPI


def live_backend(record_to: str | Path | None = None) -> type:
    """BFCL's own ``WebSearchAPI`` (SerpAPI and ``requests``), recording what it answers when `record_to` is given.

    Raises:
        SearchBackendUnavailable: A package or ``SERPAPI_API_KEY`` missing.
    """
    missing = [m for m in LIVE_NEEDS if importlib.util.find_spec(m) is None]
    if missing:
        raise SearchBackendUnavailable(
            f"search_backend='serpapi' runs BFCL's own WebSearchAPI, which imports {', '.join(missing)} "
            f"({LIVE_PACKAGES}); or replay a recording (search_backend='replay', recording=FILE)"
        )
    if not os.environ.get("SERPAPI_API_KEY"):
        raise SearchBackendUnavailable(
            "search_backend='serpapi' needs SERPAPI_API_KEY in the environment (BFCL's web search queries "
            "SerpAPI); or replay a recording (search_backend='replay', recording=FILE)"
        )
    base: type = getattr(_import(_MODULE), BACKEND)
    if record_to is None:
        return base
    writer = RecordingWriter(record_to, "serpapi")
    return recording_backend(base, writer)


def recording_backend(base: Any, writer: RecordingWriter) -> type:
    """`base` (a ``WebSearchAPI`` class) with every answer also written to `writer`.

    A query is asked for at least 10 results with snippets, so that the recording serves later
    episodes with or without snippets; the episode sees what it asked for.
    """

    def search_engine_query(self: Any, keywords: str, max_results: int | None = 10, region: str | None = "wt-wt"):
        shown = self.show_snippet
        self.show_snippet = True
        try:
            asked = None if max_results is None else max(max_results, 10)
            results = base.search_engine_query(self, keywords, max_results=asked, region=region)
        finally:
            self.show_snippet = shown
        writer.search(keywords, region, results)
        return dict(results) if _error_result(results) else _shown(list(results), max_results, shown)

    def fetch_url_content(self: Any, url: str, mode: str = "raw"):
        result = base.fetch_url_content(self, url, mode)
        writer.fetch(url, mode, result)
        return result

    search_engine_query.__doc__ = base.search_engine_query.__doc__
    fetch_url_content.__doc__ = base.fetch_url_content.__doc__
    namespace = {"search_engine_query": search_engine_query, "fetch_url_content": fetch_url_content}
    return type(base.__name__, (base,), {**namespace, "__module__": __name__, "__doc__": base.__doc__})


def gold_hops_recording(hops: Iterable[Mapping[str, Any]], source: str = "gold-hops") -> Recording:
    """A synthetic recording from BFCL's gold hops (``{"subquestion", "answer", "source"}``): not the web.

    Each subquestion, searched, finds one result: its source URL, titled with the subquestion, the
    answer as its snippet; the URL's page states ``subquestion: answer`` in every mode.
    """
    recording = Recording(source=source)
    for hop in hops:
        question, answer, url = str(hop["subquestion"]), str(hop["answer"]), str(hop["source"])
        text = f"{question}: {answer}"
        recording.searches[search_key(question)] = [{"title": question, "href": url, "body": text}]
        recording.fetches[fetch_key(url, "raw")] = {
            "content": f"<html><head><title>{question}</title></head><body><p>{text}</p></body></html>"
        }
        recording.fetches[fetch_key(url, "markdown")] = {"content": f"# {question}\n\n{text}\n"}
        recording.fetches[fetch_key(url, "truncate")] = {"content": f"{question}\n{text}"}
    canonical = json.dumps([recording.searches, recording.fetches], sort_keys=True).encode()
    recording.digest = hashlib.sha256(canonical).hexdigest()
    return recording
