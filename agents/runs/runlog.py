"""The run directory's files: config.yaml, metrics.jsonl, episodes.jsonl, eval.jsonl.

Every line of metrics.jsonl is one training step (`tooluse_agents.runs.records.MetricsRecord`) with all
of `METRIC_KEYS` (plus ``eval/heldout_reward`` on steps where a held-out evaluation ran; ``time/train_s`` is the
training time, rollout + update + sync summed over the steps so far, at which it ran). Every
line of eval.jsonl is one held-out evaluation: step, epoch, reward, episodes, ``time/train_s``
and its own duration ``time/eval_s`` (not training time). episodes.jsonl holds the
training rollouts in the evaluation harness's record format (`tooluse_agents.rollout.episode`) with one
extra ``train`` object (step, epoch, member, advantage, used). A checkpoint records how many bytes
each of these appended files held when it was saved (`RunFiles.sizes`); on resume every file is cut back
to that (`RunFiles.rewind`), so the files read as if the run had never stopped, whatever it wrote between
its last checkpoint and the kill (a step's metrics line, its rollouts, an evaluation).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tooluse_agents.runs.jsonl import JsonlWriter, append_jsonl, read_jsonl
from tooluse_agents.runs.metrics import undeclared
from tooluse_agents.runs.records import EVAL_KEY, METRIC_KEYS, MetricsRecord

__all__ = ["EVAL_KEY", "METRIC_KEYS", "RunFiles"]


class RunFiles:
    """Appends to the run's JSONL files (each line flushed); with ``write=False`` (ranks but 0) it writes nothing."""

    def __init__(self, run_dir: Path, write: bool = True):
        self.run_dir = run_dir
        self.write = write
        run_dir.mkdir(parents=True, exist_ok=True)
        self.metrics_path = run_dir / "metrics.jsonl"
        self.episodes_path = run_dir / "episodes.jsonl"
        self.eval_path = run_dir / "eval.jsonl"
        self.eval_episodes_path = run_dir / "eval_episodes.jsonl"
        self.checkpoints = run_dir / "checkpoints"
        self._episodes: JsonlWriter | None = None
        self._eval_episodes: JsonlWriter | None = None

    @property
    def appended(self) -> tuple[Path, ...]:
        """The files a run appends to (a resume cuts each back to its checkpoint)."""
        return (self.metrics_path, self.episodes_path, self.eval_path, self.eval_episodes_path)

    def sizes(self) -> dict[str, int]:
        """Bytes each appended file holds now (every line is flushed): what a checkpoint saved now covers."""
        if not self.write:
            return {}
        return {p.name: p.stat().st_size if p.exists() else 0 for p in self.appended}

    def rewind(self, sizes: Mapping[str, int] | None, step: int | None) -> None:
        """Cut every appended file back to what the checkpoint a run resumes from covers.

        Args:
            sizes: The bytes each file held when the checkpoint was saved (`sizes`); None for a
                checkpoint that did not record them: lines of later steps are dropped (`truncate_after`).
            step: The checkpoint's step; None when there is no checkpoint: the run starts over, so
                nothing written so far counts and every file is emptied.
        """
        if not self.write:
            return
        if step is None:
            for path in self.appended:
                if path.exists():
                    os.truncate(path, 0)
            return
        if sizes is None:
            self.truncate_after(step)
            return
        for path in self.appended:
            size = sizes.get(path.name, 0)
            if path.exists() and path.stat().st_size >= size:
                os.truncate(path, size)
            elif path.exists():  # shorter than the checkpoint saw it: keep what its steps wrote
                self.truncate_after(step)
                return

    def truncate_after(self, step: int) -> None:
        """Drop every line written for steps after `step` (torn lines included)."""
        if not self.write:
            return
        _keep(self.metrics_path, lambda r: r.get("step", 0) <= step)
        _keep(self.eval_path, lambda r: r.get("step", 0) <= step)
        _keep(self.episodes_path, lambda r: r.get("train", {}).get("step", 0) <= step)
        _keep(self.eval_episodes_path, lambda r: r.get("eval_step", 0) <= step)

    def metrics(self, record: MetricsRecord) -> None:
        """Append a step's metrics; a record without every `METRIC_KEYS` key, or with an undeclared one, is an error.

        Every key is declared, with its meaning, in `tooluse_agents.runs.metrics.METRICS`.
        """
        if record.missing:
            raise ValueError(f"metrics record lacks {list(record.missing)}")
        unknown = undeclared(record.values)
        if unknown:
            raise ValueError(f"metrics record has keys tooluse_agents.runs.metrics.METRICS does not declare: {unknown}")
        if self.write:
            append_jsonl(self.metrics_path, record.to_dict())

    def eval(self, record: Mapping[str, Any]) -> None:
        """Append a held-out evaluation to ``eval.jsonl``."""
        if self.write:
            append_jsonl(self.eval_path, record)

    def episode(self, record: Mapping[str, Any]) -> None:
        """Append a training rollout to ``episodes.jsonl``."""
        if not self.write:
            return
        if self._episodes is None:
            self._episodes = JsonlWriter(self.episodes_path)
        self._episodes.write(record)

    def eval_episode(self, record: Mapping[str, Any]) -> None:
        """Append a held-out episode to the evaluations' episode file."""
        if not self.write:
            return
        if self._eval_episodes is None:
            self._eval_episodes = JsonlWriter(self.eval_episodes_path)
        self._eval_episodes.write(record)

    def close(self) -> None:
        """Close the episode files."""
        for writer in (self._episodes, self._eval_episodes):
            if writer is not None:
                writer.close()
        self._episodes = self._eval_episodes = None


def _keep(path: Path, keep) -> None:
    if not path.exists():
        return
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a torn line from the killed run is expected here
        kept = [r for r in read_jsonl(path)[0] if keep(r)]
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in kept), encoding="utf-8")
    tmp.replace(path)
