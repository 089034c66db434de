"""``snapsim bench``: measured speed of the coherence kernel (figures, never timed tests).

Scenarios, all on the shipped ``gold5215-2s`` machine with 5000 tracked lines scanned in one call:

* ``kernel_hits_lines_per_s``: one thread rescans the lines; every access hits its private caches
  (5000 lines do not fit the 32 KiB L1, so these are L2 hits that refill the L1).
* ``kernel_mixed_lines_per_s``: the miss-heavy case of ``reference/performance-notes.md``: the
  scanning thread moves to the next core for every scan and other cores rewrite 5 % of the lines
  between scans, so most accesses are transfers from other caches. Only the scans are timed.
* ``reference_lines_per_s`` / ``reference_mixed_lines_per_s``: the plain-Python reference on the
  same two scenarios.

Each figure is the median of several repetitions, in line accesses per wall-clock second.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable

import numpy as np

from simulator.coherence.codes import Op
from simulator.errors import ConfigError
from simulator.machine import Backend, Machine, new_counters
from simulator.machine_loader import load_machine

N_LINES = 5000
WRITE_FRACTION = 0.05


def _hits_rate(backend: Backend, scans: int) -> float:
    machine = _machine(backend)
    lines = np.arange(N_LINES, dtype=np.int64)
    out = new_counters()
    machine.scan(0, lines, out=out)  # warm: first touch from DRAM
    start = time.perf_counter()
    for _ in range(scans):
        machine.scan(0, lines, out=out)
    return scans * N_LINES / (time.perf_counter() - start)


def _mixed_rate(backend: Backend, scans: int) -> float:
    machine = _machine(backend)
    threads_per_core = machine.config.topology.threads_per_core
    n_cores = machine.topology.n_cores
    lines = np.arange(N_LINES, dtype=np.int64)
    rng = np.random.default_rng(0)
    out = new_counters()
    n_writes = int(N_LINES * WRITE_FRACTION)
    elapsed = 0.0
    for scan in range(scans):
        core = scan % n_cores
        start = time.perf_counter()
        machine.scan(core * threads_per_core, lines, out=out)
        elapsed += time.perf_counter() - start
        for line in rng.choice(N_LINES, n_writes, replace=False):
            writer = (core + 1 + int(line) % (n_cores - 1)) % n_cores
            machine.access(writer * threads_per_core, int(line), Op.STORE, out=out)
    return scans * N_LINES / elapsed


def _machine(backend: Backend) -> Machine:
    return Machine(load_machine("gold5215-2s"), np.arange(N_LINES) * 64, backend=backend)


def _median(measure: Callable[[], float], repeats: int) -> float:
    return statistics.median(measure() for _ in range(repeats))


def run_benchmarks(repeats: int = 5) -> dict[str, float]:
    """Measure every figure (median of ``repeats``) and return them by name."""
    _hits_rate("compiled", 1)  # compile (or load the cache) outside the measurement
    return {
        "kernel_hits_lines_per_s": _median(lambda: _hits_rate("compiled", 200), repeats),
        "kernel_mixed_lines_per_s": _median(lambda: _mixed_rate("compiled", 80), repeats),
        "reference_lines_per_s": _median(lambda: _hits_rate("reference", 4), repeats),
        "reference_mixed_lines_per_s": _median(lambda: _mixed_rate("reference", 4), repeats),
    }


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``snapsim bench``."""
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--repeats", type=int, default=5, metavar="N",
                        help="repetitions per figure; the median is reported (default 5)")


def main(args: argparse.Namespace) -> int:
    """Run the benchmarks and print the figures."""
    if args.repeats < 1:
        raise ConfigError("--repeats", f"must be at least 1, got {args.repeats}")
    figures = run_benchmarks(args.repeats)
    if args.json:
        print(json.dumps(figures, indent=2))
    else:
        for name, value in figures.items():
            print(f"{name:32s} {value / 1e6:10.2f} M")
    return 0
