"""`EnvSettings`: one JSON-able description of an env (env id, task source, knobs), and the env it builds.

Every part that builds an env from settings rather than from code goes through it: the evaluation
harness, the TRL and verifiers adapters, the OpenEnv server and the trainer's task sources. It is
also the one place that says which env a list of BFCL categories plays (`env_id_for`) and which
category an env id plays when none is given (`DEFAULT_CATEGORIES`)::

    env = EnvSettings("ToolUse-MultiTurn-v0", task_ids=("multi_turn_base_0",), knobs={"system_prompt": "none"}).make()
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym

from tooluse_gym.envs.ids import MEMORY_ID, MULTI_TURN_ID, SCENARIO_ID, SINGLE_TURN_ID, WEB_SEARCH_ID
from tooluse_gym.tasks import bfcl, bfcl_memory, bfcl_single_turn, bfcl_web_search

__all__ = ["BFCL_ALL", "DEFAULT_CATEGORIES", "SETTINGS_ENV_IDS", "EnvSettings", "env_groups", "env_id_for", "make_env"]

SETTINGS_ENV_IDS = (MULTI_TURN_ID, SINGLE_TURN_ID, MEMORY_ID, WEB_SEARCH_ID, SCENARIO_ID)
"""The env ids built from JSON-able settings (``ToolUse-Tasks-v0`` takes a `TaskPool` object)."""

DEFAULT_CATEGORIES: Mapping[str, tuple[str, str]] = {
    MULTI_TURN_ID: ("base", "all"),
    SINGLE_TURN_ID: ("simple_python", "single_turn"),
    MEMORY_ID: ("memory_kv", "memory"),
    WEB_SEARCH_ID: ("web_search", "web_search"),
}
"""Each BFCL env id's category when none is given: without task ids, and with them (every category)."""


BFCL_ALL = "bfcl"
"""The category name for every BFCL category this package plays offline: single-turn, multi-turn and memory.

Web search is named on its own (``web_search``): it needs a search backend, which is the run's choice."""
_EVERY = ((SINGLE_TURN_ID, "single_turn"), (MULTI_TURN_ID, "all"), (MEMORY_ID, "memory"))


def env_groups(categories: Sequence[str] | None, scenarios: Sequence[str] | None) -> list[tuple[str, tuple[str, ...]]]:
    """The envs a run plays, each with its share of `categories`, in the order the categories name them.

    Scenarios play the scenario env; a BFCL single-turn category or group plays ``ToolUse-SingleTurn-v0``,
    a memory one ``ToolUse-Memory-v0``, a web-search one ``ToolUse-WebSearch-v0``, any other multi-turn
    BFCL (checked where it is loaded); ``bfcl`` (`BFCL_ALL`) names the first three. No categories: BFCL
    multi-turn.
    """
    if scenarios:
        return [(SCENARIO_ID, tuple(categories or ()))]
    groups: dict[str, list[str]] = {}
    for category in categories or ():
        if category == BFCL_ALL:
            for env_id, every in _EVERY:
                groups.setdefault(env_id, []).append(every)
        elif category in bfcl_memory.CATEGORIES or category == "memory":
            groups.setdefault(MEMORY_ID, []).append(category)
        elif category in bfcl_web_search.CATEGORIES or category == bfcl_web_search.GROUP:
            groups.setdefault(WEB_SEARCH_ID, []).append(category)
        elif category in bfcl_single_turn.GROUPS or category in bfcl_single_turn.CATEGORIES:
            groups.setdefault(SINGLE_TURN_ID, []).append(category)
        elif category == "all" or category.removeprefix("multi_turn_") in bfcl.CATEGORIES:
            groups.setdefault(MULTI_TURN_ID, []).append(category)
        else:
            raise ValueError(unknown_category_message(category))
    if not groups:
        return [(MULTI_TURN_ID, ())]
    return [(env_id, tuple(dict.fromkeys(names))) for env_id, names in groups.items()]


def known_categories() -> tuple[str, ...]:
    """Every name `env_groups` takes: BFCL's categories and groups of each env, and `BFCL_ALL`."""
    multi = (*bfcl.CATEGORIES, *(f"multi_turn_{c}" for c in bfcl.CATEGORIES), "all")
    single = (*bfcl_single_turn.CATEGORIES, *bfcl_single_turn.GROUPS)
    web = (*bfcl_web_search.CATEGORIES, bfcl_web_search.GROUP)
    return (BFCL_ALL, *single, *multi, *bfcl_memory.CATEGORIES, "memory", *web)


def unknown_category_message(category: str) -> str:
    """A one-line refusal of an unknown category naming close matches and every family."""
    close = difflib.get_close_matches(category, known_categories(), n=3, cutoff=0.6)
    hint = f"did you mean {' or '.join(map(repr, close))}? " if close else ""
    return (
        f"unknown BFCL category {category!r}; {hint}single-turn: {', '.join(bfcl_single_turn.CATEGORIES)} "
        f"(groups {', '.join(bfcl_single_turn.GROUPS)}); multi-turn: {', '.join(bfcl.CATEGORIES)}, all; "
        f"memory: {', '.join(bfcl_memory.CATEGORIES)}, memory; web search: {', '.join(bfcl_web_search.CATEGORIES)}, "
        f"{bfcl_web_search.GROUP}; every one that runs offline: {BFCL_ALL}"
    )


