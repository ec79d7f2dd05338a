"""Pre-registrations: one format, one loader, for every study.

Every study's pre-registration is a YAML mapping written and committed before the first run, with
one header, ``study`` (its name) and ``version`` (its schema's version), and a body its `Schema`
checks. `load` reads any of them: it checks the header against the schema (the time-to-accuracy
studies' own, chosen by the file's ``study``, when none is given), the keys, optionally that the
file is committed as it is, then returns the schema's view of it (a `Prereg` for the time-to-accuracy
studies, the checked mapping otherwise). Every result names the file's path, the commit that last
touched it and the sha256 of its contents (`experiments.framework.provenance`), and a runner refuses
to time runs while it has uncommitted changes. A change after a run is a new version (a new file
with its reason), never an edit.

The time-to-accuracy studies (GRPO arms against a reference arm, `experiments.framework.arms`) share
this body::

    version: 2
    study: grpo_efficiency_v2
    base_config: agents/train/grpo/configs/cpu_curriculum.yaml
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
(``T50``, ``T75``); the rules name only what `tooluse_agents.eval.stats` implements.

Study A of issue 40 (``study: trainer_vs_trl``, ``version: 1``) has the same schema with three
additions: an arm may be another trainer instead of overrides (``trl: {trainer: trl, version:
"1.16.0", adapter: ...}``, in `Prereg.trainers`; its `Prereg.arms` entry is empty), the arm every
other is compared with is ``rules.speedup.reference`` (default ``vanilla``), and ``pilot`` fixes
how that trainer's backend is chosen. Which arms the *learned* rule tests depends on the study
(`STUDIES`): v2 tests vanilla, study A every arm ("learned: per seed, each arm's final vs the start").

Study B of issue 40 (``study: grpo_efficiency_single_turn``, ``version: 1``) fixes its targets from a
pilot run instead of in the file: ``targets: {from_pilot: true, T50_fraction: 0.5, T75_fraction: 0.75,
primary: T50}`` with ``pilot: {arm: vanilla, seed: 100, start_range: [0.10, 0.80], learned: {test:
mcnemar_exact_two_sided, alpha: 0.05}}`` (`PilotRule`). Such a file loads with no targets (`Prereg.targets`
empty, `Prereg.start` None); `with_targets` gives it the ones its pilot fixed
(`experiments.efficiency_single_turn.pilot`), in the v2 form.

The cell studies (seed stability, format grid: ``cells``, ``run``, ``stats``) and protocol sensitivity
name their own `Schema` in their ``study.py``.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from experiments.framework.provenance import ROOT, shown, uncommitted

DEFAULT_PREREG = ROOT / "benchmarks" / "preregistered" / "grpo_efficiency_v2.yaml"
MOVED = {"agents/grpo/configs/": "agents/train/grpo/configs/"}
"""Folders moved since a pre-registration was committed: it names paths as its commit had them (its text is
hashed and never edited), and a run from today's checkout finds the file where it is now."""


def current_path(path: str) -> str:
    """`path` as a pre-registration wrote it, under today's layout (`MOVED`)."""
    for old, new in MOVED.items():
        if path.startswith(old):
            return new + path[len(old) :]
    return path


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
FRACTION = "_fraction"
"""A from-pilot target's key ends so: ``T50_fraction: 0.5`` is T50 = start + 0.5 x gain."""
STUDIES = {
    "grpo_efficiency_v2": {"version": 2, "learned": "reference", "targets": "fixed"},
    "trainer_vs_trl": {"version": 1, "learned": "every_arm", "targets": "fixed"},
    "grpo_efficiency_single_turn": {"version": 1, "learned": "reference", "targets": "from_pilot"},
}
"""The studies this harness reads: their schema version, which arms the learned rule tests, and
whether the file fixes the targets or a pilot does."""
TRAINERS = ("trl",)
"""Trainers other than ours that an arm may name (`experiments.trainer_vs_trl.trl_arm`)."""
KNOWN_RULES = {
    "learned": {"test": "mcnemar_exact_two_sided"},
    "speedup": {"mean": "geometric", "faster_only_if": "every_seed"},
    "no_loss": {"test": "mcnemar_exact_two_sided", "mean_margin": "one_paired_se"},
}


class PreregError(ValueError):
    """The pre-registration file is malformed or not committed."""


