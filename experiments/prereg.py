"""The pre-registration files of the time-to-accuracy studies: their schema, and where they stand in git.

A file (``benchmarks/preregistered/grpo_efficiency_v2.yaml``, ``trainer_vs_trl_v1.yaml``) is
written and committed before the first timed run; every result names its path, the commit that
last touched it and the sha256 of its contents, and the runner refuses to time runs while it has
uncommitted changes. A change after a run is a new version (a new file with its reason), never an
edit. Schema::

    version: 2
    study: grpo_efficiency_v2
    base_config: agents/grpo/configs/cpu_curriculum.yaml
    start_model: runs/weakstart/model
    seeds: [0, 1, 2]
    budget_s: 1800
    eval_every_train_s: 150
    common: ["tasks.limit=32", ...]          # key=value overrides of every arm
    arms:                                    # in run order for seed 0
      vanilla: ["filter.enabled=false", "grpo.update_size=null"]
      paper: [...]
      selective: [...]
    targets: {start: 0.306, gain_ref: 0.111, T50: 0.361, T75: 0.389, primary: T50}
    rules:
      learned: {test: mcnemar_exact_two_sided, alpha: 0.05}
      speedup: {mean: geometric, faster_only_if: every_seed}
      no_loss: {test: mcnemar_exact_two_sided, alpha: 0.05, mean_margin: one_paired_se}
    projection: {update_token_cost_ratios: [1, 3, 5]}

Every target other than ``start``, ``gain_ref`` and ``primary`` is a held-out reward to reach
(``T50``, ``T75``); the rules name only what `experiments.efficiency_stats` implements.

Study A of issue 40 (``study: trainer_vs_trl``, ``version: 1``) has the same schema with three
additions: an arm may be another trainer instead of overrides (``trl: {trainer: trl, version:
"1.16.0", adapter: ...}``, in `Prereg.trainers`; its `Prereg.arms` entry is empty), the arm every
other is compared with is ``rules.speedup.reference`` (default ``vanilla``), and ``pilot`` fixes
how that trainer's backend is chosen. Which arms the *learned* rule tests depends on the study
(`STUDIES`): v2 tests vanilla, study A every arm ("learned: per seed, each arm's final vs the start").
"""

from __future__ import annotations

import dataclasses
import hashlib
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]  # the checkout: experiments/ -> .
DEFAULT_PREREG = ROOT / "benchmarks" / "preregistered" / "grpo_efficiency_v2.yaml"
BASELINE = "vanilla"
"""The arm every other is compared with."""

KEYS = (
    "version",
    "study",
    "base_config",
    "start_model",
    "seeds",
    "budget_s",
    "eval_every_train_s",
    "common",
    "arms",
    "targets",
    "rules",
    "projection",
)
TARGET_META = ("start", "gain_ref", "primary")
STUDIES = {
    "grpo_efficiency_v2": {"version": 2, "learned": "reference"},
    "trainer_vs_trl": {"version": 1, "learned": "every_arm"},
}
"""The studies this harness reads: their schema version, and which arms the learned rule tests."""
TRAINERS = ("trl",)
"""Trainers other than ours that an arm may name (`experiments.trl_arm`)."""
KNOWN_RULES = {
    "learned": {"test": "mcnemar_exact_two_sided"},
    "speedup": {"mean": "geometric", "faster_only_if": "every_seed"},
    "no_loss": {"test": "mcnemar_exact_two_sided", "mean_margin": "one_paired_se"},
}


class PreregError(ValueError):
    """The pre-registration file is malformed or not committed."""


@dataclass(frozen=True)
class Prereg:
    """A pre-registration file, read and checked.

    Attributes:
        path: The file.
        data: Its contents, as read (recorded in every report).
        base_config: The trainer config every arm starts from.
        start_model: The model every arm starts from.
        seeds: The seeds every arm runs.
        budget_s: Training seconds per run.
        eval_every_train_s: The held-out evaluation period, in training seconds.
        common: Overrides of every arm.
        arms: Each arm's overrides, in the file's order (the run order of seed 0).
        start: The shared start's held-out reward the targets were set from.
        gain_ref: The reference gain the targets were set from.
        targets: The held-out rewards to reach (name -> reward).
        primary: The name of the primary target.
        learned_alpha, no_loss_alpha: The tests' levels.
        cost_ratios: The update-token cost ratios r of the projection.
        reference: The arm every other is compared with (speed-up, no loss, projection).
        learned_arms: The arms whose learning the learned rule tests.
        trainers: The arms another trainer runs (name -> the file's entry; their `arms` entry is empty).
        pilot: The file's ``pilot`` entry (how such a trainer's backend is chosen), or None.
    """

    path: Path
    data: Mapping[str, Any]
    base_config: str
    start_model: str
    seeds: tuple[int, ...]
    budget_s: float
    eval_every_train_s: float
    common: tuple[str, ...]
    arms: Mapping[str, tuple[str, ...]]
    start: float
    gain_ref: float
    targets: Mapping[str, float]
    primary: str
    learned_alpha: float
    no_loss_alpha: float
    cost_ratios: tuple[float, ...]
    reference: str = BASELINE
    learned_arms: tuple[str, ...] = (BASELINE,)
    trainers: Mapping[str, Mapping[str, Any]] = dataclasses.field(default_factory=dict)
    pilot: Mapping[str, Any] | None = None

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.path.read_bytes()).hexdigest()


