"""One simulated point: a machine, an algorithm, a workload and a population of connections.

:func:`run_point` builds the population (:mod:`snapsim_models.population`: the version's shared
memory, the connections, idle ones first, the algorithm and the machine over the lines it
touches), starts the backends' server loops and the clients (:mod:`snapsim_models.clients`),
runs the warm-up and the measured window in SimPy and summarises the window
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

from simulator.hardware.latency import LatencyTables
from simulator.hardware.topology import Topology
from simulator.runtime.engine import ProcessGenerator, SimEnvironment
from simulator.runtime.kernel_thread import kernel_thread
from simulator.runtime.scheduler import CpuScheduler
from simulator.runtime.scheduler_stats import (
    IDLE_TRACE_COLUMNS,
    IDLE_TRACE_TABLE,
    TRACE_COLUMNS,
    TRACE_TABLE,
)
from simulator.study.workload_model import PointSpec

from .clients import Clients
from .lwlock import LockMode
from .options import PgOptions
from .population import build_population
from .summary import Churned, NoTransactionError, PointResult, summarise, window_converged

__all__ = ["IDLE_KINDS", "NoTransactionError", "PointResult", "run_point", "window_converged"]

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
    busy_before = None
    stats_before = scheduler.stats.copy()
    exclusive = population.algorithm.proc_array_lock.grants
    exclusive_before = exclusive[LockMode.EXCLUSIVE]

    def mark() -> ProcessGenerator:
        nonlocal busy_before, stats_before, exclusive_before
        yield env.timeout(spec.warmup_ns)
        busy_before = scheduler.snapshot()
        stats_before = scheduler.stats.copy()
        exclusive_before = exclusive[LockMode.EXCLUSIVE]
        population.machine.reset_line_counters()  # the per-line table covers the measurement

    processes.spawn(mark())
    if spec.machine.kernel_thread is not None:  # one server process per connection
        processes.spawn(kernel_thread(env, scheduler, spec.machine.kernel_thread,
                                      spec.clients + spec.idle_clients, spec.warmup_ns,
                                      spec.duration_ns))
    try:
        env.run(until=spec.warmup_ns + spec.duration_ns)
        utilisation = scheduler.utilisation(busy_before)
        churn = Churned(processes.churn_clients, processes.churn_log,
                         exclusive[LockMode.EXCLUSIVE] - exclusive_before)
        result = summarise(spec, options, population, utilisation,
                           scheduler.stats.since(stats_before), time.perf_counter() - wall, churn)
        if spec.trace:
            result.traces.update({name: env.recorder.to_frame(name)
                                  for name in (TRACE_TABLE, IDLE_TRACE_TABLE)})
        return result
    finally:
        # Break the model's reference cycles: a point's objects are freed at once (no GC).
        processes.close()
        scheduler.close()
        population.release()
