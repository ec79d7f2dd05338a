"""SPEED-style screening (``rollout.screen``).

Rolls out a few members of each group first, and the rest only for prompts whose first rewards are mixed.

Source: SPEED-RL (arXiv 2506.09016; code ``Zanette-Labs/speed-rl@80e47b5``,
``verl/trainer/ppo/data_controller.py``, ``DataController.update_prompts``): ``N_init`` screening
rollouts per prompt (4 in ``run_fast_rloo_7b.sh``), keep the prompt iff their rewards have a
standard deviation above 0 ("pass rate between 0 and 1"), then ``N_cont`` more for the kept
prompts only; both phases are trained on. It needs no history, so it acts from the first step.

A step here:

1. Members ``0 .. members-1`` of every prompt's group are rolled out (one `play_groups` call).
2. A prompt whose screen is unanimous (zero variance: all correct or all wrong) is *screened*: it
   leaves this step's update, its screen is recorded as an observation of the prompt (the
   filter's history and rates see it like any group), its rollouts are written with
   ``used: false``, and it stays in the dataset (later epochs plan it like any other prompt).
3. Members ``members .. n-1`` of the prompts that passed are rolled out (a second call), and those
   groups are trained on whole, as without screening.

Every member samples with ``derive_seed("grpo", seed, step, prompt, member)``, the seed it has without
screening, so a kept group is exactly the group an unscreened run plays, and screening changes
only which groups are trained on (with the vLLM engine, which seeds each request; the hf engine
seeds a batch as a whole, so there this holds with ``rollout.num_envs: 1``, as on several ranks).

**A screened prompt is not replaced in its step** (no refill from the epoch's remaining prompts):

- the step then trains on the same prompts as the unscreened run minus the screened ones, and the
  epochs keep their steps and order, so a screened and an unscreened run with one seed sample the
  same prompts at the same steps with the same seeds (common random numbers for comparing them);
- a refill would need its own screening before its continuation: a third rollout phase per
  refill round, each waiting on the last, or SPEED's pipelining (screen the next step's prompts in
  the current continuation call), which trains on screens sampled by an older policy;
- most screened prompts would have been zero-variance groups anyway, whose GRPO advantage is 0:
  leaving them out loses no gradient direction, only their tokens in the token-mean normalizer
  (the step's other samples weigh a little more). What a smaller step does lose is the few groups
  a whole rollout would have found mixed (a screen's false negatives), the price SPEED pays too.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tooluse_agents.train.checks import require
from tooluse_agents.train.grpo.advantages import is_zero_variance

if TYPE_CHECKING:  # the config imports this module; keep it light
    from tooluse_agents.train.grpo.rollouts import Rollout

    Play = Callable[[Sequence[str], Sequence[int]], Mapping[str, Sequence[Rollout]]]
    """Plays the given members of the given prompts' groups; returns each prompt's rollouts."""


@dataclass(frozen=True, kw_only=True)
class ScreenConfig:
    """SPEED-style screening of each group (module docstring).

    Attributes:
        members: Members rolled out first (SPEED's ``N_init``, 4 in its ``run_fast_rloo_7b.sh``);
            at least 2 and fewer than the group size.
    """

    members: int = 4

    def __post_init__(self) -> None:
        require(self, {"members": "one reward is always unanimous"}, members=">= 2")


@dataclass(frozen=True)
class ScreenedStep:
    """A step's groups after screening.

    Attributes:
        prompt_ids: The step's prompts, in order.
        groups: The prompts that passed (every prompt without screening): their whole groups.
        screened: The prompts dropped by a unanimous screen: their screen's rollouts.
        group_size: The members a whole group has (n).
    """

    prompt_ids: tuple[str, ...]
    groups: Mapping[str, Sequence[Rollout]]
    screened: Mapping[str, Sequence[Rollout]]
    group_size: int

    @property
    def seen(self) -> dict[str, Sequence[Rollout]]:
        """Every prompt's rollouts of this step (a whole group or a screen), in prompt order."""
        return {pid: self.groups[pid] if pid in self.groups else self.screened[pid] for pid in self.prompt_ids}

    @property
    def rollouts_saved(self) -> int:
        """Rollouts not generated because their screen was unanimous."""
        return sum(self.group_size - len(group) for group in self.screened.values())

    def metrics(self) -> dict[str, int]:
        """The step's screening counts, as ``screen/*`` metrics."""
        return {"screen/screened_prompts": len(self.screened), "screen/rollouts_saved": self.rollouts_saved}


def passes(rewards: Sequence[float]) -> bool:
    """A screen passes when its rewards are mixed (not all equal)."""
    return not is_zero_variance(rewards)


def play_screened(play: Play, prompt_ids: Sequence[str], group_size: int, config: ScreenConfig | None) -> ScreenedStep:
    """Play a step's groups, screened first when `config` is given (two `play` calls), else whole (one)."""
    ids = tuple(prompt_ids)
    if config is None:
        return ScreenedStep(ids, dict(play(ids, range(group_size))), {}, group_size)
    if config.members >= group_size:
        raise ValueError(f"screen.members ({config.members}) must be below the group size ({group_size})")
    first = play(ids, range(config.members))
    passed = [pid for pid in ids if passes([r.reward for r in first[pid]])]
    rest = play(passed, range(config.members, group_size)) if passed else {}
    groups = {pid: sorted([*first[pid], *rest[pid]], key=_member) for pid in passed}
    screened = {pid: list(first[pid]) for pid in ids if pid not in groups}
    return ScreenedStep(ids, groups, screened, group_size)


def _member(rollout: Rollout) -> int:
    return rollout.member
