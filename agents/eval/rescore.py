"""`tooluse eval rescore RUN`: score a run's stored messages again with today's checker and task data.

Nothing is generated: an env is deterministic given the assistant's messages, so each episode of
``episodes.jsonl`` is replayed (reset on its task and seed, stepped with its recorded messages) on
the env the run's configuration (``run.json``) builds today, and the verdict is read. The new
records go to ``episodes.rescored.jsonl`` and the new results to ``results.rescored.json`` beside
the originals, which are left untouched; the results say which verdicts changed and why:

- ``data``: a data file the entry reads (its category's questions and possible answers, its
  simulators' function docs, the scenario files) has another sha256 than on the episode's card;
- ``checker``: the entry's data are the same, so the checker (or the simulators) judged it otherwise;
- ``unknown``: the episode's card predates the task data digests ("data version unknown").

An episode that ended in an agent error has no verdict to redo and is kept as it was. A message an
API returned as structured calls is rebuilt from its decoded calls (name, arguments, id); one whose
calls could not be read (an error on a call) cannot be rebuilt, and its episode is kept with its verdict.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym

from tooluse_agents.eval.run import EvalConfig, known_issues_for, results_table
from tooluse_agents.rollout.episode import StepCost, episode_record
from tooluse_agents.runs.records import EpisodeRecord, StepEntry, read_episodes
from tooluse_agents.runs.results import summarize
from tooluse_gym.envs.ids import MEMORY_ID, MULTI_TURN_ID, SCENARIO_ID, SINGLE_TURN_ID, WEB_SEARCH_ID
from tooluse_gym.envs.knobs import env_defaults
from tooluse_gym.envs.tool_env import play_messages, protocol_card
from tooluse_gym.protocol import DATA_UNKNOWN, ProtocolCard
from tooluse_gym.tasks import bfcl_data
from tooluse_gym.tasks.task import Task

RESULTS = "results.rescored.json"
EPISODES = "episodes.rescored.jsonl"
TRANSCRIPT_ENDED = "rescore:transcript_ended"
"""The verdict of a replay whose recorded messages ran out before the env ended the episode."""

_SAME_PROTOCOL_IGNORES = ("seed", "known_issues", "task_data", "checker_version", "tooluse_gym_version", "bfcl_version")
"""Card fields a re-scoring may change (what it is for); every other field must equal the run's."""
_EXTRA_IGNORES = ("scenarios_sha256",)

__all__ = ["EPISODES", "RESULTS", "Rescore", "VerdictChange", "rescore_run"]


@dataclass(frozen=True)
class VerdictChange:
    """One scored entry whose verdict is not what the run recorded.

    Attributes:
        task_id: The scored entry (a memory question's id, else the episode's task).
        seed: The episode's seed.
        before, after: ``valid`` as recorded, and now.
        error_before, error_after: The checker's ``error_type`` as recorded, and now.
        cause: ``data``, ``checker`` or ``unknown`` (module docstring).
        files: For ``data``, the entry's files whose digests differ.
    """

    task_id: str
    seed: int
    before: bool
    after: bool
    error_before: str | None
    error_after: str | None
    cause: str
    files: tuple[str, ...] = ()

    def line(self) -> str:
        """One line for the report: the entry, the verdicts, the cause."""
        why = f"data ({', '.join(self.files)})" if self.cause == "data" else self.cause
        before, after = _verdict(self.before, self.error_before), _verdict(self.after, self.error_after)
        return f"{self.task_id} seed {self.seed}: {before} -> {after}  [{why}]"


