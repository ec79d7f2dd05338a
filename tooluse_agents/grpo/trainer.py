"""`GRPOTrainer`: epochs of filtered prompts, groups of rollouts, max-variance sub-sampling, updates.

One step: take the next `prompts_per_step` prompts of the epoch's plan (`tooluse_agents.grpo.plan`),
roll out a group of n per prompt through the shared rollout loop (screened first with
``rollout.screen``, `tooluse_agents.grpo.screen`), compute group advantages, keep m of n per group (max
variance), update the policy on the kept rollouts' generated tokens, push the new weights into
the rollout engine (vLLM), log, and checkpoint. The pre-rollout filter (`tooluse_agents.grpo.filtering`)
decides which prompts are rolled out at all: at each epoch start (``filter.kind: all_correct``)
or as the plan reaches each prompt (``zero_variance``).

On several ranks (``torchrun``, `tooluse_agents.grpo.distributed`) each rank plays its share of the
step's prompts, every rank then sees every group (filter, plan and metrics replicated), each
updates on its own groups' samples with the policy sharded by FSDP2, and rank 0 writes the
run files with every rank's rollouts; training time is the slowest rank's.

The run ends after `epochs`, `max_steps` or the training-time budget `budget_s`, whichever
comes first; held-out evaluations run at the start, every `eval.every_steps` steps, at the
first step boundary past each multiple of `eval.every_train_s` training seconds
(`tooluse_agents.grpo.schedule`), and on the last step.
"""

from __future__ import annotations

import copy
import json
import math
import os
import random
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import torch
import yaml

from tooluse_agents.base import SamplingConfig
from tooluse_agents.grpo.advantages import ALL_CORRECT, ALL_WRONG, group_advantages, group_outcome
from tooluse_agents.grpo.batch import Sample
from tooluse_agents.grpo.checkpoint import (
    latest_checkpoint,
    load_checkpoint,
    publish,
    rng_state,
    save_checkpoint,
    scratch_folder,
    set_rng_state,
)
from tooluse_agents.grpo.config import GRPOConfig, TrainConfig, dump_config, from_dict
from tooluse_agents.grpo.distributed import Dist, load_sharded, save_sharded
from tooluse_agents.grpo.filtering import make_filter
from tooluse_agents.grpo.plan import EpochPlan
from tooluse_agents.grpo.policy import Policy
from tooluse_agents.grpo.prefilter import kept_prompts
from tooluse_agents.grpo.rollouts import Rollout, ScriptedTurns, before_last_turn, play_groups
from tooluse_agents.grpo.runlog import EVAL_KEY, RunFiles
from tooluse_agents.grpo.schedule import budget_spent, crosses_eval_point
from tooluse_agents.grpo.screen import ScreenedStep, play_screened
from tooluse_agents.grpo.subsample import max_variance_subset
from tooluse_agents.grpo.tasks import TaskPool, env_factory, load_pool, prompts_for
from tooluse_agents.grpo.update import PolicyUpdater
from tooluse_agents.records import MetricsRecord

RESUMABLE_CHANGES = ("epochs", "max_steps", "budget_s")
"""Config keys a resumed run may change (how long to train); anything else is a different run."""


class RunConflict(RuntimeError):
    """The run folder holds a run with another configuration."""


