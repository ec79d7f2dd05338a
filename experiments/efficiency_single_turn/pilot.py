"""A from-pilot study's targets: the pre-registered rule applied to its pilot run, and the file that fixes them.

Study B of issue 40 (``benchmarks/preregistered/grpo_efficiency_single_turn_v1.yaml``) fixes its
targets from one pilot run (`experiments.framework.study.PilotRule`), reported as a pilot and never counted:

    start = the pilot's start evaluation;  gain = its final held-out reward - start
    T50 = start + 0.5 x gain,  T75 = start + 0.75 x gain  (rounded to 3 decimals);  primary T50

The gate: the study runs only if start lies in the pre-registered range (both ends included) and
the pilot learned: its final against its start on the same held-out prompts, exact two-sided
McNemar p below alpha and a positive gain (v2's learned rule).

`decide` applies the rule to a pilot's result (`experiments.framework.summary` schema). `write_targets`
writes the targets file beside the pre-registration (``<its stem>_targets.yaml``), only for a pilot
that passed the gate: the targets in the v2 form, the pilot's result path and numbers, the gate.
`write_smoke_targets` writes fixed, labelled targets for a smoke run whose pilot fixed none.
`read_targets` reads a targets file back into the pre-registration (`prereg.with_targets`),
refusing one made under another pre-registration, one whose gate failed, and a smoke run's unless
the caller is a smoke run.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from experiments.framework.provenance import provenance, shown
from experiments.framework.study import PilotRule, Prereg, PreregError, with_targets
from experiments.framework.summary import outcomes_at
from tooluse_agents.eval import stats as st

PILOT = "pilot.json"
"""The pilot's result, beside the study's results."""
DECIMALS = 3
"""The targets are rounded to this many decimals (the pre-registration's rule)."""
SMOKE_TARGETS = {"start": 0.25, "gain_ref": 0.2, "T50": 0.35, "T75": 0.4, "primary": "T50"}
"""A smoke run's targets when its pilot fixed none: fixed numbers that prove the pipeline, nothing else."""
HEADER = """\
# The targets of {study}, fixed by its pilot run by the pre-registered rule
# ({prereg}: targets.from_pilot, pilot).
# Written by `python -m experiments.efficiency_single_turn pilot`; committed before the first counted
# run, never edited: a new pilot needs a new pre-registration.
"""


@dataclass(frozen=True)
class Decision:
    """The pre-registered rule applied to one pilot result.

    Attributes:
        start: The pilot's start evaluation (held-out reward).
        final: Its final evaluation.
        vs_start: The paired comparison final vs start (gained, lost, exact McNemar p).
        start_in_range: Whether start lies in the pre-registered range.
        learned: Whether the pilot learned (p below alpha and a positive gain).
        targets: The targets in the v2 form (``start``, ``gain_ref``, one level per fraction, ``primary``).
    """

    start: float
    final: float
    vs_start: st.Paired
    start_in_range: bool
    learned: bool
    targets: Mapping[str, Any]

    @property
    def gain(self) -> float:
        return self.final - self.start

    @property
    def passed(self) -> bool:
        return self.start_in_range and self.learned

    def reasons(self, rule: PilotRule) -> list[str]:
        """Why the gate failed (empty when it passed)."""
        low, high = rule.start_range
        out = []
        if not self.start_in_range:
            out.append(f"the start {self.start:.3f} lies outside [{low:.2f}, {high:.2f}]")
        if not self.learned:
            p = self.vs_start
            out.append(
                f"the pilot did not learn: final {self.final:.3f} vs start {self.start:.3f} "
                f"(gained {p.gained}, lost {p.lost}, exact McNemar p = {p.p:.3g}; needs p < {rule.alpha:g} and a gain)"
            )
        return out

    def to_dict(self, rule: PilotRule) -> dict[str, Any]:
        return {
            "start": self.start,
            "final": self.final,
            "gain": self.gain,
            "vs_start": self.vs_start.to_dict(),
            "gate": {
                "passed": self.passed,
                "start_range": list(rule.start_range),
                "start_in_range": self.start_in_range,
                "alpha": rule.alpha,
                "learned": self.learned,
                "why_not": self.reasons(rule),
            },
            "targets": dict(self.targets),
        }


def decide(rule: PilotRule, result: Mapping[str, Any]) -> Decision:
    """The pre-registered rule (module docstring) on a pilot's result: its first evaluation must be the start's."""
    evaluations = result["evaluations"]
    if not evaluations or evaluations[0]["step"] != 0:
        raise ValueError("the pilot's result has no start evaluation (step 0)")
    start, final = float(evaluations[0]["reward"]), float(evaluations[-1]["reward"])
    vs_start = st.paired(outcomes_at(result, 0), outcomes_at(result, -1))
    low, high = rule.start_range
    gain = final - start
    levels = {name: round(start + fraction * gain, DECIMALS) for name, fraction in rule.fractions.items()}
    return Decision(
        start=start,
        final=final,
        vs_start=vs_start,
        start_in_range=low <= start <= high,
        learned=gain > 0 and vs_start.p < rule.alpha,
        targets={"start": start, "gain_ref": gain, **levels, "primary": rule.primary},
    )


def targets_name(prereg: Prereg) -> str:
    """The targets file's name: the pre-registration's stem + ``_targets.yaml``."""
    return f"{prereg.path.stem}_targets.yaml"


def _write(path: Path, prereg: Prereg, data: Mapping[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    header = HEADER.format(study=prereg.data["study"], prereg=shown(prereg.path))
    path.write_text(header + yaml.safe_dump(dict(data), sort_keys=False, width=110), encoding="utf-8")


def write_targets(path: Path, prereg: Prereg, result_path: Path, result: Mapping[str, Any], short: bool) -> Decision:
    """Apply the rule to a pilot's result; write the targets file only if the gate passed. Returns the decision."""
    rule = prereg.pilot_rule
    if rule is None:
        raise PreregError(f"{prereg.path} fixes its own targets; it has no pilot rule")
    decision = decide(rule, result)
    if decision.passed:
        pilot = {
            "result": shown(result_path),
            "arm": result["arm"],
            "seed": result["seed"],
            "checkout": result.get("checkout"),
            "train_s": result["totals"]["train_s"],
            "steps": result["totals"]["steps"],
            "heldout_prompts": len(result["heldout_prompts"]),
        }
        record = decision.to_dict(rule)
        targets = record.pop("targets")
        data: dict[str, Any] = {"study": prereg.data["study"], "prereg": provenance(prereg.path), "short": short}
        data["pilot"] = pilot
        data |= {**record, "fractions": dict(rule.fractions), "targets": targets}
        _write(path, prereg, data)
    return decision


def write_smoke_targets(path: Path, prereg: Prereg, why: str) -> None:
    """A smoke run's fixed targets (`SMOKE_TARGETS`), labelled as such, when its pilot fixed none."""
    data = {"study": prereg.data["study"], "prereg": provenance(prereg.path), "short": True, "smoke": why}
    _write(path, prereg, {**data, "targets": dict(SMOKE_TARGETS)})


def read_targets(prereg: Prereg, path: Path, smoke_ok: bool = False) -> tuple[Prereg, dict[str, Any]]:
    """The pre-registration with the targets of this file, and what a result records about the file."""
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(data, Mapping) or data.get("study") != prereg.data["study"]:
        raise PreregError(f"{shown(path)} holds no targets of {prereg.data['study']}")
    if data.get("prereg", {}).get("sha256") != prereg.sha256:
        raise PreregError(f"{shown(path)} was made under another pre-registration (sha256 differs)")
    if (data.get("smoke") or data.get("short")) and not smoke_ok:
        raise PreregError(f"{shown(path)} holds a smoke run's targets, not the study's")
    if not data.get("smoke") and not (data.get("gate") or {}).get("passed"):
        raise PreregError(f"{shown(path)}: the pilot's gate did not pass; the study does not run")
    record = {**provenance(path), "targets": data["targets"], "smoke": data.get("smoke")}
    return with_targets(prereg, data["targets"]), record
