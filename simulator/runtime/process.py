"""A process on a CPU: lazy time on a hardware thread, charged to the categories of a model.

A :class:`CpuProcess` is a program's process as the machine sees it (for example a database
server process serving one connection). It owns a scheduler task (if it ever runs) and time
accounts. A model drives it through three kinds of steps:

* :meth:`CpuProcess.compute`: instructions (cycles of the machine's clock, stretched by a busy SMT
  sibling);
* :meth:`CpuProcess.ops`: a sequence of dependent memory operations on tracked lines, issued back
  to back on the process's current hardware thread (one call of the coherence kernel); their
  latencies and queueing add up to one stall;
* :meth:`CpuProcess.scan`: a precomputed scan in chunks (instructions per entry, then the chunk's
  memory stall under memory-level parallelism), one kernel call per chunk so that other
  processes' writes interleave with it; its instructions are a tight loop, stretched by a busy
  SMT sibling at the machine's ``smt_throughput_high_ipc``.

Every step is used as ``yield from process.step(...)``. A step that cannot wait (``compute``, a
``sync`` or ``flush`` with nothing to spend) returns an empty tuple instead of a generator (a
:data:`~simulator.runtime.engine.Step`): ``yield from`` it costs no generator object.

**Time is lazy.** A step does not wait at once: it adds its CPU time and stall to the process's
*pending* time. The pending time is spent in one scheduler run (one SimPy timeout,
:meth:`~CpuProcess.flush`) before the process's next memory operation and before anything that
must happen at the right instant for others (sleeping on a lock or a semaphore, answering a
client). So every memory operation on a shared line is performed at the simulation clock, in time
order with every other process's, exactly as if each step waited at once; only the timeouts
between them are merged. Operations on the process's private lines (lines nobody else touches
while it runs, :attr:`simulator.hardware.tracked.Ops.private`) need no such order and do not
synchronise. The order matters because the coherence state does: a process that ran ahead would
acquire and release a lock word without the other processes' accesses in between and find the
line still in its cache.

``run_ahead_ns`` > 0 relaxes this for speed: a memory operation is then performed at the
process's logical time (``env.now`` plus the pending time) as long as the pending time is within
the allowance, as in lax-synchronisation simulators (ZSim's bound phase, Graphite). Hot lines
then see fewer transfers than in time order, and the queueing on a lock word shrinks with them,
so it is off by default. Preemption and SMT stretch apply at flush granularity.

**Categories.** Time is charged to the model's categories (for a database: inside the snapshot
code, waiting for a lock, committing, ...). The model names them with any hashable values, in a
fixed order given once, and passes one with every step; a category's position in that order is its
integer slot in the process's pending-time vectors. One category receives scheduling time
(run-queue waits, wake-ups, context switches, measured from the task's own accounting) and one the
queueing on lock words. A flush distributes its elapsed on-CPU time over the pending categories
(stalls as they are, CPU work stretched by the SMT rates the run saw). The accounts charged are
:attr:`CpuProcess.times_ns` and :attr:`CpuProcess.counters`; a model swaps them to account per
request or per transaction.

Left out: the memory operations of the private, non-shared work (modelled as cycles and a cache
footprint, :meth:`~CpuProcess.pollute`) and instruction-level overlap between memory stalls and
computation outside scans.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Generic, TypeVar

import simpy

from simulator.hardware.machine import Machine, new_counters
from simulator.hardware.tracked import Ops, ScanPlan
from simulator.runtime.engine import ProcessGenerator, SimEnvironment, Step
from simulator.runtime.task import Task
from simulator.types import FloatArray, SequenceFunction

__all__ = ["DEFAULT_RUN_AHEAD_NS", "CpuProcess"]

C = TypeVar("C", bound=Hashable)
"""The model's category type (an enum, say)."""

DEFAULT_RUN_AHEAD_NS = 0.0
"""How far a process may run ahead of the clock for a memory operation (module docstring)."""


