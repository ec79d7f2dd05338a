"""TRL: a `rollout_func` for `trl.GRPOTrainer` that plays our environments multi-turn.

    from trl import GRPOConfig, GRPOTrainer
    from tooluse_agents.integrations import trl as tooluse_trl

    trainer = GRPOTrainer(
        model=model,
        processing_class=tokenizer,
        args=GRPOConfig(output_dir="out", num_generations=8, max_completion_length=4096),
        train_dataset=tooluse_trl.dataset(category="base"),
        reward_funcs=tooluse_trl.checker_reward,
        rollout_func=tooluse_trl.make_rollout_func(category="base", max_new_tokens=256),
    )

TRL's ``environment_factory`` cannot play BFCL multi-turn: it stops at the first message without
calls, has no next user turn, and fixes the tool list at init. ``rollout_func`` hands the whole
loop to us. For each prompt it is given, the rollout function plays one episode of our env and
returns it as one sequence. It uses `tooluse_agents.integrations.token_sequences.play`, whose docstring
explains how the tokens stay consistent with the env's rendering, how tools that change
mid-episode are represented, and what happens at the length limits.

Each prompt is a task id: `dataset` builds one row per task. TRL has already repeated each row
``num_generations`` times, and each copy is one episode.

The rollout function returns these fields to TRL:

- ``prompt_ids``, ``completion_ids``, ``logprobs`` and ``env_mask`` (1 = the policy's token,
  0 = the env's text). TRL turns ``env_mask`` into its loss mask.
- Per episode, for the reward functions: ``tooluse_reward`` (1.0 when the checker marked the
  episode valid and it ended without error), ``tooluse_checker`` (the env's final
  ``info["checker"]``), ``tooluse_error``, ``tooluse_untrained`` (messages played after a prefix
  break) and ``tooluse_episode`` (the full episode record, `tooluse_agents.rollout.episode` format).
  `checker_reward` reads ``tooluse_reward``.

Generation uses the trainer's own model through transformers, with TRL's generation settings
(temperature, top-p, top-k, min-p, repetition penalty, stop tokens). It needs ``use_vllm=False``.
It targets ``trl==1.16.0`` (`TESTED_TRL_VERSION`): the ``trl`` extra pins it, and its test runs against it.
"""

from __future__ import annotations

import copy
import functools
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeAlias

import gymnasium as gym

from tooluse_agents.backends.base import AgentRequest, Generation, SamplingConfig
from tooluse_agents.integrations.token_sequences import PREFIX_BREAK_MODES, EpisodeTokens, play
from tooluse_agents.rollout.loop import RolloutJob
from tooluse_agents.rollout.seeding import derive_seed
from tooluse_gym.envs import MULTI_TURN_ID
from tooluse_gym.envs.knobs import check_choice
from tooluse_gym.envs.tool_env import task_ids as env_task_ids

ENV_ID = MULTI_TURN_ID
TESTED_TRL_VERSION = "1.16.0"
"""The TRL release this adapter targets: the ``trl`` extra pins it, and its test runs against it."""

__all__ = [
    "ENV_ID",
    "TESTED_TRL_VERSION",
    "EnvRollout",
    "TrainerAgent",
    "checker_reward",
    "dataset",
    "make_rollout_func",
    "trl_fields",
]

EnvSpec: TypeAlias = "str | Callable[[], gym.Env]"
"""An env id (made with ``gym.make(id, **knobs)``) or a function that builds one env."""


def _env_factory(env: EnvSpec, env_kwargs: Mapping[str, Any]) -> Callable[[], gym.Env]:
    if isinstance(env, str):
        return functools.partial(gym.make, env, **env_kwargs)
    if not callable(env):
        raise TypeError(f"env must be an env id or a function that builds an env, got {type(env).__name__}")
    if env_kwargs:
        raise TypeError(f"knobs {sorted(env_kwargs)} go to gym.make with an env id; a factory sets its own")
    return env


