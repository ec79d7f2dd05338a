"""Whether two runs ran on the same task data, said in bold where they did not (`tooluse eval compare`).

Each protocol card lists the data files its tasks come from with their sha256 (``task_data``). A
comparison across different task data is shown, not refused: it is how one sees what a data fix
moved; but its numbers are not a like-for-like comparison, so the text says so first, in bold,
and points to `tooluse eval rescore`, which scores a run's stored messages on today's data.
Cards written before the digests were recorded read as "data version unknown".
"""

from __future__ import annotations

from typing import Any

from tooluse_gym.protocol import DATA_UNKNOWN, ProtocolCard

__all__ = ["task_data_comparison"]

_SHOWN_FILES = 8


def task_data_comparison(a: ProtocolCard, b: ProtocolCard) -> tuple[list[str], dict[str, Any]]:
    """The lines to print (none when both runs name the same data) and the comparison as data.

    The data: ``a`` and ``b`` (each run's `ProtocolCard.data_version`), ``same`` (True, False, or
    None when a version is unknown) and ``files`` (name -> [A's sha256, B's], the files that differ).
    """
    files = a.data_differences(b)
    unknown = [name for name, card in (("A", a), ("B", b)) if card.data_version == DATA_UNKNOWN]
    same: bool | None = None if unknown else not files
    data = {"a": a.data_version, "b": b.data_version, "same": same, "files": {k: list(v) for k, v in files.items()}}
    if unknown:
        which = " and ".join(unknown)
        return [
            f"**Task data version unknown for {which} (cards written before the data digests were recorded): "
            "the runs may have scored different task data. `tooluse eval rescore RUN` re-scores a run on "
            "today's data.**",
            "",
        ], data
    if not files:
        return [], data
    lines = [
        f"**DIFFERENT TASK DATA: A ran on data {a.data_version}, B on {b.data_version}; a score difference "
        "may come from the data, not the agent. `tooluse eval rescore RUN` re-scores a run on today's data.**",
    ]
    lines += [f"  {name}: {_short(x)} (A) vs {_short(y)} (B)" for name, (x, y) in list(files.items())[:_SHOWN_FILES]]
    if len(files) > _SHOWN_FILES:
        lines.append(f"  ... and {len(files) - _SHOWN_FILES} more files")
    return [*lines, ""], data


def _short(digest: str | None) -> str:
    return digest[:12] if digest else "absent"
