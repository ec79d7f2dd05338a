"""One finished training run of the v2 efficiency study, summarized from its run folder.

Reads what the trainer writes (`tooluse_agents.runs.runlog`): ``eval.jsonl`` (one held-out evaluation a
line), ``eval_episodes.jsonl`` (one held-out prompt's outcome a line, with ``eval_step``),
``metrics.jsonl`` (one training step a line) and ``runtime.json``. A result keeps the raw data the
statistics need, so a report can recompute everything:

- ``evaluations``: every held-out evaluation (step, epoch, training seconds, reward, its own
  duration) with each prompt's outcome as one character of ``outcomes`` (``1`` right, ``0``
  wrong, ``-`` not scored), in the order of ``heldout_prompts``;
- ``per_step``: one list per quantity, one entry per step (training seconds at its end, the
  rollout/update/sync split, generated and update tokens, rollouts generated and used, prompts
  skipped so far in the epoch and screened in the step);
- ``per_epoch`` and ``totals``: the same, summed.

`seed_arm_stats` computes one run's figures from a result: time to each target, final, McNemar
against its start, AUC. A metric the trainer does not write (an older trainer, or a knob not yet
landed) is recorded as None and named in ``missing_metrics``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tooluse_agents.eval import stats as st
from tooluse_agents.runs.jsonl import read_jsonl

EVAL_KEY = "eval/heldout_reward"
STEP_KEYS = {
    "epoch": "epoch",
    "train_s": "time/train_s",
    "rollout_s": "time/rollout_s",
    "update_s": "time/update_s",
    "sync_s": "time/sync_s",
    "generated_tokens": "rollout/completion_tokens",
    "update_tokens": "update/tokens",
    "computed_update_tokens": "update/computed_tokens",
    "zero_adv_token_frac": "update/zero_adv_token_frac",
    "rollouts_generated": "subsample/generated",
    "rollouts_used": "subsample/used",
    "reward_mean": "rollout/reward_mean",
    "zero_variance_frac": "filter/zero_variance_frac",
    "all_wrong_frac": "groups/all_wrong_frac",
    "active_prompts": "filter/active_prompts",
    "skipped_prompts": "filter/skipped_prompts",
    "skipped_all_correct": "filter/skipped_all_correct",
    "skipped_all_wrong": "filter/skipped_all_wrong",
    "screened_prompts": "screen/screened_prompts",
    "rollouts_saved": "screen/rollouts_saved",
}
"""Result name -> metrics.jsonl key of the per-step quantities kept."""

WITHIN_EPOCH = ("active_prompts", "skipped_prompts", "skipped_all_correct", "skipped_all_wrong")
"""Counts the trainer reports as the epoch's so far (its last step holds the epoch's total)."""


def _rows(path: Path) -> list[dict[str, Any]]:
    return read_jsonl(path)[0] if path.exists() else []


def encode_outcomes(prompts: Sequence[str], rewards: Mapping[str, float]) -> str:
    """One character per prompt: ``1`` right, ``0`` wrong, ``-`` not in this evaluation."""
    out = []
    for pid in prompts:
        value = rewards.get(pid)
        if value is None:
            out.append("-")
        elif value in (0.0, 1.0):
            out.append(str(int(value)))
        else:
            raise ValueError(f"held-out prompt {pid!r} scored {value}: the study needs 0/1 outcomes (greedy, 1 sample)")
    return "".join(out)


def decode_outcomes(prompts: Sequence[str], outcomes: str) -> dict[str, float]:
    """The prompt -> reward mapping of `encode_outcomes` (prompts not scored are left out)."""
    return {pid: float(c) for pid, c in zip(prompts, outcomes, strict=True) if c != "-"}


def heldout_outcomes(run_dir: Path) -> dict[int, dict[str, float]]:
    """Each evaluation's per-prompt rewards (``eval_episodes.jsonl``): eval step -> prompt -> reward."""
    out: dict[int, dict[str, float]] = {}
    for row in _rows(run_dir / "eval_episodes.jsonl"):
        out.setdefault(int(row.get("eval_step", 0)), {})[str(row["task_id"])] = float(row["reward"])
    return out


