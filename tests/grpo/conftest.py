"""The tiny taught model, built once per session."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory):
    import torch

    from tests.grpo.tiny import build_tiny_model

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model")
    finally:
        torch.set_num_threads(threads)
