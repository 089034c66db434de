"""Measured speed of snapsim, the library of ``snapsim bench`` (figures never asserted by tests).

Every figure is the median of ``--repeats`` runs (default 3). Wall-clock time is measured, so a
machine shared with other work gives slower figures: the JSON output's ``conditions`` block
records the load average before and after and the share of a CPU the measured runs got.

Every point and machine comes from the experiment file ``bench``
(``configs/experiments/bench.yaml``; the "first algorithm" below is the first it lists), so this
module names no workload model's vocabulary; the figures carry the algorithm names and counts of
that file.

Kernel figures (line accesses per wall-clock second, one call scanning 5000 tracked lines of the
bench experiment's machine; group ``kernel``):

* ``kernel_hits_lines_per_s``: one thread rescans the lines; every access hits its private caches
  (5000 lines do not fit the 32 KiB L1, so these are L2 hits that refill the L1).
* ``kernel_mixed_lines_per_s``: a miss-heavy case, as when backends on many cores scan a shared
  array that others keep writing: the scanning thread moves to the next core for every scan and
  other cores rewrite 5 % of the lines between scans, so most accesses are transfers from other
  caches. Only the scans are timed.
* ``reference_lines_per_s`` / ``reference_mixed_lines_per_s``: the plain-Python reference on the
  same two scenarios.

Floors (group ``kernel``): what one transaction's fixed parts cost, whatever the model's own
Python does around them.

* ``simpy_event_us``: wall microseconds per event of a bare SimPy loop: 96 processes that each
  yield timeouts of random length (one event per timeout and resumption).
* ``sequence_call_us``: microseconds per call of the memory-operation kernel as a process
  issues it (:meth:`~simulator.hardware.machine.Machine.sequence_unchecked`) on two operations
  that hit the L1: almost all of it is Numba's argument dispatch.
* ``pollute_call_us``: microseconds per pass of a transaction-sized footprint (64 KiB through a
  core's L1 and L2, 16 KiB through its L3) on the bench experiment's machine, the core changing
  every call.

End-to-end figures: whole points of the workload model, run through the experiment API
(:func:`simulator.run`, the workload model found by :mod:`simulator.study.workload_model`), with
the bench experiment's workload and options (``--set KEY=VALUE`` overrides them, e.g. to price
a mechanism that is off by default), no warm-up (every simulated nanosecond is measured) and
``--duration-ms`` of simulated time (default: the experiment's, 10 ms). A point's wall time is
that of the whole :func:`simulator.run` call: loading the machine, building shared memory and the
coherence state, the simulation and the result tables; imports and the kernel's compilation are
left out (a tiny point of each machine runs first). The
``cpu_slowdown_*`` figures are the same slowdowns in CPU seconds of the measured process, which
a busy machine inflates less than wall time.

* ``slowdown_<algorithm>_n<idle>`` (group ``e2e``, one per algorithm of the experiment): wall
  seconds per simulated second of the experiment's point (48 active clients and 10000 idle
  connections).
* ``line_accesses_per_s`` / ``events_per_s`` (group ``e2e``): tracked-line accesses (loads,
  stores and RMWs of the per-line table, scans included) and SimPy events processed, per wall
  second, in the first algorithm's runs above.
* ``slowdown_<first algorithm>_n15000_128t`` and ``peak_rss_mb`` (group ``n15000``): 15000
  active clients on ``westmere-ex-8s`` (64 cores, 128 threads), simulated for
  ``--n15000-duration-ms`` (default 40: with 30000 tasks on 128 threads and the CFS run queue,
  every backend runs its first statement before any client sees an answer, so the first
  transactions end together some tens of milliseconds after the start, and the rate is steady
  from then on), each run in a fresh Python process; ``peak_rss_mb`` is that process's peak
  resident set (``ru_maxrss``: interpreter, libraries and the point).
* ``sweep_speedup_2_workers`` (group ``sweep``): wall time of a sweep (the experiment's
  algorithms, 48 clients, 0/100/1000/2500/5000/10000 idle connections, ``--sweep-duration-ms``,
  default 5: the measured window of ``snapsim validate``'s points; much shorter points let the
  fixed costs, the pool's start-up and points of unequal length, dominate the 2-worker run)
  with ``jobs=1`` over the same sweep with ``jobs=2`` (forked local workers, pool start-up
  included). ``conditions.sweep_cpus_2_workers`` is the CPU time the two workers got per wall
  second (2.0 on an idle machine): the speedup cannot exceed it.
* ``scaling_exponent_<first algorithm>`` (group ``scaling``): least-squares slope of log(wall
  time per point) against log(connections) for the first algorithm, 48 active clients, 100, 300,
  1000, 3000 and 10000 connections (median wall per point, then the fit).
* ``validate_wall_s`` (group ``validate``, only with ``--full``: it takes minutes): wall time of
  ``snapsim validate`` with the shipped manifest, default jobs, in a fresh process.
* ``default_experiment_wall_s`` (group ``default``, only with ``--full``): wall time of
  ``snapsim run`` (the default experiment, 24 points, default jobs, with its tables and plots)
  in a fresh process from a warm cache (the kernel compiled), as a newcomer's second run.

``--scale F`` multiplies every client and connection count (at least 1) and ``--duration-ms``
shortens the points: for smoke tests only, the figures then no longer measure the configurations
their names give.

A group that fails (a point that completes no transaction, say) is reported on stderr and in
``conditions.failed_groups``; the other groups are still measured and printed, and the exit code
is 1.
"""

