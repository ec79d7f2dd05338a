"""Record a `make run` for the README: time it from a fresh clone and keep its table as first_run.json.

    python -m experiments.tools.record_first_run            # clone HEAD into a scratch folder, time `make run` there
    python -m experiments.tools.record_first_run --here     # time `make run` in this checkout (its .venv as it is)

Cold: the clone gets its own empty cache folder (``XDG_CACHE_HOME``), so SmolLM2's conversion, the
warm-start's merge and vLLM's caches are all made inside the timed run; pip's download cache is the
machine's. The clone is timed twice over: `make setup` alone, then `make run` (which finds the setup done), so
the record says how much of the time was setup. The run's ``runs/first-run/results.json`` (written by
`tooluse eval table`) is copied to ``benchmarks/results/first_run.json`` with a ``recorded`` block:
the wall times, the command, the commit and the machine. The README's table is generated from it.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import tempfile
import time
from pathlib import Path

from experiments.framework.provenance import ROOT
from tooluse_agents.runs.portable import portable

OUT = ROOT / "benchmarks" / "results" / "first_run.json"


def _timed(command: list[str], cwd: Path, env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, cwd=cwd, env=env, check=True)
    return time.perf_counter() - start


def _cpu_model() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--here", action="store_true", help="run in this checkout instead of a fresh clone")
    args = parser.parse_args(argv)
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    with tempfile.TemporaryDirectory(prefix="first-run-") as scratch:
        where, env = ROOT, dict(os.environ)
        if not args.here:
            where = Path(scratch) / "clone"
            subprocess.run(["git", "clone", "--quiet", str(ROOT), str(where)], check=True)
            env["XDG_CACHE_HOME"] = str(Path(scratch) / "cache")
        setup_s = _timed(["make", "setup"], where, env)
        run_s = _timed(["make", "run"], where, env)
        data = json.loads((where / "runs" / "first-run" / "results.json").read_text())
    data["recorded"] = {
        "command": "make run",
        "fresh_clone": not args.here,
        "empty_model_cache": not args.here,
        "setup_s": round(setup_s, 1),
        "wall_s": round(setup_s + run_s, 1),
        "commit": commit,
        "machine": {"cpu_model": _cpu_model(), "cpu_count": os.cpu_count(), "python": platform.python_version()},
    }
    OUT.write_text(json.dumps(portable(data, ROOT), indent=2) + "\n")
    print(f"wrote {OUT.relative_to(ROOT)}: {data['recorded']['wall_s'] / 60:.1f} min (setup {setup_s / 60:.1f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
