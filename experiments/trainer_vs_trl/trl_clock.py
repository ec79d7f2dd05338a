"""The TRL arm's bookkeeping, kept apart from TRL so it can be tested with a fake clock: pure Python.

Study A of issue 40 (``benchmarks/preregistered/trainer_vs_trl_v1.yaml``) times TRL's
``GRPOTrainer`` the way our trainer times itself (`tooluse_agents.train.grpo.schedule`):

- `TrainingClock`: training seconds, a clock that runs from the start of training and stops
  while a held-out evaluation (with the weights' save before it) runs;
- `step_end`: at each optimizer-step boundary, whether to evaluate (the first boundary at or after
  each multiple of ``eval.every_train_s``, every ``eval.every_steps`` steps, and the last step) and
  whether this step is the last (``budget_s`` of training time reached, ``max_steps`` or the
  epochs done): our trainer's rules, decided from the training time before and after the step;
- `RolloutMeter`: wraps the adapter's ``rollout_func`` and counts, per optimizer step, its
  seconds (the generation, with the env stepping and the oracle's turns: our trainer's rollout
  time), the policy's generated tokens, the completions and their rewards;
- `step_row`: one optimizer step as a line of our ``metrics.jsonl`` (`tooluse_agents.runs.metrics`),
  so that `experiments.framework.summary` reads a TRL run like one of ours.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from tooluse_agents.train.grpo.advantages import ALL_CORRECT, ALL_WRONG, MIXED, group_outcome
from tooluse_agents.train.grpo.schedule import budget_spent, crosses_eval_point


class TrainingClock:
    """Seconds of training: runs between `start` and `stop`, summed; `paused` stops it for a block."""

    def __init__(self, now: Callable[[], float] = time.perf_counter) -> None:
        self._now = now
        self._since: float | None = None
        self._banked = 0.0

    @property
    def running(self) -> bool:
        return self._since is not None

    def start(self) -> None:
        if self._since is None:
            self._since = self._now()

    def stop(self) -> None:
        if self._since is not None:
            self._banked += self._now() - self._since
            self._since = None

    @property
    def seconds(self) -> float:
        return self._banked + (self._now() - self._since if self._since is not None else 0.0)

    @contextmanager
    def paused(self) -> Iterator[None]:
        """Stop the clock for the block (an evaluation), then restart it if it was running."""
        was = self.running
        self.stop()
        try:
            yield
        finally:
            if was:
                self.start()


@dataclass(frozen=True)
class Limits:
    """When a run stops and evaluates (`tooluse_agents.train.grpo.config.TrainConfig`'s and ``eval``'s fields).

    Attributes:
        budget_s: Training seconds after which the step that reaches them is the last (None: none).
        max_steps: Optimizer steps (None: none).
        every_train_s: Evaluate at the first step boundary at or after each multiple (None: off).
        every_steps: Evaluate every this many steps (None: off).
        heldout: Whether there is a held-out set to evaluate at all.
    """

    budget_s: float | None
    max_steps: int | None
    every_train_s: float | None
    every_steps: int | None
    heldout: bool = True


def step_end(before_s: float, after_s: float, step: int, last_step: int, limits: Limits) -> tuple[bool, str | None]:
    """At the end of optimizer step `step`: (evaluate now, the limit that makes it the last or None).

    `before_s` and `after_s` are the training seconds at the step's start and end; `last_step` is
    the step at which the trainer's epochs end. Our trainer's rules (`GRPOTrainer._eval_due`,
    `_stop_reason`): the budget first, then max_steps, then the epochs; an evaluation every
    ``every_steps``, past each multiple of ``every_train_s``, and on the last step.
    """
    stop = None
    if budget_spent(after_s, limits.budget_s):
        stop = "budget_s"
    elif limits.max_steps is not None and step >= limits.max_steps:
        stop = "max_steps"
    elif step >= last_step:
        stop = "epochs"
    evaluate = limits.heldout and (
        bool(limits.every_steps and step % limits.every_steps == 0)
        or crosses_eval_point(before_s, after_s, limits.every_train_s)
        or stop is not None
    )
    return evaluate, stop


@dataclass
class StepRollouts:
    """What the rollout function did during one optimizer step.

    Attributes:
        seconds: Seconds inside the rollout function.
        calls: Times it was called.
        rewards: Each completion's reward, by prompt (a task id), in order.
        policy_tokens: Each completion's tokens the policy generated (env_mask 1), by prompt.
        completion_tokens: Each completion's length (the policy's and the env's tokens), by prompt.
        errors: Completions that ended with an error (a length limit, an env error).
        episodes: The episode records (`tooluse_agents.rollout.episode` format), in order.
    """

    seconds: float = 0.0
    calls: int = 0
    rewards: dict[str, list[float]] = field(default_factory=dict)
    policy_tokens: dict[str, list[int]] = field(default_factory=dict)
    completion_tokens: dict[str, list[int]] = field(default_factory=dict)
    errors: int = 0
    episodes: list[dict[str, Any]] = field(default_factory=list)

    def add(self, prompts: Sequence[Any], output: Mapping[str, Sequence[Any]], seconds: float) -> None:
        """Count one call: its prompts (task ids) and the adapter's output fields."""
        self.seconds += seconds
        self.calls += 1
        for i, prompt in enumerate(prompts):
            pid = str(prompt)
            self.rewards.setdefault(pid, []).append(float(output["tooluse_reward"][i]))
            self.policy_tokens.setdefault(pid, []).append(int(sum(output["env_mask"][i])))
            self.completion_tokens.setdefault(pid, []).append(len(output["completion_ids"][i]))
            self.errors += output["tooluse_error"][i] is not None
            self.episodes.append(output["tooluse_episode"][i])

    @property
    def completions(self) -> int:
        return sum(len(r) for r in self.rewards.values())


