"""One rank of the distributed check (`agents/train/grpo/configs/cpu_distributed_check.yaml`).

For `test_distributed.py`:

    PYTHONPATH=. torchrun --standalone --nproc-per-node 2 \
        tests/tooluse_agents/train/grpo/dist_worker.py RUN_DIR [key=value ...]

Trains like ``tooluse-train CONFIG RUN_DIR`` would, then writes what the test compares and the
CLI does not show: ``rank_R.json`` (the step, plan and filter state every rank ended with, and
the decisions it made at each step: the prompts drawn, the skips so far, the rates, the prompts
screened) and, from rank 0, ``start.pt`` and ``final.pt`` (the whole weights before and after).
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

import torch

import tooluse_agents.train.grpo.trainer as trainer_module
from tooluse_agents.train.grpo.config import load_config
from tooluse_agents.train.grpo.trainer import GRPOTrainer


def record_decisions(trainer: GRPOTrainer) -> list[dict]:
    """Log what this rank decided at each step (the plan's draws, the screen's verdicts) into the returned list."""
    decisions: list[dict] = []
    draw, play_screened = trainer.plan.draw, trainer_module.play_screened

    def logged_draw(size: int) -> list[str]:
        rates = trainer.filter.rates()  # after the previous step's adaptation
        batch = draw(size)
        counts = dataclasses.asdict(trainer.plan.counts)
        decisions.append({"epoch": trainer.plan.epoch, "batch": batch, "counts": counts, "rates": rates})
        return batch

    def logged_screen(*args, **kwargs):
        step = play_screened(*args, **kwargs)
        decisions[-1].update(screened=sorted(step.screened), passed=sorted(step.groups))
        return step

    trainer.plan.draw = logged_draw
    trainer_module.play_screened = logged_screen
    return decisions


CONFIG = Path(__file__).resolve().parents[4] / "agents" / "train" / "grpo" / "configs" / "cpu_distributed_check.yaml"


def main(run_dir: str, *overrides: str) -> None:
    torch.set_num_threads(1)
    trainer = GRPOTrainer(load_config(CONFIG, [f"run_dir={run_dir}", *overrides]), progress=False)
    start = trainer.policy.trainable_state()
    decisions = record_decisions(trainer)
    try:
        trainer.train()
        final = trainer.policy.trainable_state()
        out = Path(run_dir)
        state = {
            "step": trainer.step,
            "plan": trainer.plan.order,
            "filter": trainer.filter.state_dict(),
            "decisions": decisions,
        }
        (out / f"rank_{trainer.dist.rank}.json").write_text(json.dumps(state, sort_keys=True))
        if trainer.dist.is_main:
            torch.save(final, out / "final.pt")
            if not (out / "start.pt").exists():
                torch.save(start, out / "start.pt")
    finally:
        trainer.dist.close()


if __name__ == "__main__":
    main(*sys.argv[1:])
