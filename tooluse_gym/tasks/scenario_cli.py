"""`tooluse scenarios`: check scenario files without running anything else.

tooluse scenarios validate scenarios/            # every file below the folder
tooluse scenarios validate a.yaml b.json --no-replay
tooluse scenarios schema                         # print the JSON Schema
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from collections.abc import Sequence

from tooluse_gym.errors import TaskLoadError
from tooluse_gym.tasks.scenario import ScenarioError, load_scenario_set, scenario_files, scenario_schema


def validate(paths: Sequence[str], replay: bool = True) -> int:
    """Check each file on its own; print one line per file (and each problem of a bad one) and a summary.

    Returns the exit code.
    """
    failed = 0
    total: Counter[str] = Counter()
    for path in paths:
        try:
            files = scenario_files(path)
        except TaskLoadError as e:
            print(f"error: {e}", file=sys.stderr)
            failed += 1
            continue
        for file in files:
            try:
                tasks = load_scenario_set(file, replay=replay).tasks
            except ScenarioError as e:
                print(f"FAIL {file}: {len(e.problems)} problem{'s' if len(e.problems) > 1 else ''}")
                for problem in e.problems:
                    print("  " + problem.describe().replace("\n", "\n  "))
                failed += 1
                continue
            except TaskLoadError as e:
                print(f"FAIL {e}")
                failed += 1
                continue
            counts = Counter(t.category for t in tasks)
            total.update(counts)
            detail = ", ".join(f"{c}: {n}" for c, n in sorted(counts.items()))
            print(f"ok   {file}: {len(tasks)} scenarios ({detail})")
    n = sum(total.values())
    print(f"{n} scenarios valid" + (f"; {failed} file(s) failed" if failed else ""))
    return 1 if failed else 0


def build_parser() -> argparse.ArgumentParser:
    """The `tooluse scenarios` arguments."""
    parser = argparse.ArgumentParser(prog="tooluse scenarios", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    check = sub.add_parser("validate", help="check scenario files (schema, backends, functions, ground truth)")
    check.add_argument("paths", nargs="+", help="scenario files or folders")
    check.add_argument("--no-replay", action="store_true", help="skip replaying the ground truth")
    sub.add_parser("schema", help="print the JSON Schema of scenario files")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run `tooluse scenarios` on `argv` (default: the command line) and return the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command == "schema":
        print(json.dumps(scenario_schema(), indent=2))
        return 0
    return validate(args.paths, replay=not args.no_replay)


if __name__ == "__main__":
    sys.exit(main())
