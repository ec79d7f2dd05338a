"""Study A's TRL arm: TRL's ``GRPOTrainer`` through our adapter, timed and evaluated as our trainer is.

    python -m experiments.trainer_vs_trl.trl_arm CONFIG [key=value ...] [--backend hf_generate] [--no-progress]

It takes our trainer's config and overrides (`tooluse_agents.train.grpo.config`), so that
`experiments.trainer_vs_trl` hands the TRL arm exactly what it hands our arms, plus `AS_TRL`
(what TRL's trainer is in our config's terms: no pre-rollout filter, every rollout in the update).
From that config:

- **TRL's settings** (`grpo_settings`): the pre-registration's table (group size, batch,
  optimizer, clip range, loss, sampling, fp32 on the CPU, gradient checkpointing, seeds), each
  read from the config's own field, so the two trainers' settings are equal by construction;
  `check_comparable` refuses a config with a knob TRL has no counterpart for.
- **The data**: our trainer's training pool (`load_pool` of ``tasks``, then ``prompts_for`` the
  mode: next-turn prompts, the oracle playing the earlier turns), played through
  `tooluse_agents.integrations.trl`'s ``make_rollout_func`` over ``ToolUse-Tasks-v0`` with the
  training protocol. Episodes are played only by the adapter (the one rollout loop).
- **The clock and the held-out evaluations** (`experiments.trainer_vs_trl.trl_clock`): a callback keeps the
  training time; at the first optimizer-step boundary at or after each multiple of
  ``eval.every_train_s`` (and on the last step) it stops the clock, saves the weights and runs
  our held-out evaluator on them: our trainer itself (``python -m tooluse_agents.cli.train`` on the
  same config with ``policy.model`` the saved weights and ``max_steps=0``, which evaluates at
  step 0 and stops), so every arm is measured by the same code. The run stops once ``budget_s``
  of training time is spent (the step that reaches it is the last), after ``max_steps``, or when
  TRL's epochs end.
- **The run folder**, in our trainer's format (`tooluse_agents.runs.runlog`): ``config.yaml``,
  ``runtime.json``, ``metrics.jsonl`` (one optimizer step a line, `experiments.trainer_vs_trl.trl_clock.step_row`),
  ``episodes.jsonl``, ``eval.jsonl``, ``eval_episodes.jsonl``; and TRL's own: ``trl_log.jsonl``
  (TRL's logged metrics, one line a step) and ``trl.json`` (its settings, versions, backend, the
  limit that stopped it). ``evals/step_N/`` keeps each evaluation's own run folder, its
  checkpoint removed. The arm is not resumable: a folder left by a killed TRL run is started afresh.

``--backend``: ``hf_generate`` (the adapter generates with the trained model through transformers)
or ``vllm_colocate`` (TRL's vLLM engine in this process; the adapter does not generate through it
yet and refuses it, which is then the arm's recorded error).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, cast

BACKENDS: dict[str, dict[str, Any]] = {
    "vllm_colocate": {"use_vllm": True, "vllm_mode": "colocate"},
    "hf_generate": {"use_vllm": False},
}
PRECISION = {"cpu": None, "cuda": "bfloat16"}
"""The devices the arm runs on, with the compute dtype each must be configured with (weights are fp32)."""
AS_TRL = ("filter.enabled=false", "grpo.update_size=null")
"""TRL's GRPOTrainer in our config's terms: no pre-rollout filter, every rollout in the update."""
TRAINER = "tooluse_agents.cli.train"
EVAL_OVERRIDES = ("max_steps=0", "eval.at_start=true", "save_every=1000000", "keep_checkpoints=1", "export_final=false")
"""What turns our trainer into the held-out evaluator of a model: evaluate at step 0, then stop."""
MARKER = "trl.json"


def check_comparable(config: Any) -> None:
    """Refuse a config with a knob TRL's trainer has no counterpart for (a `TrainConfig`)."""
    g, u, p = config.grpo, config.update, config.policy
    problems = [
        (config.filter.enabled, "filter.enabled: TRL has no pre-rollout filter"),
        (g.update_size is not None, "grpo.update_size: TRL updates on every rollout"),
        (config.rollout.screen is not None, "rollout.screen: TRL has no screen"),
        (g.normalize_over != "group", "grpo.normalize_over: TRL normalises over the group (scale_rewards=group)"),
        (u.mini_batches != 1, "update.mini_batches: one optimizer step per generation here"),
        (u.entropy_coef != 0, "update.entropy_coef: TRL has no entropy bonus"),
        (p.lora is not None, "policy.lora: the arm trains the full model"),
        (p.dtype != "float32", "policy.dtype: the arm keeps fp32 weights"),
        (p.device not in PRECISION, f"policy.device: the arm runs on {' or '.join(PRECISION)}"),
        (PRECISION.get(p.device) != p.autocast, "policy.autocast: fp32 compute on a CPU, bf16 autocast on a GPU"),
    ]
    bad = [why for wrong, why in problems if wrong]
    if bad:
        raise ValueError("the config has knobs TRL's GRPOTrainer cannot match: " + "; ".join(bad))


