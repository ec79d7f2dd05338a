"""`tooluse`: the one command. ``tooluse NAME ...`` runs the subcommand NAME with the rest of the line.

    tooluse eval run --agent oracle --limit 1 --out runs/oracle
    tooluse train agents/train/grpo/configs/cpu_smoke.yaml
    tooluse train prefilter CONFIG --agent vllm --model MODEL --out kept.yaml
    tooluse sft --scenarios scenarios/curriculum/warmup.yaml --out runs/warmstart
    tooluse serve --model smollm2-135m
    tooluse scenarios validate scenarios/
    tooluse tui runs/oracle

Subcommands are the ``tooluse.commands`` entry points (``pyproject.toml``): each names a module
with ``build_parser()`` and ``main(argv)``. So this module imports none of them until one runs, and
the layers stay one way (the TUI's command is found by name, never imported by the agents package).
The old script names (``tooluse-eval``, ``tooluse-train``, ``tooluse-serve``, ``tooluse-scenarios``,
``tooluse-tui``) run the same mains.
"""

from __future__ import annotations

import contextlib
import importlib
import sys
import warnings
from collections.abc import Callable, Iterator, Sequence
from importlib.metadata import entry_points

GROUP = "tooluse.commands"
"""The entry-point group of the subcommands."""


def commands() -> dict[str, str]:
    """Subcommand name -> ``module:main``, as installed."""
    return {ep.name: ep.value for ep in sorted(entry_points(group=GROUP), key=lambda ep: ep.name)}


def load(target: str) -> tuple[Callable[..., int], Callable[..., object] | None]:
    """A subcommand's ``main`` and ``build_parser`` (None when its module has none) from ``module:main``."""
    module_name, _, attr = target.partition(":")
    module = importlib.import_module(module_name)
    return getattr(module, attr or "main"), getattr(module, "build_parser", None)


def _summary(target: str) -> str:
    try:
        _, build = load(target)
        description = getattr(build(), "description", None) if build is not None else None
    except Exception as e:  # a subcommand whose extra is not installed still shows in the list
        return f"(unavailable: {type(e).__name__}: {e})"
    return (description or "").strip().splitlines()[0].rstrip(".") if description else ""


def usage() -> str:
    """The help text: each subcommand with the first line of its description."""
    found = commands()
    width = max((len(n) for n in found), default=0)
    lines = ["usage: tooluse COMMAND [ARGS ...]   (tooluse COMMAND --help for its arguments)", "", "commands:"]
    lines += [f"  {name:<{width}}  {_summary(target)}" for name, target in found.items()]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """The `tooluse` console script; returns the subcommand's exit status."""
    args = list(sys.argv[1:] if argv is None else argv)
    found = commands()
    if not args or args[0] in ("-h", "--help"):
        print(usage())
        return 0 if args else 2
    name, rest = args[0], args[1:]
    if name not in found:
        print(f"tooluse: unknown command {name!r}; commands: {', '.join(found)}", file=sys.stderr)
        return 2
    run, _ = load(found[name])
    with one_line_warnings(f"tooluse {name}"):
        return int(run(rest) or 0)


@contextlib.contextmanager
def one_line_warnings(prog: str) -> Iterator[None]:
    """Show each warning as one line on stderr, ``PROG: warning: MESSAGE``, not Python's ``file:line: Category``.

    A `UserWarning` is the project telling the user something (a likely mistyped system prompt, a
    torn line skipped); other categories keep their name (``PROG: DeprecationWarning: ...``). Which
    warnings show is still the filters' business, and a line already shown is not repeated; the previous
    display is restored on exit.
    """
    shown: set[str] = set()

    def show(message: Warning | str, category: type[Warning], *_: object, **__: object) -> None:
        kind = "warning" if category is UserWarning else category.__name__
        text = f"{prog}: {kind}: {message}"
        if text not in shown:  # a config built and resolved several times says each thing once
            shown.add(text)
            print(text, file=sys.stderr)

    saved = warnings.showwarning
    warnings.showwarning = show
    try:
        yield
    finally:
        warnings.showwarning = saved


if __name__ == "__main__":
    sys.exit(main())
