"""``snapsim ccbench [MACHINE]``: the single-line costs a machine file charges, as a table.

With ``--sosp13`` it runs SOSP'13's contended-line rows on a machine that has them
(:func:`simulator.tools.sosp13.sosp13_comparison`: ``westmere-ex-80c``, ``opteron-6172-4s``)
and prints them beside the published figures. With ``--contention`` it runs the contention sweep
instead
(:func:`simulator.tools.contention.contention_sweep`): throughput and latency of CAS loops,
fetch-adds and load + CAS pairs on one line against threads placed in one core, one socket (L3
domain) or across sockets; a table on stdout (``--csv``: the DataFrame as CSV), ``--plot FILE``
draws throughput and latency against threads as a PNG.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from simulator.cli.common import EXIT_OK, log
from simulator.config.machine import MachineConfig
from simulator.config.machine_file import load_machine
from simulator.errors import ConfigError
from simulator.hardware.codes import AccessClass
from simulator.study.experiment import Experiment
from simulator.tools.ccbench import scenarios
from simulator.tools.contention import OPERATIONS, PLACEMENTS, contention_sweep, placement_capacity
from simulator.tools.sosp13 import SOSP13_OPERATIONS, SOSP13_PLACEMENTS, sosp13_comparison

if TYPE_CHECKING:
    from matplotlib.figure import Figure

_SWEEP_OPTIONS = ("ops", "threads", "placements", "duration_us", "warmup_us", "csv", "plot")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``snapsim ccbench``."""
    parser.add_argument(
        "machine",
        nargs="?",
        metavar="MACHINE",
        help="shipped machine name or machine file (default: the default experiment's machine)",
    )
    parser.add_argument("--machine-set", action="append", default=[], metavar="KEY=VALUE",
                        help="override a machine-file key (repeatable), e.g. "
                             "line_service.rule=home")
    parser.add_argument("--contention", action="store_true",
                        help="sweep atomics on one line against threads and placements instead")
    parser.add_argument("--ops", metavar="LIST",
                        help=f"operations of the sweep (default: {','.join(OPERATIONS)}; also "
                             f"SOSP'13's {','.join(SOSP13_OPERATIONS)})")
    parser.add_argument("--threads", metavar="LIST",
                        help="thread counts (default: 1,2,4,... up to what each placement "
                             "holds, and that count); a count a placement cannot hold is "
                             "skipped for it")
    parser.add_argument("--placements", metavar="LIST",
                        help=f"thread placements (default: {','.join(PLACEMENTS)}): core = SMT "
                             "threads of one core, socket = one L3 domain (socket; CCX on AMD), "
                             "cross = round-robin over sockets (L3 domains on one socket); "
                             "also fill = one thread per core, socket after socket (SOSP'13)")
    parser.add_argument("--duration-us", type=float, metavar="US",
                        help="measured window per point in simulated µs (default: 100)")
    parser.add_argument("--warmup-us", type=float, metavar="US",
                        help="simulated µs before the window (default: 10)")
    parser.add_argument("--sosp13", action="store_true",
                        help="run SOSP'13's rows (naive ticket lock, FAI with a pause, store on "
                             "a shared line, MCS) beside the published figures (machines "
                             "westmere-ex-80c, opteron-6172-4s)")
    parser.add_argument("--seeds", type=int, metavar="N",
                        help="with --sosp13: seeds (start orders) per loop row (default: 3)")
    parser.add_argument("--csv", action="store_true",
                        help="print the sweep (or the --sosp13 rows) as CSV")
    parser.add_argument("--plot", metavar="FILE", type=Path,
                        help="draw throughput and latency against threads into FILE (PNG)")


def main(args: argparse.Namespace) -> int:
    """Print the micro-benchmark table of a machine, or its contention sweep."""
    given = [f"--{name.replace('_', '-')}" for name in _SWEEP_OPTIONS
             if getattr(args, name) not in (None, False) and not (args.sosp13 and name == "csv")]
    if given and not args.contention:
        raise ConfigError(given[0], "only applies with --contention")
    if args.sosp13 and args.contention:
        raise ConfigError("--sosp13", "does not combine with --contention")
    if args.seeds is not None and not args.sosp13:
        raise ConfigError("--seeds", "only applies with --sosp13")
    machine = Experiment().machine if args.machine is None else args.machine
    config = (Experiment().machine_config() if args.machine is None and not args.machine_set
              else load_machine(machine if isinstance(machine, str) else machine.name,
                                args.machine_set))
    if args.contention:
        return _contention(config, args)
    if args.sosp13:
        return _sosp13(config, args)
    rows = scenarios(config)
    width = max(len(r.scenario) for r in rows)
    print(f"{config.name}: single-line costs charged by the model\n")
    print(f"{'scenario':{width}s}  {'class':17s}  value")
    for row in rows:
        print(f"{row.scenario:{width}s}  {row.access_class:17s}  {row.value:8.1f} {row.unit}")
    print(f"\nclasses: {', '.join(c.name.lower() for c in AccessClass)}")
    return EXIT_OK