def grpo_settings(
    config: Any, backend: str, output_dir: str | Path, progress: bool = False, micro_batch: int | None = None
) -> dict[str, Any]:
    """``trl.GRPOConfig``'s arguments from our config: the pre-registration's table, field by field.

    `micro_batch`: sequences per forward/backward (TRL's ``per_device_train_batch_size``), the
    generation batch then accumulated over ``batch / micro_batch`` of them into one optimizer step.
    None: the whole generation batch at once.
    """
    check_comparable(config)
    g, u, r = config.grpo, config.update, config.rollout
    batch = g.group_size * g.prompts_per_step
    micro_batch = micro_batch or batch
    if batch % micro_batch:
        raise ValueError(f"micro_batch {micro_batch} must divide the generation batch {batch}")
    return {
        "output_dir": str(output_dir),
        "num_generations": g.group_size,
        "per_device_train_batch_size": micro_batch,
        "gradient_accumulation_steps": batch // micro_batch,
        "steps_per_generation": batch // micro_batch,
        "learning_rate": u.lr,
        "lr_scheduler_type": "constant",
        "warmup_steps": 0,
        "adam_beta1": u.betas[0],
        "adam_beta2": u.betas[1],
        "weight_decay": u.weight_decay,
        "max_grad_norm": u.max_grad_norm if u.max_grad_norm is not None else 0.0,
        "optim": "adamw_torch",  # ours: torch.optim.AdamW (TRL's default is its fused kernel)
        "epsilon": u.clip_low,
        "epsilon_high": u.clip_high,
        "beta": u.kl_coef,
        "num_iterations": u.ppo_epochs,
        "loss_type": "dapo",
        "scale_rewards": "group",
        "temperature": r.temperature,
        "top_p": r.top_p,
        "top_k": 0,
        "bf16": config.policy.autocast == "bfloat16",
        "fp16": False,
        "use_cpu": config.policy.device == "cpu",
        "gradient_checkpointing": config.policy.gradient_checkpointing,
        "seed": config.seed,
        "data_seed": config.seed,
        "max_completion_length": r.max_model_len,  # per episode; binds neither trainer on next-turn prompts
        "num_train_epochs": config.epochs,
        "max_steps": config.max_steps if config.max_steps is not None else -1,
        "logging_steps": 1,
        "save_strategy": "no",
        "report_to": "none",
        "disable_tqdm": not progress,
        **BACKENDS[backend],
        **({"vllm_max_model_length": r.max_model_len} if BACKENDS[backend]["use_vllm"] else {}),
    }


