"""`EpochPlan`: which prompts each training step rolls out.

Each epoch the filter (`tooluse_agents.train.grpo.filtering.PromptSelector`) splits the whole dataset into
candidates and prompts skipped outright, the candidates are shuffled from the training seed and
the epoch, and each step takes the next ones. A filter kind that decides at draw time
(``zero_variance``) is asked about each candidate as the plan reaches it, and the plan goes on
until the step has its prompts or the epoch is spent; a step never spans two epochs. Nothing here
depends on the rank: every rank holds the same plan.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from tooluse_agents.rollout.seeding import derive_seed
from tooluse_agents.train.grpo.advantages import ALL_WRONG
from tooluse_agents.train.grpo.filtering import PromptSelector


@dataclass(frozen=True)
class EpochCounts:
    """The current epoch's prompts so far.

    Attributes:
        active: Prompts rolled out or still to be (a filter that decides at the epoch start: its
            whole active set; one that decides at draw time: those admitted so far).
        skipped_all_correct: Prompts skipped on an all-correct run.
        skipped_all_wrong: Prompts skipped on an all-wrong run.
    """

    active: int = 0
    skipped_all_correct: int = 0
    skipped_all_wrong: int = 0

    @property
    def skipped(self) -> int:
        """Prompts skipped so far this epoch, of both kinds."""
        return self.skipped_all_correct + self.skipped_all_wrong

    def metrics(self) -> dict[str, int]:
        """The counts as ``filter/*`` metrics."""
        return {
            "filter/skipped_prompts": self.skipped,
            "filter/active_prompts": self.active,
            "filter/skipped_all_correct": self.skipped_all_correct,
            "filter/skipped_all_wrong": self.skipped_all_wrong,
        }


class EpochPlan:
    """The epochs' order of prompts, through the filter.

    Args:
        prompt_ids: The whole dataset.
        selector: The filter.
        seed: The training seed (the epochs' order).
        epochs: How many epochs there are.
    """

    def __init__(self, prompt_ids: Sequence[str], selector: PromptSelector, *, seed: int, epochs: int):
        self.prompt_ids = list(prompt_ids)
        self.selector = selector
        self.seed = seed
        self.epochs = epochs
        self.epoch = 0
        self.order: list[str] = []  # the epoch's prompts not drawn yet
        self.counts = EpochCounts()
        # the last epoch that ended and its final counts: prompts skipped at draw time after that
        # epoch's last step would otherwise be on no step's metrics line
        self.ended: tuple[int, EpochCounts] | None = None

    @property
    def spent(self) -> bool:
        """No prompt left to draw, in this epoch or any other."""
        return not self.order and self.epoch >= self.epochs

    def draw(self, size: int) -> list[str]:
        """The next step's prompts; empty when every epoch is spent.

        Up to `size` of the epoch's prompts (the next epoch's once this one is spent).
        """
        while True:
            batch: list[str] = []
            while self.order and len(batch) < size:
                pid = self.order.pop(0)
                if not self.selector.decides_at_draw:
                    batch.append(pid)
                elif self.selector.admit(pid, self.epoch):
                    batch.append(pid)
                    self.counts = dataclasses.replace(self.counts, active=self.counts.active + 1)
                else:
                    self._count_skip(pid)
            if batch:
                return batch
            if not self._next_epoch():
                return []

    def _next_epoch(self) -> bool:
        while self.epoch < self.epochs:
            if self.epoch >= 1:
                self.ended = (self.epoch, self.counts)
            self.epoch += 1
            active, skipped = self.selector.start_epoch(self.prompt_ids)
            seed = derive_seed(self.seed, "epoch", self.epoch, bits=64)
            self.order = random.Random(seed).sample(active, len(active))
            self.counts = EpochCounts(active=0 if self.selector.decides_at_draw else len(active))
            for pid in skipped:
                self._count_skip(pid)
            if self.order:
                return True
        return False

    def ended_metrics(self) -> dict[str, int]:
        """The last ended epoch's final counts (``filter/ended_epoch*``), or nothing before one ended."""
        if self.ended is None:
            return {}
        epoch, counts = self.ended
        return {
            "filter/ended_epoch": epoch,
            **{k.replace("filter/", "filter/ended_epoch_"): v for k, v in counts.metrics().items()},
        }

    def _count_skip(self, prompt_id: str) -> None:
        field = "skipped_all_wrong" if self.selector.run_kind(prompt_id) == ALL_WRONG else "skipped_all_correct"
        self.counts = dataclasses.replace(self.counts, **{field: getattr(self.counts, field) + 1})

    def state_dict(self) -> dict[str, Any]:
        """The checkpoint's keys (``epoch_counts`` as [active, skipped], as runs before the split wrote it)."""
        c = self.counts
        return {
            "epoch": self.epoch,
            "plan": list(self.order),
            "epoch_counts": [c.active, c.skipped],
            "epoch_skips": [c.skipped_all_correct, c.skipped_all_wrong],
            "ended_epoch": None if self.ended is None else [self.ended[0], *dataclasses.astuple(self.ended[1])],
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore the state `state_dict` returned (older checkpoints without the skip split too)."""
        self.epoch, self.order = state["epoch"], list(state["plan"])
        active, skipped = state["epoch_counts"]
        correct, wrong = state.get("epoch_skips", [skipped, 0])  # older checkpoints: no split
        self.counts = EpochCounts(active, correct, wrong)
        ended = state.get("ended_epoch")
        self.ended = None if ended is None else (int(ended[0]), EpochCounts(*ended[1:]))
