"""The verifiers environments named for our env ids: what the packages under ``environments/`` export.

verifiers loads an environment by id by importing the top-level module of that name, lower case, with
``-`` as ``_``, and taking the one `Taskset` subclass (and the `Harness` and `Env` subclasses) its
``__all__`` exports. The packages ``environments/tooluse_multiturn_v0`` and
``environments/tooluse_singleturn_v0`` (each the shape the Environments Hub publishes: a
``pyproject.toml`` with name, version, description and tags, a README, one module) install those
modules, so with one of them installed

    vf-eval ToolUse-MultiTurn-v0 -n 5 --model smollm2 --client.base-url http://127.0.0.1:8000/v1 ...

finds the environment with no shim. ``tooluse_multiturn_v0`` exports `ToolUseTaskset`,
``tooluse_singleturn_v0`` `SingleTurnTaskset`; both the harness, the env and a ``load_environment``.
"""

from __future__ import annotations

from tooluse_agents.integrations.verifiers import ToolUseTask, ToolUseTaskset, ToolUseTasksetConfig
from tooluse_gym.envs import SINGLE_TURN_ID

# after our verifiers module, which says how to install verifiers when it is missing
import verifiers.v1 as vf  # isort: skip

__all__ = ["SingleTurnTaskset", "SingleTurnTasksetConfig"]


class SingleTurnTasksetConfig(ToolUseTasksetConfig):
    """`ToolUseTasksetConfig` with ``ToolUse-SingleTurn-v0`` as its default env id."""

    env_id: str = SINGLE_TURN_ID
    """``ToolUse-SingleTurn-v0`` unless set (the other ids still work)."""


class SingleTurnTaskset(ToolUseTaskset, vf.Taskset[ToolUseTask, SingleTurnTasksetConfig]):
    """`ToolUseTaskset` over BFCL's single-turn entries unless ``env_id`` says otherwise."""
