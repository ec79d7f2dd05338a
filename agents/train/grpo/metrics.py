"""One training step's line of ``metrics.jsonl`` and one line of ``eval.jsonl``, from what the step produced.

`step_metrics` is a pure function: the trainer passes in the groups, samples, timings and the
filter's, screen's and update's own numbers. The keys, with their meanings, are declared once in
`tooluse_agents.runs.metrics` (the run format depends on nothing above it).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from tooluse_agents.runs.metrics import EVAL_KEY
from tooluse_agents.train.grpo.advantages import ALL_CORRECT, ALL_WRONG, group_outcome

if TYPE_CHECKING:
    from tooluse_agents.train.batch import Sample
    from tooluse_agents.train.grpo.rollouts import Rollout

__all__ = ["eval_metrics", "step_metrics"]


_PHASES = ("rollout", "update", "sync")


def step_metrics(
    step: int,
    epoch: int,
    seen: Mapping[str, Sequence[Rollout]],
    samples: Sequence[Sample],
    *,
    used: int,
    max_reward: float,
    filtering: Mapping[str, Any],
    screen: Mapping[str, Any],
    update: Mapping[str, Any],
    times: Sequence[float],
    train_s: float,
    world_size: int = 1,
    spread: Sequence[float] = (),
) -> dict[str, Any]:
    """One step's line of ``metrics.jsonl``.

    Args:
        step: The training step.
        epoch: The epoch it belongs to.
        seen: Every group rolled out this step, by prompt (a screened one by its screen).
        samples: The update's samples (the kept rollouts' generated tokens, with advantages).
        used: Rollouts used in the update.
        max_reward: The reward of a correct rollout (``filter.max_reward``).
        filtering: The epoch plan's counts and the filter's rates (``filter/*``).
        screen: The screen's counts (``screen/*``).
        update: The policy update's numbers (``loss/*``, ``update/*``).
        times: Seconds of rollout, update and weight sync (the slowest rank's).
        train_s: Training time so far, this step included.
        world_size: Ranks the run trains on.
        spread: Per phase, slowest minus fastest rank's seconds (written on several ranks only).

    Returns:
        The line, without the held-out reward (`EVAL_KEY`, added on evaluated steps).
    """
    rollouts = [r for g in seen.values() for r in g]
    rewards = [r.reward for r in rollouts]
    n_groups = max(1, len(seen))
    outcomes = [group_outcome([r.reward for r in g], max_reward) for g in seen.values()]
    correct, wrong = outcomes.count(ALL_CORRECT), outcomes.count(ALL_WRONG)
    zero = correct + wrong
    generated_tokens = sum(r.completion_tokens for r in rollouts)
    update_tokens = sum(len(s.completion_ids) for s in samples)
    zero_tokens = sum(len(s.completion_ids) for s in samples if s.advantage == 0.0)
    rollout_s, update_s, sync_s = times
    record = {
        "step": step,
        "epoch": epoch,
        "rollout/reward_mean": sum(rewards) / len(rewards) if rewards else 0.0,
        "groups/all_correct_frac": correct / n_groups,
        "groups/all_wrong_frac": wrong / n_groups,
        "groups/mixed_frac": (len(seen) - zero) / n_groups,
        **filtering,
        "filter/zero_variance_frac": zero / n_groups,
        **screen,
        "subsample/generated": len(rollouts),
        "subsample/used": used,
        "time/rollout_s": rollout_s,
        "time/update_s": update_s,
        "time/sync_s": sync_s,
        "time/train_s": train_s,
        "time/elapsed_s": train_s,  # the older name of time/train_s
        "perf/tokens_per_s": generated_tokens / rollout_s if rollout_s > 0 else 0.0,
        "rollout/completion_tokens": generated_tokens,
        "update/tokens": update_tokens,
        "update/zero_adv_token_frac": zero_tokens / update_tokens if update_tokens else 0.0,
        "dist/world_size": world_size,
        **update,
    }
    if world_size > 1:  # how much slower the slowest rank was than the fastest, per phase
        record.update({f"dist/{k}_spread_s": v for k, v in zip(_PHASES, spread, strict=True)})
    return record


def eval_metrics(step: int, epoch: int, reward: float, episodes: int, *, train_s: float, eval_s: float) -> dict:
    """One line of ``eval.jsonl``: a held-out evaluation after `step` (0: before the first)."""
    return {
        "step": step,
        "epoch": epoch,
        EVAL_KEY: reward,
        "episodes": episodes,
        "time/train_s": train_s,
        "time/elapsed_s": train_s,
        "time/eval_s": eval_s,
    }
