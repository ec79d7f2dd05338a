"""The one BFCL export pipeline: a run's episodes as BFCL result files, scored by BFCL's own `bfcl evaluate`.

`export_bfcl(run, out)` reads ``RUN/episodes.jsonl``, picks the format of each env family the run played
(`tooluse_agents.export.multi_turn`, `tooluse_agents.export.single_turn`, `tooluse_agents.export.memory`;
their docstrings give each layout and why each registered model name; a run of several families is written
under one model name, into the same roots), writes one BFCL project root per
seed (BFCL scores one line per task id, so two seeds cannot share a file), decodes every written step
again (the self-check) and writes ``OUT/export.json``: what was written, why under that registered name
(BFCL picks its decoder by the name, so the name follows the steps' encoding, not the model that played),
the self-check and the
`bfcl evaluate` commands.
"""

from __future__ import annotations

import json
import os
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
    found = [f for f in FORMATS if f.claims(records)]
    if not found:
        raise ExportError(f"{run_path}: no BFCL multi-turn episodes to export ({len(records)} other episodes skipped)")
    shares = [(f, f.select(records)) for f in found]
    for f, selected in shares:
        if not selected:
            raise ExportError(f"{run_path}: no BFCL {f.name} episodes to export")
    fc_run = run_setting(run_path, "text_replies") == "fc"  # text replies were FC responses with no calls
    plans = [(f, selected, *f.plan(selected, fc_run)) for f, selected in shares]
    targets = {target.model for *_, target, _ in plans}
    if len(targets) > 1:  # one project root holds one model name: its handler decodes every file in it
        raise ExportError(f"{run_path}: its env families' steps need different BFCL model names ({sorted(targets)})")
    target = plans[0][2]
    warnings = [w for *_, found_warnings in plans for w in found_warnings]
    episodes = [r for _, selected in shares for r in selected]
    if unscored := sum(r.unscored for r in episodes):
        warnings.append(
            f"{unscored} episodes ended because the model server failed: the run's tables leave them out, "
            "BFCL counts them as failed inferences; play them first (`tooluse eval run` again with the same "
            "--out resumes the run)"
        )
    prepare_out(out_path, run_path, force)
    program = evaluator_program()
    commands = []
    for seed in sorted({r.seed for r in episodes}):
        root = (out_path / f"seed_{seed}").resolve()
        categories = [
            c
            for f, selected, *_ in plans
            if _of_seed(selected, seed)
            for c in f.write_root(root, target, _of_seed(selected, seed))
        ]
        commands.append(BfclCommand(root, target, tuple(categories), program))
    checked, mismatches = 0, []
    for f, selected, *_ in plans:
        n, found_mismatches = f.self_check(selected, target.encoding)
        checked += n
        mismatches += found_mismatches
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


def _of_seed(records: list[EpisodeRecord], seed: int) -> list[EpisodeRecord]:
    return [r for r in records if r.seed == seed]