from __future__ import annotations

import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, replace

import numpy as np
import simpy

from simulator.config.machine import MachineConfig
from simulator.hardware.codes import Op
from simulator.hardware.machine import Implementation, Machine, new_counters
from simulator.hardware.warmup import warm_kernel
from simulator.runtime.engine import ProcessGenerator, SimEnvironment
from simulator.study.experiment import Experiment
from simulator.study.experiment_file import (
    apply_overrides,
    experiment_from_document,
    load_document,
)
from simulator.study.runner import run

N_LINES = 5000
WRITE_FRACTION = 0.05
GROUPS = ("kernel", "e2e", "n15000", "sweep", "scaling", "validate", "default")
DEFAULT_GROUPS = tuple(g for g in GROUPS if g not in ("validate", "default"))
EXPERIMENT = "bench"
"""The shipped experiment file of the end-to-end points."""
MACHINE_128T = "westmere-ex-8s"
ACTIVE_128T = 15000
SWEEP_IDLE = (0, 100, 1000, 2500, 5000, 10000)
SCALING_CONNECTIONS = (100, 300, 1000, 3000, 10000)
N15000_DURATION_MS = 40.0
SWEEP_DURATION_MS = 5.0
SIMPY_PROCESSES = 96
SIMPY_EVENTS = 200_000
CALLS = 20_000
POLLUTE_PRIVATE_BYTES = 64 * 1024
"""Bytes of a transaction-sized footprint passed through a core's L1 and L2."""
POLLUTE_L3_BYTES = 16 * 1024
"""Bytes of the same footprint passed through the core's L3."""


# --------------------------------------------------------------------------------------------
# Kernel figures
# --------------------------------------------------------------------------------------------


def _hits_rate(config: MachineConfig, implementation: Implementation, scans: int) -> float:
    machine = _machine(config, implementation)
    lines = np.arange(N_LINES, dtype=np.int64)
    out = new_counters()
    machine.scan(0, lines, out=out)  # warm: first touch from DRAM
    start = time.perf_counter()
    for _ in range(scans):
        machine.scan(0, lines, out=out)
    return scans * N_LINES / (time.perf_counter() - start)


def _mixed_rate(config: MachineConfig, implementation: Implementation, scans: int) -> float:
    machine = _machine(config, implementation)
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


def _simpy_event_us() -> float:
    env = simpy.Environment()
    rng = np.random.default_rng(0)
    delays = rng.random(SIMPY_EVENTS) * 100.0

    def process(first: int) -> ProcessGenerator:
        index = first
        while True:
            yield env.timeout(float(delays[index % SIMPY_EVENTS]))
            index += SIMPY_PROCESSES

    for first in range(SIMPY_PROCESSES):
        env.process(process(first))
    start = time.perf_counter()
    for _ in range(SIMPY_EVENTS):
        env.step()
    return (time.perf_counter() - start) / SIMPY_EVENTS * 1e6


