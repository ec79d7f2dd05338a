"""Progress bars that suit where they go: a live bar on a terminal, a few whole lines in a log.

On a terminal `progress_bar` is tqdm as usual. When the stream is not a terminal (a redirected run, a
CI log, a notebook's captured stderr) redrawing the bar for every episode would write one line per item,
thousands for a category; there it writes a whole line at most every `LOG_INTERVAL_S` seconds, plus
the first and the last, so a log shows how far the run got without growing with it.
"""

from __future__ import annotations

import sys
from typing import IO, Any

__all__ = ["LOG_INTERVAL_S", "progress_bar"]

LOG_INTERVAL_S = 10.0
"""Seconds between progress lines when the output is not a terminal."""


class _Lines:
    """A text stream that receives tqdm's carriage-return redraws and writes each as one whole line."""

    def __init__(self, stream: IO[str]):
        self.stream = stream

    def write(self, text: str) -> int:
        line = text.replace("\r", "").rstrip()
        if line:
            self.stream.write(line + "\n")
        return len(text)

    def flush(self) -> None:
        self.stream.flush()


def _is_terminal(stream: IO[str]) -> bool:
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except ValueError:  # a closed stream
        return False


def progress_bar(*, total: int | None, enabled: bool = True, stream: IO[str] | None = None, **kwargs: Any) -> Any:
    """A tqdm bar on `stream` (stderr): live on a terminal, a line every `LOG_INTERVAL_S` seconds elsewhere.

    Args:
        total: Items expected (None: unknown).
        enabled: False: a disabled bar (counts, draws nothing).
        stream: Where it draws; standard error when None.
        **kwargs: More tqdm arguments (``initial``, ``unit``, ``desc``...).

    Returns:
        The ``tqdm`` bar.
    """
    from tqdm import tqdm

    out = sys.stderr if stream is None else stream
    if _is_terminal(out):
        return tqdm(total=total, disable=not enabled, file=out, dynamic_ncols=True, **kwargs)
    return tqdm(total=total, disable=not enabled, file=_Lines(out), mininterval=LOG_INTERVAL_S, ncols=100, **kwargs)