class Evaluator:
    """Our held-out evaluator on a model folder: our trainer with `EVAL_OVERRIDES`, in its own process.

    Args:
        config_path: The config file the arm was started with.
        overrides: Its overrides (the arm's), `AS_TRL` included.
        folder: Where each evaluation's run folder goes (``step_N/``).
    """

    def __init__(self, config_path: str, overrides: Sequence[str], folder: Path):
        self.config_path = config_path
        self.overrides = list(overrides)
        self.folder = folder

    def command(self, model: str | Path, run_dir: Path) -> list[str]:
        sets = [*self.overrides, *EVAL_OVERRIDES, f"policy.model={model}", f"run_dir={run_dir}"]
        return [sys.executable, "-m", TRAINER, self.config_path, *sets, "--no-progress"]

    def __call__(self, model: str | Path, step: int) -> tuple[float, list[dict[str, Any]]]:
        """The held-out reward of `model` and its episodes (`eval_episodes.jsonl`'s lines)."""
        from tooluse_agents.runs.jsonl import read_jsonl

        run_dir = self.folder / f"step_{step:06d}"
        shutil.rmtree(run_dir, ignore_errors=True)
        subprocess.run(self.command(model, run_dir), check=True, stdout=sys.stderr)
        rows = read_jsonl(run_dir / "eval.jsonl")[0]
        episodes = read_jsonl(run_dir / "eval_episodes.jsonl")[0]
        shutil.rmtree(run_dir / "checkpoints", ignore_errors=True)
        if len(rows) != 1 or rows[0]["step"] != 0:
            raise RuntimeError(f"{run_dir}: expected one evaluation at step 0, got {rows}")
        return float(rows[0]["eval/heldout_reward"]), episodes


class ArmRun:
    """The arm's bookkeeping between TRL's callback events: clock, evaluations, run files."""

    def __init__(self, config: Any, files: Any, meter: Any, evaluate: Callable, prompts: int, clock: Any = None):
        from experiments.trainer_vs_trl.trl_clock import Limits, TrainingClock

        self.config = config
        self.files = files
        self.meter = meter
        self.evaluator = evaluate
        self.prompts = prompts
        self.clock = clock or TrainingClock()
        ev = config.eval
        self.limits = Limits(
            config.budget_s, config.max_steps, ev.every_train_s, ev.every_steps, heldout=config.heldout is not None
        )
        self.train_s = 0.0
        self.stopped_by: str | None = None
        self.pending: dict[str, Any] | None = None
        self.last_reward: float | None = None

    def evaluate(self, step: int, epoch: int, model: str | Path) -> float:
        """Evaluate `model` (a folder) on the held-out prompts; write its lines (clock stopped by the caller)."""
        from tooluse_agents.train.grpo.metrics import eval_metrics

        start = time.perf_counter()  # the weights were saved just before: not counted here
        reward, episodes = self.evaluator(model, step)
        for episode in episodes:
            self.files.eval_episode({**episode, "eval_step": step})
        eval_s = time.perf_counter() - start
        self.files.eval(eval_metrics(step, epoch, reward, len(episodes), train_s=self.train_s, eval_s=eval_s))
        self.last_reward = reward
        return reward

    def step_end(self, step: int, epoch: float, last_step: int, save: Callable[[Path], None]) -> bool:
        """At an optimizer-step boundary: count the step, evaluate when due; True: this step is the last."""
        from experiments.trainer_vs_trl.trl_clock import step_end

        with self.clock.paused():
            before, self.train_s = self.train_s, self.clock.seconds
            rollouts = self.meter.take()
            n = max(1, math.ceil(epoch - 1e-9))
            for member, episode in enumerate(rollouts.episodes):
                train = {"step": step, "epoch": n, "member": member, "advantage": None, "used": True}
                self.files.episode({**episode, "train": train})
            self.pending = {"step": step, "epoch": n, "rollouts": rollouts, "step_s": self.train_s - before}
            due, self.stopped_by = step_end(before, self.train_s, step, last_step, self.limits)
            if due:
                folder = self.files.run_dir / "eval_model"
                save(folder)
                self.evaluate(step, n, folder)
                self.pending["evaluated"] = True
        return self.stopped_by is not None

    def log(self, step: int, logs: dict[str, Any]) -> None:
        """TRL's logged metrics of a step: write its metrics line (clock stopped) and keep TRL's own line."""
        from experiments.trainer_vs_trl.trl_clock import step_row
        from tooluse_agents.runs.jsonl import append_jsonl
        from tooluse_agents.runs.metrics import EVAL_KEY
        from tooluse_agents.runs.records import MetricsRecord

        with self.clock.paused():
            append_jsonl(self.files.run_dir / "trl_log.jsonl", {"step": step, **logs})
            p = self.pending
            if p is None or p["step"] != step or "loss" not in logs:
                return  # TRL's end-of-training summary, or a step already written
            row = step_row(
                step,
                p["epoch"],
                p["rollouts"],
                step_s=p["step_s"],
                train_s=self.train_s,
                prompts=self.prompts,
                logs=logs,
            )
            row = {k: v for k, v in row.items() if v is not None}
            if p.get("evaluated"):
                row[EVAL_KEY] = self.last_reward
            self.files.metrics(MetricsRecord.from_dict(row))
            self.pending = None


