"""The ground truth still scores 800/800 under every protocol combination and both decoders.

The oracle writes the configured format with keyword arguments (BFCL's decoder drops positional ones).
"""

from __future__ import annotations

import itertools

import gymnasium as gym
import pytest

from tests._reference.scripted import play_reference

COMBINATIONS = list(
    itertools.product(
        ["native", "context"],
        ["keep", "strip", "last"],
        ["bfcl", "strong", "none", "You call tools.\n{functions}"],
        ["python", "json"],
        ["bfcl", "lenient"],
    )
)


@pytest.mark.parametrize("index", range(len(COMBINATIONS)))
def test_oracle_scores_800_of_800(index, all_tasks):
    template, reasoning, system_prompt, tool_format, decoder = COMBINATIONS[index]
    tool_results = ("tool_messages", "user_message")[(index // 4 + index // 2) % 2]  # both, for either format
    env = gym.make(
        "ToolUse-MultiTurn-v0",
        category="all",
        template=template,
        reasoning=reasoning,
        system_prompt=system_prompt,
        tool_format=tool_format,
        tool_results=tool_results,
        decoder=decoder,
    )
    failed = [t.task_id for t in all_tasks if play_reference(env, t.task_id)[0] != 1.0]
    assert failed == []
