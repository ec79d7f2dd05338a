"""One result envelope for every study, and the time-to-accuracy studies' report inside it.

Every study's result starts with the same head (`head`): ``{study, prereg: {path, commit, sha256},
checkout, machine}``, then its ``cells`` (seed stability, format grid) or ``arms`` with their
``verdicts`` (the time-to-accuracy studies, whose ``prereg`` also carries its contents and whether
it had uncommitted changes). The docs pages render these files (``docs/_scripts/gen_pages.py``).

The time-to-accuracy report: every pre-registered figure and criterion from the result files so far.

`build_report` reads ``seed{S}_{arm}.json`` (`experiments.framework.arms`) and recomputes
everything from their raw data (curves, per-prompt outcomes, per-step counts) with
`tooluse_agents.eval.stats`. Only results made under the current pre-registration
(same sha256 of its contents) count; any other is listed under ``excluded``.

Every arm is compared with the pre-registration's reference arm (`Prereg.reference`: vanilla in
v2, TRL in study A of issue 40). Verdicts, one per pre-registered criterion (per arm where it
compares arms):

- **learned**: per seed, the reference's final against its start on the same prompts, exact
  two-sided McNemar p below alpha and a positive gain (``learned``); where the study tests every
  arm (`Prereg.learned_arms`), each arm's too (``learned_by_arm``);
- **speed-up** at the primary target: faster in every seed (t_reference / t_arm above 1, a censored
  side counting only when its bound decides), with the geometric mean over seeds beside it;
- **no loss**: per seed the arm's final not significantly worse than the reference's (McNemar), and
  the mean over seeds of (arm final - reference final) not below minus the mean paired SE.

Each is ``met``, ``not met``, or ``not yet decidable`` while some pre-registered seed has no
result. A criterion that must hold in every seed is ``not met`` as soon as one seed fails it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from experiments.framework.provenance import ROOT, checkout, machine, provenance, shown
from experiments.framework.study import Prereg
from experiments.framework.summary import counts, crossing, outcomes_at, seed_arm_stats
from tooluse_agents.eval import stats as st
from tooluse_agents.runs.portable import portable


def head(
    study: str, prereg: Path, *, contents: Mapping[str, Any] | None = None, with_machine: bool = True
) -> dict[str, Any]:
    """The head of every study's result: the study, its pre-registration, the checkout (and the machine).

    Args:
        study: The study's name (the pre-registration's ``study``).
        prereg: The pre-registration file: its path, last commit and sha256 are recorded.
        contents: The pre-registration as read, recorded with it (so a result reads alone).
        with_machine: Record the machine (the CPU and Python) the result was made on.
    """
    recorded = {k: v for k, v in provenance(prereg).items() if k != "uncommitted_changes"}
    out: dict[str, Any] = {"study": study, "prereg": {**recorded, **({"contents": contents} if contents else {})}}
    out["checkout"] = checkout()
    if with_machine:
        out["machine"] = machine()
    return out


MET, NOT_MET, UNDECIDED = "met", "not met", "not yet decidable"
PER_SEED_TOTALS = (
    "train_s",
    "steps",
    "epochs",
    "sec_per_step",
    "time_split_s",
    "eval_s",
    "generated_tokens",
    "update_tokens",
    "computed_update_tokens",
    "zero_advantage_update_frac",
    "rollouts_generated",
    "rollouts_used",
    "rollouts_saved_by_screen",
    "prompts_skipped",
    "prompts_screened",
    "selection_active_from_s",
    "selection_active_share",
    "measured_update_token_cost_ratio",
)


def load_results(prereg: Prereg, folder: Path) -> tuple[dict[tuple[int, str], dict], list[dict[str, str]]]:
    """The results made under this pre-registration ((seed, arm) -> result), and the others with why."""
    found: dict[tuple[int, str], dict] = {}
    excluded = []
    for path in sorted(folder.glob("seed*_*.json")):
        result = json.loads(path.read_text(encoding="utf-8"))
        why = None
        if result.get("prereg", {}).get("sha256") != prereg.sha256:
            why = "made under another pre-registration (sha256 differs)"
        elif result.get("arm") not in prereg.arms or result.get("seed") not in prereg.seeds:
            why = "an arm or seed the pre-registration does not name"
        if why:
            excluded.append({"file": path.name, "why": why})
        else:
            found[(result["seed"], result["arm"])] = result
    return found, excluded


def _budget(result: Mapping[str, Any], prereg: Prereg) -> float:
    """The budget a result ran under (the pre-registered one, but for a smoke run's)."""
    return float(result.get("budget_s") or prereg.budget_s)


def _per_seed(result: Mapping[str, Any], ref: Mapping[str, Any] | None, prereg: Prereg) -> dict[str, Any]:
    stats = seed_arm_stats(result, _budget(result, prereg), prereg.targets)
    out: dict[str, Any] = {"curve": result["curve"], **stats}
    name = prereg.reference
    if ref is not None and ref is not result:
        vs = st.paired(outcomes_at(ref, -1), outcomes_at(result, -1))
        out[f"paired_vs_{name}"] = vs.to_dict()
        out[f"mcnemar_p_vs_{name}"] = vs.p
        out[f"auc_delta_vs_{name}"] = stats["auc"] - seed_arm_stats(ref, _budget(ref, prereg), {})["auc"]
    else:
        out[f"mcnemar_p_vs_{name}"] = None
    out.update({k: result["totals"].get(k) for k in PER_SEED_TOTALS})
    out["per_epoch"] = result["per_epoch"]
    out["machine"] = result["machine"]
    out["start_eval"] = {k: result["start_eval"].get(k) for k in ("source", "from", "agrees_with")}
    return out


def _speedup(arm: Mapping[int, dict], ref: Mapping[int, dict], target: str) -> dict[str, Any]:
    seeds = sorted(set(arm) & set(ref))
    ratios = {s: st.speedup(crossing(ref[s], target), crossing(arm[s], target)) for s in seeds}
    decomposition = {}
    for s in seeds:
        v, a = ref[s], arm[s]
        steps_v, steps_a = v[f"step_to_{target}"], a[f"step_to_{target}"]
        t_v, t_a = v[f"time_to_{target}_s"], a[f"time_to_{target}_s"]
        if None not in (steps_v, steps_a, t_v, t_a) and min(steps_v, steps_a, t_v, t_a) > 0:
            decomposition[s] = {
                "steps_ratio": steps_v / steps_a,
                "sec_per_step_ratio": (t_v / steps_v) / (t_a / steps_a),
            }
    return {
        "per_seed": {s: r.to_dict() for s, r in ratios.items()},
        "geometric_mean": st.geometric_mean(list(ratios.values())).to_dict(),
        "faster_in_every_seed": st.faster_in_every_seed(list(ratios.values())),
        "decomposition": decomposition,
        "seeds": seeds,
    }


def _projection(prereg: Prereg, results: Mapping[tuple[int, str], dict], arm: str, per_seed: Mapping) -> dict:
    ref = prereg.reference
    seeds = sorted(s for s in per_seed[arm] if s in per_seed[ref])
    target = prereg.primary
    out: dict[str, Any] = {
        "label": "projection",
        "target": target,
        "quantity": f"relative cost to reach the target: (G_arm + r U_arm) / (G_{ref} + r U_{ref}), "
        f"below 1 cheaper than {ref}",
        "assumptions": " ".join((st.relative_cost.__doc__ or "").split()),
        "measured_r": {s: per_seed[arm][s]["measured_update_token_cost_ratio"] for s in seeds},
    }
    for r in prereg.cost_ratios:
        costs = {
            s: st.relative_cost(
                counts(results[(s, arm)]),
                counts(results[(s, ref)]),
                crossing(per_seed[arm][s], target),
                crossing(per_seed[ref][s], target),
                r,
            )
            for s in seeds
        }
        out[f"r={r:g}"] = {
            "per_seed": {s: c.to_dict() for s, c in costs.items()},
            "geometric_mean": st.geometric_mean(list(costs.values())).to_dict(),
        }
    return out


def _status(falsified: bool, complete: bool, holds: bool) -> str:
    if falsified:
        return NOT_MET
    if not complete:
        return UNDECIDED
    return MET if holds else NOT_MET


def learned(prereg: Prereg, arm: str, per_seed: Mapping[int, dict]) -> dict[str, Any]:
    """The learned rule for one arm: per seed its final vs its start (exact McNemar p < alpha, gain > 0)."""
    learned_seeds = {
        s: {
            "gain": v["final"] - v["start"],
            "p": v["mcnemar_p_vs_start"],
            "learned": v["final"] > v["start"] and v["mcnemar_p_vs_start"] < prereg.learned_alpha,
        }
        for s, v in per_seed.items()
    }
    failed = not all(x["learned"] for x in learned_seeds.values())
    return {
        "status": _status(failed, len(per_seed) == len(prereg.seeds), not failed),
        "rule": f"per seed: {arm} final vs start, exact McNemar p < {prereg.learned_alpha:g}, gain > 0",
        "per_seed": learned_seeds,
    }


def verdicts(prereg: Prereg, arms: Mapping[str, dict], per_seed: Mapping[str, dict]) -> dict[str, Any]:
    """The pre-registered criteria (module docstring)."""
    n = len(prereg.seeds)
    out: dict[str, Any] = {"learned": learned(prereg, prereg.reference, per_seed[prereg.reference])}
    if prereg.learned_arms != (prereg.reference,):
        out["learned_by_arm"] = {arm: learned(prereg, arm, per_seed[arm]) for arm in prereg.learned_arms}
    out.update(speedup={}, no_loss={})
    for arm, data in arms.items():
        if arm == prereg.reference:
            continue
        sp = data[f"speedup_{prereg.primary}"]
        every = sp["faster_in_every_seed"]
        complete = len(sp["seeds"]) == n
        status = _status(every is False, complete, every is True)
        out["speedup"][arm] = {
            "status": status,
            "target": prereg.primary,
            "faster_in_every_seed": every,
            "geometric_mean": sp["geometric_mean"]["label"],
            "per_seed": {s: r["label"] for s, r in sp["per_seed"].items()},
            "note": "a censored seed's bound cannot show it faster" if complete and every is None else None,
        }
        nl = data["no_loss"]
        if nl is None:
            out["no_loss"][arm] = {"status": UNDECIDED}
            continue
        seeds_nl = len(nl["per_seed"])
        out["no_loss"][arm] = {
            "status": _status(not nl["none_significantly_worse"], seeds_nl == n, nl["met"]),
            "mean_delta": nl["mean_delta"],
            "mean_paired_se": nl["mean_paired_se"],
            "none_significantly_worse": nl["none_significantly_worse"],
        }
    return out


def _machine(result: Mapping[str, Any]) -> str:
    m = result["machine"]
    return f"{m['cpu_model']} {m['bf16_flags']} {m['cpu_count']}"


def _start_model(result: Mapping[str, Any]) -> str:
    """The first 12 hex digits of the start model's fingerprint (`experiments.framework.start_eval.model_sha256`)."""
    key = (result.get("start_eval") or {}).get("key") or {}
    return str(key.get("model_sha256") or "unrecorded")[:12]


def _notes(prereg: Prereg, results: Mapping[tuple[int, str], dict], excluded: list) -> list[str]:
    notes = []
    budgets = sorted({_budget(r, prereg) for r in results.values()} - {prereg.budget_s})
    if budgets:
        notes.append(f"results ran under budget(s) {budgets} s, not the pre-registered {prereg.budget_s:g} s")
    by_seed: dict[int, set[str]] = {}
    for (seed, _), r in results.items():
        by_seed.setdefault(seed, set()).add(_machine(r))
    notes += [
        f"seed {s}: arms ran on different machines ({sorted(ms)}); compare them with care"
        for s, ms in sorted(by_seed.items())
        if len(ms) > 1
    ]
    for what, value, consequence in (
        ("machines", _machine, "every ratio compares arms within one seed"),
        ("start models (sha256 of their files)", _start_model, "each seed's start is its own start evaluation"),
    ):
        seeds_by: dict[str, set[int]] = {}
        for (seed, _), r in results.items():
            seeds_by.setdefault(value(r), set()).add(seed)
        if len(seeds_by) > 1:
            groups = "; ".join(
                f"{k}: seeds {sorted(v)}" for k, v in sorted(seeds_by.items(), key=lambda kv: min(kv[1]))
            )
            notes.append(f"seeds ran on different {what} ({groups}); {consequence}")
    commits = sorted({str((r.get("checkout") or {}).get("commit")) for r in results.values()})
    if len(commits) > 1:  # the study's arms and seeds must all run the same code
        notes.append(f"results ran on {len(commits)} code commits ({commits}); compare them with care")
    dirty = sorted(f"seed {s} {a}" for (s, a), r in results.items() if (r.get("checkout") or {}).get("dirty"))
    if dirty:
        notes.append(f"ran from a checkout with uncommitted changes: {dirty}")
    missing = sorted({k for r in results.values() for k in r.get("missing_metrics", [])})
    if missing:
        notes.append(f"metrics the trainer did not write (counted as absent): {missing}")
    if any(r.get("short") for r in results.values()):
        notes.append("smoke-run results (--short): not a result of the study")
    if excluded:
        notes.append(f"{len(excluded)} result file(s) excluded (see 'excluded')")
    return notes


def build_report(prereg: Prereg, folder: Path) -> dict[str, Any]:
    """The report's JSON (module docstring) from the result files in `folder`."""
    results, excluded = load_results(prereg, folder)
    ref = prereg.reference
    per_seed: dict[str, dict[int, dict]] = {arm: {} for arm in prereg.arms}
    for (seed, arm), result in sorted(results.items()):
        per_seed[arm][seed] = _per_seed(result, results.get((seed, ref)), prereg)
    arms: dict[str, dict] = {}
    for arm, overrides in prereg.arms.items():
        entry: dict[str, Any] = {"overrides": list(overrides), "per_seed": per_seed[arm]}
        if arm in prereg.trainers:
            entry["trainer"] = dict(prereg.trainers[arm])
        if arm != ref:
            for target in prereg.targets:
                entry[f"speedup_{target}"] = _speedup(per_seed[arm], per_seed[ref], target)
            both = sorted(s for s in per_seed[arm] if s in per_seed[ref])
            pairs = [st.paired(outcomes_at(results[(s, ref)], -1), outcomes_at(results[(s, arm)], -1)) for s in both]
            entry["no_loss"] = st.no_loss(pairs, prereg.no_loss_alpha) if pairs else None
            if entry["no_loss"]:
                entry["no_loss"]["seeds"] = both
            entry["projection"] = _projection(prereg, results, arm, per_seed)
        arms[arm] = entry
    complete = [s for s in prereg.seeds if all(s in per_seed[a] for a in prereg.arms)]
    return {
        "study": prereg.data["study"],
        "prereg": {**provenance(prereg.path), "contents": prereg.data},
        "seeds": {
            "preregistered": list(prereg.seeds),
            "complete": complete,
            "with_results": {arm: sorted(v) for arm, v in per_seed.items()},
        },
        "budget_s": prereg.budget_s,
        "budgets_run_s": sorted({_budget(r, prereg) for r in results.values()}),
        "eval_every_train_s": prereg.eval_every_train_s,
        "targets": {**prereg.targets, "start": prereg.start, "gain_ref": prereg.gain_ref, "primary": prereg.primary},
        "results": {f"seed{s}_{a}": shown(folder / f"seed{s}_{a}.json") for s, a in sorted(results)},
        "arms": arms,
        "verdicts": verdicts(prereg, arms, per_seed),
        "excluded": excluded,
        "notes": _notes(prereg, results, excluded),
    }


def write_report(
    prereg: Prereg,
    folder: Path,
    json_path: Path,
    md_path: Path,
    plot_path: Path,
    build: Callable[[Prereg, Path], dict[str, Any]] = build_report,
    summary: Callable[[Mapping[str, Any], Path, Path], str] | None = None,
) -> dict[str, Any]:
    """Build the report (`build`) and write its JSON, its markdown summary (`summary`, default v2's) and its plot."""
    from experiments.framework.figures import markdown, plot

    text = json.dumps(portable(build(prereg, folder), ROOT), indent=1, default=str) + "\n"
    json_path.parent.mkdir(parents=True, exist_ok=True)
    json_path.write_text(text, encoding="utf-8")
    report = json.loads(text)  # the summary and plot read what was written, as the docs generator does
    plot(report, plot_path)
    md_path.write_text((summary or markdown)(report, json_path, plot_path), encoding="utf-8")
    return report
