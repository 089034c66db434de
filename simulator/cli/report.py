"""``snapsim report DIR``: one self-contained HTML page of a finished run."""

from __future__ import annotations

import argparse
from pathlib import Path

from simulator.cli.common import EXIT_OK, log
from simulator.errors import ConfigError
from simulator.tools.report import report_contents, write_report


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``snapsim report``."""
    parser.add_argument("directory", metavar="DIR", help="output directory of a snapsim run")
    parser.add_argument("--out", metavar="FILE",
                        help="HTML file to write (default: DIR/report.html)")
    parser.add_argument("--top", type=int, default=5, metavar="N",
                        help="hot lines shown per point (default: 5)")


def main(args: argparse.Namespace) -> int:
    """Write the report and print its path."""
    if args.top < 1:
        raise ConfigError("--top", f"must be at least 1, got {args.top}")
    directory = Path(args.directory)
    path = write_report(directory, Path(args.out) if args.out else None, args.top)
    parts = ["TPS", "curve", *report_contents(directory)]
    log(f"wrote {path}: {', '.join(parts[:-1])} and {parts[-1]} in one file")
    print(path)
    return EXIT_OK
