"""``snapsim c2c DIR``: the per-line report of a run in perf c2c terms.

Reads ``DIR/lines.csv`` (and ``DIR/curve.csv`` for each point's transactions), keeps the points
chosen by ``--algorithm``, ``--clients`` and ``--idle-clients``, and prints
:func:`simulator.analysis.c2c.c2c_table` as text, one section per point, or as CSV.
"""

from __future__ import annotations

import argparse

from simulator.analysis.c2c import (
    SORT_KEYS,
    c2c_table,
    format_report,
    lines_per_point,
    read_run,
    select_points,
    with_transactions,
)
from simulator.cli.common import EXIT_OK
from simulator.errors import ConfigError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``snapsim c2c``."""
    parser.add_argument("directory", metavar="DIR",
                        help="output directory of snapsim run (reads lines.csv, and curve.csv "
                             "for transactions if present)")
    parser.add_argument("--sort", choices=tuple(SORT_KEYS), default="tot",
                        help="HITM kind to sort on: remote, local or total (default: tot, "
                             "as perf c2c)")
    parser.add_argument("--top", type=int, default=20, metavar="N",
                        help="lines shown per point (default: 20)")
    parser.add_argument("--algorithm", metavar="LIST", help="only these algorithms (a,b,...)")
    parser.add_argument("--clients", metavar="LIST", help="only these active client counts")
    parser.add_argument("--idle-clients", metavar="LIST", help="only these idle client counts")
    parser.add_argument("--csv", action="store_true",
                        help="print the table as CSV (one row per point and line) instead")


def main(args: argparse.Namespace) -> int:
    """Print the per-line report of a run directory."""
    if args.top < 1:
        raise ConfigError("--top", f"must be a positive integer, got {args.top}")
    lines, curve = read_run(args.directory)
    lines = select_points(
        lines,
        algorithm=_names("--algorithm", args.algorithm),
        clients=_integers("--clients", args.clients),
        idle_clients=_integers("--idle-clients", args.idle_clients),
    )
    table = with_transactions(c2c_table(lines, sort=args.sort, top=args.top), curve)
    if args.csv:
        print(table.to_csv(index=False), end="")
        return EXIT_OK
    for line in format_report(table, sort=args.sort, counts=lines_per_point(lines)):
        print(line)
    return EXIT_OK


def _names(option: str, text: str | None) -> list[str] | None:
    if text is None:
        return None
    names = [part.strip() for part in text.split(",") if part.strip()]
    if not names:
        raise ConfigError(option, f"expected a comma-separated list, got {text!r}")
    return names


def _integers(option: str, text: str | None) -> list[int] | None:
    names = _names(option, text)
    if names is None:
        return None
    try:
        return [int(name) for name in names]
    except ValueError:
        raise ConfigError(option, f"expected comma-separated integers, got {text!r}") from None
