"""`tooluse eval`: evaluate agents under an explicit protocol, sweep knobs, compare, score, check and export runs.

tooluse eval run --agent hf --model smollm2-135m --categories base --limit 5 --seeds 0 1 --out runs/NAME
tooluse eval run --agent vllm --model smollm2-135m --scenarios scenarios/curriculum/heldout.yaml --out runs/NAME
tooluse eval run --config eval.yaml sampling.temperature=0 protocol.template=context --seeds 1 --out runs/NAME
tooluse eval sweep --agent oracle --template native context --reasoning keep strip --out runs/SWEEP
tooluse eval compare runs/A runs/B
tooluse eval rescore runs/A
tooluse eval table runs/SWEEPS
tooluse eval estimate runs/A --estimator pass@k --k 2
tooluse eval check runs/A --write-reference ref.json;  tooluse eval check runs/B --reference ref.json --band 0.97
tooluse eval export --format bfcl runs/A runs/A-bfcl
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shlex
import sys
import warnings
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from tooluse_agents.backends.dtypes import DTYPE_HELP, DTYPES
from tooluse_agents.backends.server_pool import server_lines
from tooluse_agents.cli.config_loader import load
from tooluse_agents.cli.flags import DefaultsHelpFormatter, add_config_flags, add_config_source, given_config
from tooluse_agents.eval.estimators import (
    DEFAULT_ESTIMATOR,
    ESTIMATORS,
    EstimateConfig,
    estimate,
    estimate_table,
    run_episodes,
)
from tooluse_agents.eval.reference import CheckConfig, check, write_reference
from tooluse_agents.eval.rescore import rescore_run
from tooluse_agents.eval.run import (
    AGENTS,
    EvalConfig,
    compare_runs,
    results_table,
    run_eval,
)
from tooluse_agents.eval.sweep import run_sweep, run_vary
from tooluse_agents.eval.table import write_table
from tooluse_agents.export.base import EXPORT_FORMATS
from tooluse_agents.export.pipeline import export_bfcl
from tooluse_agents.rollout.loop import SCHEDULES
from tooluse_agents.runs.failures import failure_banner, run_failed
from tooluse_agents.runs.rundir import RunConflict
from tooluse_gym.envs.flags import SWEPT, varies_by_env_id
from tooluse_gym.prompt_formats import expand as expand_prompt_formats
from tooluse_gym.protocol import ProtocolCard

_FLAGS: dict[str, dict[str, Any]] = {
    "agent": {"choices": AGENTS},
    "scenarios": {"metavar": "PATH"},
    "base_urls": {"metavar": "URL"},
    "schedule": {"choices": SCHEDULES},
    "dtype": {"choices": DTYPES, "help": DTYPE_HELP},
    "text_replies": {"choices": ("decode", "fc")},
}
"""What `tooluse eval run` and `sweep`'s flags add to the ones `EvalConfig`'s fields make."""


def _common(p: argparse.ArgumentParser, *, sweep: bool) -> None:
    """`tooluse eval run` and `sweep`'s arguments: `EvalConfig`'s fields (its defaults), and the run folder's."""
    add_config_source(
        p,
        "EvalConfig",
        examples="limit=2, seeds=[0,1], sampling.temperature=0, protocol.template=context",
        keys="agent, model, categories, seeds, protocol: {...}, sampling: {...}, num_envs...",
    )
    add_config_flags(p, EvalConfig, flags=_FLAGS, flatten=("sampling",), knobs={"several": SWEPT if sweep else ()})
    p.add_argument(
        "--out",
        type=Path,
        required=True,
        help="the run folder (run.json, episodes.jsonl, results.json, report.md); one that holds this run's "
        "configuration is resumed",
    )
    p.add_argument("--force", action="store_true", help="discard what --out holds and start over")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--verbose", action="store_true", help="show the backends' INFO and WARNING lines")


def run_parser(command: str) -> argparse.ArgumentParser:
    """The parser of `tooluse eval run` or `sweep` on its own (so KEY=VALUE items may come between options)."""
    parser = argparse.ArgumentParser(prog=f"tooluse eval {command}", formatter_class=DefaultsHelpFormatter)
    _common(parser, sweep=command == "sweep")
    if command == "sweep":
        _sweep_flags(parser)
    return parser


