"""``snapsim compare DIR_A DIR_B``: two finished runs side by side, without running anything.

Prints the ratio of ``--key`` (default ``tps``), B over A, at every common point, and the lines
whose transfers per transaction changed most; writes ``compare.csv``, ``compare_lines.csv`` and
``compare.png`` into ``--out`` (default ``./snapsim-compare``). A directory that is not a
finished run, an unknown ``--key`` or no common point is bad input (one line, exit 2).
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from simulator.analysis.compare import largest_changes
from simulator.analysis.tables import format_table
from simulator.cli.common import EXIT_OK, log, writable_directory
from simulator.errors import ConfigError
from simulator.tools.compare import compare_runs, write_comparison

DEFAULT_OUT = "snapsim-compare"
TOP_LINES = 20
"""Rows of the per-line table printed: the largest changes of coherence transfers (a quarter as
many of hot-line waits); the CSV has every class."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``snapsim compare``."""
    parser.add_argument("directory_a", metavar="DIR_A", help="output directory of run A")
    parser.add_argument("directory_b", metavar="DIR_B", help="output directory of run B")
    parser.add_argument("--out", metavar="DIR", help=f"output directory (default: ./{DEFAULT_OUT})")
    parser.add_argument("--key", default="tps", metavar="COLUMN",
                        help="curve column to compare (default: tps)")


def main(args: argparse.Namespace) -> int:
    """Compare, print the two tables, write the files."""
    comparison = compare_runs(Path(args.directory_a), Path(args.directory_b), args.key)
    out = writable_directory(Path(args.out or DEFAULT_OUT), "--out")
    try:
        written = write_comparison(comparison, out)
    except OSError as exc:
        raise ConfigError("--out", f"cannot write into {out}: {exc.strerror or exc}") from None
    print(f"{args.key}: B = {comparison.directory_b}, A = {comparison.directory_a}")
    print("\n".join(format_table(list(comparison.curve.columns),
                                 [[_cell(v) for v in row] for row in
                                  comparison.curve.itertuples(index=False)])))
    lines = comparison.lines
    if not lines.empty:
        transfers, waits = largest_changes(lines, TOP_LINES)
        for rows, what in ((transfers, "coherence transfers per transaction (between caches)"),
                           (waits, "hot-line waits, ns per transaction")):
            if rows.empty:
                continue
            print(f"\n{what} by line and class, the {len(rows)} largest changes of "
                  f"{len(lines)} rows (all classes in compare_lines.csv)")
            print("\n".join(format_table(list(rows.columns), [
                [_cell(v) for v in row] for row in rows.itertuples(index=False)])))
    log(f"wrote {', '.join(str(path) for path in written)}")
    return EXIT_OK


def _cell(value: object) -> str:
    if isinstance(value, float):
        if math.isnan(value):
            return "-"
        return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.4g}"
    return str(value)
