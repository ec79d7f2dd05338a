"""`ToolUse-Scenario-v0`: tasks from scenario files, with every protocol knob of the BFCL env."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym

from tooluse_gym.envs.builder import TaskPool, build_env, pool_knobs
from tooluse_gym.envs.ids import SCENARIO_ID
from tooluse_gym.envs.knobs import ENV_DEFAULTS
from tooluse_gym.tasks.bfcl_single_turn import SingleTurnTask
from tooluse_gym.tasks.scenario import ScenarioSet, load_scenario_set
from tooluse_gym.tasks.selection import select_tasks

ENV_ID = SCENARIO_ID
DEFAULTS = ENV_DEFAULTS[ENV_ID]
"""Scenario tasks have no official score to match, and training gets a denser signal when each
malformed call is answered with its own error; ``decoder="bfcl"`` decodes exactly as bfcl_eval does."""


def scenario_pool(
    scenarios: ScenarioSet, task_ids: Sequence[str] | None = None, categories: Sequence[str] | None = None
) -> TaskPool:
    """A scenario set's tasks (optionally restricted) with its backends.

    Single-turn scenarios make a single-turn pool (played by `SingleTurnEnv`); one pool holds one
    kind, so a selection that mixes single-turn and multi-turn scenarios is a `ValueError`.
    """
    tasks = select_tasks(scenarios.tasks, categories=categories, task_ids=task_ids)
    label = ",".join(categories) if categories else "all"
    kinds = {isinstance(t, SingleTurnTask) for t in tasks}
    if len(kinds) > 1:
        single = sum(isinstance(t, SingleTurnTask) for t in tasks)
        raise ValueError(
            f"the selection mixes {single} single-turn and {len(tasks) - single} multi-turn scenarios; an env plays "
            "one kind: load their files apart, or select one kind with categories= or task_ids="
        )
    return TaskPool(
        tuple(tasks),
        scenarios.classes(),
        scenarios.stateless(),
        scenarios.hooks(),
        label,
        single_turn=kinds == {True},
        task_data=scenarios.file_digests,
    )


def make_scenario_env(
    path: str | Path | Sequence[str | Path],
    task_ids: Sequence[str] | None = None,
    categories: Sequence[str] | None = None,
    render_mode: str | None = None,
    **knobs: Any,
) -> gym.Env:
    """Build `ToolUse-Scenario-v0` over the scenario files at `path`, wrapped for the requested protocol.

    ## Arguments
    - `path`: a scenario file, a folder of them, or a list of files/folders.
    - `task_ids`: restrict the env to these scenario ids.
    - `categories`: restrict the env to these scenario categories.
    - `render_mode`: ``None`` or ``"ansi"``.
    - every other keyword is a knob of `tooluse_gym.envs.knobs.Knobs`, as for
      ``ToolUse-MultiTurn-v0``, except that ``decoder`` defaults to ``lenient`` (`DEFAULTS`).
      Single-turn scenarios are played as ``ToolUse-SingleTurn-v0`` plays BFCL's entries (one
      message, judged by BFCL's checker), decoded by the same ``lenient`` default (or BFCL's
      decoder with ``decoder="bfcl"``); the knobs about executing calls keep their defaults.

    ## Version History
    - v0: initial version.
    """
    scenarios = load_scenario_set(path)
    pool = scenario_pool(scenarios, task_ids, categories)
    return build_env(
        pool,
        pool_knobs(pool, DEFAULTS, knobs),
        env_id=ENV_ID,
        render_mode=render_mode,
        card_extra={"scenarios_sha256": scenarios.sha256},
    )
