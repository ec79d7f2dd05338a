"""Evaluation-protocol wrappers; each changes one thing about what the model sees.

Applied by `tooluse_gym.envs.builder.wrap` in this order (innermost first): `ReasoningHistory`,
`ToolResultPlacement`, `SystemPrompt`, `ContextTemplate` (context template only),
`RenderedPrompt` (when a tokenizer is given).

`CandidateActions` is not a protocol wrapper: it turns the text env into a `Discrete(K)`
choice among candidate messages for classic RL (a diagnostic setting; see its module).
"""

from tooluse_gym.envs.knobs import REASONING_MODES, TEMPLATES, TOOL_RESULT_PLACEMENTS
from tooluse_gym.wrappers.candidates import CandidateActions, CandidateConfig
from tooluse_gym.wrappers.reasoning import ReasoningHistory
from tooluse_gym.wrappers.rendered_prompt import RenderedPrompt, ToolsNotShownWarning, prefix_breaks
from tooluse_gym.wrappers.system_prompt import SystemPrompt
from tooluse_gym.wrappers.template import ContextTemplate
from tooluse_gym.wrappers.tool_results import ToolResultPlacement

__all__ = [
    "REASONING_MODES",
    "TEMPLATES",
    "TOOL_RESULT_PLACEMENTS",
    "CandidateActions",
    "CandidateConfig",
    "ContextTemplate",
    "ReasoningHistory",
    "RenderedPrompt",
    "SystemPrompt",
    "ToolResultPlacement",
    "ToolsNotShownWarning",
    "prefix_breaks",
]
