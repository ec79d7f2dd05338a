"""`ToolUse-Memory-v0`: BFCL v4's memory categories (``memory_kv``, ``memory_rec_sum``), with the protocol as knobs.

    env = gym.make("ToolUse-Memory-v0", category="memory_kv")                      # whole scenarios, as BFCL scores
    env = gym.make("ToolUse-Memory-v0", category="memory_kv", episode="question", snapshot="oracle")

The env's own settings, each on the protocol card (``extra``):

- ``episode``: ``scenario`` (default: the prerequisite sessions, then the questions from the memory the
  model wrote) | ``question`` (one question from a snapshot: RL on the read phase).
- ``snapshot`` (``question`` only): where that memory comes from: ``oracle`` (the scripted write phase:
  each question's gold answer stored under its own key), ``empty``, or a snapshot file a scenario run
  wrote (`read_snapshot_file`: ``{"category": ..., "snapshots": {scenario: memory}}``) or BFCL's
  ``memory_snapshot`` folder (``{scenario}_final.json``).
- ``answer_check``: ``bfcl`` (default: BFCL's verdict) | ``strict`` (the reply's ``answer`` field must
  name one candidate: `tooluse_gym.checking.agentic.strict_check`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym

from tooluse_gym import __version__
from tooluse_gym.checking import CHECKER_VERSION
from tooluse_gym.checking.agentic import ANSWER_CHECKS
from tooluse_gym.envs.agentic_env import AgenticEnv
from tooluse_gym.envs.builder import wrap
from tooluse_gym.envs.ids import MEMORY_ID
from tooluse_gym.envs.knobs import ENV_DEFAULTS
from tooluse_gym.protocol import ProtocolCard
from tooluse_gym.tasks import bfcl, bfcl_data
from tooluse_gym.tasks.bfcl_memory import (
    CATEGORIES,
    EPISODE_UNITS,
    SCENARIOS,
    MemoryTask,
    backend_name,
    load_memory_tasks,
    write_calls,
)
from tooluse_gym.tasks.known_issues import registry_version
from tooluse_gym.tools.memory import check_snapshot, memory_backend, snapshot, vector_available
from tooluse_gym.tools.runtime import ToolRuntime

ENV_ID = MEMORY_ID
DEFAULTS = ENV_DEFAULTS[ENV_ID]
GROUP = "memory"
"""BFCL's name for every memory category."""
SNAPSHOT_SOURCES = ("oracle", "empty")
SNAPSHOT_FORMAT = "tooluse-memory-snapshots/1"
__all__ = ["CATEGORIES", "DEFAULTS", "ENV_ID", "expand_categories", "make_memory_env", "read_snapshot_file"]


def expand_categories(category: str | Sequence[str]) -> list[str]:
    """Memory categories from a name, a list, or ``memory`` (every backend that can run here: `vector_available`)."""
    names = [category] if isinstance(category, str) else list(category)
    out: list[str] = []
    for name in names:
        if name == GROUP:
            out += [c for c in CATEGORIES if c != "memory_vector" or vector_available()]
        else:
            backend_name(name)  # refuses an unknown one
            out.append(name)
    return list(dict.fromkeys(out))


def _oracle_snapshot(task: MemoryTask) -> dict[str, Any]:
    """The memory the scripted write phase leaves for a scenario task (BFCL's backend runs its calls)."""
    backend, category, scenario = task.backend, task.category, task.scenario
    runtime = ToolRuntime(task, {backend: memory_backend(backend)}, validate=False)
    for record in runtime.execute(write_calls(backend, task.questions)):
        if "error" in record.result.lower():
            raise RuntimeError(f"the scripted write phase failed on {category}/{scenario}: {record.result}")
    return snapshot(runtime.instances[backend])


