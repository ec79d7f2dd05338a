"""transformers' progress bars around a model load, hidden when a command runs with ``--no-progress``.

`from_pretrained` draws a "Loading weights" bar (and the hub its download bars) through
``transformers.utils.logging.tqdm``; `load_bars(False)` hides them for the block and puts the
setting back after it, so that nothing outside the block changes. vLLM's loader is told directly
(``use_tqdm_on_load``, `tooluse_agents.backends.vllm`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator


@contextlib.contextmanager
def load_bars(shown: bool) -> Iterator[None]:
    """Show (as set) or hide transformers' progress bars for the block."""
    if shown:
        yield
        return
    from transformers.utils import logging

    was_shown = logging.is_progress_bar_enabled()
    logging.disable_progress_bar()
    try:
        yield
    finally:
        if was_shown:
            logging.enable_progress_bar()
