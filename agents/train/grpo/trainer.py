"""`GRPOTrainer`: epochs of filtered prompts, groups of rollouts, max-variance sub-sampling, updates.

One step: take the next `prompts_per_step` prompts of the epoch's plan (`tooluse_agents.train.grpo.plan`),
roll out a group of n per prompt through the shared rollout loop (screened first with
``rollout.screen``, `tooluse_agents.train.grpo.screen`), compute group advantages, keep m of n per group (max
variance), update the policy on the kept rollouts' generated tokens, push the new weights into
the rollout engine (vLLM), log, and checkpoint. The pre-rollout filter (`tooluse_agents.train.grpo.filtering`)
decides which prompts are rolled out at all: at each epoch start (``filter.kind: all_correct``)
or as the plan reaches each prompt (``zero_variance``).

On several ranks (``torchrun``, `tooluse_agents.train.grpo.distributed`) each rank plays its share of the
step's prompts, every rank then sees every group (filter, plan and metrics replicated), each
updates on its own groups' samples with the policy sharded by FSDP2, and rank 0 writes the
run files with every rank's rollouts; training time is the slowest rank's.

The run ends after `epochs`, `max_steps` or the training-time budget `budget_s`, whichever
comes first; held-out evaluations run at the start, every `eval.every_steps` steps, at the
first step boundary past each multiple of `eval.every_train_s` training seconds
(`tooluse_agents.train.grpo.schedule`), and on the last step.
"""

from __future__ import annotations

import json
import math
import random
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from tooluse_agents.backends.base import SamplingConfig
from tooluse_agents.runs.metrics import EVAL_KEY
from tooluse_agents.runs.records import MetricsRecord
from tooluse_agents.runs.rundir import RunConflict, RunDir
from tooluse_agents.runs.runlog import RunFiles
from tooluse_agents.train.grpo.advantages import group_outcome
from tooluse_agents.train.grpo.checkpoint import latest_checkpoint
from tooluse_agents.train.grpo.config import TrainConfig, stored_config
from tooluse_agents.train.grpo.distributed import Dist
from tooluse_agents.train.grpo.filtering import make_filter
from tooluse_agents.train.grpo.metrics import eval_metrics, step_metrics
from tooluse_agents.train.grpo.plan import EpochPlan
from tooluse_agents.train.grpo.prefilter import kept_prompts
from tooluse_agents.train.grpo.rollouts import ScriptedTurns, before_last_turn, play_groups
from tooluse_agents.train.grpo.schedule import budget_spent, crosses_eval_point
from tooluse_agents.train.grpo.screen import play_screened
from tooluse_agents.train.grpo.subsample import select_for_update
from tooluse_agents.train.grpo.tasks import TaskPool, env_factory, load_pool, prompts_for
from tooluse_agents.train.grpo.update import PolicyUpdater
from tooluse_agents.train.grpo.weight_sync import rollout_engine
from tooluse_agents.train.policy import Policy

__all__ = ["RESUMABLE_CHANGES", "GRPOTrainer", "RunConflict"]

RESUMABLE_CHANGES = ("epochs", "max_steps", "budget_s")
"""Config keys a resumed run may change (how long to train); anything else is a different run."""
_FRESH_HINT = (
    f"to start afresh give another run_dir (run_dir=runs/NEW); to resume this one, run with its stored settings "
    f"(only {', '.join(RESUMABLE_CHANGES)} may change)"
)