def dataset(env: EnvSpec = ENV_ID, *, task_ids: Sequence[str] | None = None, **env_kwargs: Any) -> Any:
    """The train dataset: one row per task, ``{"prompt": task_id, "task_id": task_id}``.

    The rollout function resets the env on the prompt's task. Pass it the same `env` and knobs.

    Args:
        env: An env id or a function that builds one env.
        task_ids: These tasks, in this order. None: every task of the env.
        **env_kwargs: Passed to ``gym.make`` with an env id (category, task_ids, knobs...).

    Returns:
        A `datasets.Dataset` (``datasets`` comes with TRL).

    Raises:
        TypeError: The env is not a tooluse-gym env.
        ValueError: A task id the env does not have.
    """
    from datasets import Dataset

    probe = _env_factory(env, env_kwargs)()
    try:
        known = env_task_ids(probe)  # TypeError for another env
    finally:
        probe.close()
    ids = list(known if task_ids is None else task_ids)
    unknown = sorted(set(ids) - set(known))
    if unknown:
        raise ValueError(f"the env has no tasks {unknown[:5]}{' ...' if len(unknown) > 5 else ''}")
    return Dataset.from_dict({"prompt": ids, "task_id": ids})


def checker_reward(
    completions: Sequence[Any], tooluse_reward: Sequence[float] | None = None, **kwargs: Any
) -> list[float]:
    """TRL reward function: each episode's reward as our env scored it.

    The reward is 1.0 when the checker marked the episode valid and it ended without error, else 0.0.
    With TRL's ``log_metric`` it also logs, per batch, two metrics:

    - ``tooluse/error_frac``: the share of episodes stopped by a length limit or an env error;
    - ``tooluse/untrained_messages``: the mean number of messages played after a prefix break.

    Args:
        completions: The decoded completions (unused: the verdict is the env's).
        tooluse_reward: The rollout function's field.
        **kwargs: TRL's other reward arguments.

    Raises:
        ValueError: No ``tooluse_reward`` field, so the rollout function is not ours.
    """
    if tooluse_reward is None:
        raise ValueError("checker_reward reads the tooluse_reward field: pass rollout_func=make_rollout_func(...)")
    if len(tooluse_reward) != len(completions):
        raise ValueError(f"{len(tooluse_reward)} rewards for {len(completions)} completions")
    log_metric = kwargs.get("log_metric")
    if callable(log_metric) and tooluse_reward:
        errors = kwargs.get("tooluse_error") or []
        untrained = kwargs.get("tooluse_untrained") or []
        if errors:
            log_metric("tooluse/error_frac", sum(e is not None for e in errors) / len(errors))
        if untrained:
            log_metric("tooluse/untrained_messages", sum(untrained) / len(untrained))
    return [float(r) for r in tooluse_reward]


def trl_fields(episodes: Sequence[EpisodeTokens], eos_token_id: int) -> dict[str, list[Any]]:
    """The rollout function's output for TRL: one entry per episode in every field.

    An episode whose policy wrote no token (its prompt already filled the model's context) gets a
    one-token completion, `eos_token_id` with mask 0. It contributes no loss, and TRL's batch
    shapes hold.
    """
    out: dict[str, list[Any]] = {
        "prompt_ids": [],
        "completion_ids": [],
        "logprobs": [],
        "env_mask": [],
        "tooluse_reward": [],
        "tooluse_checker": [],
        "tooluse_error": [],
        "tooluse_untrained": [],
        "tooluse_episode": [],
    }
    for episode in episodes:
        empty = not episode.completion_ids
        out["prompt_ids"].append(list(episode.prompt_ids))
        out["completion_ids"].append([eos_token_id] if empty else list(episode.completion_ids))
        out["logprobs"].append([0.0] if empty else list(episode.logprobs))
        out["env_mask"].append([0] if empty else list(episode.env_mask))
        out["tooluse_reward"].append(episode.reward)
        out["tooluse_checker"].append(None if episode.checker is None else dict(episode.checker))
        out["tooluse_error"].append(episode.error)
        out["tooluse_untrained"].append(episode.untrained)
        out["tooluse_episode"].append(episode.record.to_dict())
    return out


