"""Supervised warm-start: fine-tune a model on scenario ground truth before RL.

GRPO learns only from groups whose rollouts disagree. A model that never emits a parseable
call (SmolLM2-135M under every prompt we tried) gives all-wrong groups and no gradient at
all, so RL on it cannot start. A short supervised pass on a *separate* split of the
curriculum (``scenarios/curriculum/warmup.yaml``, disjoint from train and held-out) teaches
the call format; RL then starts from a model that sometimes succeeds.

    python -m tooluse_agents.train.sft --scenarios scenarios/curriculum/warmup.yaml --out runs/warmstart
    tooluse eval run --agent vllm --model runs/warmstart/model --scenarios scenarios/curriculum/train.yaml ...

Examples come from the environment itself: the oracle plays each task under the chosen
protocol knobs, and every assistant step becomes one example, its prompt rendered exactly as
the agents render observations (the tokenizer's chat template) and its completion the
oracle's message followed by the end-of-turn token. Turn-closing messages are examples too,
so the model learns to stop calling.

With ``detach_prompt`` (the default) prompts run without gradient and only the completions are
back-propagated, attending to the prompts' cached keys and values: the batch is one group of
GRPO's shared-prompt update (`tooluse_agents.train.shared_prompt`), so the batch's common prefix (the
system text and tool descriptions) runs once, and each distinct prompt extends it. The
completion tokens get their exact log-likelihood; the gradient that would flow back into the
prompt positions is dropped. On a CPU this is several times cheaper per example, since prompts
here are ~900 tokens against ~30 for a completion. Epochs go task by task (a task's steps stay
together, in order).
"""

from __future__ import annotations

import argparse
import json
import random
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym

import tooluse_gym  # noqa: F401  (registers the environments)
from tooluse_agents.backends.base import AgentRequest, Generation, SamplingConfig, chat_prompt
from tooluse_agents.backends.oracle import OracleAgent
from tooluse_agents.cli.config_loader import load
from tooluse_agents.cli.flags import DefaultsHelpFormatter, add_config_flags, add_config_source, given_config
from tooluse_agents.rollout.loop import RolloutJob, run_rollouts
from tooluse_agents.train.checks import require
from tooluse_agents.train.settings import TRAIN_PROTOCOL, LoraSettings
from tooluse_gym.envs import SCENARIO_ID
from tooluse_gym.envs.knobs import Knobs
from tooluse_gym.tasks.scenario import load_scenario_set


@dataclass(frozen=True, kw_only=True)
class SFTConfig:
    """A warm-start run.

    Attributes:
        model: Starting model (``smollm2-135m``, ``tiny-random``, a folder or an HF id).
        scenarios: Scenario file or folder whose ground truth is the training data.
        out: Run folder: ``model/`` (the final weights and tokenizer), ``epoch_N/`` and ``sft.jsonl``.
        protocol: The knobs the examples are rendered with (`TRAIN_PROTOCOL` unless changed); use
            the ones the model will be evaluated and trained under.
        epochs: Passes over the examples (shuffled each epoch with `seed`).
        lr: AdamW learning rate, constant after `warmup_steps` of linear warm-up.
        warmup_steps: Optimizer steps over which the learning rate rises linearly to `lr`.
        batch_size: Examples per optimizer step (gradients accumulated; the loss is the mean over
            the batch's completion tokens). Epochs shuffle tasks and keep a task's steps together.
        max_grad_norm: Gradient clipping: the most the gradient norm may be after clipping.
        detach_prompt: Run prompts without gradient (see the module docstring).
        limit: Use only the first `limit` scenarios (smoke runs and tests).
        save_epochs: Also save ``epoch_N/`` after every epoch (to pick the warm-start length).
        seed: Shuffling and torch seed.
        threads: torch intra-op threads (left out: torch's default).
        lora: Train LoRA adapters (peft) instead of every weight; ``model/`` then holds only the
            adapter, saved in bfloat16 (a few MB: small enough to ship, as the package's
            ``smollm2-135m-warmstart`` does; `tooluse_agents.models.resolve`).
    """

    model: str = "smollm2-135m"
    scenarios: str = "scenarios/curriculum/warmup.yaml"
    out: str = "runs/warmstart"
    protocol: Knobs = TRAIN_PROTOCOL
    epochs: int = 1
    lr: float = 1e-4
    warmup_steps: int = 5
    batch_size: int = 8
    max_grad_norm: float = 1.0
    detach_prompt: bool = True
    limit: int | None = None
    save_epochs: bool = True
    seed: int = 0
    threads: int | None = None
    lora: LoraSettings | None = None

    def __post_init__(self) -> None:
        require(
            self,
            epochs=">= 1",
            lr="> 0",
            warmup_steps=">= 0",
            batch_size=">= 1",
            max_grad_norm="> 0",
            limit=">= 1",
            seed=">= 0",
            threads=">= 1",
        )