class GRPOTrainer:
    """Trains `config.policy` on `config.tasks` and writes the run folder (see `runlog`).

    Args:
        config: The run.
        train_pool: Tasks to train on instead of `config.tasks` (e.g. hand-built tasks in tests).
        heldout_pool: Held-out tasks instead of `config.heldout`.
        progress: Show a tqdm progress bar on stderr.
        dist: This process's rank (default: from torchrun's environment, `Dist.from_env`).
    """

    def __init__(
        self,
        config: TrainConfig,
        *,
        train_pool: TaskPool | None = None,
        heldout_pool: TaskPool | None = None,
        progress: bool = True,
        dist: Dist | None = None,
    ):
        self.config = config
        self.dist = dist or Dist.from_env()
        self.progress = progress and self.dist.is_main
        self.files = RunFiles(Path(config.run_dir), write=self.dist.is_main)
        run = RunDir(config.run_dir, "config.yaml", resumable=RESUMABLE_CHANGES, read=stored_config, hint=_FRESH_HINT)
        run.check(config.to_dict())
        self.dist.barrier()  # every rank has read it before rank 0 rewrites it (with this run's length)
        if self.dist.is_main:
            run.write(config.to_dict())
        mode = config.grpo.mode
        self.pool = kept_prompts(prompts_for(train_pool or load_pool(config.tasks), mode), config.tasks.keep_list, mode)
        heldout = heldout_pool or (load_pool(config.heldout) if config.heldout else None)
        self.heldout = prompts_for(heldout, mode) if heldout else None
        self.prompt_ids = [t.task_id for t in self.pool.tasks]
        self.policy = Policy.load(config.policy, progress=self.progress)
        self.agent, self.sync = rollout_engine(config.rollout, self.policy, self.dist)
        self._write_runtime()
        self.dist.shard(self.policy)
        torch.manual_seed(config.seed)  # after the engine: an in-process vLLM engine reseeds torch
        random.seed(config.seed)
        self.updater = PolicyUpdater(self.policy, config.update, temperature=config.rollout.temperature, dist=self.dist)
        self.filter = make_filter(config.filter, config.seed)
        self.plan = EpochPlan(self.prompt_ids, self.filter, seed=config.seed, epochs=config.epochs)
        self.step = 0
        self.steps_done = 0  # steps finished (`step` is the one in progress during a step)
        self.resumed_from: int | None = None  # the checkpoint's step this run resumed from
        self.elapsed = 0.0  # training time: rollout + update + sync, summed over steps (time/train_s)
        self._resume()
        if self.sync is not None:
            self.sync.push(self.policy.weights_for_sync())

    # --- setup -----------------------------------------------------------------------------

    def _write_runtime(self) -> None:
        """runtime.json: what ``auto`` settings became on this machine (schedule, dtypes), beside config.yaml."""
        if not self.dist.is_main:
            return
        from tooluse_agents.backends.dtypes import machine
        from tooluse_agents.rollout.loop import resolve_schedule

        runtime = {
            "schedule": resolve_schedule(self.config.rollout.schedule, self._rollout_agent()),
            "rollout_dtype": getattr(self.agent, "dtype", None),
            "autocast": self.policy.autocast_dtype,
            "machine": machine(),
        }
        (self.files.run_dir / "runtime.json").write_text(json.dumps(runtime, indent=2), encoding="utf-8")

    def _rollout_agent(self) -> ScriptedTurns:
        return ScriptedTurns(self.agent, before_last_turn if self.config.grpo.mode == "next_turn" else None)

    def _resume(self) -> None:
        """Resume from the newest checkpoint, its run files cut back to what it covers (none: start over)."""
        found = latest_checkpoint(self.files.checkpoints)
        if found is None:
            self.files.rewind(None, None)
            return
        saved = json.loads((found / "state.json").read_text(encoding="utf-8"))
        self.files.rewind(saved.get("files"), saved["step"])
        state = self.dist.load(found, self.policy, self.updater.optimizer)
        self.filter.load_state_dict(state["filter"])
        self.plan.load_state_dict(state)
        self.step = self.steps_done = self.resumed_from = state["step"]
        self.elapsed = state["elapsed_s"]

    # --- the loop --------------------------------------------------------------------------

    @property
    def epoch(self) -> int:
        """The current epoch (1-based; 0 before the first)."""
        return self.plan.epoch

    def train(self) -> dict[str, Any]:
        """Run until `epochs`, `max_steps` or `budget_s` is spent.

        Returns:
            The last metrics (with the held-out reward when a held-out set is configured) and
            ``stopped_by``, the limit that ended the run.
        """
        from tooluse_agents.progress import progress_bar

        cfg = self.config
        per_epoch = math.ceil(len(self.prompt_ids) / cfg.grpo.prompts_per_step)
        total = cfg.max_steps or cfg.epochs * per_epoch
        bar = progress_bar(total=total, initial=self.step, enabled=self.progress, unit="step")
        last: dict[str, Any] = {}
        first_step = self.step
        if self.step == 0 and self.heldout is not None and cfg.eval.at_start:
            self._evaluate()
        try:
            while (stopped_by := self._stop_reason()) is None:
                batch = self.plan.draw(cfg.grpo.prompts_per_step)
                if not batch:  # the filter skipped every prompt left
                    stopped_by = "epochs"
                    break
                self.step += 1
                last = self._train_step(batch)
                self.steps_done = self.step
                bar.update(1)
                bar.set_postfix(
                    epoch=self.epoch, reward=f"{last['rollout/reward_mean']:.2f}", skipped=self.plan.counts.skipped
                )
            if self.heldout is not None and EVAL_KEY not in last and self.step > first_step:
                last[EVAL_KEY] = self._evaluate()  # the filter skipped every prompt of the epochs left
            last["stopped_by"] = stopped_by
            self._save()
            if cfg.export_final:
                self.dist.export(self.policy, self.files.run_dir / "final_model")
        finally:
            bar.close()
            self.files.close()
        return last

    def _stop_reason(self) -> str | None:
        """The limit that ends the run before the next step (None: train on); also what makes a step the last."""
        cfg = self.config
        if budget_spent(self.elapsed, cfg.budget_s):
            return "budget_s"
        if cfg.max_steps is not None and self.step >= cfg.max_steps:
            return "max_steps"
        if self.plan.spent:
            return "epochs"
        return None

    def _eval_due(self, before_s: float) -> bool:
        """Evaluate after this step: every `every_steps` steps, past a multiple of `every_train_s`, or the last step."""
        ev = self.config.eval
        return (
            bool(ev.every_steps and self.step % ev.every_steps == 0)
            or crosses_eval_point(before_s, self.elapsed, ev.every_train_s)
            or self._stop_reason() is not None
        )

    def _play(
        self,
        pool: TaskPool,
        prompt_ids: Sequence[str],
        group_size: int,
        step: int,
        temperature: float,
        members: Sequence[int] | None = None,
    ):
        """Every prompt's group, or its `members`, in `prompt_ids` order.

        This rank plays its share; every rank gets all.
        """
        cfg = self.config
        mine = play_groups(
            env_factory(pool, cfg.protocol),
            self._rollout_agent(),
            self.dist.deal(prompt_ids, self.config.rollout.tensor_parallel_size),
            members=members,
            group_size=group_size,
            seed=cfg.seed,
            step=step,
            sampling=self._sampling(temperature),
            num_envs=cfg.rollout.num_envs,
            schedule=cfg.rollout.schedule,
        )
        found = {pid: group for part in self.dist.gather(mine) for pid, group in part.items()}
        return {pid: found[pid] for pid in prompt_ids}

    def _train_step(self, prompt_ids: list[str]) -> dict[str, Any]:
        cfg = self.config
        start = time.perf_counter()
        played = play_screened(self._play_step, prompt_ids, cfg.grpo.group_size, cfg.rollout.screen)
        rollout_s = time.perf_counter() - start
        seen = played.seen  # the kept groups whole, the screened ones their screen
        for pid, group in seen.items():
            self.filter.observe(pid, [r.reward for r in group])
        self.filter.end_step(
            [group_outcome([r.reward for r in g], cfg.filter.max_reward) for g in seen.values()], self.epoch
        )
        groups = played.groups
        samples, marks = select_for_update(groups, cfg.grpo)
        marks.update({(pid, r.member): (0.0, False) for pid, group in played.screened.items() for r in group})
        # ranks of one tensor-parallel engine share prompts; each group's samples then count once
        # per rank in both the gradient and its token normalizer, so the token mean is unchanged
        mine = set(self.dist.deal(list(groups), cfg.rollout.tensor_parallel_size))
        start = time.perf_counter()
        update = self.updater.step([s for s in samples if s.group in mine])
        update_s = time.perf_counter() - start
        start = time.perf_counter()
        if self.sync is not None:
            self.sync.push(self.policy.weights_for_sync())
        sync_s = time.perf_counter() - start
        times, spread = self._slowest(rollout_s, update_s, sync_s)
        before_s = self.elapsed
        self.elapsed += sum(times)
        filtering = {**self.plan.counts.metrics(), **self.plan.ended_metrics(), **self.filter.rates()}
        n_used = sum(1 for _, kept in marks.values() if kept)
        record = step_metrics(
            self.step,
            self.epoch,
            seen,
            samples,
            used=n_used,
            max_reward=cfg.filter.max_reward,
            filtering=filtering,
            screen=played.metrics(),
            update=update,
            times=times,
            train_s=self.elapsed,
            world_size=self.dist.world_size,
            spread=spread,
        )
        for pid, group in seen.items():
            for r in group:
                advantage, used = marks[(pid, r.member)]
                train = {"step": self.step, "epoch": self.epoch, "member": r.member, "advantage": advantage}
                self.files.episode({**r.record.to_dict(), "train": {**train, "used": used}})
        if self.heldout is not None and self._eval_due(before_s):
            record[EVAL_KEY] = self._evaluate()
        self.files.metrics(MetricsRecord.from_dict(record))
        if self.step % cfg.save_every == 0:
            self._save()
        return record

    def _play_step(self, prompt_ids: Sequence[str], members: Sequence[int]):
        """This step's training rollouts: the given members of the prompts' groups."""
        cfg = self.config
        return self._play(self.pool, prompt_ids, cfg.grpo.group_size, self.step, cfg.rollout.temperature, members)

    def _slowest(self, *seconds: float) -> tuple[list[float], list[float]]:
        """Each time of the slowest rank, and by how much it was the slowest.

        Every rank so adds the same training time and stops at the same step.
        """
        every = self.dist.gather(list(seconds))
        columns = list(zip(*every, strict=True))
        return [max(c) for c in columns], [max(c) - min(c) for c in columns]

    def _sampling(self, temperature: float) -> SamplingConfig:
        r = self.config.rollout
        return SamplingConfig(temperature=temperature, top_p=r.top_p, max_tokens=r.max_tokens)

    # --- evaluation, checkpoints -----------------------------------------------------------

    def _evaluate(self) -> float:
        """Mean reward on the held-out prompts (fixed seeds, so every evaluation sees the same draws)."""
        cfg = self.config
        assert self.heldout is not None  # callers evaluate only with held-out prompts
        start = time.perf_counter()
        ids = [t.task_id for t in self.heldout.tasks]
        groups = self._play(self.heldout, ids, cfg.eval.samples, -1, cfg.eval.temperature)
        rewards = [r.reward for g in groups.values() for r in g]
        reward = sum(rewards) / len(rewards)
        for g in groups.values():
            for r in g:
                self.files.eval_episode({**r.record.to_dict(), "eval_step": self.step})
        eval_s = self._slowest(time.perf_counter() - start)[0][0]
        self.files.eval(eval_metrics(self.step, self.epoch, reward, len(rewards), train_s=self.elapsed, eval_s=eval_s))
        return reward

    def _save(self) -> None:
        if not self.config.keep_checkpoints:
            return
        if latest_checkpoint(self.files.checkpoints) == self.files.checkpoints / f"step_{self.step:06d}":
            return
        state = {
            **self.plan.state_dict(),
            "filter": self.filter.state_dict(),
            "elapsed_s": self.elapsed,
            "world_size": self.dist.world_size,
            "files": self.files.sizes(),  # what the run files held: a resume cuts them back to it
        }
        keep = self.config.keep_checkpoints
        self.dist.save(self.files.checkpoints, self.step, self.policy, self.updater.optimizer, state, keep)