class RolloutMeter:
    """The adapter's rollout function, timed and counted; `take` returns the counts since the last take."""

    def __init__(
        self, rollout: Callable[[list[Any], Any], dict[str, list[Any]]], now: Callable[[], float] = time.perf_counter
    ):
        self.rollout = rollout
        self._now = now
        self._step = StepRollouts()

    def __call__(self, prompts: list[Any], trainer: Any) -> dict[str, list[Any]]:
        start = self._now()
        output = self.rollout(prompts, trainer)
        self._step.add(prompts, output, self._now() - start)
        return output

    def take(self) -> StepRollouts:
        step, self._step = self._step, StepRollouts()
        return step

    def close(self) -> None:
        close = getattr(self.rollout, "close", None)
        if callable(close):
            close()


def step_row(
    step: int, epoch: int, rollouts: StepRollouts, *, step_s: float, train_s: float, prompts: int, logs: Mapping
) -> dict[str, Any]:
    """One optimizer step of the TRL arm as a ``metrics.jsonl`` line in our keys.

    Time: ``time/rollout_s`` is the rollout function's; ``time/update_s`` the rest of the step
    (rewards, advantages, TRL's log-prob pass, forward and backward, the optimizer); no weight sync
    (``time/sync_s`` 0: the adapter generates with the trained model itself). TRL updates on every
    completion (``subsample/used`` all of them) and filters no prompt (``filter/active_prompts``
    the whole pool; it skips and screens none: those counts are 0). ``update/tokens`` are the
    policy's tokens, the ones in TRL's loss; ``update/computed_tokens`` every completion token, the
    env's included, since all of them run through forward and backward (the prompt does too, with
    gradient, unlike ours: not counted).
    The loss, clip fraction, gradient norm and entropy are TRL's logged values (`logs`).
    """
    groups = list(rollouts.rewards.values())
    outcomes = [group_outcome(g, 1.0) for g in groups]
    n_groups = max(1, len(groups))
    correct, wrong = outcomes.count(ALL_CORRECT), outcomes.count(ALL_WRONG)
    rewards = [r for g in groups for r in g]
    policy = sum(sum(t) for t in rollouts.policy_tokens.values())
    zero = sum(
        sum(rollouts.policy_tokens[pid]) for pid, o in zip(rollouts.rewards, outcomes, strict=True) if o != MIXED
    )
    update_s = max(0.0, step_s - rollouts.seconds)
    return {
        "step": step,
        "epoch": epoch,
        "rollout/reward_mean": sum(rewards) / len(rewards) if rewards else 0.0,
        "groups/all_correct_frac": correct / n_groups,
        "groups/all_wrong_frac": wrong / n_groups,
        "groups/mixed_frac": (len(groups) - correct - wrong) / n_groups,
        "filter/skipped_prompts": 0,
        "filter/skipped_all_correct": 0,
        "filter/skipped_all_wrong": 0,
        "filter/active_prompts": prompts,
        "filter/zero_variance_frac": (correct + wrong) / n_groups,
        "screen/screened_prompts": 0,
        "screen/rollouts_saved": 0,
        "subsample/generated": rollouts.completions,
        "subsample/used": rollouts.completions,
        "time/rollout_s": rollouts.seconds,
        "time/update_s": update_s,
        "time/sync_s": 0.0,
        "time/train_s": train_s,
        "time/elapsed_s": train_s,
        "perf/tokens_per_s": policy / rollouts.seconds if rollouts.seconds > 0 else 0.0,
        "rollout/completion_tokens": policy,
        "update/tokens": policy,
        "update/zero_adv_token_frac": zero / policy if policy else 0.0,
        "update/computed_tokens": sum(sum(t) for t in rollouts.completion_tokens.values()),
        "update/optimizer_steps": 1,
        "update/grad_norm": logs.get("grad_norm"),
        "loss/policy": logs.get("loss"),
        "loss/clip_frac": logs.get("clip_ratio/region_mean"),
        "loss/entropy": logs.get("entropy"),
        "dist/world_size": 1,
    }