class TrainerAgent:
    """The trainer's model as an agent, with TRL's generation settings (``use_vllm=False``).

    Each `generate` call runs ``model.generate`` on the requests' ``prompt_token_ids`` (left-padded,
    at most `batch_size` at a time), under ``torch.no_grad`` and TRL's `unwrap_model_for_generation`.
    A message is kept up to and including the first of TRL's stop tokens, and cut at the request's
    ``max_tokens``. Its log-probabilities come from the processed scores, that is after temperature
    and the top-k/top-p/min-p filters. The env receives the message decoded without special tokens,
    as `tooluse_agents.backends.hf.HFAgent` sends it.
    """

    name = "trl"

    def __init__(self, trainer: Any, *, batch_size: int | None = None) -> None:
        self.trainer = trainer
        self.batch_size = batch_size
        self.tokenizer = _tokenizer(trainer)

    def describe(self) -> dict[str, Any]:
        """The trainer's model, by name."""
        config = getattr(self.trainer.model, "config", None)
        return {"name": "trl", "model": str(getattr(config, "_name_or_path", ""))}

    def close(self) -> None:
        """Nothing to release (the model is the trainer's)."""

    def generate(self, requests: Sequence[AgentRequest], sampling: SamplingConfig) -> list[Generation]:
        """Continue each request's ``prompt_token_ids`` (`sampling` is TRL's own, from the trainer)."""
        import torch
        from trl.models import unwrap_model_for_generation

        trainer, tokenizer = self.trainer, self.tokenizer
        stops = set(trainer.eos_token_ids)
        pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
        device = trainer.accelerator.device
        out: list[Generation] = []
        size = self.batch_size or max(len(requests), 1)
        for start in range(0, len(requests), size):
            chunk = requests[start : start + size]
            prompts = [r.prompt_token_ids or () for r in chunk]
            limits = [r.max_tokens or sampling.max_tokens for r in chunk]
            width = max(len(p) for p in prompts)
            ids = torch.full((len(chunk), width), pad, dtype=torch.long)
            mask = torch.zeros((len(chunk), width), dtype=torch.long)
            for row, prompt in enumerate(prompts):
                ids[row, width - len(prompt) :] = torch.tensor(prompt, dtype=torch.long)
                mask[row, width - len(prompt) :] = 1
            config = copy.deepcopy(trainer.generation_config)  # TRL's sampling settings and stop tokens
            config.update(max_new_tokens=max(limits), return_dict_in_generate=True, output_scores=True)
            with (
                unwrap_model_for_generation(
                    trainer.model_wrapped,
                    trainer.accelerator,
                    gather_deepspeed3_params=trainer.args.ds3_gather_for_generation,
                    gradient_checkpointing_kwargs=trainer.args.gradient_checkpointing_kwargs,
                ) as model,
                torch.no_grad(),
            ):
                result = model.generate(
                    input_ids=ids.to(device),
                    attention_mask=mask.to(device),
                    generation_config=config,  # one config, no generation kwargs beside it
                )
                scores = model.compute_transition_scores(result.sequences, result.scores, normalize_logits=True)
            for row, limit in enumerate(limits):
                new = result.sequences[row, width:].tolist()[:limit]
                end = next((k for k, t in enumerate(new) if t in stops), None)
                kept = new if end is None else new[: end + 1]
                logprobs = tuple(float(x) for x in scores[row, : len(kept)].tolist())
                text = tokenizer.decode(kept, skip_special_tokens=True)
                out.append(Generation(text=text, token_ids=tuple(kept), logprobs=logprobs))
        return out


