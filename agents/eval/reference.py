"""A reference score and the band around it: `tooluse eval check`.

MLPerf's agentic workload accepts a BFCL score only within a band of a reference (its Edge
Agentic rule: score >= band x reference score, band 0.97). `write_reference` stores a run's score
as a reference file: the estimator and its k (`tooluse_agents.eval.estimators`), the score with its
interval, the per-category values, the tasks played, and the run's protocol card(s) with their
fingerprint (and whatever else the card holds, such as task-data digests). `check` scores another
run with the reference's estimator and tells whether it lies within the band.

A run is checked only against a reference it is comparable with: the same protocol fingerprint,
equal values of every card field both cards have, and the same tasks; otherwise `check` refuses
(`NotComparable`), naming what differs. A field only one card has (a card written before the field
existed) is named as unknown on that side, and refuses only when the fingerprints differ too.
"""

from __future__ import annotations

import datetime
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tooluse_agents.eval.estimators import DEFAULT_ESTIMATOR, estimate, run_episodes
from tooluse_agents.eval.stats import TOLERANCE
from tooluse_agents.runs.records import EpisodeRecord
from tooluse_gym.errors import ToolUseGymError

__all__ = [
    "DEFAULT_BAND",
    "FORMAT",
    "BandCheck",
    "CheckConfig",
    "NotComparable",
    "check",
    "reference_of",
    "write_reference",
]

FORMAT = "tooluse-eval-reference"
VERSION = 1
DEFAULT_BAND = 0.97
"""MLPerf's Edge Agentic band: a run passes with at least 97% of the reference score."""

_IGNORED = ("seed", "known_issues")
"""Card fields that do not make two protocols different (as `ProtocolCard.fingerprint` leaves them out)."""


class NotComparable(ToolUseGymError, ValueError):
    """The run and the reference differ in protocol or tasks: no band applies."""


@dataclass(frozen=True, kw_only=True)
class CheckConfig:
    """`tooluse eval check`: a run against a stored reference, or a new reference from a run.

    Attributes:
        run: A run folder (`tooluse eval run --out`).
        reference: The reference file to check the run against: exit 0 within the band, 1 below it, 2 when the
            two are not comparable (the reference's own estimator and k score the run).
        write_reference: Write the run's score as a new reference file instead (with its protocol cards and
            tasks); an existing file is never overwritten.
        band: The fraction of the reference score a run must reach: score >= band x reference (MLPerf's Edge
            Agentic rule: 0.97).
        estimator: With --write-reference: the reference's estimator (pass@1, pass@k, pass^k, avg@k; as
            `tooluse eval estimate`).
        k: With --write-reference: the estimator's k (left out: the seeds each task was played with).
    """

    run: Path
    reference: Path | None = None
    write_reference: Path | None = None
    band: float = DEFAULT_BAND
    estimator: str = DEFAULT_ESTIMATOR
    k: int | None = None


def _tasks(records: list[EpisodeRecord]) -> list[str]:
    return sorted({task_id for r in records for task_id, _ in r.scored()})


def _digest(task_ids: list[str]) -> str:
    return hashlib.sha256("\n".join(task_ids).encode()).hexdigest()[:16]


