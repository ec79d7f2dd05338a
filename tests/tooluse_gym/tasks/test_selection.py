"""`select_tasks`: the one task selection, and the callers that used to select on their own."""

from __future__ import annotations

import pytest

from tooluse_agents.eval.run import eval_task_ids
from tooluse_agents.train.grpo.tasks import TaskSource, load_pool
from tooluse_gym.tasks import bfcl, evenly_spaced, select_tasks
from tooluse_gym.tasks.scenario import load_scenarios
from tooluse_gym.tasks.task import Task

CURRICULUM = "scenarios/curriculum/train.yaml"


def task(task_id: str, category: str) -> Task:
    return Task(
        task_id=task_id, category=category, turns=(), ground_truth=(), functions=(), backends=(), initial_config={}
    )


TASKS = [task(f"{c}{i}", c) for i, c in enumerate("abcabcaab")]


def ids(tasks):
    return [t.task_id for t in tasks]


def test_categories_keep_the_source_order_and_ids_their_own():
    assert ids(select_tasks(TASKS, categories=["b", "a"])) == ["a0", "b1", "a3", "b4", "a6", "a7", "b8"]
    assert ids(select_tasks(TASKS, task_ids=["c5", "a0"])) == ["c5", "a0"]
    assert ids(select_tasks(TASKS, categories=["c"], task_ids=["c5"])) == ["c5"]
    with pytest.raises(ValueError, match="unknown categories"):
        select_tasks(TASKS, categories=["a", "z"])
    with pytest.raises(ValueError, match="unknown task ids"):
        select_tasks(TASKS, categories=["c"], task_ids=["a0"])
    with pytest.raises(ValueError, match="limit_per"):
        select_tasks(TASKS, limit_per="task")


def test_limit_over_the_selection_or_per_category():
    assert ids(select_tasks(TASKS, limit=3)) == ids(evenly_spaced(TASKS, 3))
    assert ids(select_tasks(TASKS, limit=2, limit_per="category")) == ["a0", "a6", "b1", "b4", "c2", "c5"]
    per = select_tasks(TASKS, categories=["c", "a"], limit=1, limit_per="category")
    assert ids(per) == ["c2", "a0"]
    assert ids(select_tasks(TASKS, limit_per="category")) == ["a0", "a3", "a6", "a7", "b1", "b4", "b8", "c2", "c5"]


def _old_eval_selection(categories, limit, scenarios=None):
    """`tooluse_agents.eval.run.select_tasks` as it was before the one `select_tasks` (commit b736701)."""
    if scenarios:
        by_category: dict[str, list[str]] = {}
        for t in load_scenarios(list(scenarios)):
            by_category.setdefault(t.category, []).append(t.task_id)
        unknown = sorted(set(categories or ()) - set(by_category))
        if unknown:
            raise ValueError(f"unknown categories {unknown}")
    else:
        by_category = {c: [t.task_id for t in bfcl.load_bfcl_tasks(c)] for c in categories or bfcl.CATEGORIES}
    out = []
    for category in categories or by_category:
        out.extend(evenly_spaced(by_category[category], limit))
    return out


@pytest.mark.parametrize(
    "categories,limit",
    [(None, None), (None, 3), (["miss_param", "base"], 4), (["multi_turn_base"], 7), (["base", "base"], 2), ([], 1)],
)
def test_eval_task_ids_are_the_old_selection_on_bfcl(categories, limit):
    once = list(dict.fromkeys(categories)) if categories else categories  # a category named twice is played once
    assert eval_task_ids(categories, limit) == _old_eval_selection(once, limit)


@pytest.mark.parametrize(
    "categories,limit", [(None, None), (None, 5), (["recover", "literal"], 3), (["two_turns"], None), ([], 2)]
)
def test_eval_task_ids_are_the_old_selection_on_scenarios(categories, limit):
    assert eval_task_ids(categories, limit, [CURRICULUM]) == _old_eval_selection(categories, limit, [CURRICULUM])


def test_training_sources_select_as_before():
    base = bfcl.load_bfcl_tasks("base")
    assert ids(load_pool(TaskSource(limit=5)).tasks) == ids(evenly_spaced(base, 5))
    curriculum = load_scenarios(CURRICULUM)
    category = "two_calls"
    source = TaskSource(source="scenario", path=CURRICULUM, category=category, limit=3)
    expected = evenly_spaced([t for t in curriculum if t.category == category], 3)
    assert ids(load_pool(source).tasks) == ids(expected)
