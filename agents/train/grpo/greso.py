"""GRESO-style pre-rollout filtering (``filter.kind: zero_variance``).

Skips prompts of both zero-variance kinds, probabilistically, from each prompt's own history.

Source: GRESO (Zheng et al. 2025, arXiv 2506.02177), read in its code at
``Infini-AI-Lab/GRESO@b277843``: the skip rule in ``verl/trainer/ttis/presampling_selector.py``
(``easy_probabilistic_skip``, ``hard_probabilistic_skip``), the targets and the adaptation in
``verl/trainer/ppo/ray_trainer.py`` (l.298-299 and l.1199-1219), the start values in
``train-scripts/*_greso.sh``. Where each default comes from is on `ZeroVarianceConfig`.

**History.** Every group rolled out is an observation of its prompt: all-correct, all-wrong or
mixed (`tooluse_agents.train.grpo.advantages.group_outcome`). ``z`` is the prompt's run of consecutive
all-correct (or all-wrong) observations counted back from the latest one; a mixed group ends
both runs. A skipped prompt is not observed, so its run is frozen while it sits out.

**Skip rule**, each time the epoch's plan reaches a prompt, before any generation::

    P(skip) = 1 - max(p ** z, floor)      p, floor: p_correct, floor_correct on an all-correct run
                                                     p_wrong,   floor_wrong   on an all-wrong run

A prompt never observed, or whose latest group was mixed, has ``z = 0`` and is never skipped,
so skipping starts in a prompt's second epoch. Re-probing is built in: a prompt is rolled out
with probability ``max(p ** z, floor) > 0`` each epoch, and that observation extends its run
(all-correct again) or ends it (anything else). GRESO tests the all-correct run first and the
all-wrong run only if not skipped; a prompt is on at most one run, so that order never matters.

**Adaptation**, once per training step from the second epoch on (GRESO: ``epoch > 0``, counted
from 0): with ``r_correct`` and ``r_wrong`` the shares of all-correct and all-wrong groups among
the step's groups, and targets ``target * (1 - wrong_share)`` and ``target * wrong_share``::

    p <- max(p - rate, p_min)   if the observed share >= its target   (too many seen: skip more)
    p <- min(p + rate, p_max)   otherwise                              (skip less)

**Seeded draws.** GRESO draws with an unseeded ``torch.rand``. Here the draw for prompt ``i`` in
epoch ``e`` is ``u = sha256(seed, e, i)`` mapped to [0, 1), and the prompt is skipped iff
``u < P(skip)``. The history and the rates are computed from the groups every rank gathered, so
every rank makes the same decisions without exchanging them, and a resumed run repeats them.

**Where this differs from GRESO.** GRESO's "hard" is a mean reward <= 0.11 (its reward gives 0.1
for a well-formatted wrong answer); here it is a zero-variance group below the top reward. Its
rates count the groups of a step before dynamic sampling drops any; here they count the groups
rolled out in the step, screened groups (`tooluse_agents.train.grpo.screen`) by their screen.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from tooluse_agents.train.grpo.advantages import ALL_CORRECT, ALL_WRONG, group_outcome

ADAPT_FROM_EPOCH = 2
"""The first epoch (counted from 1) whose steps adapt the rates (GRESO: ``epoch > 0`` counted from 0)."""


@dataclass(frozen=True, kw_only=True)
class ZeroVarianceConfig:
    """Settings of the ``zero_variance`` filter kind; every default is GRESO's (module docstring).

    Attributes:
        p_correct: Start value of p for all-correct runs (``+data.p_easy=0.5`` in every
            ``train-scripts/*_greso.sh``; the function's own default, 0.75, is never used there).
        p_wrong: Start value of p for all-wrong runs (``+data.p_hard=0.5`` in the same scripts).
        floor_correct: Least keep probability of a prompt on an all-correct run
            (``max(p ** count, 0.01)``, hard-coded in ``presampling_selector.py``).
        floor_wrong: The same for all-wrong runs (the same hard-coded 0.01). The Dec 2026 research
            note suggests >= 0.1 for short runs on a small prompt pool (revivals matter more there).
        target: Target share of zero-variance groups among a step's groups (``data.target_zero_variance``,
            default 0.25 in ``ray_trainer.py`` l.298 and in the scripts).
        wrong_share: Part of `target` given to all-wrong groups, the rest to all-correct ones
            (``ray_trainer.py`` l.298-299: ``target / 3`` easy, ``target * 2 / 3`` hard; "more
            exploration on hard examples, because they are more likely to change").
        rate: Step of p per training step (``ray_trainer.py`` l.1212-1219: 0.01).
        p_min: Least p (``data.min_p``, default 0.05).
        p_max: Largest p (``data.max_p``, default 0.95).
    """

    p_correct: float = 0.5
    p_wrong: float = 0.5
    floor_correct: float = 0.01
    floor_wrong: float = 0.01
    target: float = 0.25
    wrong_share: float = 2 / 3
    rate: float = 0.01
    p_min: float = 0.05
    p_max: float = 0.95

    def __post_init__(self) -> None:
        if not 0 < self.p_min <= self.p_max <= 1:
            raise ValueError(f"need 0 < p_min <= p_max <= 1, got p_min={self.p_min}, p_max={self.p_max}")
        for name in ("p_correct", "p_wrong", "floor_correct", "floor_wrong", "target", "wrong_share"):
            if not 0 <= getattr(self, name) <= 1:
                raise ValueError(f"{name} must be in [0, 1], got {getattr(self, name)}")
        if self.rate < 0:
            raise ValueError(f"rate must be >= 0, got {self.rate}")

    @property
    def target_correct(self) -> float:
        """Target share of all-correct groups among a step's groups."""
        return self.target * (1 - self.wrong_share)

    @property
    def target_wrong(self) -> float:
        """Target share of all-wrong groups among a step's groups."""
        return self.target * self.wrong_share


def keep_probability(run: int, p: float, floor: float) -> float:
    """``max(p ** run, floor)`` for a run of `run` >= 1 zero-variance observations; 1 without a run."""
    return 1.0 if run <= 0 else max(p**run, floor)


def adapt(p: float, observed: float, target: float, config: ZeroVarianceConfig) -> float:
    """GRESO's step of one rate.

    Down by `rate` (skip more) when the observed share reaches its target, else up; kept within
    [p_min, p_max].
    """
    if observed >= target:
        return max(p - config.rate, config.p_min)
    return min(p + config.rate, config.p_max)


def draw(seed: int, epoch: int, prompt_id: str) -> float:
    """The uniform number in [0, 1) that decides a prompt's skip in an epoch (the same on every rank)."""
    digest = hashlib.sha256(f"greso/{seed}/{epoch}/{prompt_id}".encode()).digest()
    return int.from_bytes(digest[:8], "little") / 2**64


@dataclass
class _Runs:
    correct: int = 0
    wrong: int = 0


class ZeroVarianceFilter:
    """GRESO's probabilistic skipping of both zero-variance kinds (module docstring).

    Decides at draw time (`admit`), with the rates of that moment, as GRESO decides when its
    data loader yields a prompt; `start_epoch` keeps every prompt a candidate.

    Args:
        config: The rule's settings.
        enabled: Off: every prompt is rolled out (the history and the rates are still kept).
        seed: The training seed (the draws are a function of it, the epoch and the prompt id).
        max_reward: The reward that counts as correct.
    """

    decides_at_draw = True

    def __init__(self, config: ZeroVarianceConfig, *, enabled: bool = True, seed: int = 0, max_reward: float = 1.0):
        self.config = config
        self.enabled = enabled
        self.seed = seed
        self.max_reward = max_reward
        self.p_correct = config.p_correct
        self.p_wrong = config.p_wrong
        self._runs: dict[str, _Runs] = {}

    def start_epoch(self, prompt_ids: Sequence[str]) -> tuple[list[str], list[str]]:
        """Every prompt is a candidate; each is decided when the plan reaches it (`admit`)."""
        return list(prompt_ids), []

    def keep_probability(self, prompt_id: str) -> float:
        """The probability that the prompt is rolled out when next drawn, under the current rates."""
        runs = self._runs.get(prompt_id, _Runs())
        if runs.correct:
            return keep_probability(runs.correct, self.p_correct, self.config.floor_correct)
        return keep_probability(runs.wrong, self.p_wrong, self.config.floor_wrong)

    def admit(self, prompt_id: str, epoch: int) -> bool:
        """Whether to roll the prompt out now: False with probability ``1 - keep_probability``."""
        if not self.enabled:
            return True
        return draw(self.seed, epoch, prompt_id) >= 1.0 - self.keep_probability(prompt_id)

    def run_kind(self, prompt_id: str) -> str | None:
        """``all_correct`` or ``all_wrong`` when the prompt is on such a run, else None."""
        runs = self._runs.get(prompt_id, _Runs())
        return ALL_CORRECT if runs.correct else ALL_WRONG if runs.wrong else None

    def run(self, prompt_id: str) -> int:
        """The prompt's current run length z (of whichever kind it is on; 0 if none)."""
        runs = self._runs.get(prompt_id, _Runs())
        return runs.correct or runs.wrong

    def observe(self, prompt_id: str, rewards: Iterable[float]) -> None:
        """Record a group of the prompt (a whole group, or a screen's members)."""
        outcome = group_outcome(list(rewards), self.max_reward)
        runs = self._runs.setdefault(prompt_id, _Runs())
        runs.correct = runs.correct + 1 if outcome == ALL_CORRECT else 0
        runs.wrong = runs.wrong + 1 if outcome == ALL_WRONG else 0

    def end_step(self, outcomes: Sequence[str], epoch: int) -> None:
        """Adapt both rates to the step's group outcomes (from epoch `ADAPT_FROM_EPOCH` on)."""
        if epoch < ADAPT_FROM_EPOCH or not outcomes:
            return
        cfg = self.config
        self.p_correct = adapt(self.p_correct, outcomes.count(ALL_CORRECT) / len(outcomes), cfg.target_correct, cfg)
        self.p_wrong = adapt(self.p_wrong, outcomes.count(ALL_WRONG) / len(outcomes), cfg.target_wrong, cfg)

    def rates(self) -> dict[str, float]:
        """The current rates, as metrics."""
        return {"filter/p_correct": self.p_correct, "filter/p_wrong": self.p_wrong}

    def state_dict(self) -> dict[str, Any]:
        """JSON-able state for checkpoints."""
        runs = {pid: [r.correct, r.wrong] for pid, r in sorted(self._runs.items())}
        return {"p_correct": self.p_correct, "p_wrong": self.p_wrong, "runs": runs}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore the state `state_dict` returned."""
        self.p_correct, self.p_wrong = float(state["p_correct"]), float(state["p_wrong"])
        self._runs = {pid: _Runs(*values) for pid, values in state["runs"].items()}