@dataclass(frozen=True)
class Example:
    """One assistant step: prompt tokens (no loss) and the target completion tokens."""

    task_id: str
    step: int
    prompt_ids: tuple[int, ...]
    completion_ids: tuple[int, ...]


class _TokenizedOracle:
    """The oracle's messages with the tokens SFT trains on: the rendered prompt, and the message closed by EOS."""

    name = "oracle"

    def __init__(self, tokenizer: Any) -> None:
        self.tokenizer = tokenizer
        self.oracle = OracleAgent()

    def generate(self, requests: Sequence[AgentRequest], sampling: SamplingConfig) -> list[Generation]:
        """The ground-truth message of each request, with its prompt and completion token ids."""
        out = []
        for request in requests:
            message = self.oracle.message(request)
            prompt = self.tokenizer(chat_prompt(self.tokenizer, request.observation), add_special_tokens=False)
            completion = [*self.tokenizer(message, add_special_tokens=False)["input_ids"], self.tokenizer.eos_token_id]
            out.append(
                Generation(text=message, prompt_token_ids=tuple(prompt["input_ids"]), token_ids=tuple(completion))
            )
        return out

    def describe(self) -> dict[str, Any]:
        """The oracle's identity."""
        return self.oracle.describe()

    def close(self) -> None:
        """Nothing to release."""


def build_examples(config: SFTConfig, tokenizer: Any) -> list[Example]:
    """Play the oracle through the scenario env (the rollout loop) and keep every step as an example."""
    tasks = load_scenario_set(config.scenarios).tasks
    if config.limit is not None:
        tasks = tasks[: config.limit]

    def make_env() -> gym.Env:
        return gym.make(SCENARIO_ID, path=config.scenarios, **config.protocol.to_dict())

    jobs = [RolloutJob(task.task_id, config.seed) for task in tasks]
    episodes = run_rollouts(
        make_env, _TokenizedOracle(tokenizer), jobs, sampling=SamplingConfig(), num_envs=1, schedule="lockstep"
    )
    examples: list[Example] = []
    for episode in episodes:
        task_id = episode.record.task_id
        if episode.record.reward != 1.0:
            raise RuntimeError(f"the ground truth of {task_id} does not replay to reward 1.0")
        for step, generation in enumerate(episode.generations):
            assert generation.prompt_token_ids is not None and generation.token_ids is not None
            examples.append(Example(task_id, step, generation.prompt_token_ids, generation.token_ids))
    return examples


def batch_nll(policy: Any, batch: Sequence[Example], detach_prompt: bool, backward_scale: float | None = None) -> float:
    """Summed negative log-likelihood of the batch's completion tokens, with GRPO's log-prob code.

    With `detach_prompt` the batch's prompts run as one group of `tooluse_agents.train.shared_prompt`
    (their common prefix once, without gradient). Without, each example runs whole through
    `Policy.token_logprobs`, one at a time. With `backward_scale` the NLL times it is
    back-propagated (gradients accumulate in the model).
    """
    from tooluse_agents.train.batch import Sample, collate
    from tooluse_agents.train.shared_prompt import shared_prompt_logprobs

    samples = [Sample(e.prompt_ids, e.completion_ids, 0.0, group="sft") for e in batch]
    parts = [samples] if detach_prompt else [[s] for s in samples]
    total = 0.0
    for part in parts:
        if detach_prompt:
            logprobs, _ = shared_prompt_logprobs(policy, part)
        else:
            logprobs, _ = policy.token_logprobs(collate(part, policy.tokenizer.pad_token_id))
        nll = -logprobs.sum()
        if backward_scale is not None:
            (nll * backward_scale).backward()
        total += nll.item()
    return total


def task_order(examples: Sequence[Example], rng: random.Random) -> list[Example]:
    """Examples with tasks shuffled and each task's steps kept together, in step order."""
    by_task: dict[str, list[Example]] = {}
    for e in examples:
        by_task.setdefault(e.task_id, []).append(e)
    tasks = list(by_task)
    rng.shuffle(tasks)
    return [e for t in tasks for e in sorted(by_task[t], key=lambda e: e.step)]


