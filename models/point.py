"""One simulated point: a machine, an algorithm, a workload and a population of connections.

:func:`run_point` builds the population (:mod:`snapsim_models.population`: the version's shared
memory, the connections, idle ones first, the algorithm and the machine over the lines it
touches), starts the backends' server loops and the clients (:mod:`snapsim_models.clients`),
runs the warm-up and the measured window in SimPy (fixed, or grown until its TPS is precise:
:class:`~simulator.runtime.precision.MeasuredWindow`) and summarises the window
(:mod:`snapsim_models.summary`). An ``idle`` connection is only a procArray entry; a
``mostly-idle`` one runs ``SELECT 1`` every 100 ms. A machine's ``kernel_thread`` runs its
bursts beside them (:mod:`simulator.runtime.kernel_thread`), its share set by the server's
processes, one per connection.

``connects_per_s`` and ``disconnects_per_s`` count the window's ``ProcArrayAdd`` and
``ProcArrayRemove``; ``procarray_exclusive_per_txn`` the window's exclusive ProcArrayLock
acquisitions (commits, group clears, adds and removes) per active-client transaction.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from simulator.hardware.latency import LatencyTables
from simulator.hardware.topology import Topology
from simulator.runtime.engine import SimEnvironment
from simulator.runtime.kernel_thread import kernel_thread
from simulator.runtime.precision import MeasuredWindow
from simulator.runtime.scheduler import CpuScheduler
from simulator.runtime.scheduler_stats import (
    IDLE_TRACE_COLUMNS,
    IDLE_TRACE_TABLE,
    TRACE_COLUMNS,
    TRACE_TABLE,
    BusySnapshot,
    SchedulerStats,
)
from simulator.study.workload_model import PointSpec

from .clients import Clients
from .lwlock import LockMode
from .options import PgOptions
from .population import build_population
from .summary import Churned, NoTransactionError, PointResult, summarise

__all__ = ["IDLE_KINDS", "NoTransactionError", "PointResult", "run_point"]

IDLE_KINDS = ("idle", "mostly-idle")


def run_point(spec: PointSpec, options: PgOptions) -> PointResult:
    """Simulate one point: ``spec`` says what, ``options`` how (costs already scaled)."""
    env = SimEnvironment(seed=spec.seed)
    topology = Topology.from_config(spec.machine)  # built once, for the scheduler and the machine
    tables = LatencyTables.build(spec.machine, topology)
    scheduler = CpuScheduler.from_machine(env, spec.machine, trace=spec.trace, topology=topology,
                                          tables=tables, refill_rule=options.refill_rule)
    if spec.trace:
        env.recorder.declare(TRACE_TABLE, TRACE_COLUMNS)
        env.recorder.declare(IDLE_TRACE_TABLE, IDLE_TRACE_COLUMNS)
    population = build_population(env, scheduler, spec, options, tables=tables)
    scheduler.on_private_flush = population.machine.flush_private
    processes = Clients(spec, options, env, scheduler, population)
    wall = time.perf_counter()
    processes.start(population.running)
    exclusive = population.algorithm.proc_array_lock.grants
    marks: list[_Mark] = []

    def mark() -> None:
        """Keep the counters a window starting now subtracts (the first starts the table)."""
        if not marks:
            population.machine.reset_line_counters()
            lines = None
        else:
            lines = population.machine.line_counts()
        marks.append(_Mark(scheduler.snapshot(), scheduler.stats.copy(),
                           exclusive[LockMode.EXCLUSIVE], lines))

    def active_ends() -> np.ndarray:
        ends = [t1 for connection in population.connections if connection.active
                for _, t1, _ in connection.completed]
        ends.extend(t1 for client in processes.churn_clients for _, t1, _ in client.completed)
        return np.asarray(ends, dtype=float)

    window = MeasuredWindow(env, spec.warmup_ns, spec.duration_ns, active_ends, mark,
                            spec.precision, spec.max_duration_ns)
    processes.spawn(window.marker())
    if spec.machine.kernel_thread is not None:  # one server process per connection
        processes.spawn(kernel_thread(env, scheduler, spec.machine.kernel_thread,
                                      spec.clients + spec.idle_clients, spec.warmup_ns,
                                      spec.duration_ns))
    try:
        measured = window.run()
        start = marks[measured.mark]
        churn = Churned(processes.churn_clients, processes.churn_log,
                         exclusive[LockMode.EXCLUSIVE] - start.exclusive)
        result = summarise(spec, options, population, measured,
                           scheduler.utilisation(start.busy), scheduler.stats.since(start.stats),
                           time.perf_counter() - wall, churn,
                           population.machine.line_table(start.lines))
        if spec.trace:
            result.traces.update({name: env.recorder.to_frame(name)
                                  for name in (TRACE_TABLE, IDLE_TRACE_TABLE)})
        return result
    finally:
        # Break the model's reference cycles: a point's objects are freed at once (no GC).
        processes.close()
        scheduler.close()
        population.release()


@dataclass(frozen=True, slots=True)
class _Mark:
    """The counters at one mark of the window (:class:`MeasuredWindow`)."""

    busy: BusySnapshot
    stats: SchedulerStats
    exclusive: int
    """Exclusive ProcArrayLock acquisitions granted so far."""
    lines: dict[str, np.ndarray] | None
    """The per-line counts (``None`` at the first mark, where the table starts afresh)."""
