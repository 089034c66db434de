"""``snapsim machine probe``: a machine file for the host this runs on."""

from __future__ import annotations

import argparse
from pathlib import Path

from simulator.cli.common import EXIT_OK, log
from simulator.errors import ConfigError
from simulator.host import clock
from simulator.host.facts import host_facts
from simulator.host.probe import probe_host, require_guest
from simulator.host.wakeup import DEFAULT_ROUND_TRIPS, measure_for_machine_file

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
    parser.add_argument("--measure-wakeup", action="store_true",
                        help="on a virtual machine, measure what waking an idle vCPU costs (a "
                             "pipe ping-pong on one vCPU and across two, about 10-60 s; run it "
                             "on a quiet machine) and write it as scheduler.ipi_exit")
    parser.add_argument("--round-trips", type=int, default=DEFAULT_ROUND_TRIPS,
                        help=f"round trips per run of --measure-wakeup (default "
                             f"{DEFAULT_ROUND_TRIPS})")
    parser.add_argument("--measure-clock", action="store_true",
                        help="measure the clock a CPU runs at (a chain of dependent integer "
                             "operations, x86-64, about 2 s) instead of taking Linux's figure, "
                             "which on a virtual machine is the nominal one")
    parser.add_argument("--root", default="/", help=argparse.SUPPRESS)  # a copied tree (tests)


def main(args: argparse.Namespace) -> int:
    """Write the host's machine file, check that it loads and say where its latencies come from."""
    out = Path(args.out)
    if out.exists() and not args.overwrite:
        raise ConfigError("--out", f"{out} exists (pass --overwrite to replace it)")
    wakeup = None
    if args.measure_wakeup:
        require_guest(host_facts(Path(args.root)))
        wakeup = measure_for_machine_file(args.round_trips, log)
    clock_ghz = clock.measure_for_machine_file(log) if args.measure_clock else None
    like = probe_host(out, like=args.like, root=Path(args.root), name=args.name, wakeup=wakeup,
                      clock_ghz=clock_ghz)
    log(f"wrote {out}: topology, caches and NUMA nodes of this host; latencies from {like} "
        "(edit them where you have measurements)")
    print(out)
    return EXIT_OK
