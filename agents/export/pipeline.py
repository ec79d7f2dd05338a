"""The one BFCL export pipeline: a run's episodes as BFCL result files, scored by BFCL's own `bfcl evaluate`.

`export_bfcl(run, out)` reads ``RUN/episodes.jsonl``, picks the format of the run's env family
(`tooluse_agents.export.multi_turn`, `tooluse_agents.export.single_turn`, `tooluse_agents.export.memory`;
their docstrings give each layout and why each registered model name), writes one BFCL project root per
seed (BFCL scores one line per task id, so two seeds cannot share a file), decodes every written step
again (the self-check) and writes ``OUT/export.json``: what was written, why under that registered name
(BFCL picks its decoder by the name, so the name follows the steps' encoding, not the model that played),
the self-check and the
`bfcl evaluate` commands.
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from pathlib import Path

from tooluse_agents.export import memory, multi_turn, single_turn, web_search
from tooluse_agents.export.base import BfclCommand, BfclExport, ExportFormat, failed_inference, target_reason
from tooluse_agents.export.evaluator import evaluator_program, missing_evaluator_packages
from tooluse_agents.export.folders import ExportError, prepare_out, read_run, run_setting
from tooluse_agents.runs.records import EpisodeRecord

FORMATS: tuple[ExportFormat, ...] = (multi_turn.FORMAT, single_turn.FORMAT, memory.FORMAT, web_search.FORMAT)
"""The env families a run can be exported from, asked in this order."""


def export_bfcl(run: str | os.PathLike[str], out: str | os.PathLike[str], *, force: bool = False) -> BfclExport:
    """Write a run's BFCL episodes as BFCL result files, one project root per seed (module docstring).

    Args:
        run: A run folder (``tooluse eval run --out``): its ``episodes.jsonl`` is read.
        out: A new or empty folder; ``OUT/seed_<seed>`` becomes each seed's ``BFCL_PROJECT_ROOT``.
        force: Replace what `out` holds.

    Returns:
        What was written, the self-check and the `bfcl evaluate` commands (also in ``OUT/export.json``).

    Raises:
        ExportError: No run folder or episodes, no BFCL episode, duplicate or unknown task ids, episodes
            that mix tool formats or prompts, or `out` not empty (without `force`) or holding the run.
    """
    run_path, out_path = Path(run), Path(out)
    records, corrupt = read_run(run_path)
    found = next((f for f in FORMATS if f.claims(records)), None)
    if found is None:
        raise ExportError(f"{run_path}: no BFCL multi-turn episodes to export ({len(records)} other episodes skipped)")
    episodes = found.select(records)
    if not episodes:
        raise ExportError(f"{run_path}: no BFCL {found.name} episodes to export")
    fc_run = run_setting(run_path, "text_replies") == "fc"  # text replies were FC responses with no calls
    target, warnings = found.plan(episodes, fc_run)
    prepare_out(out_path, run_path, force)
    by_seed: dict[int, list[EpisodeRecord]] = defaultdict(list)
    for record in episodes:
        by_seed[record.seed].append(record)
    program = evaluator_program()
    commands = []
    for seed in sorted(by_seed):
        root = (out_path / f"seed_{seed}").resolve()
        commands.append(BfclCommand(root, target, found.write_root(root, target, by_seed[seed]), program))
    checked, mismatches = found.self_check(episodes, target.encoding)
    export = BfclExport(
        run=run_path,
        out=out_path,
        target=target,
        exported=len(episodes),
        skipped_scenario=len(records) - len(episodes),
        inference_errors=sum(failed_inference(r) for r in episodes),
        corrupt_lines=corrupt,
        steps_checked=checked,
        mismatches=tuple(mismatches),
        warnings=tuple(warnings),
        commands=tuple(commands),
        missing_packages=missing_evaluator_packages(),
        target_reason=target_reason(target, fc_run, run_setting(run_path, "model") or run_setting(run_path, "agent")),
    )
    (out_path / "export.json").write_text(json.dumps(export.to_dict(), indent=2) + "\n", encoding="utf-8")
    return export