def _sequence_call_us(config: MachineConfig) -> float:
    machine = _machine(config, "compiled")
    lines = np.array([0, 1], dtype=np.int64)
    ops = np.array([int(Op.LOAD), int(Op.STORE)], dtype=np.int64)
    masks = np.array([-1, -1], dtype=np.int64)
    out = new_counters()
    sequence = machine.sequence_unchecked()  # what a process calls for its memory operations
    sequence(0, lines, ops, masks, 0.0, out)  # the lines are now in L1
    start = time.perf_counter()
    for _ in range(CALLS):
        sequence(0, lines, ops, masks, 0.0, out)
    return (time.perf_counter() - start) / CALLS * 1e6


def _pollute_call_us(config: MachineConfig) -> float:
    machine = _machine(config, "compiled")
    n_cores = machine.topology.n_cores
    calls = CALLS // 10
    machine.pollute(0, POLLUTE_PRIVATE_BYTES, POLLUTE_L3_BYTES)
    start = time.perf_counter()
    for call in range(calls):
        machine.pollute(call % n_cores, POLLUTE_PRIVATE_BYTES, POLLUTE_L3_BYTES)
    return (time.perf_counter() - start) / calls * 1e6


def _machine(config: MachineConfig, implementation: Implementation) -> Machine:
    return Machine(config, np.arange(N_LINES) * 64, implementation=implementation)


def warm_model(base: Experiment) -> None:
    """Load the workload model and compile every kernel it calls with a tiny point per machine."""
    warm_kernel(base.machine_config())
    for machine in (base.machine, MACHINE_128T):
        run(point(base, machine, base.algorithms[0], 2, 2, 0.05))


def _median(measure: Callable[[], float], repeats: int) -> float:
    return statistics.median(measure() for _ in range(repeats))


def kernel_figures(repeats: int, config: MachineConfig) -> dict[str, float]:
    """The kernel figures and the floors on a machine (medians of ``repeats``)."""
    warm_kernel(config)
    return {
        "kernel_hits_lines_per_s": _median(lambda: _hits_rate(config, "compiled", 200), repeats),
        "kernel_mixed_lines_per_s": _median(lambda: _mixed_rate(config, "compiled", 80),
                                            repeats),
        "reference_lines_per_s": _median(lambda: _hits_rate(config, "reference", 4), repeats),
        "reference_mixed_lines_per_s": _median(lambda: _mixed_rate(config, "reference", 4),
                                               repeats),
        "simpy_event_us": _median(_simpy_event_us, repeats),
        "sequence_call_us": _median(lambda: _sequence_call_us(config), repeats),
        "pollute_call_us": _median(lambda: _pollute_call_us(config), repeats),
    }


# --------------------------------------------------------------------------------------------
# End-to-end figures
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Settings:
    """The experiment, sizes and durations of the end-to-end figures."""

    repeats: int = 3
    experiment: str = EXPERIMENT
    """The experiment file (a shipped name or a path) of the end-to-end points."""
    duration_ms: float | None = None
    """Simulated time of the experiment's points (``None``: the experiment's ``duration_ms``)."""
    n15000_duration_ms: float = N15000_DURATION_MS
    sweep_duration_ms: float = SWEEP_DURATION_MS
    scale: float = 1.0
    overrides: tuple[str, ...] = ()
    """``--set KEY=VALUE`` overrides of the experiment (its options, e.g. a mechanism's switch)."""

    def base(self) -> Experiment:
        """The experiment of the end-to-end points, with the overrides."""
        return bench_experiment(self.experiment, self.overrides)

    def count(self, n: int) -> int:
        """A client or connection count under ``scale`` (at least 1)."""
        return max(1, round(n * self.scale))

    def duration(self, experiment: Experiment) -> float:
        """Simulated milliseconds of the experiment's points."""
        return float(experiment.duration_ms if self.duration_ms is None else self.duration_ms)


@dataclass(frozen=True, slots=True)
class PointRun:
    """One measured point: its wall time and what it processed."""

    wall_s: float
    cpu_s: float
    simulated_s: float
    events: int
    line_accesses: int

    @property
    def slowdown(self) -> float:
        """Wall seconds per simulated second."""
        return self.wall_s / self.simulated_s

    @property
    def cpu_slowdown(self) -> float:
        """CPU seconds per simulated second."""
        return self.cpu_s / self.simulated_s


