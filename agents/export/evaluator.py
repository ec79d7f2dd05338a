"""Where BFCL's own evaluator is, and what it still needs here: for the command `tooluse eval export` prints.

bfcl-eval is installed ``--no-deps``; its `bfcl evaluate` imports every vendor SDK of its model
registry. `missing_evaluator_packages` says which of them this interpreter cannot import (the
export names them only then), and `evaluator_program` gives a command line that runs this
environment's evaluator from any shell, the virtual environment activated or not.
"""

from __future__ import annotations

import importlib.util
import shlex
import sys
from pathlib import Path

BFCL_EVALUATOR_PACKAGES = (
    "pandas",
    "tabulate",
    "cohere==5.18.0",
    "mistralai==1.7.0",
    "boto3",
    "google-genai",
    "qwen-agent",
    "writer-sdk",
    "datamodel-code-generator==0.25.7",
    "soundfile",
)
"""What `bfcl evaluate` imports beyond our dependencies (bfcl-eval is installed ``--no-deps``): its
model registry imports every handler, hence each vendor's SDK; pinned where bfcl-eval pins them."""

_MODULES = {
    "google-genai": "google.genai",
    "qwen-agent": "qwen_agent",
    "writer-sdk": "writerai",
    "datamodel-code-generator": "datamodel_code_generator",
}
"""The module each package is imported as, where the names differ."""


def importable(module: str) -> bool:
    """Whether this interpreter finds `module` (found, not imported: importing every SDK takes seconds)."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a missing parent package, or a broken one
        return False


def missing_evaluator_packages() -> tuple[str, ...]:
    """The requirements of `BFCL_EVALUATOR_PACKAGES` whose module this interpreter cannot find."""
    missing = []
    for requirement in BFCL_EVALUATOR_PACKAGES:
        name = requirement.split("==")[0]
        if not importable(_MODULES.get(name, name)):
            missing.append(requirement)
    return tuple(missing)


def evaluator_program() -> tuple[str, ...]:
    """The command that starts `bfcl` from any shell.

    This environment's own console script by its full path, or ``python -m bfcl_eval`` with this
    interpreter when there is none.
    """
    folder = Path(sys.executable).parent
    for name in ("bfcl", "bfcl.exe"):
        script = folder / name
        if script.is_file():
            return (str(script),)
    return (sys.executable, "-m", "bfcl_eval")


def install_command(requirements: tuple[str, ...]) -> str:
    """``<this python> -m pip install ...``: installs into this environment from any shell."""
    return shlex.join([sys.executable, "-m", "pip", "install", *requirements])