class CpuProcess(Generic[C]):
    """A process whose steps accumulate lazily and are spent on a hardware thread.

    Args:
        env: the simulation environment.
        machine: the machine, or ``None`` until it is built over the tracked lines.
        clock_ghz: the machine's clock, to turn cycles into ns.
        task: its scheduler task (``None`` for a process that never runs).
        categories: the model's time categories, in slot order (each at most once).
        scheduling: the category of run-queue waits, wake-ups and context switches.
        lock_wait: the category of queueing behind other transfers of a lock word.
        name: how errors name the process.
        run_ahead_ns: how far it may run ahead of the clock for a memory operation.

    Raises:
        ValueError: a negative ``run_ahead_ns``, a repeated category, or ``scheduling`` or
            ``lock_wait`` not among the categories.
    """

    def __init__(self, env: SimEnvironment, machine: Machine | None, clock_ghz: float,
                 task: Task | None, categories: Sequence[C], *, scheduling: C, lock_wait: C,
                 name: str = "process", run_ahead_ns: float = DEFAULT_RUN_AHEAD_NS) -> None:
        if not run_ahead_ns >= 0.0:
            raise ValueError(f"run_ahead_ns must not be negative, got {run_ahead_ns}")
        slot = {category: index for index, category in enumerate(categories)}
        if len(slot) != len(categories):
            raise ValueError(f"a category repeats in {tuple(categories)!r}")
        for role, category in (("scheduling", scheduling), ("lock_wait", lock_wait)):
            if category not in slot:
                raise ValueError(f"{role} category {category!r} is not one of {tuple(slot)!r}")
        self.env = env
        self._machine_built: Machine | None = None
        self._sequence: SequenceFunction | None = None
        self.machine = machine
        self.clock_ghz = clock_ghz
        self.task = task
        self.name = name
        self.run_ahead_ns = run_ahead_ns
        self._categories = tuple(categories)
        self._slot = slot
        self._slots = range(len(slot))
        self._scheduling = scheduling
        self._lock_wait = slot[lock_wait]
        self._pending = 0.0
        self._work = [0.0] * len(slot)
        self._high_ipc = [0.0] * len(slot)
        """Per slot, pending CPU work of scans' tight loops (the SMT sibling's other rate)."""
        self._high_total = 0.0
        """The sum of :attr:`_high_ipc`, kept as it grows (flushes read it; most add nothing)."""
        self._stall = [0.0] * len(slot)
        self.times_ns: dict[C, float] = dict.fromkeys(self._categories, 0.0)
        """Time charged per category, in ns (replace it to start new accounts)."""
        self.counters: FloatArray = new_counters()
        """The machine's counters of this process's memory operations (replace it likewise)."""

    @property
    def machine(self) -> Machine | None:
        """The machine; set once the tracked lines are known and the machine is built."""
        return self._machine_built

    @machine.setter
    def machine(self, machine: Machine | None) -> None:
        self._machine_built = machine
        self._sequence = None if machine is None else machine.sequence_unchecked()

    # ------------------------------------------------------------------ steps

    def ns(self, cycles: float) -> float:
        """Cycles of this machine's clock in ns."""
        return cycles / self.clock_ghz

    @property
    def now(self) -> float:
        """The process's logical time: the simulation clock plus its pending time."""
        return self.env.now + self._pending

    @property
    def pending_ns(self) -> float:
        """Time the process has run ahead of the simulation clock (not yet spent)."""
        return self._pending

    def compute(self, cycles: float, category: C) -> Step:
        """Execute instructions (stretched when the SMT sibling is busy)."""
        self._work[self._slot[category]] += cycles / self.clock_ghz
        self._pending += cycles / self.clock_ghz
        return ()

    # NOTE: ops() and scan() inline flush()'s common case (one timeout, no scheduling) for
    # speed: they are the hot path. The three copies are deliberate; keep them identical.

    def ops(self, accesses: Ops, category: C, lock_line: bool = False) -> ProcessGenerator:
        """Issue memory operations back to back, at the process's logical time.

        Queueing behind other transfers of the same line is charged to the ``lock_wait``
        category when ``lock_line`` (a lock word), else to ``category``.
        """
        task = self.task
        if task is None:
            task = self._task()  # raises
        if self._pending > self.run_ahead_ns and not accesses.private:
            # flush(), its common case inlined (one timeout, no scheduling)
            total_work, total_stall = sum(self._work), sum(self._stall)
            total_high = self._high_total
            env = self.env
            start = env.now
            wall = task.start_segment(total_work, total_stall, total_high)
            if wall is not None:
                if wall > 0.0 and not env.fast_forward(wall):
                    yield env.wait(wall)
                self._settle(start, total_work, total_stall, 0.0, total_high)
            else:
                yield from self._scheduled_flush(start, total_work, total_stall, total_high)
        if task.thread is None:  # woken from a sleep: get a thread first
            yield from task.run(0.0)
        sequence = self._sequence
        if sequence is None:
            sequence = self._machine().sequence_unchecked()  # raises
        lines, ops, masks = accesses.arrays
        total, waited = sequence(task.thread, lines, ops, masks,  # type: ignore[arg-type]
                                 self.env.now + self._pending, self.counters)
        stall = self._stall
        if lock_line and waited:
            stall[self._lock_wait] += waited
            stall[self._slot[category]] += total - waited
        else:
            stall[self._slot[category]] += total
        self._pending += total

    def scan(self, plan: ScanPlan, cycles_per_entry: float, category: C) -> ProcessGenerator:
        """Run a precomputed scan chunk by chunk: instructions, then the chunk's memory stall.

        The plan's operation (loads, or stores for a ``memmove``'s destination) applies to every
        line.
        """
        task = self._task()
        machine = self._machine()
        env = self.env
        counters = self.counters
        slot = self._slot[category]
        work_by, stall_by, high_by = self._work, self._stall, self._high_ipc
        ns_per_entry = cycles_per_entry / self.clock_ghz
        pattern, op = plan.pattern, plan.op
        for lines, masks, entries in plan.chunks():
            work = entries * ns_per_entry
            high_by[slot] += work
            self._high_total += work
            self._pending += work
            if len(lines):
                if self._pending > self.run_ahead_ns:
                    # flush(), its common case inlined (one timeout, no scheduling)
                    total_work, total_stall = sum(work_by), sum(stall_by)
                    total_high = self._high_total
                    start = env.now
                    wall = task.start_segment(total_work, total_stall, total_high)
                    if wall is not None:
                        if wall > 0.0 and not env.fast_forward(wall):
                            yield env.wait(wall)
                        self._settle(start, total_work, total_stall, 0.0, total_high)
                    else:
                        yield from self._scheduled_flush(start, total_work, total_stall,
                                                         total_high)
                if task.thread is None:
                    yield from task.run(0.0)
                stall = machine.scan(task.thread, lines, masks,  # type: ignore[arg-type]
                                     op=op, pattern=pattern,  # type: ignore[arg-type]
                                     now=env.now + self._pending, out=counters, check=False)
                stall_by[slot] += stall
                self._pending += stall

    def sync(self) -> Step:
        """Catch up with the clock (unless within the run-ahead allowance).

        Call before changing state other processes read (a lock's holders, a shared counter),
        so that the change happens at the right simulated instant.
        """
        if self._pending > self.run_ahead_ns:
            return self._flush()
        return ()

    def flush(self) -> Step:
        """Spend the pending time now (one scheduler run) and charge it to its categories."""
        if self._pending <= 0.0:
            return ()
        return self._flush()

    def _flush(self) -> ProcessGenerator:
        """:meth:`flush` of a positive pending time."""
        task = self.task
        if task is None:
            task = self._task()  # raises
        total_work, total_stall = sum(self._work), sum(self._stall)
        total_high = self._high_total
        env = self.env
        start = env.now
        wall = task.start_segment(total_work, total_stall, total_high)
        if wall is not None:  # no scheduling on the way: one timeout (the common case)
            if wall > 0.0 and not env.fast_forward(wall):
                yield env.wait(wall)
            self._settle(start, total_work, total_stall, 0.0, total_high)
        else:
            yield from self._scheduled_flush(start, total_work, total_stall, total_high)

    def _scheduled_flush(self, start: float, total_work: float, total_stall: float,
                         total_high: float) -> ProcessGenerator:
        """:meth:`flush` through the scheduler (a wake-up, a slice end or a run-queue wait)."""
        task = self._task()
        sched_before = task.scheduling_ns
        yield from task.run_mixed(total_work, total_stall, total_high)
        scheduling = task.scheduling_ns - sched_before
        self._settle(start, total_work, total_stall, scheduling, total_high)

    def _settle(self, start: float, total_work: float, total_stall: float,
                scheduling: float, total_high: float) -> None:
        """Charge a flush that began at ``start`` to its categories; nothing is pending after.

        Stalls are charged as they are, CPU work stretched by what the run took. With work of
        both kinds (ordinary and a scan's tight loop), the run's work time fixes the share ``p``
        of the work done beside a busy SMT sibling (both kinds are consumed in proportion), and
        each kind is stretched by its own rate over that share.
        """
        work, stall, high = self._work, self._stall, self._high_ipc
        run_ns = self.env.now - start - scheduling - total_stall
        if total_high:
            rate, high_rate = self._task().smt_rates
            busy_ns = total_work / rate + total_high / high_rate
            alone_ns = total_work + total_high
            busy = ((run_ns - alone_ns) / (busy_ns - alone_ns)
                    if busy_ns > alone_ns else 0.0)
            busy = min(max(busy, 0.0), 1.0)
            stretch = 1.0 + busy * (1.0 / rate - 1.0)
            high_stretch = 1.0 + busy * (1.0 / high_rate - 1.0)
        else:
            stretch = run_ns / total_work if total_work > 0.0 else 0.0
            high_stretch = 0.0
        times = self.times_ns
        if scheduling:
            times[self._scheduling] += scheduling
        categories = self._categories
        for index in self._slots:
            if work[index] or stall[index] or high[index]:
                times[categories[index]] += (stall[index] + work[index] * stretch
                                             + high[index] * high_stretch)
                work[index] = 0.0
                stall[index] = 0.0
                high[index] = 0.0
        self._high_total = 0.0
        self._pending = 0.0

    def sleep(self, event: simpy.Event, category: C) -> ProcessGenerator:
        """Block (give up the CPU) until ``event``; the time asleep goes to ``category``."""
        yield from self.flush()
        task = self._task()
        start, sched = self.env.now, task.scheduling_ns
        yield from task.block_until(event)
        scheduling = task.scheduling_ns - sched
        times = self.times_ns
        times[self._scheduling] += scheduling
        times[category] += self.env.now - start - scheduling

    def pollute(self, private_bytes: int, l3_bytes: int) -> None:
        """Pass a private footprint (data nobody else shares) through the current core's caches."""
        core = self._task().location()[1]
        self._machine().pollute(core, private_bytes, l3_bytes)

    # ------------------------------------------------------------------ helpers

    def _machine(self) -> Machine:
        if self.machine is None:
            raise RuntimeError("the machine is not built yet")
        return self.machine

    def _task(self) -> Task:
        if self.task is None:
            raise RuntimeError(f"{self.name} has no task: it never runs")
        return self.task
