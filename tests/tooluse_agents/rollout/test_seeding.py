"""One seeding function: the seeds it derives are the ones runs recorded before it existed."""

from __future__ import annotations

import hashlib

import pytest

from tooluse_agents.rollout.seeding import derive_seed


def _sha(text: str, n: int) -> int:
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:n], "little")


def test_the_request_group_and_epoch_seeds_keep_their_values():
    # the three helpers it replaces: request seeds and group members' seeds (31 bits of the first 4 bytes),
    # the prompt plan's epoch order (all 8 bytes)
    assert derive_seed(0, "multi_turn_base_0", 2, 1) == _sha("0/multi_turn_base_0/2/1", 4) & 0x7FFFFFFF
    assert derive_seed("grpo", 3, 7, "add_2_3@turn1", 2) == _sha("grpo/3/7/add_2_3@turn1/2", 4) & 0x7FFFFFFF
    assert derive_seed(5, "epoch", 2, bits=64) == _sha("5/epoch/2", 8)


def test_places_get_distinct_seeds_and_bad_widths_are_refused():
    seeds = {derive_seed(0, "t", turn, step) for turn in range(20) for step in range(20)}
    assert len(seeds) == 400 and all(0 <= s < 2**31 for s in seeds)
    with pytest.raises(ValueError, match="bits"):
        derive_seed(0, bits=65)
