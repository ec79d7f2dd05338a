"""The evaluation harness: run an agent over a task slice and seeds, resumably, and summarize."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import shutil
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym

import tooluse_gym  # noqa: F401  (registers the env ids)
from tooluse_agents.backends import factory as backends
from tooluse_agents.backends.base import Agent, Generation, SamplingConfig, ServedAgent
from tooluse_agents.backends.factory import BACKENDS, BackendSpec
from tooluse_agents.eval.plan import env_of_task_id, group_task_ids
from tooluse_agents.eval.plan import eval_task_ids as eval_task_ids  # re-exported: callers import it from here
from tooluse_agents.eval.task_data import task_data_comparison
from tooluse_agents.progress import progress_bar
from tooluse_agents.rollout.loop import Episode, RolloutJob, resolve_schedule, run_rollouts
from tooluse_agents.runs.bfcl_scores import format_bfcl_table, web_search_note
from tooluse_agents.runs.jsonl import JsonlWriter
from tooluse_agents.runs.records import EpisodeRecord, read_episodes
from tooluse_agents.runs.report import write_run_report
from tooluse_agents.runs.results import (
    CategoryDiff,
    clean_caption,
    compare_results,
    coverage_lines,
    format_clean_table,
    format_pass_table,
    format_table,
    summarize,
)
from tooluse_agents.runs.rundir import RunConflict, RunDir
from tooluse_gym.envs import MULTI_TURN_ID, SCENARIO_ID
from tooluse_gym.envs.ids import MEMORY_ID, SINGLE_TURN_ID, WEB_SEARCH_ID
from tooluse_gym.envs.knobs import Knobs, env_defaults
from tooluse_gym.envs.memory import expand_categories as expand_memory
from tooluse_gym.envs.settings import DEFAULT_CATEGORIES, env_groups
from tooluse_gym.envs.tool_env import protocol_card
from tooluse_gym.envs.web_search import SEARCH_BACKENDS, search_settings
from tooluse_gym.protocol import ProtocolCard
from tooluse_gym.tasks import bfcl, bfcl_single_turn
from tooluse_gym.tasks.known_issues import KnownIssues, load_known_issues

ENV_ID = MULTI_TURN_ID
SCENARIO_ENV_ID = SCENARIO_ID


AGENTS = BACKENDS
PROTOCOL_KNOBS = Knobs.names()
ENV_DEFAULT = Knobs()
"""`EvalConfig.protocol`'s default, a marker: the knobs become the env id's defaults (`env_defaults`)."""
RECORDED_KNOBS = (
    "template",
    "reasoning",
    "tool_format",
    "tool_results",
    "system_prompt",
    "strict_tools",
    "max_steps_per_turn",
)
"""The knobs `run.json` always holds (as `tooluse eval run` has always written them); the others only when
they differ from the env id's defaults."""


_RESUMABLE_ACROSS = {"schedule", "base_urls"}  # cannot change a verdict: a run may resume under another value