def evaluations(run_dir: Path, shared_start: Mapping[str, Any] | None = None) -> tuple[list[str], list[dict]]:
    """The held-out prompts and every evaluation of a run; `shared_start` (a result's evaluation at
    step 0, with ``prompts``) stands for a start evaluation the run did not run itself."""
    rows = _rows(run_dir / "eval.jsonl")
    if not rows:
        raise ValueError(f"{run_dir} has no held-out evaluation")
    per_prompt = heldout_outcomes(run_dir)
    prompts = sorted({pid for rewards in per_prompt.values() for pid in rewards})
    evals = [
        {
            "step": int(r.get("step", 0)),
            "epoch": int(r.get("epoch", 0)),
            "train_s": float(r.get("time/train_s", r.get("time/elapsed_s", 0.0))),
            "reward": float(r[EVAL_KEY]),
            "episodes": int(r.get("episodes", 0)),
            "eval_s": float(r.get("time/eval_s", 0.0)),
            "outcomes": encode_outcomes(prompts, per_prompt.get(int(r.get("step", 0)), {})),
        }
        for r in rows
    ]
    if evals[0]["step"] != 0 and shared_start is not None:
        theirs = list(shared_start["prompts"])
        if sorted(theirs) != prompts:
            raise ValueError("the shared start evaluation scored other held-out prompts than this run")
        start = decode_outcomes(theirs, shared_start["outcomes"])
        evals.insert(
            0,
            {
                **{k: shared_start[k] for k in ("step", "epoch", "train_s", "reward", "episodes")},
                "eval_s": 0.0,
                "outcomes": encode_outcomes(prompts, start),
                "shared_from": shared_start["from"],
            },
        )
    return prompts, evals


def _steps(metrics: Sequence[Mapping[str, Any]]) -> tuple[dict[str, list], list[str]]:
    per_step: dict[str, list] = {"step": [int(m["step"]) for m in metrics]}
    missing = []
    for name, key in STEP_KEYS.items():
        values = [m.get(key) for m in metrics]
        if metrics and all(v is None for v in values):
            missing.append(key)
        per_step[name] = values
    # present only on the steps after an epoch ended (`EpochPlan.ended_metrics`): absent is not missing
    per_step["ended_epoch"] = [m.get("filter/ended_epoch") for m in metrics]
    for name in WITHIN_EPOCH:
        per_step[f"ended_epoch_{name}"] = [m.get(f"filter/ended_epoch_{name}") for m in metrics]
    return per_step, missing


def _sum(values: Sequence[Any]) -> float | None:
    present = [v for v in values if v is not None]
    return sum(present) if present else None


def epochs(per_step: Mapping[str, list]) -> dict[str, dict[str, Any]]:
    """Per epoch: steps, the filter's counts at its last step, prompts screened and rollouts summed."""
    out: dict[str, dict[str, Any]] = {}
    for i, epoch in enumerate(per_step["epoch"]):
        entry = out.setdefault(str(epoch), {"steps": 0, "screened_prompts": 0, "rollouts_generated": 0})
        entry["steps"] += 1
        for name in WITHIN_EPOCH:
            entry[name] = per_step[name][i]
        entry["screened_prompts"] += per_step["screened_prompts"][i] or 0
        entry["rollouts_generated"] += per_step["rollouts_generated"][i] or 0
    for i, ended in enumerate(per_step.get("ended_epoch") or ()):  # the final counts of an epoch that ended
        if ended is not None and str(ended) in out:  # with skips after its last step
            for name in WITHIN_EPOCH:
                value = per_step[f"ended_epoch_{name}"][i]
                if value is not None:
                    out[str(ended)][name] = value
    return out


def selection_active_from(per_step: Mapping[str, list]) -> float | None:
    """Training seconds at the start of the first step that skipped or screened a prompt (None: never)."""
    before = 0.0
    for i, end in enumerate(per_step["train_s"]):
        if (per_step["skipped_prompts"][i] or 0) > 0 or (per_step["screened_prompts"][i] or 0) > 0:
            return before
        before = float(end or before)
    return None