def _callback(arm: ArmRun) -> Any:
    """TRL's side of `ArmRun`: a `transformers.TrainerCallback`."""
    from transformers import TrainerCallback

    class Clock(TrainerCallback):
        def on_train_begin(self, args, state, control, **kwargs):
            arm.clock.start()

        def on_step_end(self, args, state, control, model=None, processing_class=None, **kwargs):
            def save(folder: Path) -> None:
                shutil.rmtree(folder, ignore_errors=True)
                model.save_pretrained(folder)
                processing_class.save_pretrained(folder)

            if arm.step_end(state.global_step, state.epoch, state.max_steps, save):
                control.should_training_stop = True

        def on_log(self, args, state, control, logs=None, **kwargs):
            arm.log(state.global_step, dict(logs or {}))

        def on_train_end(self, args, state, control, **kwargs):
            arm.clock.stop()

    return Clock()


def _fresh(run_dir: Path) -> None:
    """A TRL arm's folder left by a killed run is started afresh; any other non-empty folder is refused."""
    if run_dir.is_dir() and any(run_dir.iterdir()):
        if not (run_dir / MARKER).is_file() and not (run_dir / "trl_log.jsonl").is_file():
            raise SystemExit(f"{run_dir} holds something else than a TRL arm's run: give another run_dir")
        print(
            f"trl_arm: {run_dir} holds an unfinished TRL run; the arm is not resumable: starting afresh",
            file=sys.stderr,
        )
        shutil.rmtree(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / MARKER).write_text(json.dumps({"status": "running"}) + "\n", encoding="utf-8")