@dataclass(frozen=True)
class Rescore:
    """What `rescore_run` did: the results it wrote, the changed verdicts, the episodes it kept as they were."""

    results: dict[str, Any]
    changes: tuple[VerdictChange, ...]
    replayed: int
    kept: tuple[tuple[str, int, str], ...]

    def report(self) -> str:
        """The text `tooluse eval rescore` prints: what changed and why, then the new results table."""
        info = self.results["rescore"]
        lines = [
            f"re-scored {self.replayed} episodes with checker {info['checker_version']} on task data "
            f"{info['data_version']} (the run: checker {info['run_checker_version']}, data "
            f"{info['run_data_version']})",
        ]
        if info["run_data_version"] == DATA_UNKNOWN:
            lines.append("the run's cards predate the task data digests: data version unknown")
        if self.kept:
            lines.append(f"{len(self.kept)} episodes kept as recorded (no verdict to redo):")
            lines += [f"  {t} seed {s}: {why}" for t, s, why in self.kept]
        if self.changes:
            lines += ["", f"{len(self.changes)} verdicts changed:"]
            lines += [f"  {c.line()}" for c in self.changes]
        else:
            lines += ["", "no verdict changed"]
        return "\n".join([*lines, "", results_table(self.results)])


def rescore_run(run: str | Path) -> Rescore:
    """Re-score the run folder `run` (module docstring); writes `RESULTS` and `EPISODES` there.

    Raises:
        FileNotFoundError: `run` lacks ``run.json``, ``results.json`` or ``episodes.jsonl``.
        ValueError: The env built today has another protocol than the run's (a knob this version
            reads otherwise), or the run's episodes are of an env id the run's configuration does not build.
    """
    run = Path(run)
    for name in ("run.json", "results.json", "episodes.jsonl"):
        if not (run / name).is_file():
            raise FileNotFoundError(f"{run / name}: not found (is {run} a `tooluse eval run` folder?)")
    config = _config(json.loads((run / "run.json").read_text()))
    previous = json.loads((run / "results.json").read_text())
    records = read_episodes(run / "episodes.jsonl", unique=True)[0]
    by_env: dict[str, list[str]] = {}
    for record in records:
        by_env.setdefault(str(record.protocol.get("env_id")), []).append(record.task_id)
    cards: dict[str, ProtocolCard] = {}
    new: dict[tuple[str, int], EpisodeRecord] = {}
    changes: list[VerdictChange] = []
    kept: list[tuple[str, int, str]] = []
    for env_id, ids in by_env.items():
        env = _make_env(config, env_id, list(dict.fromkeys(ids)))
        try:
            card = cards[env_id] = protocol_card(env)
            for record in (r for r in records if r.protocol.get("env_id") == env_id):
                _check_protocol(record, card)
                why = _not_replayable(record)
                if why is not None:
                    kept.append((record.task_id, record.seed, why))
                    continue
                record_now, task = _replay(env, record, config.text_replies == "fc")
                new[(record.task_id, record.seed)] = record_now
                changes += _changes(record, record_now, card, _entry_files(env_id, task))
        finally:
            env.close()
    episodes = [new.get((r.task_id, r.seed), r) for r in records]
    with open(run / EPISODES, "w", encoding="utf-8") as f:
        f.writelines(json.dumps(e.to_dict()) + "\n" for e in episodes)
    results = _results(previous, cards, episodes, records, config, changes, kept)
    (run / RESULTS).write_text(json.dumps(results, indent=2))
    return Rescore(results, tuple(changes), len(new), tuple(kept))


def _config(data: Mapping[str, Any]) -> EvalConfig:
    """The parts of a run's configuration that build its envs (the agent is not needed: nothing is generated)."""

    def names(key: str) -> tuple[str, ...] | None:
        value = data.get(key)
        return tuple(value) if value else None

    search = data.get("search")
    if search == "serpapi":
        raise ValueError(
            "the run searched the live web (--search serpapi): its tool results cannot be replayed; re-score it "
            "from its recording instead (a run with --record-search FILE: tooluse eval run --search FILE)"
        )
    base = EvalConfig(
        agent="oracle",
        categories=names("categories"),
        scenarios=names("scenarios"),
        task_ids=names("task_ids"),
        search=search,
    )
    knobs = env_defaults(base.env_id).with_defaults(**dict(data.get("protocol") or {}))
    return dataclasses.replace(base, protocol=knobs, text_replies=str(data.get("text_replies", "decode")))


