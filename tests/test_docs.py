"""The documentation runs and cannot drift.

* Every ``python`` code block in README.md and docs/ is executed, a file's blocks in order in one
  namespace (so a page can build on its earlier blocks), from the repository root. A block that
  needs a model or a long run is preceded by ``<!-- docs-test: skip REASON -->`` and skipped with
  that reason; a block that is not meant to run alone (a fragment) by ``<!-- docs-test: fragment -->``.
* The generated reference pages and the result tables in README.md and docs/ equal what
  ``docs/_scripts/gen_pages.py`` makes from the code and ``benchmarks/results/*.json`` now.
"""

from __future__ import annotations

import importlib.util
import os
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MARKDOWN = [ROOT / "README.md", *sorted(p for p in (ROOT / "docs").rglob("*.md") if "_scripts" not in p.parts)]
_FENCE = re.compile(
    r"(?:<!-- docs-test: (?P<mark>skip|fragment) ?(?P<reason>[^>]*?) ?-->\n)?"
    r"^```(?P<lang>[\w-]*)[^\n]*\n(?P<code>.*?)^```",
    re.S | re.M,
)


@dataclass(frozen=True)
class Block:
    path: Path
    line: int
    code: str
    mark: str | None
    reason: str


def python_blocks(path: Path) -> list[Block]:
    text = path.read_text(encoding="utf-8")
    return [
        Block(path, text.count("\n", 0, m.start("code")) + 1, m.group("code"), m.group("mark"), m.group("reason"))
        for m in _FENCE.finditer(text)
        if m.group("lang") in ("python", "py")
    ]


