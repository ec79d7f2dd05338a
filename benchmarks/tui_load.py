"""How fast `tooluse tui` shows a large ``episodes.jsonl``: time to first paint and to open an episode.

Writes N episodes (default 10,000) to a temporary folder by repeating the TUI's fixture
records (real episodes of the environment, 1-35 kB each) under distinct task ids, then runs
the app headless and measures:

* first paint: from building the app to the first rows of the episode table on screen
  (target < 2 s); the rest of the file is summarized in the background afterwards;
* all rows: until every episode is summarized (the filters then cover the whole file);
* open: Enter on a row until its transcript is on screen (target < 0.2 s), for several rows,
  as wall time and as the CPU time the process spent (wall time counts other processes' load);
* filter / sort: one key press each over all N rows.

As a reference, the same file is read eagerly with `tooluse_agents.rollout.episode.read_episodes` (what a
reader that parses every line before showing anything would pay). Run:
``python benchmarks/tui_load.py [--episodes 10000]``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import tempfile
import time
import warnings
from pathlib import Path

from tooluse_tui.app import ToolUseApp, TuiConfig
from tooluse_tui.runs import resolve
from tooluse_tui.table import RowTable
from tooluse_tui.transcript_view import TranscriptView

ROOT = Path(__file__).resolve().parents[1]

FIXTURES = ROOT / "tests" / "tui" / "data"


def write_episodes(path: Path, n: int) -> int:
    """N distinct episode lines built from the fixture runs; returns the file size in bytes."""
    records = []
    for run in ("run_a", "run_b"):
        lines = (FIXTURES / run / "episodes.jsonl").read_text().splitlines()
        records += [json.loads(line) for line in lines if line.strip()]
    with path.open("w") as f:
        for i in range(n):
            record = dict(records[i % len(records)])
            record["task_id"] = f"{record['task_id']}_copy{i // len(records)}"
            record["seed"] = i % 5
            f.write(json.dumps(record) + "\n")
    return path.stat().st_size


async def measure(path: Path, opens: int) -> dict[str, float | list[float]]:
    start = time.perf_counter()
    app = ToolUseApp(TuiConfig(resolve([path])))
    out: dict[str, float | list[float]] = {}
    async with app.run_test(size=(120, 40)) as pilot:
        while not (app.screen.query(RowTable) and app.screen.query_one(RowTable).items):
            await pilot.pause(0.005)
        out["first_paint_s"] = time.perf_counter() - start
        screen = app.screen
        while not screen.loaded:
            await pilot.pause(0.01)
        out["all_rows_s"] = time.perf_counter() - start
        out["rows"] = len(screen.store.summaries)
        table = screen.query_one(RowTable)
        view = screen.query_one(TranscriptView)
        open_times, open_cpu = [], []
        for k in range(opens):
            table.cursor = k * (len(table.items) - 1) // max(opens - 1, 1)
            await pilot.pause()
            t, cpu = time.perf_counter(), time.process_time()
            await pilot.press("enter")
            while not view.display:
                await pilot.pause(0.001)
            open_times.append(time.perf_counter() - t)
            open_cpu.append(time.process_time() - cpu)
            await pilot.press("escape")
        out["open_s"], out["open_cpu_s"] = open_times, open_cpu
        for name, key in (("filter_failed_s", "x"), ("sort_s", "s")):
            t = time.perf_counter()
            await pilot.press(key)
            out[name] = time.perf_counter() - t
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--episodes", type=int, default=10_000)
    parser.add_argument("--opens", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "episodes.jsonl"
        size = write_episodes(path, args.episodes)
        print(f"{args.episodes} episodes, {size / 1e6:.1f} MB")
        from tooluse_agents.rollout.episode import read_episodes

        t = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            read_episodes(path)
        eager = time.perf_counter() - t
        result = asyncio.run(measure(path, args.opens))
    opens, cpu = result["open_s"], result["open_cpu_s"]
    assert isinstance(opens, list) and isinstance(cpu, list)
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print(f"first paint          {result['first_paint_s']:.3f} s   (target < 2 s)")
    print(f"all {result['rows']} rows summarized {result['all_rows_s']:.3f} s")
    print(
        f"open an episode      median {statistics.median(opens):.3f} s, max {max(opens):.3f} s"
        f" over {len(opens)}   (target < 0.2 s)"
    )
    print(f"  its CPU time       median {statistics.median(cpu):.3f} s, max {max(cpu):.3f} s")
    print(f"failed-only filter   {result['filter_failed_s']:.3f} s")
    print(f"sort by task id      {result['sort_s']:.3f} s")
    print(f"reference: eager read_episodes of the whole file {eager:.3f} s")


if __name__ == "__main__":
    main()
