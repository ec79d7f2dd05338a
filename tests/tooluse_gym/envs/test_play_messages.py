"""`play_messages` scores a recorded transcript: the ground truth's messages pass, a cut or altered one does not."""

from __future__ import annotations

import gymnasium as gym

import tooluse_gym  # noqa: F401
from tests._reference.scripted import Reference
from tooluse_gym.envs import MULTI_TURN_ID
from tooluse_gym.envs.tool_env import play_messages

TASK = "multi_turn_base_0"


def _reference_messages(env: gym.Env) -> list[str]:
    reference, messages = Reference(), []
    obs, _ = env.reset(seed=0, options={"task_id": TASK})
    while True:
        messages.append(reference.act(env, obs))
        obs, _, terminated, truncated, _ = env.step(messages[-1])
        if terminated or truncated:
            return messages


def test_a_recorded_transcript_scores_as_it_played():
    env = gym.make(MULTI_TURN_ID, category="base")
    messages = _reference_messages(env)
    played = play_messages(env, TASK, [*messages, "left over"])
    assert (played.reward, played.terminated, played.truncated) == (1.0, True, False)
    assert len(played.infos) == len(messages)  # the message after the end is not played
    assert played.infos[-1]["checker"]["valid"] is True

    cut = play_messages(env, TASK, messages[:-1])
    assert not cut.terminated and len(cut.infos) == len(messages) - 1

    first_calls = next(i for i, m in enumerate(messages) if m.startswith("["))
    altered = [*messages[:first_calls], "[pwd()]", *messages[first_calls + 1 :]]
    wrong = play_messages(env, TASK, altered)
    assert wrong.reward == 0.0 and wrong.infos[-1]["checker"]["valid"] is False


def test_played_messages_is_the_frozen_dataclass_it_declares():
    """Its written-out ``__init__`` stores what the generated one would: fields, defaults, equality, frozen."""
    import dataclasses

    import pytest

    from tooluse_gym.envs.tool_env import PlayedMessages

    infos = ({"task_id": "t"},)
    a, b = PlayedMessages(1.0, True, False, infos), PlayedMessages(1.0, True, False, infos)
    assert a == b and a.reset_info == {} and a.reset_info is not b.reset_info  # a new default dict each
    assert dataclasses.asdict(a) == {
        "reward": 1.0,
        "terminated": True,
        "truncated": False,
        "infos": infos,
        "reset_info": {},
    }
    assert [f.name for f in dataclasses.fields(a)] == list(vars(a))
    given = {"protocol": {}}
    c = PlayedMessages(reward=0.0, terminated=True, truncated=False, infos=(), reset_info=given)
    assert c.reset_info is given and dataclasses.replace(c, reward=1.0).reward == 1.0
    assert (
        repr(c) == "PlayedMessages(reward=0.0, terminated=True, truncated=False, infos=(), reset_info={'protocol': {}})"
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.reward = 1.0  # type: ignore[misc]