def parse_run_args(command: str, argv: Sequence[str]) -> tuple[argparse.Namespace, dict[str, Any]]:
    """`tooluse eval run` / `sweep`'s arguments, and the `EvalConfig` values the line gave (nested by section).

    A sweep's knobs given as flags are its grid (`_grid`), not part of the config.
    """
    args = run_parser(command).parse_intermixed_args(argv)
    args.command = command
    return args, given_config(args, exclude=SWEPT if command == "sweep" else ())


def eval_config(args: argparse.Namespace, given: Mapping[str, Any]) -> EvalConfig:
    """The run's `EvalConfig`: its defaults, then ``--config``, then the flags `given`, then the overrides.

    Read by the one config loader (`tooluse_agents.cli.config_loader.load`): a wrong type is an error
    naming the dotted key (``sampling.temperature: expected float, got 'hot'``), and the knobs set
    (``protocol:``, the knob flags) change the env id's defaults.
    """
    if "agent" not in given and args.config is None and not any(o.startswith("agent=") for o in args.overrides):
        raise ValueError("the following arguments are required: --agent (or agent: in --config)")
    return load(EvalConfig, args.config, args.overrides, given=given)


def _grid(args: argparse.Namespace, config: EvalConfig) -> dict[str, list]:
    """A sweep's knob values: those given, and the default of each knob every env id shares (it names the folders)."""
    grid = {}
    for knob in SWEPT:
        given, default = getattr(args, knob), getattr(config.protocol, knob)
        if knob == "prompt_format" and given:
            given = expand_prompt_formats(given)  # `all`: BFCL's 26 configurations
        if not given and default is None:  # an unset optional knob (prompt_format) names no folder
            continue
        grid[knob] = given or (None if varies_by_env_id(knob) else [default])
    return {k: v for k, v in grid.items() if v}


QUIET_ENV = {
    "VLLM_LOGGING_LEVEL": "ERROR",  # vLLM: ~20 warnings per engine start on a CPU (no Triton, tcmalloc, eager mode...)
    "TORCH_LOGS": "-torch",  # torch's Python loggers at ERROR ("Triton not available")
    "TORCH_CPP_LOG_LEVEL": "ERROR",  # torch's C++ warnings ("NUMA binding: ...")
    "PYTHONWARNINGS": "ignore",  # in vLLM's engine processes, which run only backend code
}
"""The environment `quiet_backends` sets (it reaches vLLM's engine processes)."""


@contextlib.contextmanager
def quiet_backends() -> Iterator[None]:
    """Hide the backends' INFO and WARNING lines (the progress bar, tables and errors remain); explicit settings win.

    In this process only the Python warnings raised in the backends' modules are ignored: the
    project's own (a torn line in episodes.jsonl, say) still show. The environment and the
    warning filters are restored on exit.
    """
    saved = {name: os.environ.get(name) for name in QUIET_ENV}
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", module=r"(vllm|torch|transformers|triton)(\.|$)")
        for name, value in QUIET_ENV.items():
            os.environ.setdefault(name, value)
        try:
            yield
        finally:
            for name, old in saved.items():
                if old is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = old


def _sweep_flags(sweep: argparse.ArgumentParser) -> None:
    sweep.add_argument(
        "--vary",
        action="store_true",
        help="one factor at a time: each knob's first value is the base protocol (played with --seeds), every "
        "other value one change from it (played with --change-seeds); per change the paired difference from the "
        "base with a 95%% bootstrap interval over tasks",
    )
    sweep.add_argument("--change-seeds", nargs="+", type=int, help="--vary: the changes' seeds (default: --seeds)")


