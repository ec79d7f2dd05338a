"""The chat spaces with Gymnasium's vector utilities: batching, concatenation, iteration, shared memory."""

from __future__ import annotations

import copy
import multiprocessing

import numpy as np
import pytest
from gymnasium.spaces import Tuple
from gymnasium.vector.utils import (
    batch_differing_spaces,
    batch_space,
    concatenate,
    create_empty_array,
    create_shared_memory,
    iterate,
    read_from_shared_memory,
    write_to_shared_memory,
)

from tooluse_gym.spaces import AssistantAction, ChatText, Conversation, ToolSchemas

SPACES = [ChatText(100), AssistantAction(100), Conversation(), ToolSchemas()]
ITEMS = {
    ChatText: ["hé", "", "[f(a=1)]"],
    AssistantAction: ["[ls()]", "Done.", "ünïcode"],
    Conversation: [[{"role": "user", "content": "hi"}], [], [{"role": "assistant", "content": None}]],
    ToolSchemas: [[{"type": "function", "function": {"name": "f"}}], [], []],
}


@pytest.mark.parametrize("space", SPACES, ids=repr)
def test_batch_concatenate_iterate(space):
    space.seed(0)
    batched = batch_space(space, 3)
    assert isinstance(batched, Tuple) and len(batched) == 3 and all(s == space for s in batched)
    assert batched.contains(batched.sample())
    items = ITEMS[type(space)]
    joined = concatenate(space, items, create_empty_array(space, 3))
    assert joined == tuple(items) and batched.contains(joined)
    assert list(iterate(batched, joined)) == items
    empty = create_empty_array(space, 2)
    assert len(empty) == 2 and all(space.contains(e) for e in empty)
    assert batch_differing_spaces([space, copy.deepcopy(space)]) == batched.__class__((space, space))


def test_batched_members_sample_independently():
    batched = batch_space(ChatText(50, seed=7), 4)
    samples = batched.sample()
    assert len(set(samples)) > 1


@pytest.mark.parametrize("space", SPACES, ids=repr)
def test_shared_memory_roundtrip(space):
    ctx = multiprocessing.get_context()
    shared = create_shared_memory(space, n=3, ctx=ctx)
    view = read_from_shared_memory(space, shared, n=3)
    items = ITEMS[type(space)]
    for i, item in enumerate(items):
        write_to_shared_memory(space, i, item, shared)
    assert list(view) == items and view[-1] == items[-1] and view[0:2] == tuple(items[:2])
    frozen = copy.deepcopy(view)
    write_to_shared_memory(space, 0, items[1], shared)
    assert view[0] == items[1] and frozen[0] == items[0]  # the view is live, the copy is not


def test_shared_memory_overflow_names_the_fix():
    space = Conversation()
    space.shared_memory_bytes = 256
    shared = create_shared_memory(space, n=1)
    big = [{"role": "user", "content": "x" * 1000}]
    with pytest.raises(ValueError, match="shared_memory"):
        write_to_shared_memory(space, 0, big, shared)
    assert np.frombuffer(shared.sizes, dtype=np.int64)[0] == 0
