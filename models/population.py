"""The population of one point: a version's shared memory, its connections and the machine.

:func:`build_population` connects the clients (idle connections first, then the active ones, as
in the published benchmarks, so active backends hold adjacent pgprocnos), fills the procArray
with them and the launchers, sets up the snapshot algorithm over the lines it touches and builds
the machine over those lines. Every connection knows once whether its client is active.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from simulator.hardware.latency import LatencyTables
from simulator.hardware.machine import Implementation, Machine
from simulator.hardware.tracked import TrackedMemory
from simulator.runtime.engine import SimEnvironment
from simulator.runtime.scheduler import CpuScheduler
from simulator.study.workload_model import PointSpec

from .backend import Backend
from .btree import inner_level_pages
from .churn import Completed, FreeList
from .churn import churn_slots as slots_for_churn
from .options import PgOptions
from .procarray import ProcArray
from .shmem.build import build_shared_memory
from .shmem.memory import PgSharedMemory
from .snapshots import ALGORITHMS, SnapshotAlgorithm

__all__ = ["Completed", "Connection", "Population", "build_population"]


@dataclass(slots=True)
class Connection:
    """One client connection: its backend, the kind of its client, its completed transactions.

    A connection whose backend has no scheduler task is an idle one: only a procArray entry.
    """

    backend: Backend
    active: bool
    """A pgbench client in a closed loop; otherwise an idle or mostly-idle connection."""
    completed: list[Completed] = field(default_factory=list)

    @property
    def runs(self) -> bool:
        """Whether its backend ever runs (every active and mostly-idle connection)."""
        return self.backend.task is not None


@dataclass(slots=True)
class Population:
    """Everything a point simulates, built and wired up, before any process starts."""

    shmem: PgSharedMemory
    connections: list[Connection]
    procarray: ProcArray
    tracked: TrackedMemory
    algorithm: SnapshotAlgorithm
    machine: Machine
    pool: dict[int, Backend] = field(default_factory=dict)
    """The PGPROC slots of connections that come and go, by pgprocno (one backend each, which
    each new process in the slot reuses)."""
    free: FreeList | None = None
    """The free list of those slots (``None`` without churn)."""

    @property
    def running(self) -> list[Connection]:
        """The connections whose backend runs, in connection order."""
        return [connection for connection in self.connections if connection.runs]

    def release(self) -> None:
        """Drop the registered accesses once the run is over (no reference cycles left)."""
        self.tracked.release()
        self.algorithm.release()


def build_population(env: SimEnvironment, scheduler: CpuScheduler, spec: PointSpec,
                     options: PgOptions, implementation: Implementation = "compiled", *,
                     tables: LatencyTables | None = None) -> Population:
    """Connect ``spec.idle_clients`` then ``spec.clients`` and build the machine over them.

    Every backend that runs (active and mostly-idle ones) gets a task of ``scheduler``. With
    connections that come and go (``options.churn``), PGPROC slots for them
    (:func:`~snapsim_models.churn.churn_slots`) lie below the connected clients' (the top of
    the LIFO free list once those are connected), each with a backend (connection numbers after
    the clients') that runs whenever a process holds the slot; the algorithm registers what
    connecting and disconnecting touch. With ``pgbench -C`` (``per_transaction``) the active
    clients hold no connection of their own: only the idle ones are connected at the start.
    ``implementation`` is the coherence implementation of the machine (the compiled kernel or
    its reference). The machine takes the scheduler's topology and ``tables``, the point's
    latency tables (the machine builds its own if not given).
    """
    machine = spec.machine
    clients, idle_clients = spec.clients, spec.idle_clients
    mostly_idle = spec.idle_kind == "mostly-idle"
    reconnecting_clients = options.churn_per_transaction
    churn_slots = slots_for_churn(options.churn_rate_per_s, options.churn_per_transaction, clients)
    n_connections = idle_clients + (0 if reconnecting_clients else clients)
    spare = 3 + churn_slots
    algorithm = ALGORITHMS[spec.algorithm]
    shmem = build_shared_memory(algorithm, max_connections=max(n_connections, 1) + spare,
                                btree_inner_pages=inner_level_pages(options.pgbench_scale),
                                layout_edits=options.layout)
    connections: list[Connection] = []
    for k in range(n_connections):
        active = k >= idle_clients
        # An active connection's backend runs most of the time: Linux's balancer spreads it.
        task = (scheduler.new_task(f"backend{k}", busy=active) if active or mostly_idle
                else None)
        backend = Backend(env, None, machine.clock_ghz, k, shmem.pgprocno_for_connection(k), task,
                          run_ahead_ns=options.run_ahead_ns)
        connections.append(Connection(backend, active))
    backends = [connection.backend for connection in connections]
    procs = shmem.procs
    launchers = [procs.autovacuum_launcher_pgprocno]
    if procs.logical_launcher_pgprocno is not None:
        launchers.append(procs.logical_launcher_pgprocno)
    procarray = ProcArray(shmem, backends, launchers)
    free_slots = shmem.free_pgprocnos(n_connections)[-churn_slots:] if churn_slots else []
    pool = {pgprocno: Backend(env, None, machine.clock_ghz, n_connections + j, pgprocno, None,
                              run_ahead_ns=options.run_ahead_ns)
            for j, pgprocno in enumerate(reversed(free_slots))}
    procarray.capacity = len(procarray) + len(pool)
    tracked = TrackedMemory(shmem.memory)
    snapshots = algorithm(shmem, tracked, procarray, options)
    snapshots.prepare([connection.backend for connection in connections if connection.runs])
    if pool:
        snapshots.prepare_churn(list(pool.values()))
    built = tracked.build_machine(machine, implementation=implementation,
                                  topology=scheduler.topology, tables=tables)
    for backend in (*backends, *pool.values()):
        backend.machine = built
    return Population(shmem, connections, procarray, tracked, snapshots, built, pool,
                      FreeList(env, free_slots) if pool else None)
