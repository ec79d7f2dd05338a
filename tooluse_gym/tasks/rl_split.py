"""A published train / held-out split of BFCL's 800 multi-turn tasks, for RL: fixed, stratified, leak-free.

RL papers split BFCL multi-turn ad hoc for training and evaluation; this is one fixed split, written as
a file in the package (``tasks/splits/bfcl_multi_turn_rl_v1.json``: the ids per split, the rule, the
seed and the sha256 of the BFCL files it was made from) and played as an env option::

    gym.make("ToolUse-MultiTurn-v0", category="all", split="train")    # 600 tasks
    gym.make("ToolUse-MultiTurn-v0", category="all", split="heldout")  # 200 tasks, never trained on

The rule (`make_split`). BFCL derives its ``miss_func``, ``miss_param`` and ``long_context`` tasks from
the ``base`` task with the same index: ``long_context_i`` has ``base_i``'s initial state and ground
truth, and most indices share one initial state over all four categories. So the split is made over
*linked groups* of indices, never over single tasks: two indices are linked when any of their tasks
share an initial state or a first user message (`linked_groups`). Each group's order is the sha256 of
``"<seed>:<its smallest index>"``; walking the groups in that order, a group goes to the held-out side
while it keeps the held-out indices within `HELDOUT_FRACTION` of the 200. A held-out index holds out
its task in every category, so each category's held-out share is the same (stratified), and no
training task shares an initial state, a first message or a ground truth's origin with a held-out one.

A score on the held-out split is not a BFCL score: it covers a quarter of the tasks, chosen by this
rule, and is comparable only with other held-out scores of the same split version.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from functools import cache
from importlib import resources
from typing import Any

from tooluse_gym.tasks.task import Task

SPLIT_NAME = "bfcl_multi_turn_rl_v1"
"""The published split's name and file stem (a new rule or new data make a new version, never an edit)."""
SPLITS = ("train", "heldout")
SEED = 59
HELDOUT_FRACTION = 0.25
RULE = (
    "indices 0..199 of the four multi-turn categories are linked when any of their tasks share an initial "
    "state or a first user message; linked groups are ordered by sha256('<seed>:<smallest index>') and "
    "walked in that order, a group going to heldout while the held-out indices stay within "
    "heldout_fraction of all indices; a held-out index holds out its task in every category"
)

__all__ = [
    "HELDOUT_FRACTION",
    "RULE",
    "SEED",
    "SPLITS",
    "SPLIT_NAME",
    "linked_groups",
    "load_split",
    "make_split",
    "split_task_ids",
    "task_index",
]


def task_index(task_id: str) -> int:
    """The BFCL index of a multi-turn task id (``multi_turn_miss_func_12`` -> 12)."""
    return int(task_id.rsplit("_", 1)[1])


def _state_key(task: Task) -> str:
    return json.dumps(task.initial_config, sort_keys=True, default=str)


def _question_key(task: Task) -> str:
    return json.dumps(task.turns[0] if task.turns else (), sort_keys=True, default=str)


def linked_groups(tasks: Sequence[Task]) -> list[tuple[int, ...]]:
    """The indices that must sit on one side: linked by a shared initial state or first message, sorted."""
    parent: dict[int, int] = {}

    def find(i: int) -> int:
        while parent.setdefault(i, i) != i:
            i = parent[i]
        return i

    first: dict[tuple[str, str], int] = {}
    for task in tasks:
        index = find(task_index(task.task_id))
        for key in (("state", _state_key(task)), ("question", _question_key(task))):
            other = find(first.setdefault(key, index))
            parent[max(index, other)] = min(index, other)
            index = min(index, other)
    groups: dict[int, list[int]] = {}
    for i in parent:
        groups.setdefault(find(i), []).append(i)
    return sorted(tuple(sorted(g)) for g in groups.values())


def _order(seed: int, group: tuple[int, ...]) -> str:
    return hashlib.sha256(f"{seed}:{group[0]}".encode()).hexdigest()


def make_split(
    tasks: Sequence[Task], seed: int = SEED, heldout_fraction: float = HELDOUT_FRACTION
) -> dict[str, list[str]]:
    """The split of `tasks` by the rule (`RULE`): ``{"train": ids, "heldout": ids}``, each in the tasks' order."""
    groups = linked_groups(tasks)
    target = int(heldout_fraction * sum(len(g) for g in groups))
    heldout: set[int] = set()
    for group in sorted(groups, key=lambda g: _order(seed, g)):
        if len(heldout) + len(group) <= target:
            heldout.update(group)
    return {
        "train": [t.task_id for t in tasks if task_index(t.task_id) not in heldout],
        "heldout": [t.task_id for t in tasks if task_index(t.task_id) in heldout],
    }


def split_record(tasks: Sequence[Task], data: Mapping[str, str], bfcl_version: str) -> dict[str, Any]:
    """The split file's content: name, rule, seed, fraction, the data it was made from, the ids per split."""
    return {
        "name": SPLIT_NAME,
        "rule": RULE,
        "seed": SEED,
        "heldout_fraction": HELDOUT_FRACTION,
        "bfcl_version": bfcl_version,
        "data_sha256": dict(data),
        "splits": make_split(tasks),
    }


@cache
def load_split(name: str = SPLIT_NAME) -> Mapping[str, Any]:
    """The published split file ``tasks/splits/<name>.json``, as a mapping."""
    path = resources.files("tooluse_gym.tasks").joinpath("splits").joinpath(f"{name}.json")
    if not path.is_file():
        raise ValueError(f"no published split {name!r}; there is {SPLIT_NAME!r}")
    data: Mapping[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def split_task_ids(split: str, name: str = SPLIT_NAME) -> frozenset[str]:
    """The task ids of one side (``train`` or ``heldout``) of a published split."""
    if split not in SPLITS:
        raise ValueError(f"split must be one of {', '.join(SPLITS)}; got {split!r}")
    return frozenset(load_split(name)["splits"][split])


def main() -> None:
    """Write the split file from the installed BFCL data (``python -m tooluse_gym.tasks.rl_split OUT``)."""
    import sys

    from tooluse_gym.tasks import bfcl, bfcl_data

    tasks = bfcl.load_bfcl_tasks("all")
    data = bfcl_data.digests(bfcl_data.multi_turn_files(list(bfcl.CATEGORIES), backends=()))
    record = split_record(tasks, dict(data), bfcl.bfcl_version())
    text = json.dumps(record, indent=1) + "\n"
    if len(sys.argv) > 1:
        with open(sys.argv[1], "w", encoding="utf-8") as out:
            out.write(text)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
