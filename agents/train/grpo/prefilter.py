r"""`tooluse train prefilter`: the paper's offline data recipe, keep the prompts a stronger model solves.

    tooluse train prefilter agents/train/grpo/configs/cpu_curriculum.yaml --agent vllm --model Qwen/Qwen3-4B \
        --out runs/kept.yaml
    tooluse train agents/train/grpo/configs/cpu_curriculum.yaml tasks.keep_list=runs/kept.yaml run_dir=runs/k1

The paper (arXiv 2606.00135; ``research/paper.md`` §3.4) built its multi-turn training set by
rolling out a stronger model 8 times on each sample and keeping the samples it solved at least
once; that is why its zero-variance groups are mostly all-correct, where an unfiltered pool gives
mostly all-wrong ones. Here the samples are the prompts a training config trains on (its task
source, ``grpo.mode`` and protocol, so the ids match), each played `samples` times by an agent
(``--agent hf|vllm|openai|oracle``) with the config's rollout sampling (``rollout.temperature``,
``top_p``, ``max_tokens``); a prompt is kept when at least `min_correct` of its rollouts are
correct. Rollout seeds are ``derive_seed("grpo", seed, 0, prompt, member)`` (training steps count from 1).

The output (YAML, or JSON when the name ends in ``.json``) holds the settings (agent, task source,
mode, protocol card, sampling, seed), the counts, each prompt's number of correct rollouts and the
kept list; ``tasks.keep_list: PATH`` in a training config trains on the kept prompts only
(`kept_prompts`). It is a one-off cost of ``samples`` rollouts per prompt, paid before training.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from tooluse_agents.backends.base import ServedAgent
from tooluse_agents.backends.dtypes import DTYPE_HELP, DTYPES
from tooluse_agents.backends.factory import BACKENDS, BackendSpec, make_agent
from tooluse_agents.backends.server_pool import server_lines
from tooluse_agents.cli.config_loader import load
from tooluse_agents.cli.flags import DefaultsHelpFormatter, add_config_flags, add_config_source, given_config
from tooluse_agents.runs.records import EpisodeRecord
from tooluse_agents.train.grpo.advantages import ALL_CORRECT, ALL_WRONG, MIXED, group_outcome
from tooluse_agents.train.grpo.config import TrainConfig, load_config
from tooluse_agents.train.grpo.tasks import TaskPool, env_factory, load_pool, prompts_for

KIND = "tooluse-gym prefilter"
"""The ``kind`` every keep list carries."""
PREFILTER_STEP = 0
"""The step in the rollout seeds (training steps count from 1, held-out evaluations use -1)."""


@dataclass(frozen=True)
class KeepList:
    """The outcome of a prefilter run.

    Attributes:
        kept: The kept prompt ids, in the task source's order.
        solved: Correct rollouts per prompt (every prompt rolled out).
        samples: Rollouts per prompt.
        min_correct: Correct rollouts a prompt needed to be kept.
        settings: What was run (agent, tasks, mode, protocol card, sampling, seed).
    """

    kept: tuple[str, ...]
    solved: Mapping[str, int]
    samples: int
    min_correct: int
    settings: Mapping[str, Any]

    def counts(self) -> dict[str, int]:
        """Prompts, kept and dropped, and how many were solved by all, none, or some of their rollouts."""
        outcomes = [group_outcome([1.0] * k + [0.0] * (self.samples - k)) for k in self.solved.values()]
        return {
            "prompts": len(self.solved),
            "kept": len(self.kept),
            "dropped": len(self.solved) - len(self.kept),
            "rollouts": len(self.solved) * self.samples,
            "all_correct": outcomes.count(ALL_CORRECT),
            "all_wrong": outcomes.count(ALL_WRONG),
            "mixed": outcomes.count(MIXED),
        }

    def to_dict(self) -> dict[str, Any]:
        """The keep list as its YAML file holds it."""
        return {
            "kind": KIND,
            "samples": self.samples,
            "min_correct": self.min_correct,
            "settings": dict(self.settings),
            "counts": self.counts(),
            "solved": dict(self.solved),
            "kept": list(self.kept),
        }

    @classmethod
    def from_dict(cls, data: Any) -> KeepList:
        """A keep list from its file's data; anything else is a `ValueError`."""
        if not isinstance(data, Mapping) or data.get("kind") != KIND:
            raise ValueError(f"not a keep list written by tooluse train prefilter (kind {KIND!r})")
        return cls(
            kept=tuple(data["kept"]),
            solved=dict(data["solved"]),
            samples=int(data["samples"]),
            min_correct=int(data["min_correct"]),
            settings=dict(data["settings"]),
        )


