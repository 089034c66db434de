"""The ``snapsim`` command line (also ``python -m simulator``): parsing, dispatch, exit codes.

Subcommands live in a registry, :data:`COMMANDS`, of name → (help, ``add_arguments``,
``handler``); :func:`register_command` adds one. This module implements ``machines`` (table of the
shipped machines) and ``check-config FILE`` (validate a file without running); ``check-config``
dispatches on the file's content through :data:`CONFIG_KINDS`, to which the experiment loader
adds its own kind. Running experiments, validation, regression and plots are registered by the
modules that implement them, not here.

Exit codes: 0 success, 1 a regression or validation failure (returned by those handlers), 2 bad
input (any :class:`~simulator.errors.SnapsimError` or an argparse usage error), 130 interrupted.
A :class:`~simulator.errors.SnapsimError` is reported as one line ``snapsim: error: <message>`` on
stderr; ``--debug`` also prints its traceback.
"""

from __future__ import annotations

import argparse
import sys
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from simulator.analysis.tables import format_table
from simulator.config.machine import MachineConfig
from simulator.config.machine_file import load_machine, machine_from_dict, shipped_machines
from simulator.config.yaml_io import read_yaml
from simulator.errors import ConfigError, SnapsimError
from simulator.version import __version__

__all__ = [
    "COMMANDS",
    "CONFIG_KINDS",
    "Command",
    "ConfigKind",
    "build_parser",
    "format_table",
    "machine_summary",
    "main",
    "register_command",
]

EXIT_OK = 0
EXIT_BAD_INPUT = 2
EXIT_INTERRUPTED = 130

ArgumentAdder = Callable[[argparse.ArgumentParser], None]
Handler = Callable[[argparse.Namespace], int]


@dataclass(frozen=True, slots=True)
class Command:
    """A subcommand: one-line help, a function adding its arguments, and its handler.

    The handler returns the exit code and signals bad input by raising a ``SnapsimError``.
    """

    help: str
    add_arguments: ArgumentAdder
    handler: Handler


@dataclass(frozen=True, slots=True)
class ConfigKind:
    """A kind of configuration file that ``check-config`` recognises by its content.

    ``check(data, source)`` validates the parsed document (raising ``ConfigError``) and returns a
    one-line summary printed after ``ok:``. ``recognised_by`` completes the sentence "a <name>
    file has ..." in the error for a file that no kind recognises.
    """

    name: str
    recognised_by: str
    matches: Callable[[Mapping[str, object]], bool]
    check: Callable[[Mapping[str, object], str], str]


COMMANDS: dict[str, Command] = {}
"""Subcommands by name, in the order they appear in ``snapsim --help``."""

CONFIG_KINDS: list[ConfigKind] = []
"""Configuration kinds tried in order by ``check-config``; the first that matches checks."""


def register_command(
    name: str, help: str, add_arguments: ArgumentAdder, handler: Handler
) -> None:
    """Add a subcommand to :data:`COMMANDS`.

    Raises:
        ValueError: a subcommand of that name exists already.
    """
    if name in COMMANDS:
        raise ValueError(f"subcommand {name!r} is registered twice")
    COMMANDS[name] = Command(help=help, add_arguments=add_arguments, handler=handler)


# --------------------------------------------------------------------------------------------
# Parsing and dispatch
# --------------------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every registered subcommand."""
    parser = argparse.ArgumentParser(
        prog="snapsim",
        description="Discrete-event simulator of CPU cache-coherence costs.",
    )
    parser.add_argument("--debug", action="store_true", help="show tracebacks of errors")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, command in COMMANDS.items():
        sub = subparsers.add_parser(name, help=command.help, description=command.help)
        # Also accepted after the subcommand; SUPPRESS keeps the global value when absent.
        sub.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                         help="show tracebacks of errors")
        command.add_arguments(sub)
        sub.set_defaults(handler=command.handler)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line with ``argv`` (default ``sys.argv[1:]``) and return the exit code."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version and usage errors (argparse uses exit code 2)
        return _exit_code(exc)
    handler: Handler = args.handler
    return _run(handler, args, debug=bool(args.debug))


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


# --------------------------------------------------------------------------------------------
# snapsim machines
# --------------------------------------------------------------------------------------------


def _add_machines_arguments(parser: argparse.ArgumentParser) -> None:
    del parser  # no options


