"""A PostgreSQL backend as a simulated process: CPU work, memory operations, scans, accounting.

A :class:`Backend` is one connection's server process. It owns a scheduler task (if it ever runs),
its procArray slot (``pgprocno`` and index) and its per-transaction accounting. Workloads and
snapshot algorithms drive it through three kinds of steps:

* :meth:`Backend.compute`: instructions (cycles of the global cost model, stretched by a busy SMT
  sibling);
* :meth:`Backend.ops`: a sequence of dependent memory operations on tracked lines, issued back to
  back on the backend's current hardware thread (one call of the coherence kernel); their
  latencies and queueing add up to one stall;
* :meth:`Backend.scan`: a precomputed scan in chunks (instructions per entry, then the chunk's
  memory stall under memory-level parallelism), one kernel call per chunk so that other
  backends' writes interleave with it.

**Time is lazy.** A step does not wait at once: it adds its CPU time and stall to the backend's
*pending* time. The pending time is spent in one scheduler run (one SimPy timeout, :meth:`flush`)
before the backend's next memory operation and before anything that must happen at the right
instant for others (sleeping on a lock or a semaphore, answering the client). So every memory
operation on a shared line is performed at the simulation clock, in time order with every other
backend's, exactly as if each step waited at once; only the timeouts between them are merged.
Operations on the backend's private lines (its own PGPROC lines, which nobody else touches while
it runs, :attr:`simulator.hardware.tracked.Ops.private`) need no such order and do not synchronise.
The
order matters because the coherence state does: a backend that ran ahead would acquire and
release a lock word without the other backends' accesses in between and find the line still in
its cache.

``run_ahead_ns`` > 0 relaxes this for speed: a memory operation is then performed at the
backend's logical time (``env.now`` plus the pending time) as long as the pending time is within
the allowance, as in lax-synchronisation simulators (ZSim's bound phase, Graphite). Hot lines
then see fewer transfers than in time order (measured: 48 clients on gold5215-2s lose 3/4 of
their lock-word queueing at 5 us), so it is off by default. Preemption and SMT stretch apply at
flush granularity.

Time is charged to categories (:class:`Category`): the transaction's time breakdown by function.
A flush distributes its elapsed on-CPU time over the pending categories (stalls as they are, CPU
work stretched by the SMT rate the run saw); scheduling time (run-queue waits, wake-ups, context
switches) is measured from the task's own accounting and charged to ``scheduling``.

Left out: the memory operations of the private, non-shared work (modelled as cycles and a cache
footprint) and instruction-level overlap between memory stalls and computation outside scans.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

import simpy

from simulator.hardware.machine import Machine, new_counters
from simulator.hardware.tracked import Ops, ScanPlan
from simulator.runtime.engine import ProcessGenerator, SimEnvironment
from simulator.runtime.scheduler import Task
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
    """Run-queue waits, wake-ups and context switches."""


CATEGORIES: tuple[Category, ...] = tuple(Category)
_INDEX = {category: index for index, category in enumerate(CATEGORIES)}
_LOCK_WAIT = _INDEX[Category.LOCK_WAIT]
_N_CATEGORIES = len(CATEGORIES)
DEFAULT_RUN_AHEAD_NS = 0.0
"""How far a backend may run ahead of the clock for a memory operation (module docstring)."""


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
        run_ahead_ns: how far it may run ahead of the clock for a memory operation.
    """

    def __init__(self, env: SimEnvironment, machine: Machine | None, clock_ghz: float,
                 connection: int, pgprocno: int, task: Task | None,
                 run_ahead_ns: float = DEFAULT_RUN_AHEAD_NS) -> None:
        if not run_ahead_ns >= 0.0:
            raise ValueError(f"run_ahead_ns must not be negative, got {run_ahead_ns}")
        self.env = env
        self.run_ahead_ns = run_ahead_ns
        self._pending = 0.0
        self._work = [0.0] * len(CATEGORIES)
        self._stall = [0.0] * len(CATEGORIES)
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

    @property
    def now(self) -> float:
        """The backend's logical time: the simulation clock plus its pending time."""
        return self.env.now + self._pending

    @property
    def pending_ns(self) -> float:
        """Time the backend has run ahead of the simulation clock (not yet spent)."""
        return self._pending

    def compute(self, cycles: float, category: Category) -> ProcessGenerator:
        """Execute instructions (stretched when the SMT sibling is busy)."""
        self._work[_INDEX[category]] += cycles / self.clock_ghz
        self._pending += cycles / self.clock_ghz
        return
        yield  # a generator, like every step

    def ops(self, accesses: Ops, category: Category,
            lock_line: bool = False) -> ProcessGenerator:
        """Issue memory operations back to back, at the backend's logical time.

        Queueing behind other transfers of the same line is charged to ``lock_wait`` when
        ``lock_line`` (a lock word), else to ``category`` (and always to the hot-line wait).
        """
        task = self._task()
        if self._pending > self.run_ahead_ns and not accesses.private:
            # flush(), its common case inlined (one timeout, no scheduling)
            total_work, total_stall = sum(self._work), sum(self._stall)
            env = self.env
            start = env.now
            wall = task.start_segment(total_work, total_stall)
            if wall is not None:
                if wall > 0.0 and not env.fast_forward(wall):
                    yield env.timeout(wall)
                self._settle(start, total_work, total_stall, 0.0)
            else:
                yield from self._scheduled_flush(start, total_work, total_stall)
        if task.thread is None:  # woken from a sleep: get a thread first
            yield from task.run(0.0)
        total, waited = self._machine().sequence(
            task.thread, accesses.lines, accesses.ops, accesses.masks,  # type: ignore[arg-type]
            self.env.now + self._pending, self.record.counters, check=False)
        self.record.hot_line_wait_ns += waited
        stall = self._stall
        if lock_line and waited:
            stall[_LOCK_WAIT] += waited
            stall[_INDEX[category]] += total - waited
        else:
            stall[_INDEX[category]] += total
        self._pending += total

    def scan(self, plan: ScanPlan, cycles_per_entry: float, category: Category) -> ProcessGenerator:
        """Run a precomputed scan chunk by chunk: instructions, then the chunk's memory stall."""
        task = self._task()
        machine = self._machine()
        env = self.env
        counters = self.record.counters
        slot = _INDEX[category]
        work_by, stall_by = self._work, self._stall
        ns_per_entry = cycles_per_entry / self.clock_ghz
        pattern = plan.pattern
        for lines, masks, entries in plan.chunks():
            work = entries * ns_per_entry
            work_by[slot] += work
            self._pending += work
            if len(lines):
                if self._pending > self.run_ahead_ns:
                    # flush(), its common case inlined (one timeout, no scheduling)
                    total_work, total_stall = sum(work_by), sum(stall_by)
                    start = env.now
                    wall = task.start_segment(total_work, total_stall)
                    if wall is not None:
                        if wall > 0.0 and not env.fast_forward(wall):
                            yield env.timeout(wall)
                        self._settle(start, total_work, total_stall, 0.0)
                    else:
                        yield from self._scheduled_flush(start, total_work, total_stall)
                if task.thread is None:
                    yield from task.run(0.0)
                stall = machine.scan(task.thread, lines, masks,  # type: ignore[arg-type]
                                     pattern=pattern,  # type: ignore[arg-type]
                                     now=env.now + self._pending, out=counters, check=False)
                stall_by[slot] += stall
                self._pending += stall

    def sync(self) -> ProcessGenerator:
        """Catch up with the clock (unless within the run-ahead allowance).

        Call before changing state other backends read (a lock's holders, the procArray's
        counters), so that the change happens at the right simulated instant.
        """
        if self._pending > self.run_ahead_ns:
            yield from self.flush()

    def flush(self) -> ProcessGenerator:
        """Spend the pending time now (one scheduler run) and charge it to its categories."""
        if self._pending <= 0.0:
            return
        total_work, total_stall = sum(self._work), sum(self._stall)
        env = self.env
        start = env.now
        wall = self._task().start_segment(total_work, total_stall)
        if wall is not None:  # no scheduling on the way: one timeout (the common case)
            if wall > 0.0 and not env.fast_forward(wall):
                yield env.timeout(wall)
            self._settle(start, total_work, total_stall, 0.0)
        else:
            yield from self._scheduled_flush(start, total_work, total_stall)

    def _scheduled_flush(self, start: float, total_work: float,
                         total_stall: float) -> ProcessGenerator:
        """:meth:`flush` through the scheduler (a wake-up, a slice end or a run-queue wait)."""
        task = self._task()
        sched_before = task.scheduling_ns
        yield from task.run_mixed(total_work, total_stall)
        scheduling = task.scheduling_ns - sched_before
        self._settle(start, total_work, total_stall, scheduling)

    def _settle(self, start: float, total_work: float, total_stall: float,
                scheduling: float) -> None:
        """Charge a flush that began at ``start`` to its categories; nothing is pending after."""
        work, stall = self._work, self._stall
        stretch = ((self.env.now - start - scheduling - total_stall) / total_work
                   if total_work > 0.0 else 0.0)
        times = self.record.times_ns
        if scheduling:
            times[Category.SCHEDULING] += scheduling
        for index in range(_N_CATEGORIES):
            if work[index] or stall[index]:
                times[CATEGORIES[index]] += stall[index] + work[index] * stretch
                work[index] = 0.0
                stall[index] = 0.0
        self._pending = 0.0

    def sleep(self, event: simpy.Event, category: Category) -> ProcessGenerator:
        """Block (give up the CPU) until ``event``; the time asleep goes to ``category``."""
        yield from self.flush()
        task = self._task()
        start, sched = self.env.now, task.scheduling_ns
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

    def _charge(self, category: Category, start: float, sched_before: float) -> None:
        task = self._task()
        scheduling = task.scheduling_ns - sched_before
        times = self.record.times_ns
        times[Category.SCHEDULING] += scheduling
        times[category] += self.env.now - start - scheduling
