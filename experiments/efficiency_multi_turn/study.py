"""The pre-registered GRPO efficiency study (v2, multi-turn): vanilla vs the paper's filter vs selective rollouts.

Every choice is in the pre-registration file (`experiments.framework.study`, default
``benchmarks/preregistered/grpo_efficiency_v2.yaml``), committed before the first timed run; this
harness only runs what it says and reports against its criteria.

    python -m experiments.efficiency_multi_turn run --seed 0 --commit     # every arm of seed 0 (~2.5 h on 2 cores)
    python -m experiments.efficiency_multi_turn report                    # the report from whatever results exist
    python -m experiments.efficiency_multi_turn run --short --out /tmp/v2-smoke && \\
        python -m experiments.efficiency_multi_turn report --short --out /tmp/v2-smoke # minutes: proves it works

**run** trains each arm of one seed in its own process (``python -m tooluse_agents.cli.train BASE_CONFIG
OVERRIDES --no-progress``, run folder ``runs/grpo-efficiency-v2/seed{S}/{arm}``) with the
pre-registration's ``common`` and the arm's overrides, then the harness's own: the seed, the run
folder, the start model, the budget, evaluations at every ``eval_every_train_s`` training seconds
(greedy, one sample per held-out prompt; evaluation time is not training time). As soon as an arm
finishes, its result is written to ``benchmarks/results/grpo_efficiency_v2/seed{S}_{arm}.json``
(`experiments.framework.summary`, with the machine, ``runtime.json``, the resolved config and the
pre-registration's path, commit and sha256) and, with ``--commit``, committed alone. So a study
can span sessions: a (seed, arm) whose result exists is skipped, and a killed arm's run folder is
resumed by the trainer from its last checkpoint (training time counts across the resume).

**Arm order.** Seed s runs the arms in the pre-registration's order rotated by s (it starts at arm
index ``s mod len(arms)``): with three arms each arm runs first, second and third once over seeds
0-2, so no arm always meets the machine first (a cold page cache, another session's load).
Arms of one seed must run on one machine (each result records its CPU; the report flags a seed
whose arms differ) with nothing else running: the arms run one after the other, not interleaved,
and each result records the load average before and after.

**The start evaluation** (`experiments.framework.start_eval`) runs once: the first arm (of the
study, on this machine and code) runs it, and a later arm whose start-evaluation inputs hash the
same starts with ``eval.at_start=false`` and its result carries the recorded one (``shared_from``).
``--start-eval every`` runs it in every arm and records whether it matched.

**--short** runs the whole pipeline on a tiny setting in a few minutes (literal-category tasks, 4
train and 3 held-out, one call a turn, 48 tokens a message, 2 prompts a step, a 45 s budget,
SmolLM2-135M as the start), with everything under ``--out``: a smoke test, not a result. It
alone accepts ``--start-model``, ``--budget-s``, ``--eval-every-s`` and ``--set``, and it does not
require the pre-registration file to be committed.

**report** (`experiments.framework.report`) regenerates ``benchmarks/results/
grpo_efficiency_v2.json``, ``.md`` and ``docs/grpo-efficiency-v2.png`` from the results there.

The runner is the framework's (`experiments.framework.arms`); this module names the study's files.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from experiments.framework import arms
from experiments.framework.provenance import ROOT
from experiments.framework.run import dispatch
from experiments.framework.study import load

PREREG = ROOT / "benchmarks" / "preregistered" / "grpo_efficiency_v2.yaml"
PATHS = arms.StudyPaths(
    Path("runs/grpo-efficiency-v2"),
    Path("benchmarks/results/grpo_efficiency_v2"),
    Path("benchmarks/results/grpo_efficiency_v2.json"),
    Path("docs/grpo-efficiency-v2.png"),
    "grpo-efficiency-v2",
)


def run(args: argparse.Namespace) -> int:
    return arms.run(args, PATHS)


def report(args: argparse.Namespace) -> int:
    from experiments.framework.report import write_report

    prereg = load(args.prereg)
    settings = arms.settings_for(args, prereg, PATHS)
    rep = write_report(prereg, settings.results, settings.report, settings.markdown, settings.plot)
    return arms.announce(rep, settings)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    return arms.parsed(arms.build_parser((__doc__ or "").split("\n")[0], PREREG)[0], argv)


def main(argv: Sequence[str] | None = None) -> int:
    return dispatch("grpo_efficiency_v2", {"run": run, "report": report}, parse_args(argv))