def train(config: SFTConfig, progress: bool = True) -> dict[str, Any]:
    """Run the warm-start; returns a summary (also written to ``out/summary.json``)."""
    import torch

    from tooluse_agents.progress import progress_bar
    from tooluse_agents.train.policy import Policy
    from tooluse_agents.train.settings import PolicyConfig

    torch.manual_seed(config.seed)
    # the trainers' one model loader (names such as smollm2-135m and tiny-random resolved in one place)
    policy = Policy.load(  # fp32 compute (no autocast): the warm-starts the README and the studies measured
        PolicyConfig(
            model=config.model,
            dtype="float32",
            autocast=None,
            device="cpu",
            gradient_checkpointing=False,
            threads=config.threads,
            lora=config.lora,
        ),
        progress=progress,
    )
    model, tokenizer = policy.model, policy.tokenizer
    model.train()
    model.config.use_cache = True
    examples = build_examples(config, tokenizer)
    if not examples:
        raise ValueError(f"no examples in {config.scenarios}")
    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(json.dumps(asdict(config), indent=2) + "\n")
    optimizer = torch.optim.AdamW(policy.trainable(), lr=config.lr, weight_decay=0.0)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min(1.0, (s + 1) / max(1, config.warmup_steps)))
    rng = random.Random(config.seed)
    adapter_base = config.model if config.lora is not None else None
    steps_per_epoch = -(-len(examples) // config.batch_size)
    bar = progress_bar(total=config.epochs * steps_per_epoch, desc="warm-start", unit="step", enabled=progress)
    start, step, epoch_losses = time.perf_counter(), 0, []
    with (out / "sft.jsonl").open("w") as log:
        for epoch in range(config.epochs):
            order = task_order(examples, rng)
            total_nll, total_tokens = 0.0, 0
            for first in range(0, len(order), config.batch_size):
                batch = order[first : first + config.batch_size]
                tokens = sum(len(e.completion_ids) for e in batch)
                nll = batch_nll(policy, batch, config.detach_prompt, backward_scale=1.0 / tokens)
                grad_norm = float(torch.nn.utils.clip_grad_norm_(policy.trainable(), config.max_grad_norm))
                optimizer.step()
                schedule.step()
                optimizer.zero_grad(set_to_none=True)
                step += 1
                total_nll, total_tokens = total_nll + nll, total_tokens + tokens
                row = {
                    "step": step,
                    "epoch": epoch,
                    "loss": nll / tokens,
                    "grad_norm": grad_norm,
                    "lr": schedule.get_last_lr()[0],
                    "seconds": round(time.perf_counter() - start, 2),
                }
                log.write(json.dumps(row) + "\n")
                log.flush()
                bar.set_postfix(epoch=epoch + 1, loss=f"{row['loss']:.3f}")
                bar.update()
            epoch_losses.append(total_nll / total_tokens)
            if config.save_epochs and epoch + 1 < config.epochs:
                _save(model, tokenizer, out / f"epoch_{epoch + 1}", adapter_base)
    bar.close()
    _save(model, tokenizer, out / "model", adapter_base)
    summary = {
        "model": config.model,
        "scenarios": config.scenarios,
        "examples": len(examples),
        "tasks": len({e.task_id for e in examples}),
        "completion_tokens": sum(len(e.completion_ids) for e in examples),
        "mean_prompt_tokens": sum(len(e.prompt_ids) for e in examples) / len(examples),
        "steps": step,
        "epoch_loss": epoch_losses,
        "seconds": round(time.perf_counter() - start, 1),
        "saved": str(out / "model"),
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    return summary


def _save(model: Any, tokenizer: Any, folder: Path, base: str | None = None) -> None:
    """Save weights and tokenizer atomically (a half-written folder never looks complete).

    With `base` (the starting model's name) the model is a peft model: only its adapter is saved,
    in bfloat16, and its config names `base` rather than the cache folder it was loaded from.
    """
    scratch = folder.with_name(folder.name + ".partial")
    if base is not None:
        import torch

        state = {k: v.detach().to(torch.bfloat16) for k, v in model.state_dict().items() if "lora_" in k}
        model.save_pretrained(scratch, state_dict=state)
        (scratch / "README.md").unlink(missing_ok=True)  # peft's blank model card
        config_file = scratch / "adapter_config.json"
        config_file.write_text(json.dumps({**json.loads(config_file.read_text()), "base_model_name_or_path": base}))
    else:
        model.save_pretrained(scratch)
    tokenizer.save_pretrained(scratch)
    if folder.exists():
        import shutil

        shutil.rmtree(folder)
    scratch.rename(folder)


def build_parser() -> argparse.ArgumentParser:
    """The `tooluse sft` arguments: a YAML config, flags and ``key=value`` overrides (defaults from `SFTConfig`)."""
    parser = argparse.ArgumentParser(
        prog="tooluse sft", description=__doc__.splitlines()[0], formatter_class=DefaultsHelpFormatter
    )
    add_config_source(parser, "SFTConfig", examples="epochs=2, protocol.template=context")
    full_backprop = {"name": "--full-backprop", "const": False, "default": None}
    add_config_flags(
        parser,
        SFTConfig,
        flags={"detach_prompt": {**full_backprop, "help": "back-propagate through the prompt too"}},
        skip=("lora",),
        knobs={"defaults": TRAIN_PROTOCOL},
    )
    return parser


def config_from_args(namespace: argparse.Namespace) -> SFTConfig:
    """The run's `SFTConfig`: the defaults, then ``--config``, then the flags given, then the overrides."""
    return load(SFTConfig, namespace.config, namespace.overrides, given=given_config(namespace))


def main(argv: Sequence[str] | None = None) -> int:
    """The `tooluse sft` command; returns the exit status."""
    parser = build_parser()
    namespace = parser.parse_args(argv)
    try:
        config = config_from_args(namespace)
    except (OSError, ValueError) as e:
        parser.error(str(e))
    summary = train(config)
    print(json.dumps(summary, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
