"""Which tasks a run plays: each env's share of the categories, task ids per category, the env of a task id."""

from __future__ import annotations

from collections.abc import Sequence

from tooluse_gym.envs.ids import MEMORY_ID, MULTI_TURN_ID, SINGLE_TURN_ID, WEB_SEARCH_ID
from tooluse_gym.envs.memory import expand_categories as expand_memory
from tooluse_gym.envs.settings import env_groups
from tooluse_gym.tasks import bfcl, bfcl_single_turn, select_tasks
from tooluse_gym.tasks.bfcl_memory import load_memory_tasks
from tooluse_gym.tasks.bfcl_web_search import expand_categories as expand_web_search
from tooluse_gym.tasks.bfcl_web_search import load_web_search_tasks
from tooluse_gym.tasks.task import Task

__all__ = ["env_of_task_id", "eval_task_ids", "group_task_ids"]


def env_of_task_id(task_id: str) -> str:
    """The BFCL env a task id belongs to, by its category prefix (multi-turn when no other matches)."""
    if task_id.startswith("memory_"):
        return MEMORY_ID
    if task_id.startswith("web_search_"):
        return WEB_SEARCH_ID
    prefix = task_id.split("-", 1)[0].rsplit("_", 1)[0]
    return SINGLE_TURN_ID if prefix in bfcl_single_turn.CATEGORIES else MULTI_TURN_ID


def eval_task_ids(
    categories: Sequence[str] | None, limit: int | None, scenarios: Sequence[str] | None = None
) -> list[str]:
    """Task ids per category (in the source's order); with `limit`, that many evenly spaced over each category.

    Categories of several envs (`env_groups`) give each env's ids in turn.
    """
    groups = env_groups(categories, scenarios)
    return [t for env_id, names in groups for t in group_task_ids(env_id, names or None, limit, scenarios)]


def group_task_ids(
    env_id: str, categories: Sequence[str] | None, limit: int | None, scenarios: Sequence[str] | None
) -> list[str]:
    """One env's task ids for its share of the categories (`eval_task_ids`)."""
    if scenarios:
        from tooluse_gym.tasks.scenario import load_scenarios

        tasks = load_scenarios(list(scenarios))
    elif env_id == MEMORY_ID:
        categories = expand_memory(list(categories or ()))
        tasks = list[Task](load_memory_tasks(categories))
    elif env_id == WEB_SEARCH_ID:
        categories = expand_web_search(list(categories or ("web_search",)))
        tasks = list[Task](load_web_search_tasks(categories))
    elif env_id == SINGLE_TURN_ID:
        categories = list(dict.fromkeys(n for c in categories or () for n in bfcl_single_turn.category_names(c)))
        tasks = [t for c in categories for t in bfcl_single_turn.load_single_turn_tasks(c)]
    else:
        categories = [bfcl.normalize_category(c) for c in categories if c != "all"] if categories else None
        categories = None if categories == [] else categories
        tasks = [t for c in dict.fromkeys(categories or bfcl.CATEGORIES) for t in bfcl.load_bfcl_tasks(c)]
    selected = select_tasks(tasks, categories=categories or None, limit=limit, limit_per="category")
    return [t.task_id for t in selected]