def read_snapshot_file(path: str | Path, categories: Sequence[str]) -> dict[tuple[str, str], dict[str, Any]]:
    """(category, scenario) -> memory from a snapshot file or BFCL's ``memory_snapshot`` folder.

    Raises:
        ValueError: A missing, unreadable or malformed file, or one written for other categories.
    """
    path = Path(path)
    if path.is_dir():
        if len(categories) != 1:
            raise ValueError(f"{path}: a BFCL memory_snapshot folder holds one backend's memory; play one category")
        out = {}
        for scenario in SCENARIOS:
            file = path / f"{scenario}_final.json"
            if file.exists():
                out[(categories[0], scenario)] = check_snapshot(
                    backend_name(categories[0]), _load_json(file), str(file)
                )
        if not out:
            raise ValueError(f"{path}: no {{scenario}}_final.json file (BFCL's memory_snapshot layout)")
        return out
    data = _load_json(path)
    if not isinstance(data, dict) or data.get("format") != SNAPSHOT_FORMAT:
        raise ValueError(f"{path}: not a memory snapshot file (expected format {SNAPSHOT_FORMAT!r})")
    category = str(data.get("category"))
    if category not in categories:
        raise ValueError(f"{path}: holds {category!r} memory, but this env plays {', '.join(categories)}")
    snapshots = data.get("snapshots")
    if not isinstance(snapshots, dict) or not snapshots:
        raise ValueError(f"{path}: 'snapshots' must map scenarios to memory")
    unknown = sorted(set(snapshots) - set(SCENARIOS))
    if unknown:
        raise ValueError(f"{path}: unknown scenarios {unknown}; BFCL's are {', '.join(SCENARIOS)}")
    return {(category, s): check_snapshot(backend_name(category), m, f"{path} [{s}]") for s, m in snapshots.items()}


def _load_json(path: Path) -> Any:
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except FileNotFoundError:
        raise ValueError(f"{path}: no such snapshot file") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"{path}: not readable as JSON ({e})") from None


def _snapshots(
    source: str | None, episode: str, categories: Sequence[str]
) -> tuple[dict[tuple[str, str], dict[str, Any]], str]:
    """The question mode's start memories and the card's ``snapshot`` value."""
    if episode == "scenario":
        if source is not None:
            raise ValueError("snapshot is for episode='question'; a scenario episode starts from an empty memory")
        return {}, "own"
    if source is None:
        raise ValueError(
            "episode='question' needs snapshot: 'oracle' (the scripted write phase), 'empty', or a snapshot file"
        )
    if source == "empty":
        return {}, "empty"
    if source == "oracle":
        scenarios = load_memory_tasks(categories, "scenario")
        return {(t.category, t.scenario): _oracle_snapshot(t) for t in scenarios}, "oracle"
    snapshots = read_snapshot_file(source, categories)
    digest = hashlib.sha256(json.dumps(sorted(snapshots.items()), sort_keys=True).encode()).hexdigest()
    return snapshots, f"file:{digest[:16]}"


def make_memory_env(
    category: str | Sequence[str] = "memory_kv",
    task_ids: Sequence[str] | None = None,
    render_mode: str | None = None,
    *,
    episode: str = "scenario",
    snapshot: str | None = None,
    answer_check: str = "bfcl",
    **knobs: Any,
) -> gym.Env:
    """Build `ToolUse-Memory-v0` (see the module docstring), wrapped for the protocol.

    ## Arguments
    - `category`: ``memory_kv`` | ``memory_rec_sum`` | ``memory_vector`` | ``memory`` (each that runs here), or a list.
    - `task_ids`: only these tasks (``memory_kv-customer`` per scenario; BFCL's question ids per question).
    - `episode`, `snapshot`, `answer_check`: see the module docstring.
    - every other keyword is a knob of `tooluse_gym.envs.knobs.Knobs`, with BFCL's protocol as the defaults.

    ## Version History
    - v0: initial version (bfcl-eval 2026.3.23 data and memory backends).
    """
    if answer_check not in ANSWER_CHECKS:
        raise ValueError(f"answer_check must be one of {', '.join(ANSWER_CHECKS)}; got {answer_check!r}")
    if episode not in EPISODE_UNITS:
        raise ValueError(f"episode must be one of {', '.join(EPISODE_UNITS)}; got {episode!r}")
    categories = expand_categories(category)
    for c in categories:
        memory_backend(backend_name(c))  # refuses vector without its libraries, before anything is built
    snapshots, source = _snapshots(snapshot, episode, categories)
    tasks = load_memory_tasks(categories, episode, task_ids)
    resolved = DEFAULTS.with_defaults(**knobs)
    label = categories[0] if len(categories) == 1 else ",".join(categories)
    card = ProtocolCard(
        env_id=ENV_ID,
        category=label,
        bfcl_version=bfcl.bfcl_version(),
        known_issues=registry_version(),
        tooluse_gym_version=__version__,
        checker_version=CHECKER_VERSION,
        task_data=bfcl_data.digests(bfcl_data.memory_files(backend_name(c) for c in categories)),
        **resolved.card_fields(episode=episode, snapshot=source, answer_check=answer_check),
    )
    backends = {backend_name(c): memory_backend(backend_name(c)) for c in categories}
    env = AgenticEnv(
        tasks,
        backends=backends,
        knobs=resolved,
        protocol=card,
        answer_check=answer_check,
        snapshots=snapshots,
        render_mode=render_mode,
    )
    return wrap(env, resolved)
