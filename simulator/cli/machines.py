"""``snapsim machines``: a table of the shipped machines."""

from __future__ import annotations

import argparse

from simulator.analysis.tables import format_table
from simulator.cli.common import EXIT_OK
from simulator.config.machine import MachineConfig
from simulator.config.machine_file import load_machine, shipped_machines

HEADERS = ("NAME", "TOPOLOGY", "PROTOCOL", "L3", "CLOCK", "VIRTUALIZED", "DESCRIPTION")


def main(args: argparse.Namespace) -> int:
    """Print one row per shipped machine."""
    del args
    rows = [machine_row(load_machine(name)) for name in shipped_machines()]
    for line in format_table(HEADERS, rows):
        print(line)
    print("\nTOPOLOGY is sockets x L3 domains per socket x cores per domain x threads per core.")
    return EXIT_OK


def machine_row(config: MachineConfig) -> tuple[str, ...]:
    """The cells of a machine's row, in the order of :data:`HEADERS`."""
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