class EnvRollout:
    """The rollout function: ``rollout_func(prompts, trainer)`` plays one episode per prompt (a task id).

    It keeps a pool of envs across calls, one per episode of the largest batch, so the envs'
    caches of ground truth and simulator snapshots are reused. Build it with `make_rollout_func`.
    """

    def __init__(
        self,
        env: EnvSpec = ENV_ID,
        *,
        max_new_tokens: int = 256,
        max_completion_length: int | None = None,
        scripted: Callable[[AgentRequest], bool] | None = None,
        on_prefix_break: str = "cut",
        batch_size: int | None = None,
        **env_kwargs: Any,
    ):
        check_choice("on_prefix_break", on_prefix_break, PREFIX_BREAK_MODES)
        if max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be >= 1, got {max_new_tokens}")
        self._make_env = _env_factory(env, env_kwargs)
        self.max_new_tokens = max_new_tokens
        self.max_completion_length = max_completion_length
        self.scripted = scripted
        self.on_prefix_break = on_prefix_break
        self.batch_size = batch_size
        self._envs: list[gym.Env] = []
        self._calls = 0
        self._version_checked = False

    def __call__(self, prompts: list[Any], trainer: Any) -> dict[str, list[Any]]:
        """Play one episode per prompt with the trainer's model; returns TRL's fields (`trl_fields`)."""
        self._check(trainer)
        policy = TrainerAgent(trainer, batch_size=self.batch_size)
        tokenizer = policy.tokenizer
        task_ids = [_task_id(p) for p in prompts]
        offset = trainer.accelerator.process_index * len(prompts)
        jobs = [
            RolloutJob(task_id, derive_seed("grpo", trainer.args.seed, self._calls, task_id, offset + i))
            for i, task_id in enumerate(task_ids)
        ]
        self._calls += 1
        while len(self._envs) < len(jobs):
            self._envs.append(self._make_env())
        limit = self.max_completion_length
        episodes = play(
            self._envs[: len(jobs)],
            jobs,
            tokenizer,
            policy,
            max_new_tokens=self.max_new_tokens,
            max_completion_length=trainer.args.max_completion_length if limit is None else limit,
            max_context=getattr(getattr(trainer.model, "config", None), "max_position_embeddings", None),
            on_prefix_break=self.on_prefix_break,
            scripted=self.scripted,
        )
        return trl_fields(episodes, tokenizer.eos_token_id)

    def close(self) -> None:
        """Close the pooled envs."""
        for env in self._envs:
            env.close()
        self._envs = []

    def _check(self, trainer: Any) -> None:
        if getattr(trainer, "use_vllm", False):
            raise ValueError(
                "the tooluse-gym rollout function generates with the trainer's model; set use_vllm=False "
                "(vLLM generation inside rollout_func is not supported yet)"
            )
        if not self._version_checked:
            self._version_checked = True
            import trl

            if trl.__version__ != TESTED_TRL_VERSION:
                warnings.warn(
                    f"tooluse_agents.integrations.trl targets trl=={TESTED_TRL_VERSION}; this is trl {trl.__version__}",
                    stacklevel=3,
                )


def make_rollout_func(
    env: EnvSpec = ENV_ID,
    *,
    max_new_tokens: int = 256,
    max_completion_length: int | None = None,
    scripted: Callable[[AgentRequest], bool] | None = None,
    on_prefix_break: str = "cut",
    batch_size: int | None = None,
    **env_kwargs: Any,
) -> EnvRollout:
    """A `rollout_func` for `trl.GRPOTrainer` that plays our env multi-turn, one episode per prompt.

    Args:
        env: An env id or a function that builds one env (the same as `dataset`'s).
        max_new_tokens: The most tokens per assistant message.
        max_completion_length: The most completion tokens (policy and env) per episode. None: the
            trainer's ``max_completion_length``. Set it to hold whole episodes. An episode that
            runs out of room ends with the error ``max_completion_length`` and reward 0.
        scripted: Requests that the oracle answers instead of the model (e.g.
            `tooluse_agents.train.grpo.rollouts.before_last_turn` with next-turn tasks,
            `tooluse_agents.train.grpo.tasks.prompts_for`). Their messages are env text.
        on_prefix_break: ``cut`` (the sequence ends where the rendering stops extending it; the
            episode plays on) or ``raise``. See `tooluse_agents.integrations.token_sequences`.
        batch_size: The most episodes per ``generate`` call (None: all waiting episodes at once).
        **env_kwargs: Passed to ``gym.make`` with an env id: category, task_ids and the knobs.

    Returns:
        A callable ``(prompts, trainer) -> dict`` to pass as ``GRPOTrainer(rollout_func=...)``.
    """
    return EnvRollout(
        env,
        max_new_tokens=max_new_tokens,
        max_completion_length=max_completion_length,
        scripted=scripted,
        on_prefix_break=on_prefix_break,
        batch_size=batch_size,
        **env_kwargs,
    )


def _tokenizer(trainer: Any) -> Any:
    processing_class = trainer.processing_class
    return getattr(processing_class, "tokenizer", processing_class)


def _task_id(prompt: Any) -> str:
    if isinstance(prompt, str):
        return prompt
    raise TypeError(
        f"each prompt must be a task id (a str), got {type(prompt).__name__}: "
        "build the train dataset with tooluse_agents.integrations.trl.dataset(...)"
    )