def prefilter(
    config: TrainConfig,
    agent: Any,
    *,
    samples: int = 8,
    min_correct: int = 1,
    pool: TaskPool | None = None,
    episodes: list[EpisodeRecord] | None = None,
) -> KeepList:
    """Roll out `agent` `samples` times on each prompt of `config` (or of `pool`); keep the solved ones.

    Args:
        config: The training config whose prompts, protocol, seed and rollout sampling are used.
        agent: The (stronger) model's agent.
        samples: Rollouts per prompt (the paper: 8).
        min_correct: Correct rollouts a prompt needs to be kept (the paper: 1).
        pool: Tasks instead of `config.tasks` (e.g. hand-built tasks in tests).
        episodes: When given, every rollout's episode record is appended to it.
    """
    from tooluse_agents.backends.base import SamplingConfig
    from tooluse_agents.train.grpo.rollouts import ScriptedTurns, before_last_turn, play_groups

    if samples < 1 or not 1 <= min_correct <= samples:
        raise ValueError(f"need samples >= 1 and 1 <= min_correct <= samples, got {samples} and {min_correct}")
    mode, rollout = config.grpo.mode, config.rollout
    prompts = prompts_for(pool or load_pool(dataclasses.replace(config.tasks, keep_list=None)), mode)
    ids = [t.task_id for t in prompts.tasks]
    sampling = SamplingConfig(temperature=rollout.temperature, top_p=rollout.top_p, max_tokens=rollout.max_tokens)
    groups = play_groups(
        env_factory(prompts, config.protocol),
        ScriptedTurns(agent, before_last_turn if mode == "next_turn" else None),
        ids,
        group_size=samples,
        seed=config.seed,
        step=PREFILTER_STEP,
        sampling=sampling,
        num_envs=rollout.num_envs,
        schedule=rollout.schedule,
    )
    top = config.filter.max_reward
    solved = {pid: sum(1 for r in groups[pid] if r.reward >= top) for pid in ids}
    first = next((r.record for g in groups.values() for r in g), None)
    settings = {
        "agent": agent.describe(),
        "tasks": dataclasses.asdict(dataclasses.replace(config.tasks, keep_list=None)),
        "pool": prompts.label,
        "mode": mode,
        "protocol": dict(first.protocol) if first is not None else None,
        "sampling": dataclasses.asdict(sampling),
        "seed": config.seed,
    }
    if episodes is not None:
        episodes.extend(r.record for pid in ids for r in groups[pid])
    kept = tuple(pid for pid in ids if solved[pid] >= min_correct)
    return KeepList(kept, solved, samples, min_correct, json.loads(json.dumps(settings)))