@dataclass(frozen=True, kw_only=True)
class EvalConfig:
    """One evaluation run.

    Attributes:
        agent: Which backend plays: ``oracle``: replays the ground truth (checks the harness; needs no model) |
            ``hf``: transformers in this process | ``vllm``: a vLLM engine in this process | ``openai``: an
            OpenAI-compatible server (`base_url`).
        model: The model: ``smollm2-135m``, a local model folder, or a served model name.
        base_url: OpenAI-compatible endpoint (``openai`` agent).
        base_urls: Several OpenAI-compatible endpoints serving the model, instead of `base_url` (``openai``
            agent): each episode's requests go to one, and a server that fails has its episodes moved.
        categories: Categories to evaluate: BFCL multi-turn (base, miss_func, miss_param, long_context; left
            out: all of them) or BFCL single-turn (simple_python, simple_java, simple_javascript, multiple,
            parallel, parallel_multiple, irrelevance, live_simple, live_multiple, live_parallel,
            live_parallel_multiple, live_irrelevance, live_relevance, or the groups non_live, live,
            single_turn); a run holds one of the two (single-turn task ids in `task_ids` need their
            categories here).
        limit: Tasks per category, evenly spaced over that category's tasks (a BFCL multi-turn category holds
            200, a single-turn one 16 to 1,053; left out: all).
        scenarios: Scenario files or folders to evaluate on (``ToolUse-Scenario-v0``) instead
            of BFCL (``ToolUse-MultiTurn-v0``).
        task_ids: Explicit task ids (overrides `categories` and `limit`).
        seeds: One pass over the tasks per seed; a seed fixes all sampling.
        protocol: The knobs (`Knobs`) the env is made with; left out: the env id's defaults
            (`tooluse_gym.envs.knobs.env_defaults`), e.g. ``decoder`` ``bfcl`` for BFCL and
            ``lenient`` for scenarios. ``env_defaults(config.env_id).with_defaults(...)`` changes some.
        sampling: Sampling settings.
        num_envs: Episodes played at once (the most requests in flight).
        schedule: How requests are sent (`tooluse_agents.rollout.loop`); it never changes a verdict, so a run
            may resume under another schedule, and ``results.json`` records the one used. ``async``: each
            episode's next request is sent the moment its last one returns (vllm, openai, oracle) |
            ``lockstep``: every step waits for the whole batch (the hf agent's only way) | ``auto``: async
            where possible.
        dtype: Model dtype for local backends; ``auto`` resolves by machine (`tooluse_agents.backends.dtypes`) and
            ``results.json`` records what it became.
        tensor_parallel_size: ``vllm`` agent: GPUs one engine spreads the model over (GPU only).
        text_replies: ``openai`` agent, requests that carry ``tools``: ``decode``: a reply without structured
            calls is text the env reads calls from | ``fc``: it is a function-calling response with no
            calls, as BFCL's FC handlers read it (`tooluse_agents.backends.openai_compat.OpenAIAgentConfig`).
        search: Web-search categories' search backend (`tooluse_gym.envs.web_search`): a recording file to
            replay | ``serpapi`` (BFCL's own, live; needs ``SERPAPI_API_KEY``) | ``gold-hops`` (synthetic,
            not a BFCL score). Required when the run plays web search; scores compare within one backend.
        record_search: With ``search`` ``serpapi``: append every query and page it answers to this recording.
    """

    agent: str
    model: str | None = None
    base_url: str | None = None
    base_urls: tuple[str, ...] | None = None
    categories: tuple[str, ...] | None = None
    limit: int | None = None
    scenarios: tuple[str, ...] | None = None
    task_ids: tuple[str, ...] | None = None
    seeds: tuple[int, ...] = (0,)
    protocol: Knobs = ENV_DEFAULT
    sampling: SamplingConfig = field(default_factory=SamplingConfig)
    num_envs: int = 8
    schedule: str = "auto"
    dtype: str = "auto"
    tensor_parallel_size: int = 1
    text_replies: str = "decode"
    search: str | None = None
    record_search: str | None = None

    def __post_init__(self) -> None:
        if self.agent not in AGENTS:
            raise ValueError(f"agent must be one of {', '.join(AGENTS)}, got {self.agent!r}")
        if self.agent != "oracle" and not self.model:
            raise ValueError(f"--model is required for the {self.agent} agent")
        if not isinstance(self.protocol, Knobs):
            raise TypeError(f"protocol must be a Knobs, got {type(self.protocol).__name__}")
        if self.protocol is ENV_DEFAULT:
            object.__setattr__(self, "protocol", env_defaults(self.env_id))
        for env_id, categories in self.env_groups:
            if env_id == SINGLE_TURN_ID:
                for c in categories:
                    bfcl_single_turn.category_names(c)
            elif env_id == MEMORY_ID:
                expand_memory(list(categories))
            elif env_id == MULTI_TURN_ID:
                for c in categories:
                    if c != "all":
                        bfcl.normalize_category(c)
        check_seeds(self.seeds)
        if self.limit is not None and self.limit < 1:
            raise ValueError(f"--limit {self.limit}: tasks per category, >= 1 (leave it out for all)")
        if self.task_ids is not None and not self.task_ids:
            raise ValueError("--task-ids: give at least one task id (or leave it out)")
        if self.num_envs < 1:
            raise ValueError(f"--num-envs {self.num_envs}: episodes played at once, >= 1")
        if self.tensor_parallel_size < 1 or (self.tensor_parallel_size > 1 and self.agent != "vllm"):
            raise ValueError(f"--tensor-parallel-size {self.tensor_parallel_size}: a vllm agent's GPU count, >= 1")
        if self.text_replies not in ("decode", "fc") or (self.text_replies != "decode" and self.agent != "openai"):
            raise ValueError(f"--text-replies {self.text_replies}: decode, or fc with the openai agent")
        if any(env_id == WEB_SEARCH_ID for env_id, _ in self.env_groups):
            if self.search is None:
                raise ValueError(
                    "web-search categories need --search: a recording file to replay, serpapi (BFCL's own, live; "
                    "needs SERPAPI_API_KEY; --record-search FILE keeps what it answered) or gold-hops (synthetic, "
                    "offline; not a BFCL score). Scores compare only within one search backend and recording"
                )
            kwargs = self._search_kwargs()
            if kwargs["record_to"] is not None and kwargs["search_backend"] != "serpapi":
                raise ValueError("--record-search records a live backend's answers: use it with --search serpapi")
            search_settings(kwargs["search_backend"], kwargs["recording"], None)  # refused up front, nothing written
        elif self.search is not None or self.record_search is not None:
            raise ValueError("--search and --record-search are for web-search categories (web_search, ...)")

    def to_dict(self) -> dict[str, Any]:
        """The configuration as `run.json` holds it (a run resumes only under an equal one)."""
        data = dataclasses.asdict(self)
        changed = self.protocol.changed_from(env_defaults(self.env_id))
        data["protocol"] = {k: v for k, v in self.protocol.to_dict().items() if k in RECORDED_KNOBS or k in changed}
        defaults = {"tensor_parallel_size": 1, "text_replies": "decode", "search": None, "record_search": None}
        for name, default in {**defaults, "base_urls": None}.items():  # left out at their defaults: runs
            if data[name] == default:  # written before the setting existed resume
                del data[name]
        return json.loads(json.dumps(data))

    def backend(self) -> BackendSpec:
        """The agent backend the run evaluates (`tooluse_agents.backends.factory`)."""
        return BackendSpec(
            backend=self.agent,
            model=self.model,
            dtype=self.dtype,
            tensor_parallel_size=self.tensor_parallel_size,
            base_url=self.base_url,
            base_urls=self.base_urls or (),
            text_replies=self.text_replies,
        )

    @property
    def env_groups(self) -> list[tuple[str, tuple[str, ...]]]:
        """The envs the run plays, each with its categories (`env_groups`: ``bfcl`` names every BFCL env).

        Task ids without categories name their envs themselves (`env_of_task_id`).
        """
        if self.task_ids and not self.categories and not self.scenarios:
            return [(e, ()) for e in dict.fromkeys(env_of_task_id(t) for t in self.task_ids)]
        return env_groups(self.categories, self.scenarios)

    @property
    def env_id(self) -> str:
        """The env id the run plays (the first, when its categories span several: `env_groups`)."""
        return self.env_groups[0][0]

    def _search_kwargs(self) -> dict[str, Any]:
        """``search`` and ``record_search`` as `make_web_search_env` takes them."""
        named = self.search in SEARCH_BACKENDS
        return {
            "search_backend": self.search if named else None,
            "recording": None if named else self.search,
            "record_to": self.record_search,
        }

    def env_kwargs(self, env_id: str | None = None) -> dict[str, Any]:
        """`gym.make` arguments besides the protocol knobs and task ids (of `env_id`, by default the run's first)."""
        if self.scenarios:
            return {"path": list(self.scenarios)}
        if (env_id or self.env_id) == WEB_SEARCH_ID:
            return {"category": DEFAULT_CATEGORIES[WEB_SEARCH_ID][1], **self._search_kwargs()}
        return {"category": DEFAULT_CATEGORIES[env_id or self.env_id][1]}  # every category: the task ids pick


