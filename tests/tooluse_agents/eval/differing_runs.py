"""Two hand-written BFCL run folders that played different categories, tasks and seeds (issue 43).

Run A: base and miss_func, seeds 0 and 1. Run B: all four categories, seeds 0, 1 and 2. Rewards
per task, one per seed (``-``: not played):

    task                       category      A (s0 s1)   B (s0 s1 s2)
    multi_turn_base_0          base          1  1        1  0  0
    multi_turn_base_4          base          0  1        1  1  1     (a known BFCL issue)
    multi_turn_base_2          base          1  1        -  -  -     (A only)
    multi_turn_miss_func_0     miss_func     0  0        1  1  1
    multi_turn_miss_func_1     miss_func     1  0        1  0  1
    multi_turn_miss_param_0    miss_param    -  -        0  0  0     (B only)
    multi_turn_long_context_0  long_context  -  -        0  0  0     (B only)

Both played the first two base tasks and both miss_func tasks under seeds 0 and 1: 8 pairs.
Left out of A: base_2 (2 episodes). Left out of B: seed 2 (6 episodes) and the miss_param and
long_context tasks under seeds 0 and 1 (4 episodes), 10 in all.
"""

from __future__ import annotations

import json
from pathlib import Path

DATA = Path(__file__).resolve().parents[2] / "tooluse_tui" / "data"

A = {
    ("multi_turn_base_0", "base"): (1, 1),
    ("multi_turn_base_4", "base"): (0, 1),
    ("multi_turn_base_2", "base"): (1, 1),
    ("multi_turn_miss_func_0", "miss_func"): (0, 0),
    ("multi_turn_miss_func_1", "miss_func"): (1, 0),
}
B = {
    ("multi_turn_base_0", "base"): (1, 0, 0),
    ("multi_turn_base_4", "base"): (1, 1, 1),
    ("multi_turn_miss_func_0", "miss_func"): (1, 1, 1),
    ("multi_turn_miss_func_1", "miss_func"): (1, 0, 1),
    ("multi_turn_miss_param_0", "miss_param"): (0, 0, 0),
    ("multi_turn_long_context_0", "long_context"): (0, 0, 0),
}


def episodes(rewards: dict[tuple[str, str], tuple[int, ...]]) -> list[dict]:
    """Episode records (the fields results need) for rewards by (task id, category), one per seed."""
    return [
        {"task_id": t, "category": c, "seed": seed, "reward": float(r), "turns": [], "error": None}
        for (t, c), per_seed in rewards.items()
        for seed, r in enumerate(per_seed)
    ]


def write_runs(root: Path) -> tuple[Path, Path]:
    """Run folders ``a`` and ``b``: ``episodes.jsonl``, and ``results.json`` with the TUI fixture's
    protocol card (BFCL) and the summary `tooluse eval run` would write."""
    from tooluse_agents.runs.results import summarize
    from tooluse_gym.tasks.known_issues import load_known_issues

    protocol = json.loads((DATA / "run_a" / "results.json").read_text())["protocol"]
    folders = []
    for name, rewards in (("a", A), ("b", B)):
        folder = root / name
        folder.mkdir()
        records = [{"schema_version": 1, "protocol": protocol, **e} for e in episodes(rewards)]
        (folder / "episodes.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
        summary = summarize(records, load_known_issues())
        (folder / "results.json").write_text(json.dumps({"protocol": protocol, "summary": summary}))
        folders.append(folder)
    return folders[0], folders[1]
