"""`make_agent`: the one place that builds a backend, from a `BackendSpec`."""

from __future__ import annotations

import pytest

from tooluse_agents.backends.factory import BACKENDS, BackendSpec, make_agent
from tooluse_agents.backends.oracle import OracleAgent
from tooluse_agents.eval.run import EvalConfig


def test_the_oracle_needs_no_model():
    assert isinstance(make_agent(BackendSpec(backend="oracle")), OracleAgent)
    assert BACKENDS == ("oracle", "hf", "vllm", "openai")


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"backend": "llama"}, "agent must be one of"),
        ({"backend": "hf"}, "--model is required"),
        ({"backend": "hf", "model": "m", "tensor_parallel_size": 2}, "tensor_parallel_size 2"),
        ({"backend": "vllm", "model": "m", "text_replies": "fc"}, "text_replies 'fc'"),
    ],
)
def test_a_spec_a_backend_cannot_serve_is_refused(spec, message):
    with pytest.raises(ValueError, match=message):
        BackendSpec(**spec)


def test_options_are_the_backends_own_settings():
    pytest.importorskip("openai")
    agent = make_agent(
        BackendSpec(backend="openai", model="m", base_url="http://127.0.0.1:9/v1", options={"timeout_s": 3})
    )
    try:
        assert agent.config.timeout_s == 3 and agent.config.base_url == "http://127.0.0.1:9/v1"
    finally:
        agent.close()
    with pytest.raises(ValueError, match=r"unknown options \['no_such'\]"):
        make_agent(BackendSpec(backend="openai", model="m", options={"no_such": 1}))
    with pytest.raises(ValueError, match="loaded model"):
        make_agent(BackendSpec(backend="oracle"), model=object())


def test_an_eval_config_names_its_backend():
    spec = EvalConfig(agent="openai", model="m", base_url="u", text_replies="fc").backend()
    assert (spec.backend, spec.model, spec.base_url, spec.text_replies) == ("openai", "m", "u", "fc")
