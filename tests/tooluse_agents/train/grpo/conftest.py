"""The models GRPO tests train: built once per session, on one thread (they are tiny)."""

from __future__ import annotations

import pytest


def _built(build, folder):
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return build(folder)
    finally:
        torch.set_num_threads(threads)


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory):
    """The tiny random Llama taught two MathAPI answers (`tests.tooluse_agents.train.grpo.tiny`)."""
    from tests.tooluse_agents.train.grpo.tiny import build_tiny_model

    return _built(build_tiny_model, tmp_path_factory.mktemp("tiny") / "model")


@pytest.fixture(scope="session")
def check_model(tmp_path_factory):
    """The distributed check's model (`experiments.tools.check_model`)."""
    from experiments.tools.check_model import build

    return _built(build, tmp_path_factory.mktemp("check") / "model")