def _estimate_parsers(sub: Any) -> None:
    """`tooluse eval estimate` and `check`'s arguments, from `EstimateConfig` and `CheckConfig`."""
    run = {"name": "run", "type": Path, "help": "a run folder (`tooluse eval run --out`)"}
    est = sub.add_parser(
        "estimate",
        help="a run's score under a named estimator (pass@1, pass@k, pass^k, avg@k), each value with its interval "
        "(bootstrap over tasks)",
        formatter_class=DefaultsHelpFormatter,
    )
    add_config_flags(est, EstimateConfig, flags={"run": run, "estimator": {"choices": ESTIMATORS}})
    chk = sub.add_parser(
        "check",
        help="exit 0 when a run's score is within the band of a stored reference (score >= band x reference), "
        "1 when below it, 2 when the two are not comparable; or write a reference from a run",
        formatter_class=DefaultsHelpFormatter,
    )
    which = ("reference", "write_reference")
    files = {"metavar": "FILE", "type": Path}
    add_config_flags(chk, CheckConfig, flags={"run": run}, skip=(*which, "band", "estimator", "k"))
    add_config_flags(
        chk.add_mutually_exclusive_group(required=True),
        CheckConfig,
        flags={"reference": files, "write_reference": files},
        skip=("run", "band", "estimator", "k"),
    )
    add_config_flags(chk, CheckConfig, flags={"estimator": {"choices": ESTIMATORS}}, skip=("run", *which))


def _estimate_command(args: argparse.Namespace) -> int:
    """`tooluse eval estimate` and `check`; the exit status."""
    if args.command == "estimate":
        print(estimate_table(estimate(run_episodes(args.run), args.estimator, args.k)))
        return 0
    if args.write_reference is not None:
        data = write_reference(args.run, args.write_reference, args.estimator, args.k)
        print(
            f"reference: {args.write_reference}: {data['label']} = {100 * data['score']:.2f}% over {data['tasks']} "
            f"tasks, protocol {data['fingerprint']}"
        )
        return 0
    if args.estimator != DEFAULT_ESTIMATOR or args.k is not None:
        raise ValueError("--estimator and --k go with --write-reference: a check uses the reference's own")
    verdict = check(args.run, args.reference, args.band)
    print(verdict.message)
    return 0 if verdict.passed else 1