def bench_experiment(name_or_path: str = EXPERIMENT, overrides: Sequence[str] = ()) -> Experiment:
    """The experiment of the end-to-end points (a shipped experiment name or a file).

    ``overrides``: ``--set KEY=VALUE`` items applied to its document.
    """
    document, source = load_document(name_or_path)
    return experiment_from_document(apply_overrides(document, overrides), source,
                                    default_name=EXPERIMENT)


def point(base: Experiment, machine: str | MachineConfig, algorithm: str, clients: int,
          idle: int, duration_ms: float) -> Experiment:
    """One point of ``base``'s workload with the given machine, algorithm and counts."""
    return replace(base, machine=machine, algorithms=(algorithm,), clients=(clients,),
                   idle_clients=(idle,), duration_ms=duration_ms)


def run_point(experiment: Experiment) -> PointRun:
    """Run a one-point experiment in this process through :func:`simulator.run`; measure it."""
    duration_ms = experiment.duration_ms
    events_before = SimEnvironment.events_total
    wall, cpu = time.perf_counter(), time.process_time()
    result = run(experiment)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    if not result.failures.empty:
        raise RuntimeError(f"benchmark point failed: {result.failures['error'].iloc[0]}")
    accesses = int(result.lines[["loads", "stores", "rmws"]].to_numpy().sum())
    return PointRun(wall_s=wall, cpu_s=cpu, simulated_s=duration_ms * 1e-3,
                    events=SimEnvironment.events_total - events_before, line_accesses=accesses)


_CHILD = """
import json, resource, sys
from simulator.tools.bench import bench_experiment, point, run_point, warm_model
experiment_file, overrides, *arguments = json.loads(sys.argv[1])
base = bench_experiment(experiment_file, overrides)
warm_model(base)
run = run_point(point(base, *arguments))
print(json.dumps({"wall_s": run.wall_s, "cpu_s": run.cpu_s, "simulated_s": run.simulated_s,
                  "events": run.events, "line_accesses": run.line_accesses,
                  "maxrss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}))
"""


def run_point_in_fresh_process(experiment_file: str, machine: str, algorithm: str, clients: int,
                               idle: int, duration_ms: float,
                               overrides: Sequence[str] = ()) -> tuple[PointRun, float]:
    """:func:`run_point` of :func:`point` of an experiment file, in a new Python process.

    ``overrides``: ``--set`` items of the experiment. Also returns that process's peak RSS (MiB).
    """
    argument = json.dumps([experiment_file, list(overrides), machine, algorithm, clients, idle,
                           duration_ms])
    done = subprocess.run([sys.executable, "-c", _CHILD, argument], capture_output=True,
                          text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"benchmark process failed: {done.stderr.strip()[-2000:]}")
    data = json.loads(done.stdout.strip().splitlines()[-1])
    rss_mib = float(data.pop("maxrss_kib")) / 1024.0
    return PointRun(**data), rss_mib


def e2e_figures(settings: Settings, report: Callable[[str, float, float], None]
                ) -> dict[str, float]:
    """Slowdowns of the experiment's points and the first algorithm's access and event rates."""
    base = settings.base()
    active, idle = base.clients[0], base.idle_clients[0]
    figures: dict[str, float] = {}
    for algorithm in base.algorithms:
        start = time.perf_counter()
        experiment = point(base, base.machine, algorithm, settings.count(active),
                           settings.count(idle), settings.duration(base))
        runs = [run_point(experiment) for _ in range(settings.repeats)]
        name = f"slowdown_{algorithm}_n{idle}"
        figures[name] = statistics.median(r.slowdown for r in runs)
        report(name, figures[name], time.perf_counter() - start)
        figures[f"cpu_{name}"] = statistics.median(r.cpu_slowdown for r in runs)
        report(f"cpu_{name}", figures[f"cpu_{name}"], 0.0)
        if algorithm == base.algorithms[0]:
            figures["line_accesses_per_s"] = statistics.median(
                r.line_accesses / r.wall_s for r in runs)
            report("line_accesses_per_s", figures["line_accesses_per_s"], 0.0)
            figures["events_per_s"] = statistics.median(r.events / r.wall_s for r in runs)
            report("events_per_s", figures["events_per_s"], 0.0)
    return figures