def _generator():
    spec = importlib.util.spec_from_file_location("gen_pages", ROOT / "docs" / "_scripts" / "gen_pages.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("path", [p for p in MARKDOWN if python_blocks(p)], ids=lambda p: str(p.relative_to(ROOT)))
def test_python_blocks_run(path, monkeypatch):
    monkeypatch.chdir(ROOT)
    namespace: dict[str, object] = {"__name__": "__docs__"}
    ran = 0
    for block in python_blocks(path):
        if block.mark is not None:
            assert block.reason or block.mark == "fragment", f"{path.name}:{block.line}: a skip needs a reason"
            continue
        try:
            exec(compile(block.code, f"{path.relative_to(ROOT)}:{block.line}", "exec"), namespace)
        except Exception as e:
            raise AssertionError(f"{path.relative_to(ROOT)}, the block at line {block.line} failed: {e!r}") from e
        ran += 1
    for value in namespace.values():  # close what the blocks opened
        close = getattr(value, "close", None)
        if callable(close) and hasattr(value, "step"):
            close()
    if not ran:
        pytest.skip("every python block here is marked: " + "; ".join(b.reason for b in python_blocks(path)))


def test_every_skip_names_its_reason():
    for path in MARKDOWN:
        for block in python_blocks(path):
            if block.mark == "skip":
                assert block.reason.strip(), f"{path.relative_to(ROOT)}:{block.line}"


def test_generated_pages_are_current():
    stale = [
        str(path.relative_to(ROOT))
        for path, text in _generator().expected().items()
        if not path.exists() or path.read_text(encoding="utf-8") != text
    ]
    assert not stale, f"out of date, run `make docs`: {stale}"


def test_generator_tolerates_missing_results(tmp_path, monkeypatch):
    gen = _generator()
    import sys

    monkeypatch.setattr(sys.modules["pages_common"], "RESULTS", tmp_path)  # where the tables read result files
    blocks = ("env-speed", "rollout-schedule", "dtype-cpu", "efficiency-headline", "speed-summary", "env-server-load")
    blocks += ("env-server-load-delta",)
    for name in (*blocks, "efficiency-v2", "efficiency-single-turn", "trainer-vs-trl"):
        assert "Not measured yet" in gen.BLOCKS[name]()
    headline = gen.BLOCKS["headline"]()
    assert headline.count("not measured yet") >= 3, headline  # one row per pre-registered GRPO study at least
    assert "Not measured yet" in gen.BLOCKS["protocol-sensitivity"]()


def test_study_rows_name_every_arms_learned_verdict_and_the_reference(tmp_path, monkeypatch):
    """Study A's report tests every arm's learning and compares with TRL: the headline says both."""
    _generator()
    import json
    import sys

    monkeypatch.setattr(sys.modules["pages_common"], "RESULTS", tmp_path)
    learned = {"status": "met", "per_seed": {"0": {"gain": 0.05, "p": 0.01}}}
    report = {
        "seeds": {"preregistered": [0, 1, 2], "complete": [0]},
        "arms": {"vanilla": {"no_loss": {}}, "trl": {}},
        "verdicts": {
            "learned": learned,
            "learned_by_arm": {"vanilla": {**learned, "status": "not met"}, "trl": learned},
            "speedup": {
                "vanilla": {
                    "status": "undefined",
                    "target": "T50",
                    "geometric_mean": "2.00x",
                    "per_seed": {"0": "2.00x"},
                }
            },
            "no_loss": {"vanilla": {"status": "not yet decidable"}},
        },
    }
    (tmp_path / "trainer_vs_trl.json").write_text(json.dumps(report))
    tables = sys.modules["result_tables"]
    learned_row, versus = tables.study_rows(tables.TRL)
    assert "every arm learns" in learned_row[0] and learned_row[2] == "vanilla: not met, trl: met"
    assert "against TRL's GRPOTrainer" in versus[0] and "final minus TRL's GRPOTrainer's n/a" in versus[1]
    assert versus[2] == "faster: undefined; no loss: not yet decidable"


def test_protocol_sensitivity_table_reads_each_change_against_the_paper(tmp_path, monkeypatch):
    gen = _generator()
    import json
    import sys

    tables = sys.modules["result_tables"]
    assert tables.reading(-0.07, [-0.1, -0.04], (-8.0, -6.0)) == "same direction, as large as the paper's"
    assert tables.reading(-0.03, [-0.05, -0.01], (-8.0, -6.0)) == "same direction, smaller than the paper's"
    assert tables.reading(0.03, [0.01, 0.05], (-15.0, -15.0)) == "opposite direction to the paper"
    assert tables.reading(-0.03, [-0.05, 0.0], (-15.0, -15.0)) == "interval includes 0: no effect shown"
    assert tables.reading(0.02, [0.01, 0.03], None) == "moves the score; no paper figure"
    assert tables.reading(None, None, None) == "no paired episodes"
    report = {
        "curriculum": {
            "base": {"overall": 0.4, "seed_spread": {"seeds": 5, "max_minus_min": 0.05, "std": 0.02}},
            "changes": [
                {
                    "knob": "template",
                    "value": "context",
                    "overall": 0.3,
                    "paired": {"diff": -0.1, "ci95": [-0.14, -0.06]},
                },
                {
                    "knob": "system_prompt",
                    "value": "Be brief.",
                    "overall": 0.45,
                    "paired": {"diff": 0.05, "ci95": [0.01, 0.09]},
                },
            ],
        },
        "bfcl_slice": {"overall": 0.05, "per_seed": {"0": 0.05, "1": 0.1, "2": 0.0}, "folder": "runs/ps/bfcl"},
        "grpo_base": None,
        "reasoning": "not testable: no <think>",  # the tag goes in backticks: Markdown would hide it
        "paper": {"seed": {"points": 3}, "reasoning": {"points": [2, 5]}},
        "prereg": {"path": "benchmarks/preregistered/protocol_sensitivity_v1.yaml", "commit": "0123456789ab"},
    }
    (tmp_path / "protocol_sensitivity.json").write_text(json.dumps(report))
    monkeypatch.setattr(sys.modules["pages_common"], "RESULTS", tmp_path)
    lines = gen.BLOCKS["protocol-sensitivity"]().splitlines()
    assert lines[2] == "| base (5 seeds) | 40.0 | seed spread 5.0 (max - min), std 2.0 |  | about 3 points |  |"
    assert (
        lines[3]
        == "| template = context | 30.0 | -10.0 | [-14.0, -6.0] | -8/-6 | same direction, larger than the paper's |"
    )
    assert (
        lines[4] == "| system_prompt = literal text (below) | 45.0 | +5.0 | [+1.0, +9.0] | n/a | "
        "moves the score; no paper figure |"
    )
    assert lines[5] == "| reasoning history |  |  |  | 2 to 5 | not testable: no `<think>` |"
    assert '- The literal system prompt: "Be brief."' in lines
    assert "- BFCL slice (base protocol, BFCL's rules): 5.0% (per seed: 5.0, 10.0, 0.0; `runs/ps/bfcl`)." in lines
    assert "GRPO-trained" not in "\n".join(lines) and "(commit 0123456)" in lines[-1]


def test_metric_keys_page_lists_the_declaration():
    """The page lists every declared key once: the ones every line holds (`METRIC_KEYS`), then the others."""
    from tooluse_agents.runs.metrics import METRICS
    from tooluse_agents.runs.records import METRIC_KEYS

    gen = _generator()
    always, others = gen.metric_keys()
    assert always == list(METRIC_KEYS)
    listed = [*always, *others]
    assert sorted(listed) == sorted(m.key for m in METRICS) and len(set(listed)) == len(METRICS)
    page = gen.metrics_page()
    assert all(f"| `{m.key}` | {m.doc} |" in page for m in METRICS)


def test_docs_build_imports_no_backend():
    """The generator must stay cheap: building the pages does not import torch or vLLM."""
    import subprocess
    import sys

    code = (
        "import importlib.util, sys; spec = importlib.util.spec_from_file_location('g', 'docs/_scripts/gen_pages.py'); "
        "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m); m.expected(); "
        "print(sorted(k for k in ('torch', 'vllm', 'transformers') if k in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, env=os.environ)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


_LINK = re.compile(r"(?<!!)\[[^\]\n]*\]\((?P<target>[^)\n]*)\)")
_HEADING = re.compile(r"^#{1,6} +(?P<text>.*?)(?: *\{#(?P<id>[\w-]+)\})? *$", re.M)
_CODE = re.compile(r"^```.*?^```", re.S | re.M)
_ID = re.compile(r'id="(?P<id>[\w-]+)"')
_SNIPPET = re.compile(r'^--8<-- "(?P<path>[^"]+)"', re.M)


def _slug(text: str) -> str:
    """Python-Markdown's toc slug for a heading (its default `slugify`), after inline markup is dropped."""
    import unicodedata

    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)  # a link keeps its text
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def anchors(path: Path) -> set[str]:
    """The ids a page's links can point at: its headings' (repeats get ``_1``, ``_2``, ...) and explicit ones."""
    text = path.read_text(encoding="utf-8")
    text = _SNIPPET.sub(lambda m: (ROOT / m.group("path")).read_text(encoding="utf-8"), text)  # pymdownx.snippets
    text = _CODE.sub("", text)
    ids = {m.group("id") for m in _ID.finditer(text)}
    for m in _HEADING.finditer(text):
        slug = m.group("id") or _slug(m.group("text"))
        unique, n = slug, 0
        while unique in ids:
            n += 1
            unique = f"{slug}_{n}"
        ids.add(unique)
    return ids


def link_problems(path: Path) -> list[str]:
    """Links of a page whose target holds a space (Markdown shows such a link as text) or names no anchor there."""
    text = _CODE.sub("", path.read_text(encoding="utf-8"))
    text = re.sub(r"`[^`\n]*`", "", text)  # inline code holds no link
    problems = []
    for m in _LINK.finditer(text):
        target = m.group("target").strip()
        if re.search(r"\s", target.split(' "')[0]):
            problems.append(f"{target!r}: a space in the target")
            continue
        if "://" in target or target.startswith("mailto:"):
            continue
        file, _, anchor = target.partition("#")
        page = (path.parent / file).resolve() if file else path
        if anchor and page.suffix == ".md" and page.exists() and anchor not in anchors(page):
            problems.append(f"{target!r}: no heading with id {anchor!r} in {page.name}")
    return problems


def test_links_have_no_spaces_and_their_anchors_exist():
    problems = {str(p.relative_to(ROOT)): link_problems(p) for p in MARKDOWN}
    assert not {k: v for k, v in problems.items() if v}


def test_the_link_check_catches_an_anchor_with_a_space(tmp_path):
    (tmp_path / "cli.md").write_text("# CLI\n\n## `tooluse eval`\n\n### `tooluse eval run`\n\n## Two {#custom}\n")
    page = tmp_path / "page.md"
    page.write_text(
        "[a](cli.md#tooluse eval) [b](cli.md#tooluse-eval) [c](cli.md#tooluse-eval-run) [d](cli.md#nothing)\n"
        "[e](cli.md#custom) [f](#here) `[g](cli.md#in code)`\n\n## Here\n"
    )
    assert link_problems(page) == [
        "'cli.md#tooluse eval': a space in the target",
        "'cli.md#nothing': no heading with id 'nothing' in cli.md",
    ]