def write_keep_list(keep: KeepList, path: str | Path) -> None:
    """Write a keep list: JSON when the name ends in ``.json``, else YAML."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    data = keep.to_dict()
    text = json.dumps(data, indent=2) + "\n" if path.suffix == ".json" else yaml.safe_dump(data, sort_keys=False)
    path.write_text(text, encoding="utf-8")


def read_keep_list(path: str | Path) -> KeepList:
    """Read a keep list (YAML or JSON)."""
    return KeepList.from_dict(yaml.safe_load(Path(path).read_text(encoding="utf-8")))


def kept_prompts(pool: TaskPool, keep_list: str | None, mode: str) -> TaskPool:
    """The pool's prompts that the keep list kept (the pool itself without a keep list).

    Refused: a list made in another ``grpo.mode`` (its ids name other prompts), or one that keeps
    prompts this pool does not have (it was made from another task source).
    """
    if keep_list is None:
        return pool
    keep = read_keep_list(keep_list)
    if keep.settings.get("mode") != mode:
        raise ValueError(f"{keep_list} was made in grpo.mode {keep.settings.get('mode')!r}, this run is {mode!r}")
    have = {t.task_id for t in pool.tasks}
    missing = [pid for pid in keep.kept if pid not in have]
    if missing:
        raise ValueError(
            f"{keep_list} keeps {len(missing)} prompt(s) this task source does not have (first: {missing[0]}): "
            "it was made from another task source"
        )
    wanted = set(keep.kept)
    tasks = tuple(t for t in pool.tasks if t.task_id in wanted)
    if not tasks:
        raise ValueError(f"{keep_list} keeps no prompt")
    return dataclasses.replace(pool, tasks=tasks)


@dataclass(frozen=True, kw_only=True)
class PrefilterConfig:
    """What `tooluse train prefilter` plays the training config's prompts with, and what it writes.

    Attributes:
        agent: The backend that plays the prompts.
        model: The (stronger) model: a local folder, a hub id, a served model name.
        base_url: OpenAI-compatible endpoint (``openai`` agent).
        base_urls: Several OpenAI-compatible endpoints serving the model, instead of `base_url` (``openai``
            agent): each episode's requests go to one, and a server that fails has its episodes moved.
        dtype: Local backends' dtype (`tooluse_agents.backends.dtypes`).
        samples: Rollouts per prompt (the paper: 8).
        min_correct: Correct rollouts to keep a prompt (the paper: 1).
        out: The keep list (``.yaml``, or ``.json``).
        episodes: Also write every rollout's episode record (JSONL).
    """

    agent: str
    model: str | None = None
    base_url: str | None = None
    base_urls: tuple[str, ...] = ()
    dtype: str = "auto"
    samples: int = 8
    min_correct: int = 1
    out: Path
    episodes: Path | None = None

    def backend(self) -> BackendSpec:
        """The backend that plays (`make_agent` builds it)."""
        return BackendSpec(
            backend=self.agent, model=self.model, base_url=self.base_url, base_urls=self.base_urls, dtype=self.dtype
        )


_FLAGS: dict[str, dict[str, Any]] = {
    "agent": {"choices": BACKENDS, "required": True},
    "dtype": {"choices": DTYPES, "help": DTYPE_HELP},
    "out": {"required": True},
    "base_urls": {"metavar": "URL"},
}
"""What `tooluse train prefilter`'s flags add to the ones `PrefilterConfig`'s fields make."""


def build_parser() -> argparse.ArgumentParser:
    """The `tooluse train prefilter` arguments: the training config, its overrides, and `PrefilterConfig`'s flags."""
    parser = argparse.ArgumentParser(
        prog="tooluse train prefilter",
        description="keep the prompts a (stronger) model solves at least once",
        formatter_class=DefaultsHelpFormatter,
    )
    add_config_source(
        parser,
        "TrainConfig",
        examples="seed=3, grpo.mode=next_turn",
        keys="the training config whose prompts are filtered",
        positional=True,
        flags=False,
    )
    add_config_flags(parser, PrefilterConfig, flags=_FLAGS)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """The `tooluse train prefilter` command; returns the exit status."""
    parser = build_parser()
    args = parser.parse_intermixed_args(argv)

    try:
        config = load_config(args.config, args.overrides)
        settings = load(PrefilterConfig, given=given_config(args))
        agent = make_agent(settings.backend())
    except (ValueError, TypeError, OSError) as e:
        print(f"tooluse train prefilter: {e}", file=sys.stderr)
        return 2
    records: list[EpisodeRecord] = []
    try:
        keep = prefilter(config, agent, samples=settings.samples, min_correct=settings.min_correct, episodes=records)
    except ValueError as e:
        print(f"tooluse train prefilter: {e}", file=sys.stderr)
        return 2
    finally:
        servers = agent.server_report() if isinstance(agent, ServedAgent) else None
        agent.close()
    if servers:
        print("model servers:\n" + "\n".join(server_lines(servers)), file=sys.stderr)
    if failed := Counter(str(r.error["type"]) for r in records if r.error):
        print(f"WARNING: rollouts that ended in an agent error count as unsolved: {dict(failed)}", file=sys.stderr)
    write_keep_list(keep, settings.out)
    if settings.episodes:
        from tooluse_agents.runs.jsonl import JsonlWriter

        with JsonlWriter(settings.episodes) as writer:
            for record in records:
                writer.write(record.to_dict())
    print(json.dumps(keep.counts()))
    print(f"keep list: {settings.out}", file=sys.stderr)
    return 0