def select_for_update(groups: Mapping[str, Sequence[Rollout]], grpo: GRPOConfig) -> tuple[list[Sample], dict]:
    """Advantages and the kept subset of every group; returns the samples and per-rollout (advantage, used)."""
    samples: list[Sample] = []
    marks: dict[tuple[str, int], tuple[float, bool]] = {}
    for pid, group in groups.items():
        rewards = [r.reward for r in group]
        m = min(grpo.update_size or len(group), len(group))
        kept = max_variance_subset(rewards, m) if group else []
        over = kept if grpo.normalize_over == "kept" else None
        advantages = group_advantages(rewards, over) if group else []
        for i, rollout in enumerate(group):
            used = i in kept
            marks[(pid, rollout.member)] = (advantages[i], used)
            if used:
                samples.extend(
                    Sample(s.prompt_ids, s.completion_ids, advantages[i], pid, rollout.member) for s in rollout.steps
                )
    return samples, marks


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
        self._check_run_dir()
        mode = config.grpo.mode
        self.pool = kept_prompts(prompts_for(train_pool or load_pool(config.tasks), mode), config.tasks.keep_list, mode)
        heldout = heldout_pool or (load_pool(config.heldout) if config.heldout else None)
        self.heldout = prompts_for(heldout, mode) if heldout else None
        self.prompt_ids = [t.task_id for t in self.pool.tasks]
        self.policy = Policy.load(config.policy)
        self.agent, self.sync = self._engine()
        self._write_runtime()
        if self.dist.enabled:
            self.policy.shard(self.dist)
        torch.manual_seed(config.seed)  # after the engine: an in-process vLLM engine reseeds torch
        random.seed(config.seed)
        self.updater = PolicyUpdater(self.policy, config.update, temperature=config.rollout.temperature, dist=self.dist)
        self.filter = make_filter(config.filter, config.seed)
        self.plan = EpochPlan(self.prompt_ids, self.filter, seed=config.seed, epochs=config.epochs)
        self.step = 0
        self.elapsed = 0.0  # training time: rollout + update + sync, summed over steps (time/train_s)
        self._resume()
        if self.sync is not None:
            self.sync.push(self.policy.weights_for_sync())

    # --- setup -----------------------------------------------------------------------------

    def _check_run_dir(self) -> None:
        path = self.files.run_dir / "config.yaml"
        mine = self.config.to_dict()
        if path.exists():
            try:  # through the dataclasses, so a key added since that run reads as its default
                theirs = from_dict(TrainConfig, yaml.safe_load(path.read_text(encoding="utf-8")) or {}).to_dict()
            except (TypeError, ValueError) as exc:
                raise RunConflict(f"{self.files.run_dir} holds a run this version cannot read: {exc}") from exc
            differ = sorted(k for k in set(mine) | set(theirs) if mine.get(k) != theirs.get(k))
            if set(differ) - set(RESUMABLE_CHANGES):
                raise RunConflict(f"{self.files.run_dir} holds a run with other settings ({', '.join(differ)})")
        self.dist.barrier()  # every rank has read it before rank 0 rewrites it
        if self.dist.is_main:
            path.write_text(dump_config(self.config), encoding="utf-8")

    def _write_runtime(self) -> None:
        """runtime.json: what ``auto`` settings became on this machine (schedule, dtypes), beside config.yaml."""
        if not self.dist.is_main:
            return
        from tooluse_agents.dtypes import machine
        from tooluse_agents.rollout import resolve_schedule

        runtime = {
            "schedule": resolve_schedule(self.config.rollout.schedule, self._rollout_agent()),
            "rollout_dtype": getattr(self.agent, "dtype", None),
            "autocast": self.policy.autocast_dtype,
            "machine": machine(),
        }
        (self.files.run_dir / "runtime.json").write_text(json.dumps(runtime, indent=2), encoding="utf-8")

    def _engine(self):
        rollout, policy = self.config.rollout, self.policy
        if rollout.engine == "hf":
            from tooluse_agents.hf_agent import HFAgent, HFAgentConfig

            if not self.dist.enabled:  # the engine generates with the policy itself
                agent = HFAgent(HFAgentConfig(model=policy.path), model=policy.model, tokenizer=policy.tokenizer)
                return agent, None
            # the policy will be sharded, and a rank generating alone cannot run sharded layers: a whole copy
            from tooluse_agents.grpo.weight_sync import ModuleWeightSync

            engine = copy.deepcopy(policy.model)
            agent = HFAgent(HFAgentConfig(model=policy.path), model=engine, tokenizer=policy.tokenizer)
            return agent, ModuleWeightSync(engine)
        from tooluse_agents.grpo.weight_sync import VLLMWeightSync
        from tooluse_agents.vllm_agent import VLLMAgent, VLLMAgentConfig

        if self.dist.enabled and not torch.cuda.is_available():  # each rank's engine on its own cores
            os.environ.setdefault("VLLM_CPU_OMP_THREADS_BIND", self.dist.cpu_cores())
        tp = rollout.tensor_parallel_size
        if tp > 1 and (self.dist.world_size % tp or not torch.cuda.is_available()):
            raise ValueError(
                f"rollout.tensor_parallel_size {tp} needs GPUs and a world size that it divides "
                f"(this run: {self.dist.world_size} rank(s)); launch with torchrun --nproc-per-node {tp} or more"
            )

        agent = VLLMAgent(
            VLLMAgentConfig(
                model=policy.path,
                dtype=rollout.vllm_dtype,
                max_model_len=rollout.max_model_len,
                cpu_kv_cache_gib=rollout.cpu_kv_cache_gib,
                gpu_memory_utilization=rollout.gpu_memory_utilization,
                tensor_parallel_size=tp,
                external_launcher=tp > 1,
                in_process=True,
            )
        )
        return agent, VLLMWeightSync(agent.llm)

    def _rollout_agent(self) -> ScriptedTurns:
        return ScriptedTurns(self.agent, before_last_turn if self.config.grpo.mode == "next_turn" else None)

    def _resume(self) -> None:
        found = latest_checkpoint(self.files.checkpoints)
        self.files.truncate_after(int(found.name.split("_")[-1]) if found else 0)
        if found is None:
            return
        weights, optimizer, state, rng = load_checkpoint(found)
        if state.get("world_size", 1) != self.dist.world_size:
            raise RunConflict(
                f"{found} was written by a run on {state.get('world_size', 1)} rank(s); resume it on as many "
                f"(this run has {self.dist.world_size}), or start a new run folder"
            )
        if self.dist.enabled:
            load_sharded(self.policy.model, self.updater.optimizer, found / "sharded")
            rng = rng[self.dist.rank]
        else:
            self.policy.load_trainable_state(weights)
            self.updater.optimizer.load_state_dict(optimizer)
        self.filter.load_state_dict(state["filter"])
        self.plan.load_state_dict(state)
        self.step = state["step"]
        self.elapsed = state["elapsed_s"]
        set_rng_state(rng)

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
        from tqdm import tqdm

        cfg = self.config
        per_epoch = math.ceil(len(self.prompt_ids) / cfg.grpo.prompts_per_step)
        total = cfg.max_steps or cfg.epochs * per_epoch
        bar = tqdm(total=total, initial=self.step, disable=not self.progress, unit="step", file=sys.stderr)
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
                bar.update(1)
                bar.set_postfix(
                    epoch=self.epoch, reward=f"{last['rollout/reward_mean']:.2f}", skipped=self.plan.counts.skipped
                )
            if self.heldout is not None and EVAL_KEY not in last and self.step > first_step:
                last[EVAL_KEY] = self._evaluate()  # the filter skipped every prompt of the epochs left
            last["stopped_by"] = stopped_by
            self._save()
            if cfg.export_final:
                self._export()
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
        if not self.dist.enabled:
            return mine
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
        update = self.updater.step([s for s in samples if s.group in mine] if self.dist.enabled else samples)
        update_s = time.perf_counter() - start
        start = time.perf_counter()
        if self.sync is not None:
            self.sync.push(self.policy.weights_for_sync())
        sync_s = time.perf_counter() - start
        times, spread = self._slowest(rollout_s, update_s, sync_s)
        before_s = self.elapsed
        self.elapsed += sum(times)
        record = self._metrics(played, samples, marks, update, *times)
        if self.dist.enabled:  # how much slower the slowest rank was than the fastest, per phase
            record.update({f"dist/{k}_spread_s": v for k, v in zip(("rollout", "update", "sync"), spread, strict=True)})
        for pid, group in seen.items():
            for r in group:
                advantage, used = marks[(pid, r.member)]
                train = {"step": self.step, "epoch": self.epoch, "member": r.member, "advantage": advantage}
                self.files.episode({**r.record, "train": {**train, "used": used}})
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

    def _metrics(self, played: ScreenedStep, samples, marks, update, rollout_s, update_s, sync_s) -> dict[str, Any]:
        """The step's metrics; group counts cover every group rolled out (a screened one by its screen)."""
        groups = played.seen
        rollouts = [r for g in groups.values() for r in g]
        rewards = [r.reward for r in rollouts]
        n_groups = max(1, len(groups))
        outcomes = [group_outcome([r.reward for r in g], self.config.filter.max_reward) for g in groups.values()]
        correct, wrong = outcomes.count(ALL_CORRECT), outcomes.count(ALL_WRONG)
        zero = correct + wrong
        generated_tokens = sum(r.completion_tokens for r in rollouts)
        update_tokens = sum(len(s.completion_ids) for s in samples)
        zero_tokens = sum(len(s.completion_ids) for s in samples if s.advantage == 0.0)
        return {
            "step": self.step,
            "epoch": self.epoch,
            "rollout/reward_mean": sum(rewards) / len(rewards) if rewards else 0.0,
            "groups/all_correct_frac": correct / n_groups,
            "groups/all_wrong_frac": wrong / n_groups,
            "groups/mixed_frac": (len(groups) - zero) / n_groups,
            **self.plan.counts.metrics(),
            **self.plan.ended_metrics(),
            **self.filter.rates(),
            "filter/zero_variance_frac": zero / n_groups,
            **played.metrics(),
            "subsample/generated": len(rollouts),
            "subsample/used": sum(1 for _, used in marks.values() if used),
            "time/rollout_s": rollout_s,
            "time/update_s": update_s,
            "time/sync_s": sync_s,
            "time/train_s": self.elapsed,
            "time/elapsed_s": self.elapsed,  # the older name of time/train_s
            "perf/tokens_per_s": generated_tokens / rollout_s if rollout_s > 0 else 0.0,
            "rollout/completion_tokens": generated_tokens,
            "update/tokens": update_tokens,
            "update/zero_adv_token_frac": zero_tokens / update_tokens if update_tokens else 0.0,
            "dist/world_size": self.dist.world_size,
            **update,
        }

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
                self.files.eval_episode({**r.record, "eval_step": self.step})
        self.files.eval(
            {
                "step": self.step,
                "epoch": self.epoch,
                EVAL_KEY: reward,
                "episodes": len(rewards),
                "time/train_s": self.elapsed,
                "time/elapsed_s": self.elapsed,
                "time/eval_s": self._slowest(time.perf_counter() - start)[0][0],
            }
        )
        return reward

    def _save(self) -> None:
        if latest_checkpoint(self.files.checkpoints) == self.files.checkpoints / f"step_{self.step:06d}":
            return
        state = {
            **self.plan.state_dict(),
            "filter": self.filter.state_dict(),
            "elapsed_s": self.elapsed,
            "world_size": self.dist.world_size,
        }
        folder, keep = self.files.checkpoints, self.config.keep_checkpoints
        if not self.dist.enabled:
            save_checkpoint(folder, self.step, self.policy.trainable_state(), self.updater.optimizer, state, keep)
            return
        tmp = scratch_folder(folder, self.step) if self.dist.is_main else folder / f".tmp-step_{self.step:06d}"
        self.dist.barrier()  # the scratch folder exists before any rank writes into it
        save_sharded(self.policy.model, self.updater.optimizer, tmp / "sharded")
        rng = self.dist.gather(rng_state())
        if self.dist.is_main:
            publish(folder, self.step, tmp, state, rng, keep)
        self.dist.barrier()

    def _export(self) -> None:
        target = self.files.run_dir / "final_model"
        if self.dist.enabled:
            weights = self.policy.trainable_state()  # gathered on every rank, saved by rank 0
            if self.dist.is_main:
                self.policy.model.save_pretrained(target, state_dict=weights)
                self.policy.tokenizer.save_pretrained(target)
            self.dist.barrier()
            return
        self.policy.model.save_pretrained(target)  # with LoRA: the adapter folder (peft)
        self.policy.tokenizer.save_pretrained(target)
