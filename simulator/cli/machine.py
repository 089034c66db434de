"""``snapsim machine probe``: a machine file for the host this runs on."""

from __future__ import annotations

import argparse
from pathlib import Path

from simulator.cli.common import EXIT_OK, log
from simulator.config.probe import probe_host
from simulator.errors import ConfigError

ACTIONS = ("probe",)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``snapsim machine``."""
    parser.add_argument("action", choices=ACTIONS,
                        help="probe: write a machine file from this host's topology, caches and "
                             "NUMA nodes (latencies from the closest shipped machine)")
    parser.add_argument("--out", default="host.yaml", metavar="FILE",
                        help="machine file to write (default: host.yaml)")
    parser.add_argument("--like", metavar="MACHINE",
                        help="take the latencies from this shipped machine (default: the "
                             "closest by vendor, distances and core count)")
    parser.add_argument("--name", default="host", help="the machine's name in the file")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing FILE")
    parser.add_argument("--root", default="/", help=argparse.SUPPRESS)  # a copied tree (tests)


def main(args: argparse.Namespace) -> int:
    """Write the host's machine file, check that it loads and say where its latencies come from."""
    out = Path(args.out)
    if out.exists() and not args.overwrite:
        raise ConfigError("--out", f"{out} exists (pass --overwrite to replace it)")
    like = probe_host(out, like=args.like, root=Path(args.root), name=args.name)
    log(f"wrote {out}: topology, caches and NUMA nodes of this host; latencies from {like} "
        "(edit them where you have measurements)")
    print(out)
    return EXIT_OK