def build_parser() -> argparse.ArgumentParser:
    """The `tooluse eval` arguments: its subcommands run, sweep, compare, rescore, table, estimate, check and export."""
    parser = argparse.ArgumentParser(prog="tooluse eval", description=__doc__, formatter_class=DefaultsHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    _common(
        sub.add_parser("run", help="evaluate one protocol over tasks and seeds", formatter_class=DefaultsHelpFormatter),
        sweep=False,
    )
    sweep = sub.add_parser(
        "sweep",
        help="evaluate a grid of protocol knobs x seeds, or one change at a time (--vary)",
        formatter_class=DefaultsHelpFormatter,
    )
    _common(sweep, sweep=True)
    _sweep_flags(sweep)
    cmp = sub.add_parser(
        "compare",
        help="per-category differences and per-task disagreements of two runs",
        formatter_class=DefaultsHelpFormatter,
    )
    cmp.add_argument("run_a", type=Path)
    cmp.add_argument("run_b", type=Path)
    rescore = sub.add_parser(
        "rescore",
        help="score a run's stored messages again with today's checker and task data (nothing is generated)",
        description="Replays every episode of RUN/episodes.jsonl on the env RUN/run.json builds today and writes "
        "RUN/results.rescored.json and RUN/episodes.rescored.jsonl beside the originals (left untouched), listing "
        "each verdict that changed and why: data (the entry's data files' digests differ) or checker.",
        formatter_class=DefaultsHelpFormatter,
    )
    rescore.add_argument("run", type=Path, help="a run folder (`tooluse eval run --out`)")
    table = sub.add_parser(
        "table",
        help="one table over the one-factor sweeps under a folder (model x benchmark x configuration)",
        formatter_class=DefaultsHelpFormatter,
    )
    table.add_argument("root", type=Path, help="a folder holding `tooluse eval sweep --vary` runs, at any depth")
    _estimate_parsers(sub)
    exp = sub.add_parser(
        "export",
        help="write a run's BFCL episodes as result files for BFCL's own `bfcl evaluate`, one root per seed",
        formatter_class=DefaultsHelpFormatter,
    )
    exp.add_argument(
        "--format",
        choices=EXPORT_FORMATS,
        required=True,
        help="bfcl: BFCL result files under a registered model name whose handler decodes the run's steps",
    )
    exp.add_argument("run", type=Path, help="a run folder (`tooluse eval run --out`)")
    exp.add_argument("out", type=Path, help="a new or empty folder: OUT/seed_N is seed N's BFCL_PROJECT_ROOT")
    exp.add_argument("--force", action="store_true", help="replace what OUT holds")
    return parser


def main(argv: list[str] | None = None) -> int:
    """The `tooluse eval` console script; returns the exit status."""
    argv = list(sys.argv[1:] if argv is None else argv)
    given: dict[str, Any] = {}
    if argv and argv[0] in ("run", "sweep"):
        args, given = parse_run_args(argv[0], argv[1:])
    else:
        args = build_parser().parse_args(argv)
    try:
        quiet = args.command in ("run", "sweep") and not args.verbose
        with quiet_backends() if quiet else contextlib.nullcontext():
            return _command(args, given)
    except KeyboardInterrupt:
        if args.command not in ("run", "sweep"):
            print("tooluse eval: interrupted", file=sys.stderr)
            return 130
        print(
            f"tooluse eval: interrupted; the episodes played so far are kept in {args.out}; run the same command "
            f"to resume: {shlex.join(['tooluse', 'eval', *argv])}",
            file=sys.stderr,
        )
        return 130


def _command(args: argparse.Namespace, given: Mapping[str, Any]) -> int:
    try:
        if args.command == "run":
            results = run_eval(eval_config(args, given), args.out, force=args.force, progress=not args.no_progress)
            banner = failure_banner(results["summary"])
            if banner:  # above the table: a dead endpoint must not read as a score of 0
                print(banner + "\n")
            print(results_table(results))
            if results.get("servers"):
                print("\nmodel servers (this session):\n" + "\n".join(server_lines(results["servers"])))
            print(
                f"\nresults: {args.out / 'results.json'}   report: {args.out / 'report.md'}   "
                f"episodes: {args.out / 'episodes.jsonl'}   protocol {results['fingerprint']}   "
                f"task data {ProtocolCard.from_dict(results['protocol']).data_version}"
            )
            print(f"open the episodes in the TUI: tooluse tui {args.out}")
            if run_failed(results["summary"]):
                return 1
        elif args.command == "sweep":
            config, progress = eval_config(args, given), not args.no_progress
            grid = _grid(args, config)
            if args.vary:
                seeds = args.change_seeds
                data = run_vary(config, grid, args.out, change_seeds=seeds, force=args.force, progress=progress)
                count = len(data["changes"]) + 1
            else:
                if args.change_seeds:
                    raise ValueError("--change-seeds needs --vary")
                data = run_sweep(config, grid, args.out, force=args.force, progress=progress)
                count = len(data["runs"])
            print((args.out / "sweep.md").read_text())
            print(f"sweep: {args.out / 'sweep.json'}  ({count} configurations)")
        elif args.command in ("estimate", "check"):
            return _estimate_command(args)
        elif args.command == "export":
            print(export_bfcl(args.run, args.out, force=args.force).report())
        elif args.command == "rescore":
            done = rescore_run(args.run)
            print(done.report())
            print(f"\nresults: {args.run / 'results.rescored.json'}   episodes: {args.run / 'episodes.rescored.jsonl'}")
        elif args.command == "table":
            text, _ = write_table(args.root)
            print(text)
            print(f"table: {args.root / 'results.json'}   {args.root / 'table.md'}")
        else:
            text, data = compare_runs(args.run_a, args.run_b)
            print(text)
            if data["protocol_differences"]:
                print("WARNING: protocol cards differ (see above)", file=sys.stderr)
            if data["task_data"]["same"] is not True:
                print("WARNING: the runs' task data differ or are unknown (see above)", file=sys.stderr)
            if data["left_out"]["a"]["episodes"] or data["left_out"]["b"]["episodes"]:
                print("NOTE: the runs played different tasks or seeds; compared on those both played", file=sys.stderr)
    except (RunConflict, ValueError, FileNotFoundError, FileExistsError, NotImplementedError) as e:
        print(f"tooluse eval: error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
