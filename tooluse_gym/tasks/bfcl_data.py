"""Which BFCL data files a category reads, their sha256 digests, and where they are read from.

Every protocol card records the digests of the data files its tasks come from (``task_data``), so a
result says which version of the task data it ran on, and `tooluse eval rescore` can tell a verdict
that changed with the data from one that changed with the checker.

The data are read from the installed ``bfcl_eval`` package, or from a copy of its ``data`` folder
named by the ``TOOLUSE_BFCL_DATA`` environment variable (same layout: ``BFCL_v4_*.json``,
``possible_answer/``, ``multi_turn_func_doc/``, ``memory_prereq_conversation/``), e.g. to score
runs on corrected data. The variable is read when `tooluse_gym.tasks.bfcl` first imports
``bfcl_eval``: set it before the process loads any task. Nothing is ever written into the copy or
into the package.
"""

from __future__ import annotations

import hashlib
import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from functools import cache
from pathlib import Path
from types import ModuleType

DATA_ENV = "TOOLUSE_BFCL_DATA"
"""The environment variable naming a copy of bfcl_eval's ``data`` folder to read instead of the package's."""

_PATH_NAMES = (
    "PROMPT_PATH",
    "POSSIBLE_ANSWER_PATH",
    "MULTI_TURN_FUNC_DOC_PATH",
    "MEMORY_PREREQ_CONVERSATION_PATH",
    "FORMAT_SENSITIVITY_IDS_PATH",
)
"""bfcl_eval's module-level paths into its data folder (``constants.eval_config``, and the modules that import them)."""

_PREFIX = "BFCL_v4"
"""The file-name prefix of bfcl_eval's data files (its ``VERSION_PREFIX``, which the tests compare)."""

_redirected: set[str] = set()

__all__ = [
    "DATA_ENV",
    "data_folder",
    "digests",
    "file_sha256",
    "memory_files",
    "multi_turn_files",
    "redirect",
    "single_turn_files",
    "web_search_files",
]


def data_override() -> Path | None:
    """The data folder ``TOOLUSE_BFCL_DATA`` names, or None (the package's own)."""
    value = os.environ.get(DATA_ENV)
    return Path(value) if value else None


def package_data_folder() -> Path:
    """The ``data`` folder inside the installed bfcl_eval package (found without importing it)."""
    from importlib.util import find_spec

    from tooluse_gym.errors import DependencyNotInstalled

    spec = find_spec("bfcl_eval")
    if spec is None or not spec.submodule_search_locations:
        raise DependencyNotInstalled("bfcl-eval is not installed (see tooluse_gym.tasks.bfcl)")
    return Path(next(iter(spec.submodule_search_locations))) / "data"


def data_folder() -> Path:
    """Where the BFCL data are read from: the ``TOOLUSE_BFCL_DATA`` copy, else the package's ``data`` folder."""
    return data_override() or package_data_folder()


def redirect(module: ModuleType) -> None:
    """Point bfcl_eval's data paths at the ``TOOLUSE_BFCL_DATA`` copy, when one is named (else nothing).

    `tooluse_gym.tasks.bfcl._import` calls it after every import: every loaded ``bfcl_eval`` module
    holding one of its data paths (``eval_config``'s, and the copies ``from ... import *`` made) gets
    the same path under the copy. Only attributes in this process change; no file is written.
    """
    override = data_override()
    if override is None:
        return
    if not override.is_dir():
        raise FileNotFoundError(f"{DATA_ENV}={override}: no such folder (a copy of bfcl_eval's data folder)")
    original = package_data_folder()
    for name, loaded in list(sys.modules.items()):
        if loaded is None or name in _redirected or not (name == "bfcl_eval" or name.startswith("bfcl_eval.")):
            continue
        for attr in _PATH_NAMES:
            value = getattr(loaded, attr, None)
            if isinstance(value, Path) and value.is_relative_to(original):
                setattr(loaded, attr, override / value.relative_to(original))
        _redirected.add(name)
    del module  # the module itself is among sys.modules


@cache
def file_sha256(path: Path) -> str:
    """The hex sha256 of a file's bytes, read once per process."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def digests(names: Iterable[str], folder: Path | None = None) -> tuple[tuple[str, str], ...]:
    """(name, sha256) of each named file under `folder` (the data folder by default) that exists, sorted by name."""
    root = folder or data_folder()
    out = {name: file_sha256(root / name) for name in names if (root / name).is_file()}
    return tuple(sorted(out.items()))


def _doc_file(backend: str) -> str:
    from tooluse_gym.tasks import bfcl

    config = bfcl._import("bfcl_eval.constants.executable_backend_config")
    mapping: Mapping[str, str] = config.MULTI_TURN_FUNC_DOC_FILE_MAPPING
    return f"multi_turn_func_doc/{mapping[backend]}"


def multi_turn_files(categories: Sequence[str], backends: Iterable[str] | None = None) -> list[str]:
    """The files BFCL multi-turn categories read (short names: ``base``): questions, answers, function docs.

    `backends`: only these simulators' function docs (one entry's); None: all eight.
    """
    from tooluse_gym.tasks import bfcl

    names = [f"{folder}{_PREFIX}_multi_turn_{c}.json" for c in categories for folder in ("", "possible_answer/")]
    return names + [_doc_file(b) for b in (bfcl.backend_classes() if backends is None else backends)]


def single_turn_files(categories: Sequence[str]) -> list[str]:
    """The files BFCL single-turn categories read: questions and (AST categories) possible answers."""
    return [f"{folder}{_PREFIX}_{c}.json" for c in categories for folder in ("", "possible_answer/")]


def memory_files(backends: Iterable[str]) -> list[str]:
    """The files BFCL memory categories read: questions, answers, prerequisite sessions, the backends' docs."""
    from tooluse_gym.tasks.bfcl_memory import SCENARIOS

    names = [f"{_PREFIX}_memory.json", f"possible_answer/{_PREFIX}_memory.json"]
    names += [f"memory_prereq_conversation/memory_{s}.json" for s in SCENARIOS]
    return names + [_doc_file(b) for b in backends]


def web_search_files() -> list[str]:
    """The files BFCL web-search categories read: the questions, the answers with their gold hops, the docs."""
    names = [f"{_PREFIX}_web_search.json", f"possible_answer/{_PREFIX}_web_search.json"]
    return [*names, _doc_file("WebSearchAPI")]
