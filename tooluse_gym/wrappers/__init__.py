"""Evaluation-protocol wrappers; each changes one thing about what the model sees.

Applied by `make_multi_turn_env` in this order (innermost first): `ReasoningHistory`,
`ToolResultPlacement`, `SystemPrompt`, `ContextTemplate` (context template only),
`RenderedPrompt` (when a tokenizer is given).

`CandidateActions` is not a protocol wrapper: it turns the text env into a `Discrete(K)`
choice among candidate messages for classic RL (a diagnostic setting; see its module).
"""

from tooluse_gym.wrappers.candidates import CandidateActions, CandidateConfig
from tooluse_gym.wrappers.chat_template import RenderedPrompt, prefix_breaks
from tooluse_gym.wrappers.reasoning import REASONING_MODES, ReasoningHistory
from tooluse_gym.wrappers.system_prompt import SystemPrompt
from tooluse_gym.wrappers.template import TEMPLATES, ContextTemplate
from tooluse_gym.wrappers.tool_results import TOOL_RESULT_PLACEMENTS, ToolResultPlacement

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
    "prefix_breaks",
]
