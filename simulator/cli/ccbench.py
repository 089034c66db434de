"""``snapsim ccbench [MACHINE]``: the single-line costs a machine file charges, as a table."""

from __future__ import annotations

import argparse

from simulator.cli.common import EXIT_OK
from simulator.config.machine_file import load_machine
from simulator.hardware.codes import AccessClass
from simulator.study.ccbench import measure
from simulator.study.experiment import Experiment


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``snapsim ccbench``."""
    parser.add_argument(
        "machine",
        nargs="?",
        metavar="MACHINE",
        help="shipped machine name or machine file (default: the default experiment's machine)",
    )


def main(args: argparse.Namespace) -> int:
    """Print the micro-benchmark table of a machine."""
    config = (Experiment().machine_config() if args.machine is None
              else load_machine(args.machine))
    rows = measure(config)
    width = max(len(r.scenario) for r in rows)
    print(f"{config.name}: single-line costs charged by the model\n")
    print(f"{'scenario':{width}s}  {'class':17s}  value")
    for row in rows:
        print(f"{row.scenario:{width}s}  {row.access_class:17s}  {row.value:8.1f} {row.unit}")
    print(f"\nclasses: {', '.join(c.name.lower() for c in AccessClass)}")
    return EXIT_OK