def _make_env(config: EvalConfig, env_id: str, task_ids: list[str]) -> gym.Env:
    if env_id not in (MULTI_TURN_ID, SINGLE_TURN_ID, MEMORY_ID, WEB_SEARCH_ID, SCENARIO_ID):
        raise ValueError(f"cannot re-score episodes of {env_id}: `tooluse eval run` does not play it")
    kwargs = config.env_kwargs(env_id)
    if env_id == SCENARIO_ID and not config.scenarios:
        raise ValueError("the run's episodes are scenario episodes, but its run.json names no scenario files")
    return gym.make(env_id, task_ids=task_ids, **kwargs, **config.protocol.to_dict())


def _check_protocol(record: EpisodeRecord, card: ProtocolCard) -> None:
    """Refuse when today's env differs from the episode's in anything but versions, task data and seed."""
    played = ProtocolCard.from_dict(dict(record.protocol))
    strip = {k: None for k in _EXTRA_IGNORES}
    a = played.replace(extra=tuple(sorted({**dict(played.extra), **strip}.items())))
    b = card.replace(extra=tuple(sorted({**dict(card.extra), **strip}.items())))
    differing = a.differences(b, ignore=_SAME_PROTOCOL_IGNORES)
    if differing:
        shown = ", ".join(f"{k}: {x!r} then, {y!r} now" for k, (x, y) in differing.items())
        raise ValueError(f"{record.task_id}: the env built from run.json is not the run's protocol ({shown})")


def _not_replayable(record: EpisodeRecord) -> str | None:
    """Why an episode cannot be replayed (kept with its recorded verdict), or None."""
    if record.error is not None:
        return f"agent error {record.error.get('type')}: no verdict to redo"
    if record.checker is None:
        return "the episode did not end: no verdict to redo"
    for step in record.steps:
        if _structured(step) and any(c.get("error") for c in step.calls):
            return "a structured call that could not be read: its message cannot be rebuilt"
    return None


def _structured(step: StepEntry) -> bool:
    """Whether a step's message came as structured calls (its decoded calls carry the API's call ids)."""
    return bool(step.calls) and all(isinstance(c.get("id"), str) for c in step.calls)


def action_of(step: StepEntry, fc_text: bool = False) -> str | dict[str, Any]:
    """The env action a recorded step was: its text, or the structured message its decoded calls rebuild.

    `fc_text`: the run read a reply without structured calls as a function-calling response with
    none (``--text-replies fc``).
    """
    if _structured(step):
        calls = [
            {
                "id": c["id"],
                "type": "function",
                "function": {"name": c["name"], "arguments": json.dumps(c.get("arguments", {}))},
            }
            for c in step.calls
        ]
        return {"content": step.assistant, "tool_calls": calls}
    if fc_text and not step.calls:
        return {"content": step.assistant, "tool_calls": []}
    return step.assistant


def _replay(env: gym.Env, record: EpisodeRecord, fc_text: bool) -> tuple[EpisodeRecord, Task]:
    """The episode's record as today's env scores its recorded messages, and the task played."""
    played = play_messages(env, record.task_id, (action_of(s, fc_text) for s in record.steps), seed=record.seed)
    costs = [StepCost(s.prompt_tokens, s.completion_tokens, s.latency_s) for s in record.steps]
    now = episode_record(played.reset_info, played.infos, seed=record.seed, agent=record.agent, costs=costs)
    now = dataclasses.replace(now, duration_s=record.duration_s, extra=record.extra)
    if not (played.terminated or played.truncated):
        message = f"the {len(record.steps)} recorded messages end before the episode does"
        now = dataclasses.replace(
            now, reward=0.0, checker={"valid": False, "error_type": TRANSCRIPT_ENDED, "error_message": message}
        )
    return now, played.reset_info["task"]


