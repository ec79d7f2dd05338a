"""When a run stops and when it evaluates, by *training* time (rollout + update + weight sync).

Training time is what the trainer adds up per step (`time/train_s` in metrics.jsonl and
eval.jsonl); held-out evaluations, checkpoints and logging are not in it. Both decisions are
taken between steps, from the training time before and after the step, so they read the same
after a resume (the checkpoint carries the training time so far).

- The budget (`TrainConfig.budget_s`) is spent once the training time reaches it: the step
  that crosses it is the last one (a run overshoots its budget by less than one step).
- With `HeldoutConfig.every_train_s = T`, a held-out evaluation runs at the first step boundary
  at or after each multiple of T (one evaluation when a single step crosses several).
"""

from __future__ import annotations

import math


def budget_spent(train_s: float, budget_s: float | None) -> bool:
    """True once `train_s` seconds of training have reached the budget (None: no budget)."""
    return budget_s is not None and train_s >= budget_s


def crosses_eval_point(before_s: float, after_s: float, every_s: float | None) -> bool:
    """True when a multiple of `every_s` lies in (before_s, after_s]: evaluate at this boundary."""
    if not every_s or after_s <= before_s:
        return False
    return math.floor(after_s / every_s) > math.floor(before_s / every_s)


def simulate(step_s: list[float], *, budget_s: float | None, every_s: float | None) -> tuple[list[float], list[float]]:
    """The step boundaries (training seconds) a run with these step durations passes, and its evaluations.

    A run evaluates at the start, at each crossed multiple of `every_s`, and at the end; the
    trainer's loop decides the same way. For tests and for planning a benchmark's evaluations.
    """
    boundaries, evals, train_s = [], [0.0], 0.0
    for duration in step_s:
        if budget_spent(train_s, budget_s):
            break
        before, train_s = train_s, train_s + duration
        boundaries.append(train_s)
        if crosses_eval_point(before, train_s, every_s) or budget_spent(train_s, budget_s):
            evals.append(train_s)
    if boundaries and evals[-1] != boundaries[-1]:
        evals.append(boundaries[-1])  # the end of the run
    return boundaries, evals