def train(
    config: Any,
    config_path: str,
    overrides: Sequence[str],
    backend: str,
    progress: bool,
    micro_batch: int | None = None,
) -> dict[str, Any]:
    """Run the arm (module docstring); returns what ``trl.json`` records."""
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    import torch
    import transformers
    import trl
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    from experiments.trainer_vs_trl.trl_clock import RolloutMeter
    from tooluse_agents.backends.dtypes import machine
    from tooluse_agents.integrations import trl as tooluse_trl
    from tooluse_agents.models.resolve import resolve_model
    from tooluse_agents.runs.runlog import RunFiles
    from tooluse_agents.train.grpo.config import dump_config
    from tooluse_agents.train.grpo.prefilter import kept_prompts
    from tooluse_agents.train.grpo.rollouts import before_last_turn
    from tooluse_agents.train.grpo.tasks import env_factory, load_pool, prompts_for

    run_dir = Path(config.run_dir)
    settings = grpo_settings(config, backend, run_dir / "trl", progress, micro_batch)
    _fresh(run_dir)
    (run_dir / "config.yaml").write_text(dump_config(config), encoding="utf-8")
    versions = {"trl": trl.__version__, "transformers": transformers.__version__, "torch": torch.__version__}
    runtime = {
        "schedule": "lockstep",
        "rollout_dtype": "float32",
        "autocast": config.policy.autocast,
        "machine": machine(),
    }
    (run_dir / "runtime.json").write_text(json.dumps({**runtime, "backend": backend, **versions}, indent=2))
    if config.policy.threads:
        torch.set_num_threads(config.policy.threads)
    mode = config.grpo.mode
    pool = kept_prompts(prompts_for(load_pool(config.tasks), mode), config.tasks.keep_list, mode)
    make_env = env_factory(pool, config.protocol)
    scripted = before_last_turn if mode == "next_turn" else None
    rollout = tooluse_trl.make_rollout_func(
        make_env, scripted=scripted, max_new_tokens=config.rollout.max_tokens, batch_size=config.rollout.num_envs
    )
    meter = RolloutMeter(rollout)
    files = RunFiles(run_dir)
    evaluate = Evaluator(config_path, [*overrides, *AS_TRL], run_dir / "evals")
    arm = ArmRun(config, files, meter, evaluate, len(pool.tasks))
    model = resolve_model(config.policy.model)
    record: dict[str, Any] = {
        "status": "running",
        "backend": backend,
        "grpo_config": settings,
        "rollout_func": {
            "env": "ToolUse-Tasks-v0 over the training pool (tooluse_agents.train.grpo.tasks.env_factory)",
            "prompts": len(pool.tasks),
            "mode": mode,
            "scripted": "before_last_turn" if scripted else None,
            "max_new_tokens": config.rollout.max_tokens,
            "batch_size": config.rollout.num_envs,
        },
        "versions": versions,
        "eval_command": evaluate.command("MODEL", Path("RUN_DIR")),
    }
    try:
        if config.heldout is not None and config.eval.at_start:
            arm.evaluate(0, 0, model)
        trainer = GRPOTrainer(
            model=AutoModelForCausalLM.from_pretrained(model, dtype=torch.float32),
            processing_class=AutoTokenizer.from_pretrained(model),
            args=GRPOConfig(**settings),
            train_dataset=tooluse_trl.dataset(make_env),
            reward_funcs=cast(Any, tooluse_trl.checker_reward),  # TRL's type wants list[float | None]
            rollout_func=meter,
            callbacks=[_callback(arm)],
        )
        trainer.train()
        record.update(status="done", stopped_by=arm.stopped_by or "epochs", steps=trainer.state.global_step)
    except Exception as e:
        record.update(status="failed", error={"type": type(e).__name__, "message": str(e)})
        raise
    finally:
        meter.close()
        files.close()
        record["train_s"] = arm.train_s
        (run_dir / MARKER).write_text(json.dumps(record, indent=1, default=str) + "\n", encoding="utf-8")
    return record


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m experiments.trainer_vs_trl.trl_arm", description=__doc__.split("\n")[0]
    )
    parser.add_argument("config", help="our trainer's YAML config (agents/train/grpo/configs/)")
    parser.add_argument("overrides", nargs="*", help="dotted.key=value overrides, as our trainer takes them")
    parser.add_argument("--backend", choices=list(BACKENDS), default="hf_generate", help="TRL's generation backend")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument(
        "--micro-batch", type=int, help="sequences per forward/backward, accumulated (default: the whole batch)"
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_intermixed_args(argv)
    from tooluse_agents.cli.eval import quiet_backends
    from tooluse_agents.train.grpo.config import load_config

    overrides = [*args.overrides, *AS_TRL]
    config = load_config(args.config, overrides)
    with quiet_backends():
        record = train(
            config,
            args.config,
            args.overrides,
            args.backend,
            progress=not args.no_progress,
            micro_batch=args.micro_batch,
        )
    print(json.dumps({k: record.get(k) for k in ("status", "backend", "stopped_by", "steps", "train_s")}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
