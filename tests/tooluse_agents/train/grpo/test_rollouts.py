"""The policy's tokens travel with the episode: `policy_steps` uses the engine's own ids, in order."""

from __future__ import annotations

import pytest

from tooluse_agents.backends.base import AgentError, Generation
from tooluse_agents.rollout.loop import Episode
from tooluse_agents.runs.records import EpisodeRecord
from tooluse_agents.train.grpo.rollouts import StepTokens, policy_steps

RECORD = EpisodeRecord(task_id="t", reward=0.0, agent={"name": "hf"})


def test_policy_steps_are_the_generations_ids_in_order():
    generations = (
        Generation(text="Done."),  # the oracle's scripted turn: no tokens, no loss
        Generation(text="[f()]", prompt_token_ids=(1, 2, 3), token_ids=(7, 8)),
        Generation(text="", prompt_token_ids=(1, 2), token_ids=()),  # nothing sampled: nothing to train on
        Generation(text="ok", prompt_token_ids=(1, 2, 3, 7, 8, 9), token_ids=(5,)),
    )
    assert policy_steps(Episode(RECORD, generations)) == (
        StepTokens((1, 2, 3), (7, 8)),
        StepTokens((1, 2, 3, 7, 8, 9), (5,)),
    )


def test_failed_generations_carry_no_loss_and_missing_prompt_ids_are_an_error():
    failed = Generation(token_ids=(1,), error=AgentError("timeout", "slow"))
    assert policy_steps(Episode(RECORD, (failed,))) == ()
    with pytest.raises(ValueError, match="hf agent returned no prompt_token_ids"):
        policy_steps(Episode(RECORD, (Generation(text="x", token_ids=(4,)),)))