def n15000_figures(settings: Settings, report: Callable[[str, float, float], None]
                   ) -> dict[str, float]:
    """Slowdown and peak RSS of 15000 active clients on 128 threads (fresh processes)."""
    algorithm = settings.base().algorithms[0]
    start = time.perf_counter()
    runs = [run_point_in_fresh_process(settings.experiment, MACHINE_128T, algorithm,
                                       settings.count(ACTIVE_128T), 0,
                                       settings.n15000_duration_ms, settings.overrides)
            for _ in range(settings.repeats)]
    elapsed = time.perf_counter() - start
    name = f"slowdown_{algorithm}_n{ACTIVE_128T}_128t"
    figures = {name: statistics.median(r.slowdown for r, _ in runs),
               f"cpu_{name}": statistics.median(r.cpu_slowdown for r, _ in runs),
               "peak_rss_mb": statistics.median(rss for _, rss in runs)}
    for figure in figures:
        report(figure, figures[figure], elapsed if figure.startswith("slowdown") else 0.0)
    return figures


def sweep_experiment(settings: Settings) -> Experiment:
    """The sweep of ``sweep_speedup_2_workers``.

    The experiment's algorithms and active clients with :data:`SWEEP_IDLE` idle connections.
    """
    base = settings.base()
    idle = tuple(dict.fromkeys(settings.count(i) if i else 0 for i in SWEEP_IDLE))
    return replace(base, name="bench-sweep", clients=(settings.count(base.clients[0]),),
                   idle_clients=idle, duration_ms=settings.sweep_duration_ms)


def sweep_figures(settings: Settings, report: Callable[[str, float, float], None]
                  ) -> dict[str, float]:
    """Wall time of the sweep with one worker over the same with two."""
    experiment = sweep_experiment(settings)
    start = time.perf_counter()
    ratios, cpus = [], []
    for _ in range(settings.repeats):
        walls = []
        for jobs in (1, 2):
            began, cpu = time.perf_counter(), _cpu_seconds()
            result = run(experiment, jobs=jobs)
            walls.append(time.perf_counter() - began)
            if not result.failures.empty:
                raise RuntimeError(f"sweep point failed: {result.failures['error'].iloc[0]}")
        cpus.append((_cpu_seconds() - cpu) / walls[1])
        ratios.append(walls[0] / walls[1])
    figures = {"sweep_speedup_2_workers": statistics.median(ratios),
               "sweep_cpus_2_workers": statistics.median(cpus)}
    report("sweep_speedup_2_workers", figures["sweep_speedup_2_workers"],
           time.perf_counter() - start)
    return figures


def scaling_exponent(connections: Sequence[int], walls: Sequence[float]) -> float:
    """Least-squares slope of log(wall) against log(connections)."""
    if len(connections) < 2 or len(set(connections)) < 2:
        raise ValueError("the fit needs at least two distinct connection counts")
    slope, _ = np.polyfit(np.log(np.asarray(connections, dtype=np.float64)),
                          np.log(np.asarray(walls, dtype=np.float64)), 1)
    return float(slope)


def scaling_figures(settings: Settings, report: Callable[[str, float, float], None]
                    ) -> dict[str, float]:
    """Exponent of wall time per point against connections, first algorithm, 48 active clients."""
    base = settings.base()
    algorithm = base.algorithms[0]
    start = time.perf_counter()
    active = settings.count(base.clients[0])
    connections = sorted({max(settings.count(n), active + 1) for n in SCALING_CONNECTIONS})
    walls = [statistics.median(
                 run_point(point(base, base.machine, algorithm, active, n - active,
                                 settings.duration(base))).wall_s
                 for _ in range(settings.repeats))
             for n in connections]
    name = f"scaling_exponent_{algorithm}"
    figures = {name: scaling_exponent(connections, walls)}
    report(name, figures[name], time.perf_counter() - start)
    return figures


def _command_wall_s(arguments: Sequence[str], accepted: Collection[int], repeats: int) -> float:
    """Median wall time of ``python -m simulator ARGUMENTS --out TMP --no-progress``.

    Each run is a fresh process with its own temporary output directory.

    Raises:
        RuntimeError: a run exited with a code not in ``accepted``.
    """
    walls = []
    for _ in range(repeats):
        with tempfile.TemporaryDirectory(prefix="snapsim-bench-") as out:
            began = time.perf_counter()
            done = subprocess.run([sys.executable, "-m", "simulator", *arguments, "--out", out,
                                   "--no-progress"], capture_output=True, text=True, check=False)
            walls.append(time.perf_counter() - began)
        if done.returncode not in accepted:
            raise RuntimeError(f"snapsim {arguments[-1]} failed: {done.stderr.strip()[-2000:]}")
    return statistics.median(walls)