def _cards(results: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The run's protocol cards by env id (one for a one-env run)."""
    if results.get("protocols"):
        return {env: dict(card) for env, card in results["protocols"].items()}
    card = dict(results["protocol"])
    return {str(card.get("env_id")): card}


def _load_results(run: Path) -> dict[str, Any]:
    path = Path(run) / "results.json"
    if not path.exists():
        raise FileNotFoundError(f"{run} is no run folder: it has no results.json (`tooluse eval run --out` writes one)")
    return dict(json.loads(path.read_text()))


def reference_of(run: Path, estimator: str = DEFAULT_ESTIMATOR, k: int | None = None) -> dict[str, Any]:
    """A reference from a run folder: its score under `estimator` (k as `estimate` takes it), cards and tasks."""
    run = Path(run)
    results = _load_results(run)
    records = run_episodes(run)
    result = estimate(records, estimator, k)
    tasks = _tasks(records)
    return {
        "format": FORMAT,
        "version": VERSION,
        "written": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "run": run.name,
        "agent": results.get("agent"),
        "estimator": result.estimator,
        "k": result.k,
        "label": result.label,
        "score": result.overall["value"],
        "ci95": result.overall["ci95"],
        "categories": {c: row["value"] for c, row in result.categories.items()},
        "seeds": list(result.seeds),
        "tasks": len(tasks),
        "tasks_digest": _digest(tasks),
        "fingerprint": results.get("fingerprint"),
        "protocols": _cards(results),
    }


def write_reference(run: Path, file: Path, estimator: str = DEFAULT_ESTIMATOR, k: int | None = None) -> dict[str, Any]:
    """Write `run`'s reference (`reference_of`) to `file` as JSON; returns it. An existing file is refused."""
    file = Path(file)
    if file.exists():
        raise FileExistsError(f"{file} exists: a reference is never overwritten; remove it or name another file")
    data = reference_of(run, estimator, k)
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text(json.dumps(data, indent=2) + "\n")
    return data


def _read_reference(file: Path) -> dict[str, Any]:
    data = json.loads(Path(file).read_text())
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ValueError(f"{file} is no reference file (`tooluse eval check RUN --write-reference FILE` writes one)")
    if data.get("version", 0) > VERSION:
        raise ValueError(f"{file} is a reference of version {data['version']}; this tooluse reads up to {VERSION}")
    return data


def card_differences(run: Mapping[str, Any], reference: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """(fields whose values differ, fields only one card has), each as a readable ``name: run vs reference``."""
    differ, one_sided = [], []
    for name in sorted(set(run) | set(reference)):
        if name in _IGNORED:
            continue
        if name not in run or name not in reference:
            side = "the run" if name in run else "the reference"
            one_sided.append(f"{name} (only {side}'s card has it: unknown on the other side)")
        elif run[name] != reference[name]:
            differ.append(f"{name}: {run[name]!r} (run) vs {reference[name]!r} (reference)")
    return differ, one_sided


def _comparable(results: Mapping[str, Any], records: list[EpisodeRecord], ref: Mapping[str, Any]) -> list[str]:
    """Notes on fields known on one side only; raises `NotComparable` naming every difference that refuses."""
    cards, ref_cards = _cards(results), dict(ref["protocols"])
    problems: list[str] = []
    notes: list[str] = []
    if set(cards) != set(ref_cards):
        problems.append(f"env ids: {sorted(cards)} (run) vs {sorted(ref_cards)} (reference)")
    fingerprints_differ = results.get("fingerprint") != ref.get("fingerprint")
    if fingerprints_differ:
        problems.append(
            f"protocol fingerprint: {results.get('fingerprint')} (run) vs {ref.get('fingerprint')} (reference)"
        )
    for env in sorted(set(cards) & set(ref_cards)):
        differ, one_sided = card_differences(cards[env], ref_cards[env])
        where = f" [{env}]" if len(cards) > 1 else ""
        problems += [d + where for d in differ]
        (problems if fingerprints_differ else notes).extend(o + where for o in one_sided)
    tasks = _tasks(records)
    if _digest(tasks) != ref.get("tasks_digest"):
        problems.append(f"tasks: the run played {len(tasks)}, the reference {ref.get('tasks')}, not the same ones")
    if problems:
        raise NotComparable(
            "the run is not comparable with the reference, so no band applies; they differ in "
            + "; ".join(problems)
            + ". Score the reference's protocol and tasks, or write a new reference for this protocol."
        )
    return notes


@dataclass(frozen=True)
class BandCheck:
    """A run's score against a reference's band.

    Attributes:
        passed: score >= band x reference score.
        score: The run's score under the reference's estimator.
        reference: The reference's score.
        band: The fraction of the reference a run must reach.
        label: The estimator's heading (``pass@1 (mean over 3 seeds)``).
        notes: Card fields known on one side only (a card written before them).
        message: One paragraph saying which and why.
    """

    passed: bool
    score: float
    reference: float
    band: float
    label: str
    notes: tuple[str, ...]
    message: str


def check(run: Path, reference_file: Path, band: float = DEFAULT_BAND) -> BandCheck:
    """Whether `run`'s score lies within `band` of the reference in `reference_file` (score >= band x reference).

    Raises:
        ValueError: A band outside (0, 1], a file that is no reference, or a run with fewer samples
            per task than the reference's k.
        NotComparable: The protocols or the tasks differ (the message names each difference).
    """
    if not 0 < band <= 1:
        raise ValueError(f"--band must lie in (0, 1] (a fraction of the reference score), not {band}")
    run = Path(run)
    ref = _read_reference(reference_file)
    results = _load_results(run)
    records = run_episodes(run)
    notes = _comparable(results, records, ref)
    result = estimate(records, ref["estimator"], ref["k"])
    score, reference = float(result.overall["value"]), float(ref["score"])
    threshold = band * reference
    passed = score >= threshold - TOLERANCE
    verdict = "PASS" if passed else "FAIL"
    where = "within" if passed else "below"
    named = ref["estimator"] if ref["estimator"] == "pass@1" else f"{ref['estimator']}, k={ref['k']}"
    message = (
        f"{verdict}: the run {run} scores {100 * score:.2f}% ({result.label}, overall over "
        f"{ref['tasks']} tasks), {where} the band of reference {reference_file} ({named}: "
        f"{100 * reference:.2f}% from run "
        f"{ref.get('run')!r}, protocol {ref.get('fingerprint')}): the rule is score >= {band:g} x reference = "
        f"{100 * threshold:.2f}%"
    )
    message += "." if passed else f", so it falls short by {100 * (threshold - score):.2f} points."
    if notes:
        message += " Known on one side only (data version unknown there): " + "; ".join(notes) + "."
    return BandCheck(passed, score, reference, band, result.label, tuple(notes), message)
