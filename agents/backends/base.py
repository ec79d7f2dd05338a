"""The agent protocol: a batch of requests in, a batch of generations out.

Every backend (vLLM, transformers, OpenAI-compatible endpoints, the scripted oracle)
implements `Agent.generate`. Tool-call parsing stays in the environment, so all backends
are scored the same way. A backend failure for one request is returned as a `Generation`
with `error` set, never raised: the rollout loop records it on the episode.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field
from typing import Any, Protocol, runtime_checkable

from tooluse_gym.tasks.task import Task
from tooluse_gym.wrappers.rendered_prompt import template_renders_tools, warn_tools_not_shown


@dataclass(frozen=True, kw_only=True)
class SamplingConfig:
    """How every backend samples.

    Attributes:
        temperature: Sampling temperature; 0: greedy.
        top_p: Nucleus sampling mass, in (0, 1].
        max_tokens: Most tokens generated per assistant message.
    """

    temperature: float = 0.7
    top_p: float = 1.0
    max_tokens: int = 512

    def __post_init__(self) -> None:
        if self.temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p}")
        if self.max_tokens < 1:
            raise ValueError(f"max_tokens must be >= 1, got {self.max_tokens}")


@dataclass(frozen=True)
class AgentRequest:
    """One assistant message to generate.

    Attributes:
        observation: The env observation (``messages``, ``tools``, and ``prompt`` when rendered).
        seed: Sampling seed for this request, derived from the run seed and the episode position.
        task: The task being played (only scripted agents may look at it).
        turn: Current user turn.
        steps_in_turn: Executing steps already taken in this turn.
        tool_format: ``python`` or ``json``: what the env parses (its ``tool_format`` knob; keyword only).
        episode: The rollout loop's number for the episode (unique within one run of the loop): an
            agent that keeps state per episode (a token sequence) keys it by this.
        prompt_token_ids: Token ids to continue instead of rendering the observation (set by
            `tooluse_agents.integrations.token_sequences`; token-level agents honour it).
        max_tokens: This request's cap on new tokens, below the sampling settings' (None: theirs).
        prompt_format: The env's ``prompt_format`` knob (a configuration of BFCL's format grid: the
            call syntax it asks for), or None.
        session: The episode's id, unique across runs (the rollout loop sets it; None: no episode):
            an agent over several servers sends all of an episode's requests to one server by it,
            and names it in a session header for routers that read one.
    """

    observation: Mapping[str, Any]
    seed: int
    task: Task | None = None
    turn: int = 0
    steps_in_turn: int = 0
    _: KW_ONLY
    tool_format: str
    episode: int = 0
    prompt_token_ids: tuple[int, ...] | None = None
    max_tokens: int | None = None
    prompt_format: str | None = None
    session: str | None = None


FAILURE_CODES: Mapping[str, str] = {
    "agent_exception": "the backend raised, or returned the wrong number of generations",
    "env_error": "the env raised on the agent's action (never on model text: a bug or a broken tool backend)",
    "context_length_exceeded": "the prompt no longer fits the model's context",
    "max_completion_length": "the episode ran out of the trainer's completion-token budget (TRL adapter)",
    "rate_limited": "an OpenAI-compatible server answered 429 after every retry",
    "timeout": "an OpenAI-compatible server did not answer in time after every retry",
    "server_error": "an OpenAI-compatible server answered 5xx after every retry",
    "connection_error": "an OpenAI-compatible server could not be reached after every retry",
    "bad_request": "an OpenAI-compatible server refused the request (400)",
    "api_error": "an OpenAI-compatible server answered another error status",
}
"""Every failure that becomes data (`AgentError.type` in an episode record), listed once with its meaning."""


@dataclass(frozen=True)
class AgentError:
    """Why a backend produced no message: one of `FAILURE_CODES`, and the detail.

    A failure is data: the loop ends the episode with it, the record keeps it, results count it by
    type, and a banner says so above every table. A model server's failure (`connection_error`,
    `timeout`, `rate_limited`, `server_error`) leaves the episode unscored, to be played again on
    resume; any other counts 0 (`tooluse_agents.runs.failures`).
    """

    type: str
    message: str

    def to_dict(self) -> dict[str, str]:
        """The error as it is written into an episode record."""
        return {"type": self.type, "message": self.message}


@dataclass(frozen=True)
class Generation:
    """An assistant message and what it cost.

    `action` is what goes to `env.step`: the OpenAI-shaped `message` when the backend
    returned structured tool calls, else `text`. Local backends also return the token ids
    the engine saw (`prompt_token_ids`) and sampled (`token_ids`), with the sampled tokens'
    `logprobs`: token-level training uses exactly these, never a re-tokenization.
    """

    text: str = ""
    message: Mapping[str, Any] | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    prompt_token_ids: tuple[int, ...] | None = None
    token_ids: tuple[int, ...] | None = None
    logprobs: tuple[float, ...] | None = None
    finish_reason: str | None = None
    latency_s: float = 0.0
    error: AgentError | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def action(self) -> Any:
        """What to pass to `env.step`: the structured `message` when there is one, else `text`."""
        return self.message if self.message is not None else self.text


@runtime_checkable
class Agent(Protocol):
    """Anything that turns a batch of requests into a batch of generations (same order)."""

    name: str

    def generate(self, requests: Sequence[AgentRequest], sampling: SamplingConfig) -> list[Generation]:
        """One generation per request, in the requests' order (a failure is a generation with `error`)."""
        ...

    def describe(self) -> dict[str, Any]:
        """JSON-able identity of the agent (backend, model, settings) for result files."""
        ...

    def close(self) -> None:
        """Release the backend (an engine, a client); the agent is not used afterwards."""
        ...


@runtime_checkable
class StreamingAgent(Agent, Protocol):
    """An agent that also takes requests one by one and hands each generation back as it finishes.

    The rollout loop's ``async`` schedule uses it: an episode's next request is submitted the moment
    its previous generation comes back, and the backend (vLLM's continuous batching, a thread per
    request for an endpoint) batches whatever is in flight. Keys are the caller's; every submitted
    key comes back exactly once from `collect`.
    """

    def submit(self, items: Sequence[tuple[Hashable, AgentRequest]], sampling: SamplingConfig) -> None:
        """Start generating for each ``(key, request)``."""
        ...

    def collect(self) -> list[tuple[Hashable, Generation]]:
        """Block until at least one submitted request is done; return every one that is (nothing in flight: [])."""
        ...


@runtime_checkable
class ServedAgent(Agent, Protocol):
    """An agent whose requests go to several model servers, and that says how each fared."""

    def server_report(self) -> list[dict[str, Any]] | None:
        """Per server: its URL, episodes, requests and failures (None: one server, nothing to report)."""
        ...


def chat_prompt(tokenizer: Any, observation: Mapping[str, Any]) -> str:
    """The observation's rendered ``prompt``, or its messages rendered with the tokenizer's chat template.

    Tools the template cannot show raise a `tooluse_gym.wrappers.ToolsNotShownWarning`.
    """
    if "prompt" in observation:
        return observation["prompt"]
    tools = observation.get("tools") or None
    if tools and not template_renders_tools(getattr(tokenizer, "chat_template", None)):
        warn_tools_not_shown(len(tools))
    return tokenizer.apply_chat_template(
        observation["messages"], tools=tools, tokenize=False, add_generation_prompt=True
    )