def _overrides(value: Any, what: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) and "=" in v for v in value):
        raise PreregError(f"{what} must be a list of key=value strings, got {value!r}")
    return tuple(value)


def _trainer(value: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    if value.get("trainer") not in TRAINERS:
        raise PreregError(f"arms.{name}: trainer {value.get('trainer')!r}; this harness runs {list(TRAINERS)}")
    return dict(value)


def _rule(rules: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    rule = rules.get(name)
    if not isinstance(rule, Mapping):
        raise PreregError(f"rules.{name} is missing")
    for key, known in KNOWN_RULES[name].items():
        if rule.get(key) != known:
            raise PreregError(f"rules.{name}.{key} is {rule.get(key)!r}; this harness implements {known!r}")
    return rule


def load_prereg(path: str | Path) -> Prereg:
    """Read and check a pre-registration file (the module docstring's schema)."""
    path = Path(path)
    if not path.is_file():
        raise PreregError(f"no pre-registration file at {path}")
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(data, Mapping):
        raise PreregError(f"{path} is not a mapping")
    missing = [k for k in KEYS if k not in data]
    if missing:
        raise PreregError(f"{path} lacks {missing}")
    study = STUDIES.get(str(data.get("study")))
    if study is None:
        raise PreregError(f"{path}: study {data.get('study')!r}; this harness reads {sorted(STUDIES)}")
    if data["version"] != study["version"]:
        raise PreregError(f"{path}: version {data['version']!r}, this harness reads version {study['version']}")
    arms = data["arms"]
    rules = data["rules"]
    if not isinstance(rules, Mapping):
        raise PreregError("rules must be a mapping")
    reference = str(_rule(rules, "speedup").get("reference", BASELINE))
    if not isinstance(arms, Mapping) or reference not in arms:
        raise PreregError(f"arms must be a mapping that includes {reference!r}")
    trainers = {str(name): _trainer(v, str(name)) for name, v in arms.items() if isinstance(v, Mapping)}
    targets = dict(data["targets"])
    primary = targets.get("primary")
    levels = {k: float(v) for k, v in targets.items() if k not in TARGET_META}
    if primary not in levels:
        raise PreregError(f"targets.primary {primary!r} is not one of the targets {sorted(levels)}")
    ratios = data["projection"].get("update_token_cost_ratios") if isinstance(data["projection"], Mapping) else None
    if not ratios:
        raise PreregError("projection.update_token_cost_ratios is missing")
    seeds = data["seeds"]
    if not isinstance(seeds, list) or not seeds or not all(isinstance(s, int) for s in seeds):
        raise PreregError(f"seeds must be a list of integers, got {seeds!r}")
    return Prereg(
        path=path,
        data=data,
        base_config=str(data["base_config"]),
        start_model=str(data["start_model"]),
        seeds=tuple(seeds),
        budget_s=float(data["budget_s"]),
        eval_every_train_s=float(data["eval_every_train_s"]),
        common=_overrides(data["common"], "common"),
        arms={str(n): () if n in trainers else _overrides(v, f"arms.{n}") for n, v in arms.items()},
        start=float(targets["start"]),
        gain_ref=float(targets["gain_ref"]),
        targets=levels,
        primary=str(primary),
        learned_alpha=float(_rule(rules, "learned")["alpha"]),
        no_loss_alpha=float(_rule(rules, "no_loss")["alpha"]),
        cost_ratios=tuple(float(r) for r in ratios),
        reference=reference,
        learned_arms=tuple(str(a) for a in arms) if study["learned"] == "every_arm" else (reference,),
        trainers=trainers,
        pilot=data.get("pilot"),
    )


# --- git ---------------------------------------------------------------------------------------


def git(*args: str) -> str:
    """A git command's stdout in the checkout ('' when git fails, e.g. outside a repository)."""
    done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False)
    return done.stdout.strip() if done.returncode == 0 else ""


def shown(path: str | Path) -> str:
    """A path as results record it: relative to the checkout when inside it (no machine's folders)."""
    p = Path(path)
    absolute = p if p.is_absolute() else (ROOT / p)
    try:
        return str(absolute.resolve().relative_to(ROOT))
    except ValueError:
        return str(p)


def uncommitted(path: Path) -> bool:
    """The file differs from its last commit, is not tracked (or outside the checkout), or git cannot tell."""
    tracked = subprocess.run(
        ["git", "ls-files", "--error-unmatch", "--", str(path)], cwd=ROOT, capture_output=True, check=False
    )
    return tracked.returncode != 0 or bool(git("status", "--porcelain", "--", str(path)))


def provenance(prereg: Prereg) -> dict[str, Any]:
    """What every result and report records about the pre-registration: path, last commit, sha256."""
    return {
        "path": shown(prereg.path),
        "commit": git("log", "-1", "--format=%H", "--", str(prereg.path)) or None,
        "sha256": prereg.sha256,
        "uncommitted_changes": uncommitted(prereg.path),
    }


def checkout() -> dict[str, Any]:
    """The checkout a result was made in: HEAD and whether tracked files had changes."""
    return {"commit": git("rev-parse", "HEAD") or None, "dirty": bool(git("status", "--porcelain", "-uno"))}
