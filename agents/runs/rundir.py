"""A run folder holds one configuration: a run refuses a folder of another, resumes an equal one.

`tooluse eval run` keeps its configuration in ``run.json``, `tooluse train` in ``config.yaml``;
both go through `RunDir`. A folder whose stored configuration differs from the run's in a key
that a resume may not change is refused with a `RunConflict` naming each changed value (a dotted
key in nested sections, ``grpo.group_size 4 -> 8``); an equal one (keys in `RunDir.resumable`
aside) is resumed; ``force`` deletes the folder and starts afresh.

    run = RunDir(out, "run.json", resumable={"schedule"})
    resumed = run.open(config.to_dict(), force=force)

While a run writes into its folder it holds the folder's lock (`RunDir.lock`, an advisory lock on
``.lock`` in it): a second process that starts the same run into the same folder is refused with a
`RunConflict` instead of writing a second copy of every episode into it.

Standard library only (YAML, for a ``.yaml`` file, is imported when one is read or written).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from collections.abc import Callable, Collection, Iterator, Mapping
from pathlib import Path
from typing import Any

from tooluse_gym.errors import ToolUseGymError

try:
    import fcntl
except ImportError:  # not a POSIX system: run folders are not locked
    fcntl = None  # type: ignore[assignment]

__all__ = ["LOCK_FILE", "RunConflict", "RunDir", "differences"]

LOCK_FILE = ".lock"
"""The file in a run folder whose advisory lock the process writing into the folder holds (it holds that pid)."""


class RunConflict(ToolUseGymError, RuntimeError):
    """The run folder holds a run with another configuration (or one this version cannot read or resume)."""


_UNSET: Any = type("Unset", (), {"__repr__": lambda self: "(unset)"})()
_SHOWN_CHARS = 60


def differences(stored: Mapping[str, Any], given: Mapping[str, Any], prefix: str = "") -> list[str]:
    """Each leaf that differs between two nested configurations: ``dotted.key stored -> given`` (sorted by key).

    A key only one side has shows ``(unset)`` on the other; values are shown as `repr`, clipped.
    """
    out = []
    for key in sorted(set(stored) | set(given), key=str):
        old, new = stored.get(key, _UNSET), given.get(key, _UNSET)
        if old == new:
            continue
        if isinstance(old, Mapping) and isinstance(new, Mapping):
            out += differences(old, new, f"{prefix}{key}.")
        else:
            out.append(f"{prefix}{key} {_shown(old)} -> {_shown(new)}")
    return out


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= _SHOWN_CHARS else text[: _SHOWN_CHARS - 3] + "..."


class RunDir:
    """A run folder and the configuration file that says which run it holds.

    Args:
        path: The folder.
        config_file: The configuration's file name in it; ``.json`` or ``.yaml`` by its suffix.
        resumable: Top-level keys a resumed run may change (they do not make it another run).
        read: Turns the stored data into the form `check` compares (e.g. through the config
            dataclasses, so a key added since that run reads as its default); a `TypeError` or
            `ValueError` it raises refuses the folder as unreadable. Default: the data as stored.
        hint: Appended to a refusal (what the user can do, e.g. "use another --out").
    """

    def __init__(
        self,
        path: str | Path,
        config_file: str = "run.json",
        *,
        resumable: Collection[str] = (),
        read: Callable[[Any], Mapping[str, Any]] | None = None,
        hint: str = "",
    ):
        self.path = Path(path)
        self.config_path = self.path / config_file
        self.resumable = frozenset(resumable)
        self._read = read or (lambda data: dict(data or {}))
        self._hint = f"; {hint}" if hint else ""

    def stored(self) -> Mapping[str, Any] | None:
        """The configuration the folder holds, as `read` makes it (None: the folder holds none)."""
        if not self.config_path.exists():
            return None
        try:
            return self._read(self._parse(self.config_path.read_text(encoding="utf-8")))
        except (TypeError, ValueError) as exc:
            raise RunConflict(f"{self.path} holds a run this version cannot read: {exc}{self._hint}") from exc

    def check(self, config: Mapping[str, Any]) -> bool:
        """Refuse a folder holding another configuration; True when it holds this one (a resume).

        Raises:
            RunConflict: The stored configuration differs in a key outside `resumable`, or cannot be read.
        """
        theirs = self.stored()
        if theirs is None:
            return False
        changed = sorted(k for k in set(config) | set(theirs) if config.get(k) != theirs.get(k))
        if conflicting := [k for k in changed if k not in self.resumable]:
            details = differences(
                {k: theirs.get(k, _UNSET) for k in conflicting}, {k: config.get(k, _UNSET) for k in conflicting}
            )
            raise RunConflict(
                f"{self.path} holds a run with another configuration: {'; '.join(details)} "
                f"(stored -> this run){self._hint}"
            )
        return True

    def write(self, config: Mapping[str, Any]) -> None:
        """Store `config` as the folder's configuration (creating the folder)."""
        self.path.mkdir(parents=True, exist_ok=True)
        self.config_path.write_text(self._dump(config), encoding="utf-8")

    def open(self, config: Mapping[str, Any], *, force: bool = False) -> bool:
        """Start or resume the run of `config` here; True when resuming.

        A new folder (or any folder with `force`, which is emptied first) gets `config` written;
        a folder holding an equal configuration is left as it is.

        Raises:
            RunConflict: The folder holds another configuration (see `check`).
        """
        if force and self.path.exists():
            shutil.rmtree(self.path)
        self.path.mkdir(parents=True, exist_ok=True)
        if self.check(config):
            return True
        self.write(config)
        return False

    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        """Hold the folder (created if need be) for this process until the block ends.

        The lock is ``flock`` on `LOCK_FILE` in the folder, which holds the holder's process id;
        the operating system releases it when the process ends, however it ends.

        Raises:
            RunConflict: Another process (or another `lock` in this one) holds the folder.
        """
        self.path.mkdir(parents=True, exist_ok=True)
        with open(self.path / LOCK_FILE, "a+", encoding="utf-8") as handle:
            if fcntl is not None:
                try:
                    fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError:
                    handle.seek(0)
                    holder = handle.read().strip()
                    by = f" (process {holder})" if holder.isdigit() else ""
                    raise RunConflict(
                        f"{self.path} is in use by another run{by}: wait for it to end, or use another --out"
                    ) from None
            handle.truncate(0)
            handle.write(str(os.getpid()))
            handle.flush()
            try:
                yield
            finally:
                handle.truncate(0)

    def clear(self) -> None:
        """Delete what the folder holds, its lock file aside (``--force`` under `lock`)."""
        for entry in self.path.iterdir() if self.path.is_dir() else ():
            if entry.name == LOCK_FILE:
                continue
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()

    def _parse(self, text: str) -> Any:
        if self._yaml:
            import yaml

            return yaml.safe_load(text)
        return json.loads(text)

    def _dump(self, config: Mapping[str, Any]) -> str:
        if self._yaml:
            import yaml

            return yaml.safe_dump(dict(config), sort_keys=False)
        return json.dumps(dict(config), indent=2)

    @property
    def _yaml(self) -> bool:
        return self.config_path.suffix in (".yaml", ".yml")