_SHOWN_DISAGREEMENTS = 50
"""Disagreements `compare_runs` lists in its text (its data holds them all)."""


def check_seeds(seeds: Sequence[int], flag: str = "--seeds") -> None:
    """Refuse seeds that are not distinct non-negative integers (Gymnasium's reset needs >= 0; a repeat plays twice).

    Raises:
        ValueError: One line naming `flag` and the seeds at fault.
    """
    if not seeds:
        raise ValueError(f"{flag}: at least one seed is needed")
    bad = [s for s in seeds if isinstance(s, bool) or not isinstance(s, int) or s < 0]
    if bad:
        raise ValueError(f"{flag} {' '.join(map(str, bad))}: seeds are integers >= 0")
    repeated = sorted({s for s in seeds if list(seeds).count(s) > 1})
    if repeated:
        raise ValueError(f"{flag} {' '.join(map(str, seeds))}: seed {repeated[0]} is given twice; give each seed once")


def _resumable(data: Mapping[str, Any]) -> dict[str, Any]:
    """A `run.json` as compared on resume: settings that cannot change a verdict left out, every knob resolved.

    The knobs are resolved over the env id's defaults, so a file that lists only the knobs it set
    (as older ones do) matches an equal configuration.
    """
    out = {k: v for k, v in data.items() if k not in _RESUMABLE_ACROSS}
    env_id = env_groups(out.get("categories"), out.get("scenarios"))[0][0]
    with contextlib.suppress(TypeError, ValueError):  # a knob this version does not know: no equal configuration
        out["protocol"] = env_defaults(env_id).with_defaults(**out.get("protocol", {})).to_dict()
    return out