@dataclass(frozen=True)
class PilotRule:
    """How a pilot run fixes a study's targets (module docstring).

    Attributes:
        arm: The arm the pilot runs.
        seed: Its seed (not one of the study's).
        start_range: The start evaluation must lie in [low, high] (inclusive) for the study to run.
        alpha: The pilot must have learned: final vs start, exact two-sided McNemar p below it, gain above 0.
        fractions: Each target's share of the pilot's gain (name -> fraction: T50 -> 0.5).
        primary: The primary target's name.
    """

    arm: str
    seed: int
    start_range: tuple[float, float]
    alpha: float
    fractions: Mapping[str, float]
    primary: str


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
        start: The shared start's held-out reward the targets were set from (None until a pilot fixed them).
        gain_ref: The reference gain the targets were set from (None until a pilot fixed them).
        targets: The held-out rewards to reach (name -> reward; empty until a pilot fixed them).
        primary: The name of the primary target.
        learned_alpha, no_loss_alpha: The tests' levels.
        cost_ratios: The update-token cost ratios r of the projection.
        reference: The arm every other is compared with (speed-up, no loss, projection).
        learned_arms: The arms whose learning the learned rule tests.
        trainers: The arms another trainer runs (name -> the file's entry; their `arms` entry is empty).
        pilot: The file's ``pilot`` entry (how such a trainer's backend is chosen, or how a pilot run
            fixes the targets), or None.
        pilot_rule: A from-pilot study's rule (`PilotRule`), else None.
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
    start: float | None
    gain_ref: float | None
    targets: Mapping[str, float]
    primary: str
    learned_alpha: float
    no_loss_alpha: float
    cost_ratios: tuple[float, ...]
    reference: str = BASELINE
    learned_arms: tuple[str, ...] = (BASELINE,)
    trainers: Mapping[str, Mapping[str, Any]] = dataclasses.field(default_factory=dict)
    pilot: Mapping[str, Any] | None = None
    pilot_rule: PilotRule | None = None

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


def _fixed_targets(targets: Mapping[str, Any]) -> tuple[dict[str, float], float, float, str]:
    """Targets in the v2 form: the levels to reach, the start and gain they came from, the primary."""
    primary = targets.get("primary")
    levels = {str(k): float(v) for k, v in targets.items() if k not in TARGET_META}
    if primary not in levels:
        raise PreregError(f"targets.primary {primary!r} is not one of the targets {sorted(levels)}")
    if "start" not in targets or "gain_ref" not in targets:
        raise PreregError(f"targets {dict(targets)} lack start or gain_ref")
    return levels, float(targets["start"]), float(targets["gain_ref"]), str(primary)


def _pilot_rule(targets: Mapping[str, Any], pilot: Any, arms: Mapping[str, Any], seeds: list[int]) -> PilotRule:
    """A from-pilot study's targets and pilot entries, checked (module docstring)."""
    fractions = {str(k)[: -len(FRACTION)]: float(v) for k, v in targets.items() if str(k).endswith(FRACTION)}
    if not fractions or not all(0 < f <= 1 for f in fractions.values()):
        raise PreregError(f"targets {dict(targets)}: from_pilot needs NAME{FRACTION} entries in (0, 1]")
    primary = targets.get("primary")
    if primary not in fractions:
        raise PreregError(f"targets.primary {primary!r} is not one of the targets {sorted(fractions)}")
    if not isinstance(pilot, Mapping):
        raise PreregError("targets come from a pilot, but the file has no pilot entry")
    if pilot.get("arm") not in arms or not isinstance(pilot.get("seed"), int) or pilot["seed"] in seeds:
        raise PreregError(f"pilot {dict(pilot)}: it needs an arm of the study and a seed that is not a study seed")
    low_high = pilot.get("start_range")
    if not isinstance(low_high, list) or len(low_high) != 2 or not float(low_high[0]) <= float(low_high[1]):
        raise PreregError(f"pilot.start_range {low_high!r}: [low, high] expected")
    learned = pilot.get("learned")
    if not isinstance(learned, Mapping) or learned.get("test") != KNOWN_RULES["learned"]["test"]:
        raise PreregError(f"pilot.learned {learned!r}: this harness implements {KNOWN_RULES['learned']['test']!r}")
    return PilotRule(
        arm=str(pilot["arm"]),
        seed=int(pilot["seed"]),
        start_range=(float(low_high[0]), float(low_high[1])),
        alpha=float(learned["alpha"]),
        fractions=fractions,
        primary=str(primary),
    )


def with_targets(prereg: Prereg, targets: Mapping[str, Any]) -> Prereg:
    """A from-pilot study's pre-registration with the targets its pilot fixed (the v2 form: ``start``,
    ``gain_ref``, one level per pre-registered fraction, the same ``primary``)."""
    rule = prereg.pilot_rule
    if rule is None:
        raise PreregError(f"{prereg.path} fixes its own targets; no pilot sets them")
    levels, start, gain, primary = _fixed_targets(targets)
    if set(levels) != set(rule.fractions) or primary != rule.primary:
        raise PreregError(f"targets {dict(targets)}: the pre-registered are {sorted(rule.fractions)} ({rule.primary})")
    return dataclasses.replace(prereg, targets=levels, start=start, gain_ref=gain, primary=primary)


