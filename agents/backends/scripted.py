"""Scripted turns: the oracle answers some requests, another agent the rest.

GRPO's next-turn prompts (the paper's recipe) let the oracle play every turn of a prompt but
its last, which the policy plays (`before_last_turn`); the in-house trainer and the token
sequences the TRL adapter trains on both use this one wrapper. The oracle's messages carry no
token ids, so they carry no loss.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import Any

from tooluse_agents.backends.base import Agent, AgentRequest, Generation, SamplingConfig, StreamingAgent
from tooluse_agents.backends.oracle import OracleAgent

__all__ = ["ScriptedTurns", "before_last_turn"]


class ScriptedTurns:
    """The policy's agent, with the oracle answering the scripted turns (next-turn mode's earlier turns).

    The oracle's messages carry no token ids, so they carry no loss; the policy's carry exactly
    the ids its engine saw and sampled (`Generation.prompt_token_ids` and `token_ids`).
    """

    def __init__(self, agent: Agent, scripted: Callable[[AgentRequest], bool] | None = None):
        self.agent = agent
        self.scripted = scripted or _never
        self.name = agent.name
        self._streaming = agent if isinstance(agent, StreamingAgent) else None
        self.can_stream = self._streaming is not None
        self._oracle = OracleAgent()
        self._done: list[tuple[Hashable, Generation]] = []

    def describe(self) -> dict[str, Any]:
        """The wrapped agent's identity."""
        return self.agent.describe()

    def close(self) -> None:
        """Close the wrapped agent."""
        self.agent.close()

    def generate(self, requests: Sequence[AgentRequest], sampling: SamplingConfig) -> list[Generation]:
        """Scripted requests answered by the oracle, the others by the policy's agent, in order."""
        out: list[Generation | None] = [None] * len(requests)
        policy = [i for i, r in enumerate(requests) if not self.scripted(r)]
        for i, r in enumerate(requests):
            if self.scripted(r):
                out[i] = self._oracle.generate([r], sampling)[0]
        if policy:
            generations = self.agent.generate([requests[i] for i in policy], sampling)
            if len(generations) != len(policy):
                raise RuntimeError(f"agent returned {len(generations)} generations for {len(policy)} requests")
            for i, generation in zip(policy, generations, strict=True):
                out[i] = generation
        return [g for g in out if g is not None]

    def submit(self, items: Sequence[tuple[Hashable, AgentRequest]], sampling: SamplingConfig) -> None:
        """Answer scripted requests at once; submit the others to the policy's agent."""
        policy = []
        for key, request in items:
            if self.scripted(request):
                self._done.append((key, self._oracle.generate([request], sampling)[0]))
            else:
                policy.append((key, request))
        if policy:
            assert self._streaming is not None, "submit() needs a streaming agent (can_stream)"
            self._streaming.submit(policy, sampling)

    def collect(self) -> list[tuple[Hashable, Generation]]:
        """Finished generations: scripted ones first, then the agent's."""
        if self._done:  # scripted answers first: the engine is not stepped, so the schedule stays token-driven
            done, self._done = self._done, []
            return done
        assert self._streaming is not None, "collect() needs a streaming agent (can_stream)"
        return self._streaming.collect()


def _never(request: AgentRequest) -> bool:
    return False


def before_last_turn(request: AgentRequest) -> bool:
    """Next-turn mode's scripted requests: every turn of the prompt but its last, which the policy plays."""
    assert request.task is not None  # the rollout loop sets every request's task
    return request.turn < request.task.num_turns - 1
