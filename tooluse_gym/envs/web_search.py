"""`ToolUse-WebSearch-v0`: BFCL v4's web-search categories, with the search backend as an explicit setting.

    env = gym.make("ToolUse-WebSearch-v0", recording="web.jsonl")                     # replay a recording
    env = gym.make("ToolUse-WebSearch-v0", search_backend="serpapi", record_to="web.jsonl")  # BFCL's, live
    env = gym.make("ToolUse-WebSearch-v0", search_backend="gold-hops")                # synthetic, offline

BFCL's web search answers from the live web (SerpAPI), so a score depends on the backend and the day.
The env has no default backend: the choice is the protocol's, and it goes on the card (``extra``):

- ``search_backend``: ``replay`` (answers from a recording; `tooluse_gym.tools.web_search`; its
  ``recording`` digest and ``recorded`` dates on the card) | ``serpapi`` (BFCL's own class, live;
  ``recorded`` is today) | ``gold-hops`` (a synthetic recording built from BFCL's gold hops: every
  hop's subquestion finds a page stating its answer; for tests and RL sanity checks, not a BFCL score).
- ``record_to`` (``serpapi`` only): append every query and page the live backend answers to this
  recording, which ``replay`` then reads.
- ``answer_check``: ``bfcl`` (default: BFCL's verdict) | ``strict`` (`tooluse_gym.checking.agentic.strict_check`).

Web-search scores compare only within one backend and recording (or live day): the card says which.
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym

from tooluse_gym import __version__
from tooluse_gym.checking import CHECKER_VERSION
from tooluse_gym.checking.agentic import ANSWER_CHECKS
from tooluse_gym.envs.agentic_env import AgenticEnv
from tooluse_gym.envs.builder import wrap
from tooluse_gym.envs.ids import WEB_SEARCH_ID
from tooluse_gym.envs.knobs import ENV_DEFAULTS
from tooluse_gym.protocol import ProtocolCard
from tooluse_gym.tasks import bfcl, bfcl_data
from tooluse_gym.tasks.bfcl_web_search import BACKEND, CATEGORIES, GROUP, expand_categories, gold_hops
from tooluse_gym.tasks.bfcl_web_search import load_web_search_tasks as load_tasks
from tooluse_gym.tasks.known_issues import registry_version
from tooluse_gym.tools.web_search import gold_hops_recording, live_backend, read_recording, replay_backend

ENV_ID = WEB_SEARCH_ID
DEFAULTS = ENV_DEFAULTS[ENV_ID]
SEARCH_BACKENDS = ("replay", "serpapi", "gold-hops")
NOT_BFCL_COMPARABLE = ("gold-hops",)
"""Backends whose scores are not BFCL scores at all (not the web)."""
__all__ = ["CATEGORIES", "DEFAULTS", "ENV_ID", "GROUP", "SEARCH_BACKENDS", "make_web_search_env", "search_settings"]


def search_settings(
    search_backend: str | None, recording: str | Path | None, record_to: str | Path | None
) -> tuple[type, dict[str, Any]]:
    """The backend class for the settings and what the card says about them.

    Raises:
        ValueError: No backend, an unknown one, settings that belong to another backend, or an unreadable
            recording. `tooluse_gym.tools.web_search.SearchBackendUnavailable` (a ``ValueError``): a live
            backend that cannot run here.
    """
    if search_backend is None:
        if recording is None:
            raise ValueError(
                "ToolUse-WebSearch-v0 needs a search backend (BFCL's answers from the live web, so the choice is "
                "the protocol's): recording=FILE (replay a recording), search_backend='serpapi' (BFCL's own, "
                "needs SERPAPI_API_KEY; record_to=FILE keeps what it answered) or search_backend='gold-hops' "
                "(synthetic, offline; not a BFCL score)"
            )
        search_backend = "replay"
    if search_backend not in SEARCH_BACKENDS:
        raise ValueError(f"search_backend must be one of {', '.join(SEARCH_BACKENDS)}; got {search_backend!r}")
    if record_to is not None and search_backend != "serpapi":
        raise ValueError("record_to records a live backend's answers: use it with search_backend='serpapi'")
    if search_backend == "replay":
        if recording is None:
            raise ValueError("search_backend='replay' needs recording=FILE (a recording a live run wrote)")
        loaded = read_recording(recording)
        return replay_backend(loaded), {"search_backend": "replay", **loaded.card()}
    if recording is not None:
        raise ValueError(f"recording is for search_backend='replay'; {search_backend!r} does not read one")
    if search_backend == "gold-hops":
        synthetic = gold_hops_recording(gold_hops())
        return replay_backend(synthetic), {"search_backend": "gold-hops", **synthetic.card()}
    today = datetime.datetime.now(datetime.timezone.utc).date().isoformat()
    card = {"search_backend": "serpapi", "recording_source": "serpapi", "recording": None, "recorded": today}
    return live_backend(record_to), card


def make_web_search_env(
    category: str | Sequence[str] = GROUP,
    task_ids: Sequence[str] | None = None,
    render_mode: str | None = None,
    *,
    search_backend: str | None = None,
    recording: str | Path | None = None,
    record_to: str | Path | None = None,
    answer_check: str = "bfcl",
    **knobs: Any,
) -> gym.Env:
    """Build `ToolUse-WebSearch-v0` (see the module docstring), wrapped for the protocol.

    ## Arguments
    - `category`: ``web_search_base`` | ``web_search_no_snippet`` | ``web_search`` (both), or a list.
    - `task_ids`: only these tasks (BFCL's ids: ``web_search_base_0``).
    - `search_backend`, `recording`, `record_to`, `answer_check`: see the module docstring.
    - every other keyword is a knob of `tooluse_gym.envs.knobs.Knobs`, with BFCL's protocol as the defaults.

    ## Version History
    - v0: initial version (bfcl-eval 2026.3.23 data).
    """
    if answer_check not in ANSWER_CHECKS:
        raise ValueError(f"answer_check must be one of {', '.join(ANSWER_CHECKS)}; got {answer_check!r}")
    categories = expand_categories(category)
    tasks = load_tasks(categories, task_ids)
    backend, search_card = search_settings(search_backend, recording, record_to)
    resolved = DEFAULTS.with_defaults(**knobs)
    card = ProtocolCard(
        env_id=ENV_ID,
        category=categories[0] if len(categories) == 1 else ",".join(categories),
        bfcl_version=bfcl.bfcl_version(),
        known_issues=registry_version(),
        tooluse_gym_version=__version__,
        checker_version=CHECKER_VERSION,
        task_data=bfcl_data.digests(bfcl_data.web_search_files()),
        **resolved.card_fields(**search_card, answer_check=answer_check),
    )
    env = AgenticEnv(
        tasks,
        backends={BACKEND: backend},
        knobs=resolved,
        protocol=card,
        answer_check=answer_check,
        render_mode=render_mode,
    )
    return wrap(env, resolved)