def totals(per_step: Mapping[str, list], evals: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The run's sums: time split, tokens, rollouts, prompts skipped and screened, and the measured
    cost of an update token relative to a generated one on this machine."""
    split = {k: _sum(per_step[f"{k}_s"]) or 0.0 for k in ("rollout", "update", "sync")}
    gen, computed = _sum(per_step["generated_tokens"]), _sum(per_step["computed_update_tokens"])
    upd = _sum(per_step["update_tokens"])
    if computed is None:
        computed = upd
    zero = _sum(
        [
            t * f
            for t, f in zip(per_step["update_tokens"], per_step["zero_adv_token_frac"], strict=True)
            if t is not None and f is not None
        ]
    )
    per_epoch = epochs(per_step)
    measured_r = None
    if gen and computed and split["rollout"] > 0:
        measured_r = (split["update"] / computed) / (split["rollout"] / gen)
    train = [t for t in per_step["train_s"] if t is not None]
    active_from = selection_active_from(per_step)
    end = train[-1] if train else 0.0
    return {
        "steps": len(per_step["step"]),
        "epochs": len(per_epoch),
        "train_s": end,
        "eval_s": sum(e["eval_s"] for e in evals),
        "time_split_s": split,
        "sec_per_step": end / len(train) if train else None,
        "generated_tokens": gen,
        "update_tokens": upd,
        "computed_update_tokens": computed,
        "zero_advantage_update_frac": zero / upd if upd and zero is not None else None,
        "rollouts_generated": _sum(per_step["rollouts_generated"]),
        "rollouts_used": _sum(per_step["rollouts_used"]),
        "rollouts_saved_by_screen": _sum(per_step["rollouts_saved"]),
        "prompts_skipped": sum(e.get("skipped_prompts") or 0 for e in per_epoch.values()),
        "prompts_screened": sum(e["screened_prompts"] for e in per_epoch.values()),
        "selection_active_from_s": active_from,
        "selection_active_share": (end - active_from) / end if active_from is not None and end > 0 else 0.0,
        "measured_update_token_cost_ratio": measured_r,
    }


def summarize(run_dir: Path, shared_start: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """A finished run's result data (module docstring); the caller adds provenance and statistics."""
    prompts, evals = evaluations(run_dir, shared_start)
    metrics = _rows(run_dir / "metrics.jsonl")
    per_step, missing = _steps(metrics)
    runtime = run_dir / "runtime.json"
    return {
        "heldout_prompts": prompts,
        "evaluations": evals,
        "curve": [{"train_s": e["train_s"], "step": e["step"], "reward": e["reward"]} for e in evals],
        "per_step": per_step,
        "per_epoch": epochs(per_step),
        "totals": totals(per_step, evals),
        "missing_metrics": missing,
        "runtime": json.loads(runtime.read_text(encoding="utf-8")) if runtime.is_file() else None,
    }


def counts(result: Mapping[str, Any]) -> st.Counts:
    """The cumulative token counts of a result, step by step (the projection's input)."""
    steps = result["per_step"]
    gen = steps["generated_tokens"]
    upd = [
        c if c is not None else u for c, u in zip(steps["computed_update_tokens"], steps["update_tokens"], strict=True)
    ]
    cum_g, cum_u, g, u = [], [], 0.0, 0.0
    for a, b in zip(gen, upd, strict=True):
        g, u = g + (a or 0), u + (b or 0)
        cum_g.append(g)
        cum_u.append(u)
    return st.Counts(tuple(float(t) for t in steps["train_s"]), tuple(cum_g), tuple(cum_u))


def outcomes_at(result: Mapping[str, Any], index: int) -> dict[str, float]:
    """The per-prompt outcomes of a result's evaluation `index` (0: start, -1: final)."""
    return decode_outcomes(result["heldout_prompts"], result["evaluations"][index]["outcomes"])


def seed_arm_stats(result: Mapping[str, Any], budget_s: float, targets: Mapping[str, float]) -> dict[str, Any]:
    """One run's figures: time (and step) to each target, final, paired test against its start, AUC."""
    curve = [(p["train_s"], p["reward"]) for p in result["curve"]]
    by_step = [(float(p["step"]), p["reward"]) for p in result["curve"]]
    out: dict[str, Any] = {"start": curve[0][1], "final": curve[-1][1]}
    for name, level in targets.items():
        crossing = st.time_to_target(curve, level, budget_s)
        out[f"time_to_{name}_s"] = crossing.time
        out[f"time_to_{name}_censored_at"] = crossing.censored_at
        out[f"step_to_{name}"] = st.time_to_target(by_step, level).time
    vs_start = st.paired(outcomes_at(result, 0), outcomes_at(result, -1))
    out["paired_vs_start"] = vs_start.to_dict()
    out["mcnemar_p_vs_start"] = vs_start.p
    out["auc"] = st.auc(curve, budget_s)
    return out


def crossing(stats: Mapping[str, Any], target: str) -> st.Crossing:
    """The `Crossing` of `seed_arm_stats`' figures at a target."""
    return st.Crossing(stats[f"time_to_{target}_s"], stats[f"time_to_{target}_censored_at"])
