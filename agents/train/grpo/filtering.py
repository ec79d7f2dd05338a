"""Online pre-rollout filtering: skip prompts whose groups were all-correct in recent epochs.

Per prompt the filter keeps a streak: the number of consecutive probed epochs whose group
was all-correct. At the start of every epoch the active set is rebuilt from the *whole*
dataset: a prompt is skipped (no generation at all) when its streak is >= `k`, unless it has
already sat out `revisit_after` epochs in a row, in which case it is probed again.

How this reads the paper. Its formula builds the active set D^(e) from D^(e-1), so a
skipped prompt could never come back, although the text says prompts are "temporarily
skipped". Here the active set comes from the whole dataset each epoch; a skipped prompt's
streak is frozen while it sits out (it was not rolled out, so nothing is known), and it is
re-probed after `revisit_after` skipped epochs. A probe that is all-correct again extends
the streak (the prompt is skipped again at once); any other outcome resets it to 0 and the
prompt stays active. ``revisit_after=None`` is the literal reading (skipped for good).

All-wrong groups carry no signal either; skipping them is optional (`skip_all_wrong`) and
off by default, as in the paper. The filter is deterministic: the epoch's order is shuffled
by the trainer from its seed; the filter only decides membership.

That is ``kind: all_correct``, the default. ``kind: zero_variance`` is GRESO's probabilistic rule
for both zero-variance kinds, with rates adapted toward a target share (`tooluse_agents.train.grpo.greso`).
Both kinds are a `PromptSelector`; `make_filter` builds the one a config names.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from tooluse_agents.train.checks import require
from tooluse_agents.train.grpo.advantages import ALL_CORRECT, ALL_WRONG
from tooluse_agents.train.grpo.greso import ZeroVarianceConfig, ZeroVarianceFilter

KINDS = ("all_correct", "zero_variance")


@dataclass(frozen=True, kw_only=True)
class FilterConfig:
    """Settings of the pre-rollout filter.

    Attributes:
        enabled: Off means every prompt is rolled out every epoch (vanilla GRPO).
        kind: ``all_correct`` (the paper's rule: `k`, `revisit_after`, `skip_all_wrong`) or
            ``zero_variance`` (GRESO's: `zero_variance`).
        k: Skip a prompt once its all-correct streak reaches k epochs (the paper tried 1 and 2).
        revisit_after: Epochs a skipped prompt sits out before it is probed again
            (None: never; see the module docstring for why this exists).
        skip_all_wrong: Also skip prompts with a streak of k all-wrong epochs (same revisit rule).
        max_reward: The reward that counts as correct (binary rewards: 1.0).
        zero_variance: The settings of the ``zero_variance`` kind (GRESO's defaults).
    """

    enabled: bool = True
    kind: str = "all_correct"
    k: int = 1
    revisit_after: int | None = 2
    skip_all_wrong: bool = False
    max_reward: float = 1.0
    zero_variance: ZeroVarianceConfig = field(default_factory=ZeroVarianceConfig)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {self.kind!r}")
        require(self, k=">= 1", revisit_after=">= 1", max_reward="> 0")


@dataclass
class _PromptState:
    correct_streak: int = 0
    wrong_streak: int = 0
    sat_out: int = 0  # consecutive epochs skipped


class PromptSelector(Protocol):
    """What the trainer's plan asks of a filter kind (`PromptFilter`, `ZeroVarianceFilter`).

    At each epoch start `start_epoch` splits the prompts into candidates and prompts skipped
    outright; each candidate is then asked `admit` when the plan reaches it (a kind that decides
    everything at the epoch start, ``decides_at_draw = False``, admits every candidate). Every
    group rolled out is recorded with `observe`, and `end_step` sees the outcomes of a step's
    groups (`tooluse_agents.train.grpo.advantages.group_outcome`).
    """

    decides_at_draw: bool

    def start_epoch(self, prompt_ids: Sequence[str]) -> tuple[list[str], list[str]]:
        """Split an epoch's prompts into (active, skipped) at its start."""

    def admit(self, prompt_id: str, epoch: int) -> bool:
        """Whether a prompt is rolled out when it is drawn (filters that decide at draw time)."""

    def run_kind(self, prompt_id: str) -> str | None:
        """The zero-variance kind of the prompt's current run (all-correct or all-wrong), or None."""

    def observe(self, prompt_id: str, rewards: Iterable[float]) -> None:
        """Record the rewards of a prompt's group."""

    def end_step(self, outcomes: Sequence[str], epoch: int) -> None:
        """Adapt to the step's group outcomes (filters with adaptive rates)."""

    def rates(self) -> dict[str, float]:
        """The filter's current rates, as metrics (empty for filters without rates)."""

    def state_dict(self) -> dict[str, Any]:
        """JSON-able state for checkpoints."""

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore the state `state_dict` returned."""


def make_filter(config: FilterConfig, seed: int = 0) -> PromptSelector:
    """The filter of `config.kind`; `seed` is the training seed (the ``zero_variance`` kind's draws)."""
    if config.kind == "zero_variance":
        return ZeroVarianceFilter(config.zero_variance, enabled=config.enabled, seed=seed, max_reward=config.max_reward)
    return PromptFilter(config)


class PromptFilter:
    """Decides, before generation, which prompts of an epoch are rolled out (``kind: all_correct``).

    Use: ``active, skipped = f.start_epoch(all_ids)`` at each epoch start, then
    ``f.observe(prompt_id, rewards)`` for every group that was rolled out.
    """

    decides_at_draw = False

    def __init__(self, config: FilterConfig | None = None):
        self.config = config or FilterConfig()
        self._state: dict[str, _PromptState] = {}

    def start_epoch(self, prompt_ids: Sequence[str]) -> tuple[list[str], list[str]]:
        """Split the whole dataset into the prompts to roll out this epoch and those skipped (input order)."""
        active, skipped = [], []
        for pid in prompt_ids:
            state = self._state.setdefault(pid, _PromptState())
            if self.config.enabled and self._predicted_zero_variance(state) and not self._due(state):
                state.sat_out += 1
                skipped.append(pid)
            else:
                state.sat_out = 0
                active.append(pid)
        return active, skipped

    def observe(self, prompt_id: str, rewards: Iterable[float]) -> None:
        """Record the outcome of a prompt's group this epoch."""
        values = list(rewards)
        state = self._state.setdefault(prompt_id, _PromptState())
        top = self.config.max_reward
        all_correct = bool(values) and all(r >= top for r in values)
        all_wrong = bool(values) and all(r < top for r in values) and len(set(values)) == 1
        state.correct_streak = state.correct_streak + 1 if all_correct else 0
        state.wrong_streak = state.wrong_streak + 1 if all_wrong else 0

    def admit(self, prompt_id: str, epoch: int) -> bool:
        """Every candidate of `start_epoch` is rolled out (this kind decides at the epoch start)."""
        return True

    def run_kind(self, prompt_id: str) -> str | None:
        """``all_correct`` or ``all_wrong`` when the prompt's latest groups were such, else None."""
        state = self._state.get(prompt_id, _PromptState())
        return ALL_CORRECT if state.correct_streak else ALL_WRONG if state.wrong_streak else None

    def end_step(self, outcomes: Sequence[str], epoch: int) -> None:
        """Nothing adapts in this kind."""

    def rates(self) -> dict[str, float]:
        """No rates in this kind."""
        return {}

    def streak(self, prompt_id: str) -> int:
        """Consecutive probed epochs in which the prompt's group was all-correct."""
        state = self._state.get(prompt_id)
        return state.correct_streak if state else 0

    def _predicted_zero_variance(self, state: _PromptState) -> bool:
        if state.correct_streak >= self.config.k:
            return True
        return self.config.skip_all_wrong and state.wrong_streak >= self.config.k

    def _due(self, state: _PromptState) -> bool:
        return self.config.revisit_after is not None and state.sat_out >= self.config.revisit_after

    def state_dict(self) -> dict[str, Any]:
        """JSON-able state for checkpoints."""
        return {pid: [s.correct_streak, s.wrong_streak, s.sat_out] for pid, s in sorted(self._state.items())}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore the state `state_dict` returned."""
        self._state = {pid: _PromptState(*values) for pid, values in state.items()}