def validate_figures(settings: Settings, report: Callable[[str, float, float], None]
                     ) -> dict[str, float]:
    """Wall time of ``snapsim validate`` with the shipped manifest (fresh processes)."""
    start = time.perf_counter()
    # exit code 1: a series is outside its thresholds, still timed
    figures = {"validate_wall_s": _command_wall_s(["validate"], (0, 1), settings.repeats)}
    report("validate_wall_s", figures["validate_wall_s"], time.perf_counter() - start)
    return figures


def default_experiment_figures(settings: Settings, report: Callable[[str, float, float], None]
                               ) -> dict[str, float]:
    """Wall time of ``snapsim run`` with the default experiment (fresh processes)."""
    start = time.perf_counter()
    figures = {"default_experiment_wall_s": _command_wall_s(["-q", "run"], (0,),
                                                             settings.repeats)}
    report("default_experiment_wall_s", figures["default_experiment_wall_s"],
           time.perf_counter() - start)
    return figures


# --------------------------------------------------------------------------------------------
# Driver
# --------------------------------------------------------------------------------------------


def _report(name: str, value: float, elapsed: float) -> None:
    took = f" ({elapsed:.1f} s)" if elapsed else ""
    print(f"bench: {name} = {value:.4g}{took}", file=sys.stderr, flush=True)


def _cpu_seconds() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def run_benchmarks(groups: Sequence[str] = DEFAULT_GROUPS, settings: Settings | None = None,
                   report: Callable[[str, float, float], None] = _report
                   ) -> dict[str, object]:
    """Measure the figures of ``groups``; return them by name plus a ``conditions`` block."""
    settings = settings or Settings()
    base = settings.base()
    load_before = os.getloadavg()[0]
    started, cpu_started = time.perf_counter(), _cpu_seconds()
    figures: dict[str, object] = {}
    if "kernel" in groups:
        kernel = kernel_figures(settings.repeats, base.machine_config())
        for name, value in kernel.items():
            report(name, value, 0.0)
        figures.update(kernel)
    measure: dict[str, Callable[[Settings, Callable[[str, float, float], None]],
                                dict[str, float]]] = {
        "e2e": e2e_figures, "n15000": n15000_figures, "sweep": sweep_figures,
        "scaling": scaling_figures, "validate": validate_figures,
        "default": default_experiment_figures}
    if any(group in groups for group in measure):
        warm_model(base)
    conditions: dict[str, object] = {}
    failures: dict[str, str] = {}
    for group, function in measure.items():
        if group in groups:
            try:
                figures.update(function(settings, report))
            except Exception as exc:  # one failing group must not lose the others' figures
                failures[group] = f"{type(exc).__name__}: {exc}".splitlines()[-1][:500]
                print(f"bench: group {group} failed: {failures[group]}", file=sys.stderr,
                      flush=True)
    if failures:
        conditions["failed_groups"] = failures
    if "sweep_cpus_2_workers" in figures:  # a condition of the sweep figure, not a figure
        cpus = figures.pop("sweep_cpus_2_workers")
        assert isinstance(cpus, float)
        conditions["sweep_cpus_2_workers"] = round(cpus, 3)
    wall = time.perf_counter() - started
    figures["conditions"] = {
        **conditions,
        "cpus": os.cpu_count() or 0,
        "load_average_1min_before": round(load_before, 2),
        "load_average_1min_after": round(os.getloadavg()[0], 2),
        "cpu_share": round((_cpu_seconds() - cpu_started) / wall, 3) if wall > 0 else 0.0,
        "wall_s": round(wall, 1),
        "python": platform.python_version(),
        "repeats": settings.repeats,
        "duration_ms": settings.duration(base),
        "n15000_duration_ms": settings.n15000_duration_ms,
        "sweep_duration_ms": settings.sweep_duration_ms,
        "scale": settings.scale,
        "set": list(settings.overrides),
        "groups": list(groups),
    }
    return figures
