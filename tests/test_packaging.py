"""The distribution installs exactly its three packages; agents/ and tui/ install as tooluse_agents and tooluse_tui.

No generic top-level name (`agents`, `tui`, `experiments`) is installed, so it installs beside the OpenAI
Agents SDK (`openai-agents`, in the dev extra), whose top-level package is `agents`; the study drivers
under ``experiments/`` stay in the checkout.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import tomllib

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
SETUPTOOLS = PYPROJECT["tool"]["setuptools"]
FOLDERS = {"tooluse_gym": "tooluse_gym", "tooluse_agents": "agents", "tooluse_tui": "tui"}
PACKAGES = tuple(FOLDERS)


def _packages_in_folders() -> set[str]:
    return {
        ".".join((name, *init.parent.relative_to(ROOT / folder).parts))
        for name, folder in FOLDERS.items()
        for init in (ROOT / folder).rglob("__init__.py")
    }


def test_every_package_folder_is_installed_under_our_names():
    assert SETUPTOOLS["package-dir"] == {"tooluse_agents": "agents", "tooluse_tui": "tui"}
    assert sorted(SETUPTOOLS["packages"]) == sorted(_packages_in_folders())
    assert not [p for p in SETUPTOOLS["packages"] if p.split(".")[0] in ("agents", "tui")]
    scripts = PYPROJECT["project"]["scripts"].values()
    assert all(s.split(".")[0] in PACKAGES for s in scripts), scripts


def test_the_links_for_the_type_checker_point_at_the_folders():
    for name, folder in FOLDERS.items():
        if name != folder:
            link = ROOT / ".packages" / name
            assert link.is_symlink() and link.resolve() == (ROOT / folder).resolve()


@pytest.mark.slow
def test_the_wheel_holds_the_three_packages_and_no_study_driver(tmp_path):
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(tmp_path), ROOT],
        check=True,
        capture_output=True,
    )
    (wheel,) = tmp_path.glob("tooluse_gym-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert tops == set(PACKAGES)
    expected = {p.replace(".", "/") for p in _packages_in_folders()}
    assert {n.rsplit("/", 1)[0] for n in names if n.endswith("/__init__.py")} == expected
    assert not [n for n in names if "experiments" in n]


def test_every_folder_of_modules_is_a_package():
    # A folder of modules without __init__.py is a namespace package: it is left out of the package list
    # (so out of the wheel) and the API docs cannot collect it, while an editable install still imports it.
    missing = sorted(
        str(folder.relative_to(ROOT))
        for top in FOLDERS.values()
        for folder in [ROOT / top, *(ROOT / top).rglob("*")]
        if folder.is_dir()
        and folder.name != "__pycache__"
        and any(folder.glob("*.py"))
        and not (folder / "__init__.py").exists()
    )
    assert missing == []


def test_no_installed_module_reaches_into_the_checkout():
    offenders = [
        str(path.relative_to(ROOT))
        for top in FOLDERS.values()
        for path in (ROOT / top).rglob("*.py")
        if re.search(r"parents\[[2-9]\]|\bgit\b.*(commit|add)\b", path.read_text(encoding="utf-8"))
    ]
    assert offenders == []


def test_no_code_imports_the_folder_names():
    pattern = re.compile(r"^\s*(from|import)\s+(agents|tui)(\.|\s|$)", re.MULTILINE)
    offenders = []
    for folder in (*FOLDERS.values(), "experiments", "tests", "benchmarks", "scenarios", "docs"):
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
    from tooluse_agents.export.evaluator import BFCL_EVALUATOR_PACKAGES

    assert PYPROJECT["project"]["optional-dependencies"]["bfcl"] == list(BFCL_EVALUATOR_PACKAGES)


def test_installs_beside_the_openai_agents_sdk(tmp_path):
    """`agents` is the OpenAI Agents SDK's, ours are importable at the same time, and `tooluse-eval` runs.

    Outside the checkout: inside it, the folder agents/ comes first on sys.path for `python` started there.
    """
    code = (
        "import agents, tooluse_agents, tooluse_gym, tooluse_tui\n"
        "from agents import Agent, Runner, function_tool\n"
        "from tooluse_agents.cli.eval import main\n"
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
