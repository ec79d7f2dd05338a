"""`ToolUse-MultiTurn-v0`: the 800 BFCL multi-turn tasks, with the evaluation protocol as explicit knobs."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium as gym

from tooluse_gym.envs.builder import TaskPool, build_env
from tooluse_gym.envs.ids import MULTI_TURN_ID
from tooluse_gym.envs.knobs import ENV_DEFAULTS, TOOL_FORMATS
from tooluse_gym.tasks import bfcl, bfcl_data, rl_split
from tooluse_gym.tasks.known_issues import registry_version
from tooluse_gym.tasks.task import Task

ENV_ID = MULTI_TURN_ID
DEFAULTS = ENV_DEFAULTS[ENV_ID]
"""BFCL's own protocol: its prompt, Python calls, decoded and executed exactly as bfcl_eval does."""
__all__ = ["DEFAULTS", "ENV_ID", "TOOL_FORMATS", "bfcl_pool", "in_split", "make_multi_turn_env"]


def bfcl_pool(tasks: Sequence[Task], label: str = "bfcl") -> TaskPool:
    """Tasks that run on the BFCL simulators (BFCL entries or hand-built tasks); `label` is the card's category.

    The card's task data are the files of the BFCL categories the tasks come from (none for hand-built tasks).
    """
    categories = list(dict.fromkeys(t.category for t in tasks if t.source == "bfcl" and t.category in bfcl.CATEGORIES))
    data = bfcl_data.digests(bfcl_data.multi_turn_files(categories)) if categories else ()
    return TaskPool(tuple(tasks), bfcl.backend_classes(), bfcl.stateless_backends(), bfcl.HOOKS, label, task_data=data)


def in_split(tasks: Sequence[Task], split: str, *, named: bool) -> list[Task]:
    """The tasks on one side of the published RL split (`tooluse_gym.tasks.rl_split`), in their order.

    Raises:
        ValueError: An unknown split, or (`named`: the ids were asked for) a task on the other side.
    """
    ids = rl_split.split_task_ids(split)
    outside = [t.task_id for t in tasks if t.task_id not in ids]
    if named and outside:
        raise ValueError(f"tasks {outside[:5]} are not in the {split} split of {rl_split.SPLIT_NAME}")
    return [t for t in tasks if t.task_id in ids]


def make_multi_turn_env(
    category: str = "base",
    task_ids: Sequence[str] | None = None,
    render_mode: str | None = None,
    split: str | None = None,
    **knobs: Any,
) -> gym.Env:
    """Build `ToolUse-MultiTurn-v0`: BFCL multi-turn (base, miss_func, miss_param, long_context), wrapped.

    ## Arguments
    - `category`: ``base`` | ``miss_func`` | ``miss_param`` | ``long_context`` | ``all``.
    - `task_ids`: restrict the env to these task ids.
    - `render_mode`: ``None`` or ``"ansi"``.
    - `split`: ``None`` (BFCL's tasks), ``train`` or ``heldout``: only the tasks on that side of the
      published RL split `tooluse_gym.tasks.rl_split.SPLIT_NAME` (the card's ``extra`` names it: a
      held-out score is not a BFCL score).
    - every other keyword is a knob of `tooluse_gym.envs.knobs.Knobs` (template, reasoning,
      system_prompt, tool_format, tool_results, decoder, strict_tools, validate_args,
      max_steps_per_turn, tokenizer, chat_template), with BFCL's protocol as the defaults.

    ## Version History
    - v0: initial version (bfcl-eval 2026.3.23 data and simulators); `split` added (same tasks without it).
    """
    resolved = DEFAULTS.with_defaults(**knobs)
    tasks = bfcl.load_bfcl_tasks(category, task_ids)
    extra: dict[str, str] = {}
    if split is not None:
        tasks = in_split(tasks, split, named=task_ids is not None)
        extra["split"] = f"{rl_split.SPLIT_NAME}:{split}"
    return build_env(
        bfcl_pool(tasks, label=category),
        resolved,
        env_id=ENV_ID,
        render_mode=render_mode,
        known_issues=registry_version(),
        card_extra=extra,
    )
