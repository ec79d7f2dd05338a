"""The installed distribution owns no generic top-level name: agents/ and tui/ install as tooluse_agents/tooluse_tui.

So it installs beside the OpenAI Agents SDK (`openai-agents`, in the dev extra), whose top-level package is
`agents` too: the last test imports both in one interpreter and runs our CLI.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
SETUPTOOLS = PYPROJECT["tool"]["setuptools"]
FOLDERS = {"tooluse_gym": "tooluse_gym", "tooluse_agents": "agents", "tooluse_tui": "tui"}


def test_every_package_folder_is_installed_under_our_names():
    assert SETUPTOOLS["package-dir"] == {"tooluse_agents": "agents", "tooluse_tui": "tui"}
    found = set()
    for name, folder in FOLDERS.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            parts = init.parent.relative_to(ROOT / folder).parts
            found.add(".".join((name, *parts)))
    assert sorted(SETUPTOOLS["packages"]) == sorted(found)
    assert not [p for p in SETUPTOOLS["packages"] if p.split(".")[0] in ("agents", "tui")]
    scripts = PYPROJECT["project"]["scripts"].values()
    assert all(s.split(".")[0] in FOLDERS for s in scripts), scripts


def test_the_links_for_the_type_checker_point_at_the_folders():
    for name, folder in FOLDERS.items():
        if name != folder:
            link = ROOT / ".packages" / name
            assert link.is_symlink() and link.resolve() == (ROOT / folder).resolve()


def test_no_code_imports_the_folder_names():
    pattern = re.compile(r"^\s*(from|import)\s+(agents|tui)(\.|\s|$)", re.MULTILINE)
    offenders = []
    for folder in ("tooluse_gym", "agents", "tui", "tests", "benchmarks", "scenarios", "docs"):
        for path in (ROOT / folder).rglob("*.py"):
            if pattern.search(path.read_text(encoding="utf-8")):
                offenders.append(str(path.relative_to(ROOT)))
    assert offenders == []


def test_the_installed_names_resolve_to_the_folders():
    code = "import tooluse_agents, tooluse_tui; print(tooluse_agents.__file__); print(tooluse_tui.__file__)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd="/")
    agents_file, tui_file = out.stdout.split()
    assert Path(agents_file).resolve() == (ROOT / "agents" / "__init__.py").resolve()
    assert Path(tui_file).resolve() == (ROOT / "tui" / "__init__.py").resolve()


def test_the_bfcl_extra_is_what_the_export_names():
    from tooluse_agents.bfcl_export import BFCL_EVALUATOR_PACKAGES

    assert PYPROJECT["project"]["optional-dependencies"]["bfcl"] == list(BFCL_EVALUATOR_PACKAGES)


def test_installs_beside_the_openai_agents_sdk(tmp_path):
    """`agents` is the OpenAI Agents SDK's, ours are importable at the same time, and `tooluse-eval` runs."""
    code = (
        "import agents, tooluse_agents, tooluse_gym, tooluse_tui\n"
        "from agents import Agent, Runner, function_tool\n"
        "from tooluse_agents.cli import main\n"
        "print(agents.__file__)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path)
    assert out.returncode == 0, out.stderr[-2000:]
    sdk = Path(out.stdout.strip()).resolve()
    assert sdk.parent.name == "agents" and "site-packages" in sdk.parts, sdk
    assert sdk.parent != (ROOT / "agents").resolve()  # not our folder
    script = Path(sys.executable).parent / ("tooluse-eval.exe" if os.name == "nt" else "tooluse-eval")
    done = subprocess.run([str(script), "--help"], capture_output=True, text=True, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "export" in done.stdout and "sweep" in done.stdout