def _entry_files(env_id: str, task: Task) -> list[str] | None:
    """The data files one entry reads (None: every file on the card, e.g. a scenario set's)."""
    if env_id == MULTI_TURN_ID:
        return bfcl_data.multi_turn_files([task.category], task.backends)
    if env_id == SINGLE_TURN_ID:
        return bfcl_data.single_turn_files([task.category])
    if env_id == MEMORY_ID:
        return bfcl_data.memory_files(task.backends)
    if env_id == WEB_SEARCH_ID:
        return bfcl_data.web_search_files()
    return None


def _units(record: EpisodeRecord) -> dict[str, tuple[bool, str | None]]:
    """Each scored entry's verdict: (valid, error type), of the episode or of each of its questions."""
    if record.questions:
        return {str(q["task_id"]): (bool(q.get("valid")), q.get("error_type")) for q in record.questions}
    checker = record.checker or {}
    return {record.task_id: (bool(checker.get("valid")), checker.get("error_type"))}


def _changes(
    before: EpisodeRecord, after: EpisodeRecord, card: ProtocolCard, files: Sequence[str] | None
) -> list[VerdictChange]:
    old, new = _units(before), _units(after)
    played = ProtocolCard.from_dict(dict(before.protocol))
    differing = played.data_differences(card)
    changed: tuple[str, ...] = ()
    if not played.task_data:
        cause = "unknown"
    else:
        changed = tuple(f for f in differing if files is None or f in files)
        cause = "data" if changed else "checker"
    out = []
    for unit in dict.fromkeys([*old, *new]):
        a, b = old.get(unit, (False, None)), new.get(unit, (False, None))
        if a != b:
            out.append(VerdictChange(unit, before.seed, a[0], b[0], a[1], b[1], cause, changed))
    return out


def _results(
    previous: Mapping[str, Any],
    cards: Mapping[str, ProtocolCard],
    episodes: Sequence[EpisodeRecord],
    records: Sequence[EpisodeRecord],
    config: EvalConfig,
    changes: Sequence[VerdictChange],
    kept: Sequence[tuple[str, int, str]],
) -> dict[str, Any]:
    """``results.rescored.json``: the run's results as today's checker and data give them, and what changed."""
    card = next(iter(cards.values())) if cards else ProtocolCard.from_dict(dict(previous["protocol"]))
    run_cards = {str(r.protocol.get("env_id")): ProtocolCard.from_dict(dict(r.protocol)) for r in records}
    run_checkers = sorted({c.checker_version or "unknown" for c in run_cards.values()})
    registry = known_issues_for(MULTI_TURN_ID if MULTI_TURN_ID in cards else config.env_id)
    return {
        **{k: v for k, v in previous.items() if k not in ("protocol", "fingerprint", "protocols", "summary")},
        "protocol": card.to_dict(),
        "fingerprint": card.fingerprint(),
        **({"protocols": {e: c.to_dict() for e, c in cards.items()}} if len(cards) > 1 else {}),
        "summary": summarize(episodes, registry),
        "rescore": {
            "of": "results.json",
            "episodes": EPISODES,
            "checker_version": card.checker_version,
            "data_version": data_version(cards.values()),
            "run_checker_version": ", ".join(run_checkers) or "unknown",
            "run_data_version": data_version(run_cards.values()),
            "run_fingerprint": previous.get("fingerprint"),
            "replayed": len(episodes) - len(kept),
            "kept": [{"task_id": t, "seed": s, "why": why} for t, s, why in kept],
            "changes": [dataclasses.asdict(c) for c in changes],
        },
    }


def data_version(cards: Iterable[ProtocolCard]) -> str:
    """`ProtocolCard.data_version` over the task data of several cards (a run's envs); ``unknown`` if any lacks them."""
    listed = list(cards)
    if not listed or any(not c.task_data for c in listed):
        return DATA_UNKNOWN
    merged = dict(item for c in listed for item in c.task_data)
    return listed[0].replace(task_data=tuple(sorted(merged.items()))).data_version


def _verdict(valid: bool, error: str | None) -> str:
    return "valid" if valid else f"invalid ({error})" if error else "invalid"