def _machines(args: argparse.Namespace) -> int:
    del args
    headers = ("NAME", "TOPOLOGY", "PROTOCOL", "L3", "CLOCK", "VIRTUALIZED", "DESCRIPTION")
    rows = [_machine_row(load_machine(name)) for name in shipped_machines()]
    for line in format_table(headers, rows):
        print(line)
    print("\nTOPOLOGY is sockets x L3 domains per socket x cores per domain x threads per core.")
    return EXIT_OK


def _machine_row(config: MachineConfig) -> tuple[str, ...]:
    topo = config.topology
    shape = (f"{topo.sockets}x{topo.domains_per_socket}x{topo.cores_per_domain}"
             f"x{topo.threads_per_core}")
    return (
        config.name,
        shape,
        config.protocol.value,
        config.l3_inclusion.value,
        f"{config.clock_ghz:g} GHz",
        "yes" if config.virtualized else "no",
        config.description,
    )


# --------------------------------------------------------------------------------------------
# snapsim check-config
# --------------------------------------------------------------------------------------------


def _add_check_config_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", metavar="FILE", help="machine file (YAML) to validate")


def _check_config(args: argparse.Namespace) -> int:
    source = str(args.file)
    data = read_yaml(Path(source))
    if not isinstance(data, Mapping):
        raise ConfigError("", "the top level must be a mapping", source)
    for kind in CONFIG_KINDS:
        if kind.matches(data):
            print(f"ok: {kind.check(data, source)}")
            return EXIT_OK
    known = "; ".join(f"a {kind.name} file has {kind.recognised_by}" for kind in CONFIG_KINDS)
    raise ConfigError("", f"not a recognised configuration file ({known})", source)


def _is_machine(data: Mapping[str, object]) -> bool:
    return "topology" in data


def _check_machine(data: Mapping[str, object], source: str) -> str:
    return machine_summary(machine_from_dict(data, source=source))


def machine_summary(config: MachineConfig) -> str:
    """One-line description of a machine: ``name (2 sockets x 1 domain x ..., MESIF, ...)``."""
    topo = config.topology
    shape = " x ".join(
        _count(value, unit)
        for value, unit in (
            (topo.sockets, "socket"),
            (topo.domains_per_socket, "domain"),
            (topo.cores_per_domain, "core"),
            (topo.threads_per_core, "thread"),
        )
    )
    return (f"{config.name} ({shape}, {config.protocol.value}, "
            f"{config.l3_inclusion.value} L3, {config.clock_ghz:g} GHz)")


def _count(value: int, unit: str) -> str:
    return f"{value} {unit}" if value == 1 else f"{value} {unit}s"


# --------------------------------------------------------------------------------------------
# Built-in registrations
# --------------------------------------------------------------------------------------------

register_command(
    "machines", "list the shipped machines", _add_machines_arguments, _machines
)
register_command(
    "check-config", "validate a configuration file without running it",
    _add_check_config_arguments, _check_config,
)
CONFIG_KINDS.append(
    ConfigKind(name="machine", recognised_by="a 'topology' key", matches=_is_machine,
               check=_check_machine)
)


def _register_simulator_commands() -> None:
    from simulator.cli import run as run_command
    from simulator.study import bench, calibrate, ccbench, regress, validate

    register_command("run", "run an experiment (default: pre14 vs post14 on gold5215-2s)",
                     run_command.add_arguments, run_command.main)
    register_command("plot", "draw the plots of a run's output directory again",
                     run_command.add_plot_arguments, run_command.plot_main)
    register_command("regress", "re-run a baseline's experiment; exit 1 if its curve moved",
                     regress.add_arguments, regress.main)
    register_command("validate", "run the model on published measurements and report errors",
                     validate.add_arguments, validate.main)
    register_command("calibrate", "fit global model parameters to published measurements",
                     calibrate.add_arguments, calibrate.main)
    CONFIG_KINDS.append(ConfigKind(
        name="measurement manifest", recognised_by="a 'datasets' key",
        matches=lambda data: "datasets" in data, check=run_command.check_manifest))
    CONFIG_KINDS.append(ConfigKind(
        name="experiment", recognised_by="experiment keys such as 'algorithms' or 'extends'",
        matches=run_command.is_experiment, check=run_command.check_experiment))
    register_command("ccbench", "single-line latency micro-benchmarks of a machine",
                     ccbench.add_arguments, ccbench.main)
    register_command("bench", "measure the speed of the coherence kernel", bench.add_arguments,
                     bench.main)
    from simulator.analysis import c2c
    register_command("c2c", "per-line report of a run in perf c2c terms", c2c.add_arguments,
                     c2c.main)


_register_simulator_commands()