def make_agent(config: EvalConfig, progress: bool = True) -> Agent:
    """Build the agent a config names (`backends.factory.make_agent`; heavy backends are imported only there)."""
    return backends.make_agent(config.backend(), progress=progress)


class _Progress:
    """Episodes done, accuracy so far and tokens/s when the agent counts tokens (tqdm on stderr)."""

    def __init__(self, total: int, done: Sequence[EpisodeRecord], enabled: bool):
        self.bar = progress_bar(total=total, initial=len(done), enabled=enabled, unit="ep")
        self.rewards = [r.reward for r in done]
        self.tokens = 0
        self.start = time.perf_counter()

    def batch(self, generations: Sequence[Generation]) -> None:
        self.tokens += sum(g.completion_tokens for g in generations)
        self._postfix()

    def episode(self, record: EpisodeRecord) -> None:
        self.rewards += [] if record.unscored else [record.reward]
        self.bar.update(1)
        self._postfix()

    def _postfix(self) -> None:
        acc = 100 * sum(self.rewards) / len(self.rewards) if self.rewards else 0.0
        if not self.tokens:  # an agent that counts no tokens (the oracle, a script): no rate rather than 0.0
            self.bar.set_postfix_str(f"acc {acc:.1f}%", refresh=False)
            return
        rate = self.tokens / max(time.perf_counter() - self.start, 1e-9)
        self.bar.set_postfix_str(f"acc {acc:.1f}% | {rate:.1f} tok/s", refresh=False)

    def pause(self) -> None:
        self.bar.refresh()

    def close(self) -> None:
        self.bar.close()


