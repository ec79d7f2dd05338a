"""One rank of a short GRPO run of the tiny model, started by `tests/grpo/test_distributed.py` (torchrun or not).

    PYTHONPATH=. torchrun --standalone --nproc-per-node 2 tests/grpo/dist_worker.py MODEL RUN_DIR [key=value ...]

Trains on the tiny pool plus a third prompt (so that two ranks get unequal work), then writes
what the test compares: ``rank_R.json`` (the filter, plan and step every rank ended with) and,
from rank 0, ``final.pt`` (the whole trained weights) and ``start.pt`` (the weights it started from).
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

import torch

from agents.grpo.config import load_config
from agents.grpo.tasks import bfcl_pool
from agents.grpo.trainer import GRPOTrainer
from tests.grpo.tiny import ANSWERS, PROTOCOL, math_task

SETTINGS = [
    "policy.gradient_checkpointing=false",
    "policy.threads=1",
    "grpo.group_size=4",
    "grpo.update_size=2",
    "grpo.prompts_per_step=3",
    "epochs=3",
    "update.lr=1.0e-3",
    "update.skip_zero_advantage=true",
    "rollout.max_tokens=16",
    "rollout.num_envs=1",  # an HF batch is seeded as a whole: one request a batch keeps rollouts layout-free
    "save_every=1",
    "export_final=false",
    "filter.enabled=true",
    "filter.k=1",
]


def pool():
    tasks = [math_task(t) for t in ANSWERS]
    return bfcl_pool([*tasks, dataclasses.replace(tasks[0], task_id="add_2_3_again")], label="tiny3")


def main(model: str, run_dir: str, *overrides: str) -> None:
    torch.set_num_threads(1)
    config = load_config(None, [f"policy.model={model}", f"run_dir={run_dir}", *SETTINGS, *overrides])
    trainer = GRPOTrainer(dataclasses.replace(config, protocol=PROTOCOL), train_pool=pool(), progress=False)
    start = trainer.policy.trainable_state()
    trainer.train()
    final = trainer.policy.trainable_state()
    out = Path(run_dir)
    state = {"step": trainer.step, "plan": trainer.plan, "filter": trainer.filter.state_dict()}
    (out / f"rank_{trainer.dist.rank}.json").write_text(json.dumps(state, sort_keys=True))
    if trainer.dist.is_main:
        torch.save(final, out / "final.pt")
        if not (out / "start.pt").exists():
            torch.save(start, out / "start.pt")
    trainer.dist.close()


if __name__ == "__main__":
    main(*sys.argv[1:])
