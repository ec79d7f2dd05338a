"""BFCL multi-turn (tooluse-gym's ``ToolUse-MultiTurn-v0``) as a verifiers environment.

verifiers imports this module for the id ``ToolUse-MultiTurn-v0`` (or ``tooluse-multiturn-v0``) and takes
the taskset, harness and env its ``__all__`` exports (tooluse_agents.integrations.verifiers).
"""

from __future__ import annotations

from typing import Any

from tooluse_agents.integrations import verifiers as _integration
from tooluse_agents.integrations.verifiers import ToolUseHarness, ToolUseTaskset, ToolUseVerifiersEnv

ENV_ID = "ToolUse-MultiTurn-v0"

__all__ = ["ENV_ID", "ToolUseHarness", "ToolUseTaskset", "ToolUseVerifiersEnv", "load_environment"]


def load_environment(**settings: Any) -> ToolUseVerifiersEnv:
    """The environment on ``ToolUse-MultiTurn-v0``: settings and knobs as `tooluse_agents.integrations.verifiers`."""
    return _integration.load_environment(ENV_ID, **settings)