def run_eval(
    config: EvalConfig, out: Path, *, agent: Agent | None = None, force: bool = False, progress: bool = True
) -> dict[str, Any]:
    """Run (or resume) an evaluation into `out`; returns the results written to ``results.json``.

    Everything is checked before anything is written into `out` (the task ids, the knobs, the
    folder's stored configuration and episodes, the agent built): a refused run leaves the folder
    as it was, so the corrected command is not refused for the attempt (a folder this call created is
    removed again when the run fails before its first episode). While it plays, the run holds the
    folder's lock (`RunDir.lock`): a second process starting a run into `out` is refused. A resumed
    run says on stderr how many episodes it skips as already done; the results count each (task,
    seed) once, the first episode of it the file holds. Categories of several envs (`env_groups`)
    are played one env after another into the same folder.
    """
    out = Path(out)
    if config.task_ids and (config.categories or config.scenarios):
        plan = [(config.env_id, list(config.task_ids))]
    elif config.task_ids:  # each id plays on the env it names
        plan = [(e, [t for t in config.task_ids if env_of_task_id(t) == e]) for e, _ in config.env_groups]
    else:
        plan = [
            (env_id, group_task_ids(env_id, names or None, config.limit, config.scenarios))
            for env_id, names in config.env_groups
        ]
    task_ids = [t for _, ids in plan for t in ids]
    if not task_ids:
        raise ValueError("no tasks selected: check --categories, --scenarios and --task-ids")
    wanted = {(t, s) for s in config.seeds for t in task_ids}
    episodes_path = out / "episodes.jsonl"
    envs: list[tuple[Callable[[], gym.Env], list[str]]] = []
    cards: dict[str, ProtocolCard] = {}
    for env_id, ids in plan:
        make_env = _env_factory(config, env_id, ids)
        probe = make_env()  # unknown task ids and bad knob values fail here
        cards[env_id] = ProtocolCard.from_dict({**protocol_card(probe).to_dict(), "seed": None})
        probe.close()
        envs.append((make_env, ids))
    card = next(iter(cards.values()))
    run = RunDir(out, "run.json", read=_resumable, hint="use another --out, or --force to start over")
    created = not out.exists()
    try:
        with run.lock():  # a second process starting a run into `out` is refused here
            schedule, servers = _start_and_play(config, out, run, cards, task_ids, envs, agent, force, progress)
    except BaseException:
        if created and not _played(episodes_path):  # a refused or failed start leaves no folder behind
            shutil.rmtree(out, ignore_errors=True)
        raise
    episodes = [e for e in read_episodes(episodes_path, unique=True)[0] if (e.task_id, e.seed) in wanted]
    summary = summarize(episodes, known_issues_for(MULTI_TURN_ID if MULTI_TURN_ID in cards else config.env_id))
    agent_info = dict(episodes[0].agent) if episodes else {"name": config.agent}
    results = {
        "protocol": card.to_dict(),
        "fingerprint": card.fingerprint(),
        **({"protocols": {e: c.to_dict() for e, c in cards.items()}} if len(cards) > 1 else {}),
        "agent": agent_info,
        "config": config.to_dict(),
        "schedule": schedule,
        **({"servers": servers} if servers else {}),  # several model servers: how each fared this session
        "summary": summary,
    }
    (out / "results.json").write_text(json.dumps(results, indent=2))
    note = web_search_note([c.to_dict() for c in cards.values()])
    sampling = dataclasses.asdict(config.sampling)
    write_run_report(out, summary, card.to_dict(), agent_info, sampling, notes=[note] if note else ())
    return results


def _start_and_play(
    config: EvalConfig,
    out: Path,
    run: RunDir,
    cards: Mapping[str, ProtocolCard],
    task_ids: Sequence[str],
    envs: Sequence[tuple[Callable[[], gym.Env], list[str]]],
    agent: Agent | None,
    force: bool,
    progress: bool,
) -> tuple[str | None, list[dict[str, Any]] | None]:
    """Under the folder's lock: check what `out` holds, build the agent, play what is left.

    Returns the schedule used and, for an agent over several servers, how each fared (`ServedAgent`).
    """
    episodes_path = out / "episodes.jsonl"
    wanted = {(t, s) for s in config.seeds for t in task_ids}
    resumed = not force and run.check(_resumable(config.to_dict()))
    existing = read_episodes(episodes_path, unique=True)[0] if not force and episodes_path.exists() else []
    done = [e for e in existing if (e.task_id, e.seed) in wanted and not e.unscored]  # unscored: played again
    for e in done:
        played = cards.get(str(e.protocol.get("env_id")))
        if played is None or (card := ProtocolCard.from_dict(dict(e.protocol))).differences(played):
            why = " (written before the task data were recorded)" if played and not card.task_data else ""
            raise RunConflict(f"{episodes_path} holds episodes of another protocol{why}; use another --out or --force")
    done_keys = {(e.task_id, e.seed) for e in done}
    jobs = [RolloutJob(t, s) for s in config.seeds for t in task_ids if (t, s) not in done_keys]
    owned = agent is None and bool(jobs)
    if owned:
        agent = make_agent(config, progress)
    try:
        if force:
            run.clear()
        if not resumed:
            run.write(config.to_dict())
        if done:
            print(
                f"resuming {out}: {len(done)} of {len(wanted)} episodes already done, skipped; {len(jobs)} to play",
                file=sys.stderr,
            )
        schedule = _previous_schedule(out / "results.json")
        bar = _Progress(len(wanted), done, progress)
        for make_env, ids in envs:  # one env after another: each slot of the loop plays one env's tasks
            mine = set(ids)
            env_jobs = [j for j in jobs if j.task_id in mine]
            if env_jobs:
                assert agent is not None
                schedule = _play(config, agent, env_jobs, make_env, episodes_path, bar)
        bar.close()
        servers = agent.server_report() if isinstance(agent, ServedAgent) else None
    finally:
        if owned and agent is not None:
            agent.close()
    return schedule, servers