def env_id_for(categories: Sequence[str] | None, scenarios: Sequence[str] | None) -> str:
    """The one env a list of categories plays (`env_groups`); a `ValueError` when they span several."""
    groups = env_groups(categories, scenarios)
    if len(groups) > 1:
        spans = "; ".join(f"{env_id}: {', '.join(names)}" for env_id, names in groups)
        raise ValueError(f"the categories span several envs ({spans}): one env at a time here")
    return groups[0][0]


@dataclass(frozen=True)
class EnvSettings:
    """An env as data: what `make` passes to ``gymnasium.make``.

    Attributes:
        env_id: ``ToolUse-MultiTurn-v0`` (BFCL multi-turn), ``ToolUse-SingleTurn-v0`` (BFCL single-turn),
            ``ToolUse-Memory-v0``, ``ToolUse-WebSearch-v0`` (BFCL's agentic categories; their own settings,
            such as web search's ``search_backend``, go in `knobs`) or ``ToolUse-Scenario-v0`` (scenario files).
        category: The BFCL category or group: multi-turn ``base``, ``miss_func``, ``miss_param``,
            ``long_context``, ``all``; single-turn ``simple_python`` ... ``live_relevance``, ``non_live``,
            ``live``, ``single_turn``. BFCL only. Unset: every category when `task_ids` are given (they
            name their categories), else ``base`` (multi-turn) or ``simple_python`` (single-turn).
        scenario_path: Scenario files or folders; ``ToolUse-Scenario-v0`` only, and required there.
        task_ids: Restrict the env to these tasks.
        knobs: Protocol knobs (`tooluse_gym.envs.knobs.Knobs`); unset ones keep the env id's defaults.

    Raises:
        ValueError: An unknown env id, or settings that belong to another env id.
    """

    env_id: str = MULTI_TURN_ID
    category: str | None = None
    scenario_path: tuple[str, ...] = ()
    task_ids: tuple[str, ...] | None = None
    knobs: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "scenario_path", tuple(str(p) for p in self.scenario_path))
        if self.task_ids is not None:
            object.__setattr__(self, "task_ids", tuple(self.task_ids))
        object.__setattr__(self, "knobs", dict(self.knobs))
        if self.env_id not in SETTINGS_ENV_IDS:
            raise ValueError(f"env_id must be one of {', '.join(SETTINGS_ENV_IDS)}; got {self.env_id!r}")
        if self.env_id in DEFAULT_CATEGORIES and self.scenario_path:
            raise ValueError(f"scenario_path is for ToolUse-Scenario-v0; {self.env_id} plays BFCL's tasks")
        if self.env_id == SCENARIO_ID and not self.scenario_path:
            raise ValueError("ToolUse-Scenario-v0 needs scenario_path (scenario files or folders)")

    def source_kwargs(self) -> dict[str, Any]:
        """The task source as ``gymnasium.make`` takes it: ``category`` (BFCL) or ``path`` (scenarios)."""
        if self.env_id == SCENARIO_ID:
            return {"path": list(self.scenario_path)}
        category = self.category
        if category is None:
            default, every = DEFAULT_CATEGORIES[self.env_id]
            category = every if self.task_ids else default
        return {"category": category}

    def make(self, **knobs: Any) -> gym.Env:
        """The env, wrapped for the protocol as ``gymnasium.make`` returns it (`knobs` over the settings' own)."""
        ids = list(self.task_ids) if self.task_ids is not None else None
        return gym.make(self.env_id, **self.source_kwargs(), task_ids=ids, **{**self.knobs, **knobs})

    def to_dict(self) -> dict[str, Any]:
        """JSON-able settings (`from_dict` reads them back)."""
        return {
            "env_id": self.env_id,
            "category": self.category,
            "scenario_path": list(self.scenario_path),
            "task_ids": None if self.task_ids is None else list(self.task_ids),
            "knobs": dict(self.knobs),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> EnvSettings:
        """Settings from `to_dict`'s shape (missing keys take their defaults)."""
        unknown = sorted(set(data) - {"env_id", "category", "scenario_path", "task_ids", "knobs"})
        if unknown:
            raise ValueError(f"unknown env settings {unknown}")
        return cls(**data)


def make_env(
    env_id: str = MULTI_TURN_ID,
    *,
    category: str | None = None,
    scenario_path: Sequence[str] = (),
    task_ids: Sequence[str] | None = None,
    **knobs: Any,
) -> gym.Env:
    """``EnvSettings(...).make()`` in one call: the settings as keywords, the knobs as the rest."""
    ids = tuple(task_ids) if task_ids is not None else None
    settings = EnvSettings(env_id, category=category, scenario_path=tuple(scenario_path), task_ids=ids, knobs=knobs)
    return settings.make()
