"""What a run's agent errors mean for its score: the banner printed above its table, and whether it failed.

Two kinds of agent error (`tooluse_agents.backends.base.FAILURE_CODES`), told apart by
`tooluse_agents.runs.records.UNSCORED_ERRORS`:

* the model's server failed (it could not be reached, timed out, answered 429 or 5xx after every
  retry): the episode says nothing about the model, so it is *unscored*, left out of every
  accuracy, and a resumed run (the same command again) plays it again;
* anything else (a prompt past the model's context, a request the server refused, an exception in
  the agent): the episode counts as 0, as BFCL counts a failed inference.

The banner says how many of each there were, so that neither reads as the model's score.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from tooluse_agents.runs.records import UNSCORED_ERRORS

__all__ = ["failure_banner", "run_failed"]

_ERROR_HINTS = {
    "connection_error": "the endpoint did not answer (is a server up at --base-url? `tooluse serve MODEL` starts one)",
    "timeout": "the endpoint did not answer in time",
    "rate_limited": "the endpoint refused the requests (rate limit)",
    "server_error": "the endpoint failed (5xx)",
    "bad_request": "the endpoint rejected the requests (400: the served model name? a prompt too long?)",
    "api_error": "the endpoint rejected the requests",
    "context_length_exceeded": "the prompts are longer than the model's context",
}


def failure_banner(summary: Mapping[str, Any]) -> str | None:
    """A line that says a run failed (every episode ended in an agent error) or how many episodes did; None if none.

    Without it a dead endpoint would read as a model that scores 0 (or, its episodes being left
    out, as a smaller run).
    """
    errors = Counter(summary.get("agent_errors") or {})
    failed, total = sum(errors.values()), summary.get("episodes", 0)
    if not failed:
        return None
    if run_failed(summary):
        return (
            f"ERROR: {f'all {total} episodes' if total > 1 else 'the only episode'} ended in an agent error "
            f"({_counts(errors)}): {_hint(errors)}. The run failed; this is not a score of 0."
        )
    unscored = Counter({k: n for k, n in errors.items() if k in UNSCORED_ERRORS})
    counted = errors - unscored
    parts = []
    if unscored:
        n = sum(unscored.values())
        parts.append(
            f"WARNING: {n} of {total} episodes were not scored: the model server failed ({_counts(unscored)}): "
            f"{_hint(unscored)}. They are left out of the table below; the same command again plays them "
            "(the run resumes)."
        )
    if counted:
        n = sum(counted.values())
        parts.append(
            f"{'WARNING: ' if not parts else ''}{n} of {total} episodes ended in an agent error "
            f"({_counts(counted)}): {_hint(counted)}. They count as 0 in the table below."
        )
    return " ".join(parts)


def run_failed(summary: Mapping[str, Any]) -> bool:
    """Every episode of the run ended in an agent error (none was scored by the model's answers)."""
    episodes = summary.get("episodes", 0)
    return episodes > 0 and sum((summary.get("agent_errors") or {}).values()) >= episodes


def _counts(errors: Counter[str]) -> str:
    return ", ".join(f"{kind}: {n}" for kind, n in errors.most_common())


def _hint(errors: Counter[str]) -> str:
    return _ERROR_HINTS.get(errors.most_common(1)[0][0], "see each episode's error in episodes.jsonl")