def _played(episodes_path: Path) -> bool:
    """Whether a run folder's episodes file holds anything (a folder that does is never deleted on failure)."""
    try:
        return episodes_path.stat().st_size > 0
    except OSError:
        return False


def _play(
    config: EvalConfig,
    agent: Agent,
    jobs: Sequence[RolloutJob],
    make_env: Callable[[], gym.Env],
    episodes_path: Path,
    bar: _Progress,
) -> str:
    """Play the jobs, appending each episode's record to `episodes_path`; returns the schedule used."""
    try:
        with JsonlWriter(episodes_path) as writer:

            def on_episode(episode: Episode) -> None:
                writer.write(episode.record.to_dict())
                bar.episode(episode.record)

            schedule = resolve_schedule(config.schedule, agent)
            run_rollouts(
                make_env,
                agent,
                jobs,
                sampling=config.sampling,
                num_envs=config.num_envs,
                schedule=schedule,
                on_episode=on_episode,
                on_batch=bar.batch,
            )
    finally:
        bar.pause()
    return schedule


def _env_factory(config: EvalConfig, env_id: str, task_ids: list[str]) -> Callable[[], gym.Env]:
    """What builds one of the run's envs on its share of the task ids."""

    def make_env() -> gym.Env:
        return gym.make(env_id, task_ids=task_ids, **config.env_kwargs(env_id), **config.protocol.to_dict())

    return make_env


def _previous_schedule(path: Path) -> str | None:
    """The schedule that last played episodes into a run folder (None before any played)."""
    try:
        return json.loads(path.read_text()).get("schedule")
    except (OSError, ValueError):
        return None


def known_issues_for(env_id: str | None) -> KnownIssues | None:
    """The known-issues registry for BFCL runs (its clean subset is reported); None for other task sources."""
    return load_known_issues() if env_id == MULTI_TURN_ID else None


