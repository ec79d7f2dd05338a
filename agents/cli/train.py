"""`tooluse train CONFIG.yaml [key=value ...]`: run (or resume) a GRPO training run.

    tooluse train agents/train/grpo/configs/cpu_smoke.yaml
    tooluse train agents/train/grpo/configs/cpu_curriculum.yaml run_dir=runs/c1 grpo.group_size=4 filter.enabled=false
    tooluse train prefilter CONFIG.yaml --agent hf --model MODEL --out kept.yaml   # grpo.prefilter

Overrides are dotted keys with YAML values; options and overrides may come in any order. A run
folder that already holds checkpoints is resumed from the newest one (only `epochs`, `max_steps`
and `budget_s` may differ).

On N ranks (one machine; `tooluse_agents.train.grpo.distributed`):

    tooluse train --nproc 2 agents/train/grpo/configs/cpu_smoke.yaml update.detach_prompt=false
    torchrun --standalone --nproc-per-node 2 -m tooluse_agents.cli.train agents/train/grpo/configs/cpu_smoke.yaml ...

``--nproc`` only re-launches this command under torchrun; use torchrun itself for several
machines (its ``--nnodes``, ``--node-rank`` and ``--rdzv-*`` flags).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shlex
import sys
from collections.abc import Sequence
from typing import Any

from tooluse_agents.cli.flags import DefaultsHelpFormatter, add_config_source


def build_parser() -> argparse.ArgumentParser:
    """The `tooluse train` arguments."""
    parser = argparse.ArgumentParser(
        prog="tooluse train",
        description=__doc__.split("\n")[0],
        epilog="tooluse train prefilter --help: keep the prompts a stronger model solves (the paper's data recipe)",
        formatter_class=DefaultsHelpFormatter,
    )
    add_config_source(
        parser,
        "TrainConfig",
        examples="seed=3, grpo.group_size=4, filter.enabled=false",
        keys="see agents/train/grpo/configs/",
        positional=True,
        flags=False,
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument("--verbose", action="store_true", help="show the backends' INFO and WARNING lines")
    parser.add_argument("--print-config", action="store_true", help="print the resolved config and exit")
    parser.add_argument("--nproc", type=int, default=1, help="ranks on this machine (re-launches under torchrun)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """The `tooluse train` console script; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["prefilter"]:
        from tooluse_agents.train.grpo.prefilter import main as prefilter

        return prefilter(argv[1:])
    parser = build_parser()
    args = parser.parse_intermixed_args(argv)  # options between overrides too
    if args.nproc < 1:
        parser.error("--nproc must be at least 1")
    if args.nproc > 1 and "WORLD_SIZE" not in os.environ and not args.print_config:
        flags = ["--no-progress"] * args.no_progress + ["--verbose"] * args.verbose
        command = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={args.nproc}"]
        os.execv(
            sys.executable, [*command, "-m", "tooluse_agents.cli.train", str(args.config), *args.overrides, *flags]
        )

    from tooluse_agents.train.grpo.config import dump_config, load_config

    try:
        config = load_config(args.config, args.overrides)
    except (ValueError, TypeError, OSError) as e:
        print(f"tooluse train: {e}", file=sys.stderr)
        return 2
    if args.print_config:
        print(dump_config(config), end="")
        return 0
    from tooluse_agents.cli.eval import quiet_backends

    resume = shlex.join(["tooluse", "train", *argv])
    try:
        with contextlib.nullcontext() if args.verbose else quiet_backends():
            return _train(config, progress=not args.no_progress, resume=resume)
    except KeyboardInterrupt:  # before the first step (loading the model, say): nothing new to keep
        print(
            f"tooluse train: interrupted while starting; run the same command to start or resume: {resume}",
            file=sys.stderr,
        )
        return 130


def _train(config: Any, *, progress: bool, resume: str) -> int:
    from tooluse_agents.models.resolve import UnknownModel
    from tooluse_agents.runs.rundir import RunConflict
    from tooluse_agents.train.grpo.checkpoint import latest_step
    from tooluse_agents.train.grpo.trainer import GRPOTrainer

    try:
        trainer = GRPOTrainer(config, progress=progress)
    except (RunConflict, UnknownModel) as e:
        print(f"tooluse train: {e}", file=sys.stderr)
        return 2
    if trainer.resumed_from is not None and trainer.dist.is_main:
        print(f"resumed from step {trainer.resumed_from} ({config.run_dir})", file=sys.stderr)
    try:
        last = trainer.train()
    except KeyboardInterrupt:
        if trainer.dist.is_main:
            print(stopped_line(trainer.steps_done, latest_step(trainer.files.checkpoints), resume), file=sys.stderr)
        return 130
    finally:
        trainer.agent.close()  # an in-process vLLM engine cleans up before the process group goes
        trainer.dist.close()
    if trainer.dist.is_main:
        keys = ("step", "epoch", "rollout/reward_mean", "eval/heldout_reward", "time/train_s", "stopped_by")
        print(json.dumps({k: last[k] for k in keys if k in last}))
        print(f"run folder: {config.run_dir}", file=sys.stderr)
    return 0


def stopped_line(done: int, checkpointed: int, resume: str) -> str:
    """The one line an interrupted run prints: where it stopped, and the command that resumes it from its checkpoint."""
    where = f"stopped at step {done}"
    if checkpointed != done:
        where += f" (checkpointed at step {checkpointed}; the steps after it are redone)"
    return f"tooluse train: interrupted; {where}; run the same command to resume: {resume}"


if __name__ == "__main__":
    sys.exit(main())
