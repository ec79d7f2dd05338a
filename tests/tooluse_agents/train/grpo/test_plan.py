"""The epochs' plan: the default filter plans what the trainer planned before the plan was its own
module; the ``zero_variance`` kind decides each prompt as the plan reaches it and counts skips by kind."""

from __future__ import annotations

import random

from tooluse_agents.rollout.seeding import derive_seed
from tooluse_agents.train.grpo.advantages import ALL_WRONG
from tooluse_agents.train.grpo.filtering import FilterConfig, PromptFilter
from tooluse_agents.train.grpo.greso import ZeroVarianceConfig, ZeroVarianceFilter, draw
from tooluse_agents.train.grpo.plan import EpochCounts, EpochPlan

IDS = [f"p{i}" for i in range(7)]


def _rewards(epoch: int, pid: str) -> list[float]:
    """A fixed outcome per (epoch, prompt): some prompts all-correct, some all-wrong, some mixed."""
    kind = (int(pid[1:]) + epoch) % 3 if pid != "p0" else 0
    return [[1.0] * 4, [0.0] * 4, [1.0, 0.0, 1.0, 1.0]][kind]


def _old_trainer_plan(config: FilterConfig, seed: int, epochs: int, size: int):
    """The trainer's plan before `EpochPlan`, verbatim in substance: (epoch, batch, (active, skipped)) per step."""
    f, epoch, plan, counts, out = PromptFilter(config), 0, [], (0, 0), []
    while True:
        if not plan:
            while epoch < epochs:
                epoch += 1
                active, skipped = f.start_epoch(IDS)
                plan = random.Random(derive_seed(seed, "epoch", epoch, bits=64)).sample(active, len(active))
                counts = (len(active), len(skipped))
                if plan:
                    break
            if not plan:
                return out
        batch, plan = plan[:size], plan[size:]
        out.append((epoch, batch, counts))
        for pid in batch:
            f.observe(pid, _rewards(epoch, pid))


def _new_plan(selector, seed: int, epochs: int, size: int):
    plan, out = EpochPlan(IDS, selector, seed=seed, epochs=epochs), []
    while batch := plan.draw(size):
        out.append((plan.epoch, batch, plan.counts))
        for pid in batch:
            selector.observe(pid, _rewards(plan.epoch, pid))
    assert plan.spent
    return out


def test_the_default_filter_plans_as_the_trainer_did():
    for config in (FilterConfig(), FilterConfig(skip_all_wrong=True, revisit_after=1), FilterConfig(enabled=False)):
        old = _old_trainer_plan(config, seed=5, epochs=5, size=3)
        new = _new_plan(PromptFilter(config), seed=5, epochs=5, size=3)
        assert [(e, b) for e, b, _ in new] == [(e, b) for e, b, _ in old]
        assert [(c.active, c.skipped) for _, _, c in new] == [c for _, _, c in old]
    skipping = _new_plan(PromptFilter(FilterConfig(skip_all_wrong=True)), seed=5, epochs=3, size=3)
    assert any(c.skipped_all_wrong for _, _, c in skipping) and any(c.skipped_all_correct for _, _, c in skipping)


def test_zero_variance_decides_at_draw_and_counts_skips_by_kind():
    f = ZeroVarianceFilter(ZeroVarianceConfig(), seed=2)
    plan = EpochPlan(IDS, f, seed=2, epochs=2)
    first = [plan.draw(3), plan.draw(3), plan.draw(3)]
    assert [len(b) for b in first] == [3, 3, 1] and plan.epoch == 1  # a step never spans two epochs
    assert plan.counts == EpochCounts(active=7)  # nothing observed yet: nothing skipped
    for pid in IDS:
        f.observe(pid, _rewards(1, pid))
    order = random.Random(derive_seed(2, "epoch", 2, bits=64)).sample(IDS, len(IDS))
    kept = [p for p in order if f.run_kind(p) is None or draw(2, 2, p) >= 0.5]  # runs of 1: kept with 0.5
    skipped = [p for p in order if p not in kept]
    assert skipped  # the check is not vacuous
    second = []
    while (batch := plan.draw(3)) and plan.epoch == 2:
        second.extend(batch)
        assert len(batch) == 3 or not plan.order  # full steps until the epoch runs out
    assert second == kept and plan.spent
    assert plan.counts == EpochCounts(
        active=len(kept),
        skipped_all_correct=sum(f.run_kind(p) == "all_correct" for p in skipped),
        skipped_all_wrong=sum(f.run_kind(p) == "all_wrong" for p in skipped),
    )


def test_an_epoch_whose_prompts_are_all_skipped_moves_on_and_state_round_trips():
    f = ZeroVarianceFilter(ZeroVarianceConfig(p_correct=0.05, floor_correct=0.0), seed=0)
    for _ in range(20):  # keep probability 0.05^20: nothing is rolled out again
        for pid in IDS:
            f.observe(pid, [1.0] * 4)
    plan = EpochPlan(IDS, f, seed=0, epochs=3)
    assert plan.draw(4) == [] and plan.spent and plan.epoch == 3
    assert plan.counts == EpochCounts(skipped_all_correct=7)
    g = EpochPlan(IDS, f, seed=0, epochs=3)
    g.load_state_dict(plan.state_dict())
    assert (g.epoch, g.order, g.counts) == (plan.epoch, plan.order, plan.counts)
    old = {"epoch": 2, "plan": ["p1"], "epoch_counts": [5, 2]}  # a checkpoint written before the split by kind
    g.load_state_dict(old)
    assert g.counts == EpochCounts(active=5, skipped_all_correct=2) and g.order == ["p1"]


def test_an_epoch_whose_last_prompts_are_skipped_at_draw_time_keeps_its_final_counts():
    class SkipAtDraw:  # admits the first two prompts of every epoch, skips the rest at draw time as all-wrong
        decides_at_draw = True

        def __init__(self):
            self.seen = 0

        def start_epoch(self, prompt_ids):
            self.seen = 0
            return list(prompt_ids), []

        def admit(self, prompt_id, epoch):
            self.seen += 1
            return self.seen <= 2

        def run_kind(self, prompt_id):
            return ALL_WRONG

    plan = EpochPlan([f"p{i}" for i in range(5)], SkipAtDraw(), seed=0, epochs=2)
    assert len(plan.draw(2)) == 2 and plan.ended_metrics() == {}
    assert len(plan.draw(2)) == 2 and plan.epoch == 2  # epoch 1's last 3 prompts were skipped on the way
    ended = plan.ended_metrics()
    assert ended["filter/ended_epoch"] == 1
    assert ended["filter/ended_epoch_skipped_all_wrong"] == 3 and ended["filter/ended_epoch_active_prompts"] == 2
    assert plan.counts.skipped == 0  # epoch 2's own counts start afresh
