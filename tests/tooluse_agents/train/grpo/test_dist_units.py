"""`tooluse_agents.train.grpo.distributed` without a process group: dealing prompts, collectives, settings."""

from __future__ import annotations

import pytest

from tooluse_agents.train.grpo.config import RolloutConfig
from tooluse_agents.train.grpo.distributed import Dist


def test_prompts_are_dealt_round_robin_and_every_prompt_goes_to_one_rank():
    items = list(range(7))
    shares = [Dist(rank=r, world_size=3).deal(items) for r in range(3)]
    assert shares == [[0, 3, 6], [1, 4], [2, 5]]
    assert sorted(x for s in shares for x in s) == items


def test_ranks_of_one_tensor_parallel_engine_get_the_same_prompts():
    shares = [Dist(rank=r, world_size=4).deal(list(range(7)), ranks_per_share=2) for r in range(4)]
    assert shares == [[0, 2, 4, 6], [0, 2, 4, 6], [1, 3, 5], [1, 3, 5]]


def test_one_process_collectives_return_their_input():
    alone = Dist()
    assert not alone.enabled and alone.is_main and alone.device == "cpu"
    assert alone.gather({"a": 1}) == [{"a": 1}]
    assert alone.sum([1, 2.5]) == [1.0, 2.5] and alone.max(3) == 3 and alone.max_each([4, 5]) == [4, 5]
    assert alone.deal([1, 2, 3]) == [1, 2, 3]
    assert alone.cpu_cores().startswith("0-")


def test_cpu_cores_are_split_between_a_machines_ranks(monkeypatch):
    monkeypatch.setattr("os.cpu_count", lambda: 8)
    cores = [Dist(rank=r, world_size=4, local_rank=r, local_world_size=4).cpu_cores() for r in range(4)]
    assert cores == ["0-1", "2-3", "4-5", "6-7"]


def test_tensor_parallel_rollouts_need_the_vllm_engine():
    assert RolloutConfig(engine="vllm", tensor_parallel_size=2).tensor_parallel_size == 2
    for engine, size in (("hf", 2), ("vllm", 0)):
        with pytest.raises(ValueError, match="tensor_parallel_size"):
            RolloutConfig(engine=engine, tensor_parallel_size=size)