def _contention(config: MachineConfig, args: argparse.Namespace) -> int:
    operations = _names("--ops", args.ops, (*OPERATIONS, *SOSP13_OPERATIONS), OPERATIONS)
    placements = _names("--placements", args.placements, (*PLACEMENTS, *SOSP13_PLACEMENTS),
                        PLACEMENTS)
    threads = None if args.threads is None else _integers("--threads", args.threads)
    if args.plot is not None and not args.plot.parent.is_dir():
        raise ConfigError("--plot", f"directory {args.plot.parent} does not exist")
    duration_us = 100.0 if args.duration_us is None else args.duration_us
    warmup_us = 10.0 if args.warmup_us is None else args.warmup_us
    if not duration_us > 0:
        raise ConfigError("--duration-us", f"must be positive, got {args.duration_us}")
    if not warmup_us >= 0:
        raise ConfigError("--warmup-us", f"must be non-negative, got {args.warmup_us}")
    table = contention_sweep(config, operations, threads, placements, duration_us, warmup_us)
    for placement in placements:
        capacity = placement_capacity(config, placement)
        if capacity == 0:
            log(f"ccbench: placement {placement} does not apply to {config.name} (one L3 "
                "domain)")
        elif threads is not None and max(threads) > capacity:
            log(f"ccbench: placement {placement} holds at most {capacity} threads on "
                f"{config.name}; larger counts skipped")
    if args.csv:
        print(table.to_csv(index=False), end="")
    else:
        _print_table(config, table)
    if args.plot is not None:
        _plot(table, args.plot, config.name)
        log(f"ccbench: wrote {args.plot}")
    return EXIT_OK


def _sosp13(config: MachineConfig, args: argparse.Namespace) -> int:
    seeds = 3 if args.seeds is None else args.seeds
    table = sosp13_comparison(config, seeds)
    if args.csv:
        print(table.to_csv(index=False), end="")
        return EXIT_OK
    print(f"{config.name}: SOSP'13 rows, line service rule {config.line_service.rule}, "
          f"{seeds} seed(s) per loop; ratio = model / published\n")
    print(f"{'operation':12s}  {'where':12s}  {'threads':>7s}  {'model':>9s}  "
          f"{'published':>9s}  {'ratio':>5s}  unit")
    for row in table.to_dict("records"):
        print(f"{row['operation']:12s}  {row['where']:12s}  {int(row['threads']):7d}  "
              f"{float(row['model']):9.4g}  {float(row['published']):9.4g}  "
              f"{float(row['ratio']):5.2f}  {row['unit']}")
    return EXIT_OK


def _print_table(config: MachineConfig, table: pd.DataFrame) -> None:
    print(f"{config.name}: atomics on one line, {table['duration_us'].iloc[0]:g} µs simulated "
          f"per point after {table['warmup_us'].iloc[0]:g} µs of warm-up, line service rule "
          f"{config.line_service.rule}\n")
    print(f"{'operation':17s}  {'placement':9s}  {'threads':>7s}  {'Mops/s':>8s}  "
          f"{'latency ns':>10s}  {'wait ns':>9s}  {'CAS fail':>8s}")
    for row in table.to_dict("records"):
        cas = row["operation"] in ("cas-loop", "load-cas", "handoff-load-cas")
        failure = f"{float(row['failure_rate']):8.1%}" if cas else ""
        print(f"{row['operation']:17s}  {row['placement']:9s}  {int(row['threads']):7d}  "
              f"{float(row['ops_per_s']) / 1e6:8.2f}  {float(row['latency_ns']):10.1f}  "
              f"{float(row['wait_ns']):9.1f}  {failure:>8s}")


def _plot(table: pd.DataFrame, path: Path, machine: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    from simulator.analysis.plotting import plot_contention
    from simulator.study.outputs import save_png

    def draw(figure: Figure) -> None:
        for index, metric in enumerate(("ops_per_s", "latency_ns"), start=1):
            ax = plot_contention(table, metric, ax=figure.add_subplot(1, 2, index))
            ax.set_title(f"{machine}: {'throughput' if index == 1 else 'latency'}")

    save_png(path, draw, size=(13, 5))


def _names(option: str, text: str | None, known: tuple[str, ...],
           default: tuple[str, ...]) -> list[str]:
    if text is None:
        return list(default)
    names = [part.strip() for part in text.split(",") if part.strip()]
    unknown = [name for name in names if name not in known]
    if unknown or not names:
        raise ConfigError(option, f"expected a comma-separated list of {', '.join(known)}, "
                          f"got {text!r}")
    return names


def _integers(option: str, text: str) -> list[int]:
    try:
        values = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise ConfigError(option, f"expected comma-separated integers, got {text!r}") from None
    if not values:
        raise ConfigError(option, f"expected comma-separated integers, got {text!r}")
    return values
