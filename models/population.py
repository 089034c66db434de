"""The population of one point: a version's shared memory, its connections and the machine.

:func:`build_population` connects the clients (idle connections first, then the active ones, as
in the published benchmarks, so active backends hold adjacent pgprocnos), fills the procArray
with them and the launchers, sets up the snapshot algorithm over the lines it touches and builds
the machine over those lines. Every connection knows once whether its client is active.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from simulator.config.machine import MachineConfig
from simulator.hardware.layout_edits import LayoutEdit
from simulator.hardware.machine import Implementation, Machine
from simulator.hardware.tracked import TrackedMemory
from simulator.runtime.engine import SimEnvironment
from simulator.runtime.scheduler import CpuScheduler

from .backend import Backend
from .churn import Completed, FreeList
from .costs import ScanCosts
from .lwlock import DEFAULT_QUEUE as DEFAULT_LWLOCK_QUEUE
from .procarray import ProcArray
from .shmem.build import DEFAULT_INNER_PAGES, build_shared_memory
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


def build_population(env: SimEnvironment, scheduler: CpuScheduler, machine: MachineConfig, *,
                     algorithm: str, clients: int, idle_clients: int, mostly_idle: bool,
                     scan_costs: ScanCosts, entries_per_chunk: int, run_ahead_ns: float,
                     implementation: Implementation,
                     fused_atomics: frozenset[str] = frozenset(),
                     btree_inner_pages: Sequence[int] = DEFAULT_INNER_PAGES,
                     pin_protocol: str = "atomic",
                     layout_edits: Sequence[LayoutEdit] = (),
                     churn_slots: int = 0, reconnecting_clients: bool = False,
                     lwlock_queue: str = DEFAULT_LWLOCK_QUEUE) -> Population:
    """Connect ``idle_clients`` then ``clients`` and build the machine over what they touch.

    Args:
        env: the simulation environment.
        scheduler: the machine's CPU scheduler; every backend that runs gets a task.
        machine: the machine's description.
        algorithm: the snapshot algorithm (a key of :data:`~snapsim_models.snapshots.ALGORITHMS`).
        clients: active clients.
        idle_clients: idle connections, connected first.
        mostly_idle: whether the idle connections run ``SELECT 1`` now and then (their backends
            then run too).
        scan_costs: instructions per scanned procArray entry.
        entries_per_chunk: procArray entries per scan chunk.
        run_ahead_ns: how far a backend may run ahead of the clock (:mod:`snapsim_models.backend`).
        implementation: the coherence implementation of the machine.
        fused_atomics: users of atomics whose load + CAS loops are fused into one call that
            never fails (the ablation; :data:`~snapsim_models.snapshots.base.ATOMIC_USERS`).
        btree_inner_pages: pages per inner level of ``pgbench_accounts_pkey``
            (:func:`~snapsim_models.btree.inner_level_pages`).
        pin_protocol: how pins update a buffer header
            (:data:`~snapsim_models.buffers.PIN_PROTOCOLS`).
        layout_edits: layout what-ifs of the shared memory
            (:mod:`simulator.hardware.layout_edits`).
        churn_slots: PGPROC slots for connections that come and go
            (:func:`~snapsim_models.churn.churn_slots`; 0: none). They lie below the connected
            clients' (the top of the LIFO free list once those are connected), each with a
            backend (connection numbers after the clients') that runs whenever a process holds
            the slot; the algorithm registers what connecting and disconnecting touch.
        reconnecting_clients: the active clients reconnect for every transaction
            (``pgbench -C``): they hold no connection of their own (only the idle ones are
            connected at the start) and use the slots.
        lwlock_queue: the LWLocks' queue discipline (:data:`~snapsim_models.lwlock.QUEUES`).
    """
    n_connections = idle_clients + (0 if reconnecting_clients else clients)
    spare = 3 + churn_slots
    shmem = build_shared_memory(algorithm, max_connections=max(n_connections, 1) + spare,
                                btree_inner_pages=btree_inner_pages,
                                layout_edits=layout_edits)
    connections: list[Connection] = []
    for k in range(n_connections):
        active = k >= idle_clients
        task = scheduler.new_task(f"backend{k}") if active or mostly_idle else None
        backend = Backend(env, None, machine.clock_ghz, k, shmem.pgprocno_for_connection(k), task,
                          run_ahead_ns=run_ahead_ns)
        connections.append(Connection(backend, active))
    backends = [connection.backend for connection in connections]
    procs = shmem.procs
    launchers = [procs.autovacuum_launcher_pgprocno]
    if procs.logical_launcher_pgprocno is not None:
        launchers.append(procs.logical_launcher_pgprocno)
    procarray = ProcArray(shmem, backends, launchers)
    free_slots = shmem.free_pgprocnos(n_connections)[-churn_slots:] if churn_slots else []
    pool = {pgprocno: Backend(env, None, machine.clock_ghz, n_connections + j, pgprocno, None,
                              run_ahead_ns=run_ahead_ns)
            for j, pgprocno in enumerate(reversed(free_slots))}
    procarray.capacity = len(procarray) + len(pool)
    tracked = TrackedMemory(shmem.memory)
    snapshots = ALGORITHMS[algorithm](shmem, tracked, procarray, scan_costs, entries_per_chunk,
                                      fused_atomics, pin_protocol, lwlock_queue)
    snapshots.prepare([connection.backend for connection in connections if connection.runs])
    if pool:
        snapshots.prepare_churn(list(pool.values()))
    built = tracked.build_machine(machine, implementation=implementation)
    for backend in (*backends, *pool.values()):
        backend.machine = built
    return Population(shmem, connections, procarray, tracked, snapshots, built, pool,
                      FreeList(env, free_slots) if pool else None)
