"""The env-speed table (results page) and the README's speed line show what `env_throughput.json` holds;
the docs home page's status lines show what `grpo_efficiency_v2.json` holds."""

from __future__ import annotations

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "env_throughput.json"
EFFICIENCY_V2 = ROOT / "benchmarks" / "results" / "grpo_efficiency_v2.json"
_ROW = re.compile(
    r"^\|\s*(?P<decoder>[^|]*?)\s*\|\s*(?P<path>[^|]+?)\s*\|\s*(?P<ms>[\d.]+)\s*\|\s*(?P<ratio>[\d.]+)×\s*\|$"
)


def _speed_section(page: str = "docs/results.md", heading: str = "## Env speed against bfcl_eval") -> str:
    text = (ROOT / page).read_text(encoding="utf-8")
    start = text.index(f"\n{heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end >= 0 else len(text)]


def _env_table(section: str) -> list[dict[str, str]]:
    lines = section.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("| decoder | path | ms / episode |"))
    rows = []
    for line in lines[header + 2 :]:
        if not line.startswith("|"):
            break
        match = _ROW.match(line)
        assert match, f"README speed table: cannot read row {line!r}"
        rows.append(match.groupdict())
    return rows


def test_speed_table_equals_the_benchmark_results():
    result = json.loads(RESULTS.read_text(encoding="utf-8"))
    rows = _env_table(_speed_section())
    seen = set()
    for row in rows:
        decoder = row["decoder"].strip("`").split("`")[0]
        if row["path"].startswith("bfcl_eval"):
            expected = {(r["official_ms"], 1.0) for r in result["decoders"].values()}
            assert len(expected) == 1
            (ms, ratio) = expected.pop()
            key = ("official", "")
        else:
            play = "first_play" if row["path"].startswith("first play") else "repeat_play"
            figures = result["decoders"][decoder]
            ms, ratio = figures[f"{play}_ms"], figures[f"{play}_ratio"]
            key = (decoder, play)
        assert row["ms"] == f"{ms:.2f}", (row, ms)
        assert row["ratio"] == f"{ratio:.2f}", (row, ratio)
        seen.add(key)
    expected_keys = {("official", "")} | {(d, p) for d in result["decoders"] for p in ("first_play", "repeat_play")}
    assert seen == expected_keys


def test_speed_section_names_the_machine_and_the_run():
    result = json.loads(RESULTS.read_text(encoding="utf-8"))
    section = _speed_section()
    machine = result["machine"]
    assert machine["cpu_model"] in section
    assert f"Python {machine['python']}" in section
    assert f"bfcl-eval {machine['bfcl_eval']}" in section
    assert f"median of {result['passes']} passes" in section
    assert f"{result['episodes']} ground-truth episodes" in section
    for row in result["decoders"].values():
        assert row["valid"] == {"official": 800, "first_play": 800, "repeat_play": 800}


def test_readme_speed_line_equals_the_benchmark_results():
    result = json.loads(RESULTS.read_text(encoding="utf-8"))
    section = _speed_section("README.md", "## Results")
    line = next(line for line in section.splitlines() if line.startswith("- Env speed against bfcl_eval"))
    official = {r["official_ms"] for r in result["decoders"].values()}
    assert len(official) == 1
    assert f"({official.pop():.2f} ms an episode" in line
    for name, d in result["decoders"].items():
        first, repeat = d["first_play_ratio"], d["repeat_play_ratio"]
        assert f"`{name}` decoder {first:.2f}× first play / {repeat:.2f}× repeat play" in line


def test_readme_server_line_equals_the_load_results():
    section = _speed_section("README.md", "## Results")
    line = next(line for line in section.splitlines() if line.startswith("- `tooluse serve-env` holding"))
    results = RESULTS.parent
    for wire, name in (("whole", "env_server_load.json"), ("delta", "env_server_load_delta.json")):
        data = json.loads((results / name).read_text(encoding="utf-8"))
        assert data["all_verdicts_equal"]
        at_goal = [r for r in data["levels"] if r["sessions"] == 2048 and r["workers"] > 1]
        assert at_goal, name
        figures = ", ".join(f"{r['step_latency_ms']['p99']:.1f} ms on {r['workers']} workers" for r in at_goal)
        assert f"{figures} ({wire} observations)" in line
    assert "2,048 sessions that think 5 s" in line and "every verdict equal to in-process" in line


def test_docs_home_status_lines_are_the_v2_results():
    """docs/index.md's status is the generated block (test_docs checks it against the generator), with v2's verdicts."""
    result = json.loads(EFFICIENCY_V2.read_text(encoding="utf-8"))
    text = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
    start, end = text.index("<!-- gen:status -->\n"), text.index("<!-- /gen:status -->")
    block = text[start:end]
    outside = text[:start] + text[end:]
    assert "grpo_efficiency_v2.json" in block
    for arm, speedup in result["verdicts"]["speedup"].items():
        assert f"{speedup['geometric_mean']} as fast as vanilla" in block, arm
        assert f"faster: {speedup['status']}, no loss: {result['verdicts']['no_loss'][arm]['status']}" in block, arm
    assert not re.search(r"\d\.\d+x", outside.replace("1.7-2.6x", "")), "a speed-up typed outside the block"


def test_first_run_prose_is_the_generated_findings_of_first_run_json():
    """What the README and the results page say about `make run`'s table is generated from it, CPU included."""
    from tooluse_agents.eval.table import table_findings

    data = json.loads((ROOT / "benchmarks" / "results" / "first_run.json").read_text(encoding="utf-8"))
    findings = table_findings(data)
    assert data["recorded"]["machine"]["cpu_model"] in findings and "on a different CPU" in findings
    for page in ("README.md", "docs/results.md"):
        text = (ROOT / page).read_text(encoding="utf-8")
        start, end = text.index("<!-- gen:first-run -->\n"), text.index("<!-- /gen:first-run -->")
        assert findings in text[start:end], page
        assert "intervals reach 0" not in text[:start] + text[end:], page