@dataclass(frozen=True)
class Schema:
    """One study's pre-registration body: the keys it needs, and the view `load` returns.

    Attributes:
        study: The ``study`` the file names.
        version: The ``version`` this harness reads.
        keys: The keys the file must have besides the header.
        exact: The file has exactly the header and `keys`, nothing else.
        check: The study's view of the checked mapping (raises `PreregError`); None: the mapping itself.
    """

    study: str
    version: int
    keys: tuple[str, ...] = ()
    exact: bool = False
    check: Callable[[Path, Mapping[str, Any]], Any] | None = None


HEADER = ("version", "study")


def load(path: str | Path, schema: Schema | None = None, *, committed: bool = False) -> Any:
    """Read and check a pre-registration: its header, its keys, its body (the schema's `check`).

    Args:
        path: The file.
        schema: The study's schema; None: the time-to-accuracy schema its ``study`` names (`STUDIES`).
        committed: Refuse a file with uncommitted changes (before any run).
    """
    path = Path(path)
    if not path.is_file():
        raise PreregError(f"no pre-registration file at {path}")
    if committed and uncommitted(path):
        raise PreregError(f"{shown(path)} has uncommitted changes: commit the pre-registration before any run")
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(data, Mapping):
        raise PreregError(f"{path} is not a mapping")
    if schema is None:
        study = STUDIES.get(str(data.get("study")))
        if study is None:
            raise PreregError(f"{path}: study {data.get('study')!r}; this harness reads {sorted(STUDIES)}")
        schema = Schema(str(data["study"]), study["version"], KEYS, check=_arms_view)
    keys = (*HEADER, *(k for k in schema.keys if k not in HEADER))
    if schema.exact and sorted(data) != sorted(keys):
        raise PreregError(f"{shown(path)}: expected exactly the keys {', '.join(keys)}")
    missing = [k for k in keys if k not in data]
    if missing:
        raise PreregError(f"{path} lacks {missing}")
    if data["study"] != schema.study:
        raise PreregError(f"{path}: study {data['study']!r}; this schema reads {schema.study!r}")
    if data["version"] != schema.version:
        raise PreregError(f"{path}: version {data['version']!r}, this harness reads version {schema.version}")
    return schema.check(path, data) if schema.check else data


def _arms_view(path: Path, data: Mapping[str, Any]) -> Prereg:
    """The time-to-accuracy studies' body, checked (the module docstring's schema)."""
    study = STUDIES[str(data["study"])]
    arms = data["arms"]
    rules = data["rules"]
    if not isinstance(rules, Mapping):
        raise PreregError("rules must be a mapping")
    reference = str(_rule(rules, "speedup").get("reference", BASELINE))
    if not isinstance(arms, Mapping) or reference not in arms:
        raise PreregError(f"arms must be a mapping that includes {reference!r}")
    trainers = {str(name): _trainer(v, str(name)) for name, v in arms.items() if isinstance(v, Mapping)}
    targets = data["targets"]
    if not isinstance(targets, Mapping) or bool(targets.get("from_pilot")) != (study["targets"] == "from_pilot"):
        raise PreregError(f"{path}: study {data['study']!r} needs targets {study['targets']}, got {targets!r}")
    seeds = data["seeds"]
    if not isinstance(seeds, list) or not seeds or not all(isinstance(s, int) for s in seeds):
        raise PreregError(f"seeds must be a list of integers, got {seeds!r}")
    rule = _pilot_rule(targets, data.get("pilot"), arms, seeds) if targets.get("from_pilot") else None
    levels: dict[str, float] = {}
    start: float | None = None
    gain: float | None = None
    if rule is None:
        levels, start, gain, primary = _fixed_targets(targets)
    else:  # none until its pilot fixes them (`with_targets`)
        primary = rule.primary
    ratios = data["projection"].get("update_token_cost_ratios") if isinstance(data["projection"], Mapping) else None
    if not ratios:
        raise PreregError("projection.update_token_cost_ratios is missing")
    return Prereg(
        path=path,
        data=data,
        base_config=current_path(str(data["base_config"])),
        start_model=str(data["start_model"]),
        seeds=tuple(seeds),
        budget_s=float(data["budget_s"]),
        eval_every_train_s=float(data["eval_every_train_s"]),
        common=_overrides(data["common"], "common"),
        arms={str(n): () if n in trainers else _overrides(v, f"arms.{n}") for n, v in arms.items()},
        start=start,
        gain_ref=gain,
        targets=levels,
        primary=primary,
        learned_alpha=float(_rule(rules, "learned")["alpha"]),
        no_loss_alpha=float(_rule(rules, "no_loss")["alpha"]),
        cost_ratios=tuple(float(r) for r in ratios),
        reference=reference,
        learned_arms=tuple(str(a) for a in arms) if study["learned"] == "every_arm" else (reference,),
        trainers=trainers,
        pilot=data.get("pilot"),
        pilot_rule=rule,
    )