def compare_runs(a: Path, b: Path) -> tuple[str, dict[str, Any]]:
    """Runs A and B on the episodes both played (B - A per category), disagreements, and what is left out.

    Returns the text to print and its data: protocol differences, what was compared and what was
    left out of each run, the rows, the disagreements and (BFCL) the clean subset. Episodes are
    paired by (task id, seed); only the pairs both runs hold are scored, per category and overall,
    with B - A's 95% CI over the seeds of each seed's paired difference. The tasks, seeds,
    categories and episodes only one run holds are counted and named, never scored: there is no
    overall over two different task sets. For two BFCL runs, the differences over the clean subset
    (tasks the known-issues registry does not list, with the current registry) follow the official
    ones, and disagreeing tasks the registry lists are marked.
    """
    ra, rb = (json.loads((Path(p) / "results.json").read_text()) for p in (a, b))
    card_a, card_b = ProtocolCard.from_dict(ra["protocol"]), ProtocolCard.from_dict(rb["protocol"])
    differences = card_a.differences(card_b, ignore=("seed", "known_issues", "task_data"))
    lines, task_data = task_data_comparison(card_a, card_b)  # in bold, first
    if differences:
        lines += ["!" * 78, "WARNING: the protocol cards differ; these results are NOT comparable:"]
        lines += [f"  {k}: {va!r} (A) vs {vb!r} (B)" for k, (va, vb) in differences.items()]
        lines += ["!" * 78, ""]
    episodes = [read_episodes(Path(p) / "episodes.jsonl", unique=True)[0] for p in (a, b)]
    registry = known_issues_for(ra["protocol"].get("env_id"))
    if known_issues_for(rb["protocol"].get("env_id")) is None:
        registry = None
    c = compare_results((episodes[0], episodes[1]), registry)
    rows = _diff_rows(c.categories)
    compared = [r["category"] for r in rows if r["category"] != "overall"]
    lines += [*coverage_lines(c), ""]
    if rows:
        lines += [
            "Official score (all tasks): pass@1, the mean over the seeds both runs played; B - A paired by task "
            "and seed (95% CI over seeds):",
            "",
        ]
        lines += _diff_table(rows)
    clean: dict[str, Any] | None = None
    if c.registry_version is not None:
        excluded = list(c.excluded_tasks)
        clean = {"registry_version": c.registry_version, "excluded_tasks": excluded, "categories": _diff_rows(c.clean)}
        if rows:
            lines += [
                "",
                f"Clean subset (tasks not in the known-issues registry {c.registry_version}; "
                f"{len(excluded)} of the runs' tasks left out):",
                "",
            ]
            lines += _diff_table(clean["categories"])
    rule = "(mean reward across the seeds both runs played >= 0.5 in one run only)"
    if c.disagreements:
        lines += ["", f"{len(c.disagreements)} of {c.shared_tasks} shared tasks disagree {rule}:"]
    else:
        lines += ["", f"None of the {c.shared_tasks} shared tasks disagree {rule}."]
    for d in c.disagreements[:_SHOWN_DISAGREEMENTS]:
        mark = f"  [known issue: {d.known_issue}]" if d.known_issue else ""
        lines.append(f"  {d.task_id}: A {d.a:.2f}  B {d.b:.2f}{mark}")
    if len(c.disagreements) > _SHOWN_DISAGREEMENTS:
        lines.append(f"  ... and {len(c.disagreements) - _SHOWN_DISAGREEMENTS} more")
    data = {
        "protocol_differences": {k: list(v) for k, v in differences.items()},
        "task_data": task_data,
        "compared": {"pairs": c.pairs, "tasks": c.shared_tasks, "seeds": list(c.seeds), "categories": compared},
        "left_out": {"a": c.left_out[0].to_dict(), "b": c.left_out[1].to_dict()},
        "categories": rows,
        "disagreements": [dataclasses.asdict(d) for d in c.disagreements],
    }
    if clean is not None:
        data["clean"] = clean
    return "\n".join(lines), data


def _diff_rows(rows: Sequence[CategoryDiff]) -> list[dict[str, Any]]:
    """B - A per category and overall with the paired CI of the difference, over the episodes both runs played."""
    return [
        {"category": r.category, "episodes": r.episodes, "a": r.a, "b": r.b, "diff": r.diff, "ci95": r.diff_ci}
        for r in rows
        if r.a is not None and r.b is not None
    ]


def _diff_table(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    lines = ["| category | A (%) | B (%) | B - A (points) | 95% CI |", "|---|---|---|---|---|"]
    for r in rows:
        ci = f"±{100 * r['ci95']:.1f}" if r["ci95"] is not None else "n/a"
        lines.append(f"| {r['category']} | {100 * r['a']:.1f} | {100 * r['b']:.1f} | {100 * r['diff']:+.1f} | {ci} |")
    return lines


def results_table(results: Mapping[str, Any]) -> str:
    """Accuracy per category and seed, BFCL's summary scores for BFCL runs; with several seeds also pass@k."""
    summary = results["summary"]
    table = format_table(summary)
    if summary.get("bfcl_scores"):
        table += "\n\nBFCL's summary scores (its score tables' formulas):\n\n" + format_bfcl_table(summary)
    if len(summary.get("seeds", ())) > 1 and summary.get("pass_at_k"):
        table += "\n\n" + format_pass_table(summary)
    if summary.get("clean"):
        table += "\n\n" + clean_caption(summary) + "\n\n" + format_clean_table(summary)
    cards = list((results.get("protocols") or {}).values()) or [results.get("protocol") or {}]
    note = web_search_note(cards)
    return table + ("\n\n" + note if note else "")
