"""A PostgreSQL backend: one connection's server process, its procArray state and its accounting.

A :class:`Backend` is a :class:`~simulator.runtime.process.CpuProcess` (lazy time on a hardware
thread: instructions, memory operations on tracked lines, scans, sleeps) with the state the
snapshot algorithms read and write: its PGPROC slot (``pgprocno``) and procArray index, its xid,
whether its xmin is set, and 14's snapshot cache. Workloads and snapshot algorithms drive it
through the process's steps, naming a :class:`Category` for each.

Time is charged to categories: the transaction's time breakdown by function, one
:class:`TxnRecord` per transaction (:meth:`Backend.begin_transaction`). A record also counts the
snapshots the backend computed in full and those it reused from its cache.

Left out: the backend's local state beyond these (its catalog caches, locks other than the
LWLocks modelled, buffers), whose cost is cycles and a cache footprint in the workloads.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from simulator.hardware.machine import Machine, new_counters
from simulator.runtime.engine import SimEnvironment
from simulator.runtime.process import DEFAULT_RUN_AHEAD_NS, CpuProcess
from simulator.runtime.task import Task
from simulator.types import FloatArray


class Category(StrEnum):
    """Where a backend's time goes (the time breakdown per transaction)."""

    GET_SNAPSHOT = "get_snapshot"
    """Inside GetSnapshotData (its lock atomics, the scan, the xmin store), except lock waits."""
    LOCK_WAIT = "lock_wait"
    """Queued behind ownership transfers of a lock word, or asleep waiting for an LWLock."""
    COMMIT = "commit"
    """Transaction end in the procArray (clearing xid/xmin, group clear, counters)."""
    OTHER = "other"
    """Everything else: protocol, parse/bind/execute, buffer pins, private work."""
    SCHEDULING = "scheduling"
    """Run-queue waits, wake-ups and context switches, and refills of the backend's working set
    after it went cold (``options.working_sets``)."""
    CONNECTION = "connection"
    """A connection's start and end: the backend's start-up and exit work, ``InitProcess``'s and
    ``ProcKill``'s free-list steps, ``ProcArrayAdd`` and ``ProcArrayRemove`` (lock waits apart)."""


CATEGORIES: tuple[Category, ...] = tuple(Category)


@dataclass(slots=True)
class TxnRecord:
    """Accounting of one transaction of one backend."""

    start_ns: float
    end_ns: float = 0.0
    times_ns: dict[Category, float] = field(default_factory=lambda: dict.fromkeys(CATEGORIES, 0.0))
    counters: FloatArray = field(default_factory=new_counters)
    full_snapshots: int = 0
    """Snapshots computed by a full GetSnapshotData."""
    reused_snapshots: int = 0
    """Snapshots taken from the backend's snapshot cache (14 and later)."""
    copied_snapshots: int = 0
    """Snapshots copied from a snapshot shared by all backends (``post14_shared_cache``)."""
    script: str = ""
    """The workload script the transaction ran (the ``mix`` workload's per-script columns)."""


class Backend(CpuProcess[Category]):
    """One connection's server process.

    Args:
        env: the simulation environment.
        machine: the machine, or ``None`` until it is built over the tracked lines.
        clock_ghz: the machine's clock, to turn cycles into ns.
        connection: the connection's number in connection order.
        pgprocno: its PGPROC slot.
        task: its scheduler task (``None`` for a connection that never runs).
        run_ahead_ns: how far it may run ahead of the clock for a memory operation.
    """

    def __init__(self, env: SimEnvironment, machine: Machine | None, clock_ghz: float,
                 connection: int, pgprocno: int, task: Task | None,
                 run_ahead_ns: float = DEFAULT_RUN_AHEAD_NS) -> None:
        super().__init__(env, machine, clock_ghz, task, CATEGORIES,
                         scheduling=Category.SCHEDULING, lock_wait=Category.LOCK_WAIT,
                         name=f"connection {connection}", run_ahead_ns=run_ahead_ns)
        self.connection = connection
        self.pgprocno = pgprocno
        self.index = -1
        """Position in the procArray (``pgxactoff`` in 14), set by the procArray."""
        self.xid = 0
        """The transaction's xid, 0 when it has none."""
        self.xmin_set = False
        """Whether the backend's advertised xmin is valid."""
        self.snapshot_completion_count = 0
        """14's snapshot cache: ``xactCompletionCount`` of the cached snapshot (0 = none)."""
        self.record = TxnRecord(start_ns=0.0, times_ns=self.times_ns, counters=self.counters)
        """The current transaction's accounting (the process charges its times and counters)."""

    def start_process(self, task: Task) -> None:
        """A new backend process takes this PGPROC slot (a connection that comes and goes).

        The process is ``task`` from now on and starts with no xid, no xmin and no cached
        snapshot; the slot's accounts go on (the caller begins a transaction's record).

        Raises:
            RuntimeError: the previous process of the slot has time left to spend.
        """
        if self.pending_ns:
            raise RuntimeError(f"{self.name}: a new process before the last one finished")
        self.task = task
        self.xid = 0
        self.xmin_set = False
        self.snapshot_completion_count = 0

    def begin_transaction(self) -> None:
        """Start accounting a new transaction."""
        record = TxnRecord(start_ns=self.env.now)
        self.record = record
        self.times_ns = record.times_ns
        self.counters = record.counters

    def end_transaction(self) -> TxnRecord:
        """Finish accounting the current transaction and return its record."""
        self.record.end_ns = self.env.now
        return self.record
