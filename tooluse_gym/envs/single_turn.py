"""`ToolUse-SingleTurn-v0`: BFCL's single-turn entries, scored by BFCL's AST checker and relevance rules.

Knobs (`tooluse_gym.envs.knobs.Knobs`), and how each applies to one request answered by one
message:

* ``system_prompt``, ``tool_format``, ``template``, ``tokenizer``, ``chat_template`` shape what
  the model sees and how its message is decoded, as in the multi-turn env. A task's own system
  message (some live entries have one) follows the prompt's text in one system message, as in
  BFCL's prompting handlers.
* ``reasoning`` applies to the assistant messages a request already holds (a few
  ``live_irrelevance`` entries).
* Knobs about executing calls have nothing to act on, since nothing executes: ``tool_results``,
  ``strict_tools``, ``validate_args`` and ``max_steps_per_turn`` keep their defaults (``validate_args``
  is off under either decoder), and any other value is refused (`ValueError`) rather than
  recorded on a card where it changed nothing.
* ``decoder``: ``bfcl`` (the default: BFCL's handlers' decoding) or ``lenient`` (the multi-turn
  lenient parser, `tooluse_gym.decoding.lenient_ast`: positional arguments bound by the
  schema, ``<think>`` blocks, code fences and prose around the call list tolerated; a message
  with a malformed call fails to decode as a whole). BFCL's checker judges the calls either way.
  ``lenient`` is refused in the Java and JavaScript categories (their calls are Java or
  JavaScript text) and with a ``prompt_format`` whose calls are not a bare Python list.
* ``prompt_format`` (one configuration of BFCL's format-sensitivity grid) applies to the Python
  categories: the system prompt is BFCL's builder's for it and the message is decoded in its
  return format (`tooluse_gym.decoding.bfcl_format`). BFCL's grid draws its 200 entries
  from the Python AST categories; the Java and JavaScript categories refuse it (their calls
  are read as Java or JavaScript text, which no configuration asks for).

Function names: when the system prompt carries the function list (BFCL's prompting mode) the
names keep their dots, as BFCL's prompting models are scored; when the functions travel in the
``tools`` field (function calling), dots are written as underscores in the schemas and the
checker expects them so, as BFCL's ``underscore_to_dot`` does for API models (OpenAI-style APIs
refuse dots in names).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import gymnasium as gym

from tooluse_gym.envs.builder import TaskPool, build_env
from tooluse_gym.envs.ids import SINGLE_TURN_ID
from tooluse_gym.envs.knobs import ENV_DEFAULTS, Knobs
from tooluse_gym.envs.single_turn_env import FIXED_KNOBS, resolve_single_turn_knobs
from tooluse_gym.tasks import bfcl_data
from tooluse_gym.tasks.bfcl_single_turn import load_single_turn_tasks

ENV_ID = SINGLE_TURN_ID
DEFAULTS = ENV_DEFAULTS[ENV_ID]
"""BFCL's protocol: its prompt, Python call lists, decoded as its handlers decode them."""
__all__ = ["DEFAULTS", "ENV_ID", "FIXED_KNOBS", "make_single_turn_env", "single_turn_knobs"]


def single_turn_knobs(**knobs: Any) -> Knobs:
    """The env's knobs: `DEFAULTS` with the given ones; a knob that cannot apply to single-turn is a `ValueError`."""
    return resolve_single_turn_knobs(DEFAULTS.with_defaults(**knobs), ENV_ID)


def make_single_turn_env(
    category: str = "simple_python",
    task_ids: Sequence[str] | None = None,
    render_mode: str | None = None,
    **knobs: Any,
) -> gym.Env:
    """Build `ToolUse-SingleTurn-v0`: BFCL single-turn entries, one message each, wrapped for the protocol.

    ## Arguments
    - `category`: a BFCL single-turn category (``simple_python``, ``simple_java``,
      ``simple_javascript``, ``multiple``, ``parallel``,
      ``parallel_multiple``, ``irrelevance``, ``live_simple``, ``live_multiple``,
      ``live_parallel``, ``live_parallel_multiple``, ``live_irrelevance``, ``live_relevance``)
      or group (``non_live``, ``live``, ``single_turn``: the supported categories of each).
    - `task_ids`: restrict the env to these entries.
    - `render_mode`: ``None`` or ``"ansi"``.
    - every other keyword is a knob of `tooluse_gym.envs.knobs.Knobs` (module docstring: which apply).

    ## Version History
    - v0: initial version (bfcl-eval 2026.3.23 data; Python, Java, JavaScript and relevance categories).
    """
    resolved = single_turn_knobs(**knobs)
    tasks = load_single_turn_tasks(category, task_ids, underscore_to_dot=not resolved.prompt.carries_tools)
    data = bfcl_data.digests(bfcl_data.single_turn_files(list(dict.fromkeys(t.category for t in tasks))))
    pool = TaskPool(tuple(tasks), {}, label=category, single_turn=True, task_data=data)
    return build_env(pool, resolved, env_id=ENV_ID, render_mode=render_mode)
