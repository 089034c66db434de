"""A PostgreSQL backend as a simulated process: CPU work, memory operations, scans, accounting.

A :class:`Backend` is one connection's server process. It owns a scheduler task (if it ever runs),
its procArray slot (``pgprocno`` and index) and its per-transaction accounting. Workloads and
snapshot algorithms drive it through three kinds of steps, each costing one SimPy timeout:

* :meth:`Backend.compute`: instructions (cycles of the global cost model, stretched by a busy SMT
  sibling);
* :meth:`Backend.ops`: a sequence of memory operations on tracked lines, issued back to back on
  the backend's current hardware thread; their latencies and queueing add up to one stall;
* :meth:`Backend.scan`: a precomputed scan in chunks (instructions per entry, then the chunk's
  memory stall under memory-level parallelism), one pair of timeouts per chunk so that other
  backends' writes interleave with it.

Time is charged to categories (:class:`Category`): the transaction's time breakdown by function.
Scheduling time (run-queue waits, wake-ups, context switches) is measured from the task's own
accounting and charged to ``scheduling`` whatever step it happened in.

Left out: the memory operations of the private, non-shared work (modelled as cycles and a cache
footprint) and instruction-level overlap between memory stalls and computation outside scans.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from models.tracked import Access, ScanPlan
from simulator.engine import ProcessGenerator, SimEnvironment
from simulator.machine import Machine, new_counters
from simulator.scheduler import Task

if TYPE_CHECKING:
    import simpy

FloatArray = npt.NDArray[np.float64]


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
    """Run-queue waits, wake-ups and context switches."""


CATEGORIES: tuple[Category, ...] = tuple(Category)


@dataclass(slots=True)
class TxnRecord:
    """Accounting of one transaction of one backend."""

    start_ns: float
    end_ns: float = 0.0
    times_ns: dict[Category, float] = field(default_factory=lambda: dict.fromkeys(CATEGORIES, 0.0))
    counters: FloatArray = field(default_factory=new_counters)
    hot_line_wait_ns: float = 0.0
    full_snapshots: int = 0
    reused_snapshots: int = 0


class Backend:
    """One connection's server process.

    Args:
        env: the simulation environment.
        machine: the machine, or ``None`` until it is built over the tracked lines.
        clock_ghz: the machine's clock, to turn cycles into ns.
        connection: the connection's number in connection order.
        pgprocno: its PGPROC slot.
        task: its scheduler task (``None`` for a connection that never runs).
    """

    def __init__(self, env: SimEnvironment, machine: Machine | None, clock_ghz: float,
                 connection: int, pgprocno: int, task: Task | None) -> None:
        self.env = env
        self.machine = machine
        """Set once the tracked lines are known and the machine is built."""
        self.clock_ghz = clock_ghz
        self.connection = connection
        self.pgprocno = pgprocno
        self.task = task
        self.index = -1
        """Position in the procArray (``pgxactoff`` in 14), set by the procArray."""
        self.xid = 0
        """The transaction's xid, 0 when it has none."""
        self.xmin_set = False
        """Whether the backend's advertised xmin is valid."""
        self.snapshot_completion_count = 0
        """14's snapshot cache: ``xactCompletionCount`` of the cached snapshot (0 = none)."""
        self.record = TxnRecord(start_ns=0.0)

    # ------------------------------------------------------------------ transactions

    def begin_transaction(self) -> None:
        """Start accounting a new transaction."""
        self.record = TxnRecord(start_ns=self.env.now)

    def end_transaction(self) -> TxnRecord:
        """Finish accounting the current transaction and return its record."""
        self.record.end_ns = self.env.now
        return self.record

    # ------------------------------------------------------------------ steps

    def ns(self, cycles: float) -> float:
        """Cycles of this machine's clock in ns."""
        return cycles / self.clock_ghz

    def compute(self, cycles: float, category: Category) -> ProcessGenerator:
        """Execute instructions (stretched when the SMT sibling is busy)."""
        yield from self._timed(self.ns(cycles), True, category)

    def ops(self, accesses: Sequence[Access], category: Category,
            lock_line: bool = False) -> ProcessGenerator:
        """Issue memory operations back to back; wait their total cost once.

        Queueing behind other transfers of the same line is charged to ``lock_wait`` when
        ``lock_line`` (a lock word), else to ``category`` (and always to the hot-line wait).
        """
        task = self._task()
        if task.thread is None:  # woken from a sleep: get a thread first
            yield from self._timed(0.0, False, category)
        thread = task.location()[0]
        machine = self._machine()
        now = self.env.now
        total = 0.0
        waited = 0.0
        counters = self.record.counters
        for access in accesses:
            result = machine.access(thread, access.line, access.op, access.mask,
                                         now=now + total, out=counters)
            total += result.cost_ns
            waited += result.wait_ns
        self.record.hot_line_wait_ns += waited
        if lock_line and waited:
            self.record.times_ns[Category.LOCK_WAIT] += waited
            yield from self._timed(total - waited, False, category, extra_ns=waited)
        else:
            yield from self._timed(total, False, category)

    def scan(self, plan: ScanPlan, cycles_per_entry: float, category: Category) -> ProcessGenerator:
        """Run a precomputed scan chunk by chunk: instructions, then the chunk's memory stall."""
        task = self._task()
        machine = self._machine()
        counters = self.record.counters
        for lines, masks, entries in plan.chunks():
            if entries:
                yield from self._timed(self.ns(entries * cycles_per_entry), True, category)
            if len(lines):
                thread = task.location()[0]
                stall = machine.scan(thread, lines, masks, pattern=plan.pattern,  # type: ignore[arg-type]
                                          now=self.env.now, out=counters)
                if stall:
                    yield from self._timed(stall, False, category)

    def sleep(self, event: simpy.Event, category: Category) -> ProcessGenerator:
        """Block (give up the CPU) until ``event``; the time asleep goes to ``category``."""
        task = self._task()
        start, sched = self.env.now, _scheduling_ns(task)
        yield from task.block_until(event)
        self._charge(category, start, sched)

    def pollute(self, private_bytes: int, l3_bytes: int) -> None:
        """Pass the transaction's private footprint through the current core's caches."""
        core = self._task().location()[1]
        self._machine().pollute(core, private_bytes, l3_bytes)

    # ------------------------------------------------------------------ helpers

    def _machine(self) -> Machine:
        if self.machine is None:
            raise RuntimeError("the machine is not built yet")
        return self.machine

    def _task(self) -> Task:
        if self.task is None:
            raise RuntimeError(f"connection {self.connection} has no process: it never runs")
        return self.task

    def _timed(self, ns: float, smt_scaled: bool, category: Category,
               extra_ns: float = 0.0) -> ProcessGenerator:
        task = self._task()
        start, sched = self.env.now, _scheduling_ns(task)
        yield from task.run(ns + extra_ns, smt_scaled=smt_scaled)
        self._charge(category, start, sched, minus=extra_ns)

    def _charge(self, category: Category, start: float, sched_before: float,
                minus: float = 0.0) -> None:
        task = self._task()
        scheduling = _scheduling_ns(task) - sched_before
        times = self.record.times_ns
        times[Category.SCHEDULING] += scheduling
        times[category] += self.env.now - start - scheduling - minus


def _scheduling_ns(task: Task) -> float:
    return task.runqueue_wait_ns + task.wakeup_ns + task.context_switch_ns
