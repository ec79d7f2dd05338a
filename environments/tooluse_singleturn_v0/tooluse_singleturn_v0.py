"""BFCL single-turn (tooluse-gym's ``ToolUse-SingleTurn-v0``) as a verifiers environment.

verifiers imports this module for the id ``ToolUse-SingleTurn-v0`` (or ``tooluse-singleturn-v0``) and takes
the taskset, harness and env its ``__all__`` exports (tooluse_agents.integrations.verifiers_hub).
"""

from __future__ import annotations

from typing import Any

from tooluse_agents.integrations import verifiers as _integration
from tooluse_agents.integrations.verifiers import ToolUseHarness, ToolUseVerifiersEnv
from tooluse_agents.integrations.verifiers_hub import SingleTurnTaskset

ENV_ID = "ToolUse-SingleTurn-v0"

__all__ = ["ENV_ID", "SingleTurnTaskset", "ToolUseHarness", "ToolUseVerifiersEnv", "load_environment"]


def load_environment(**settings: Any) -> ToolUseVerifiersEnv:
    """The environment on ``ToolUse-SingleTurn-v0``: settings and knobs as `tooluse_agents.integrations.verifiers`."""
    return _integration.load_environment(ENV_ID, **settings)
