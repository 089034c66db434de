"""CPU scheduling of tasks on hardware threads: run queue, time slices, wake-ups and SMT.

A :class:`Task` is a schedulable entity: a process or a client thread (for example a PostgreSQL
backend and its pgbench client). Its behaviour is a SimPy process that spends CPU time with
``yield from task.run(ns)`` and sleeps with ``yield from task.block_until(event)``. The
:class:`CpuScheduler` decides which hardware thread a task runs on and when. It is built for
speed: no ``simpy.Resource`` or ``Store`` (each acquire costs several events and generator
resumptions), one timeout per run segment, plain lists for the per-thread state, and no
randomness (the same scenario always gives the same schedule).

Modelled, after Linux (``kernel/sched/fair.c``): per-CPU run queues ordered like CFS before 6.6
(virtual runtime, sleeper credit; ``fifo`` optional) or one global queue (an ablation), wake-up
preemption, new-idle and periodic balancing of idle threads, time slices, wake-up placement as
``select_idle_sibling`` of Linux 5.8 (a synchronous wake-up keeps the waker on its thread),
wake-up and context-switch costs, idle states chosen by :mod:`simulator.runtime.idle` with their
exit latencies and IPIs, SMT throughput sharing, migrations (the ``on_migrate`` hook) and the
per-task accounting (:attr:`Task.scheduling_ns`, :attr:`CpuScheduler.stats`). With
``trace=True`` it records the ``scheduler`` and ``idle`` tables of ``env.recorder``.

Left out: the scheduling domains' own balance intervals and imbalance rules, cache-hotness in
balancing, ``wake_wide``, priorities, CPU affinity, NUMA balancing, interrupts, the scheduler's
own code beyond the configured costs, turbo frequencies, steal time, and SimPy ``Interrupt``
inside ``run``/``block_until``.

The model, rule by rule (placement, queues, slices, idle states, SMT, accounting, the trace
tables' columns) with the Linux functions it follows: ``docs/scheduler.md``.
"""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Callable
from dataclasses import dataclass, field, fields, replace
from typing import NamedTuple

import numpy as np
import numpy.typing as npt
import simpy

from simulator.config.machine import (
    DEFAULT_IDLE_TIMER_HORIZON_NS,
    IdleConfig,
    IdleStateConfig,
    MachineConfig,
    SchedulerConfig,
)
from simulator.hardware.topology import Topology
from simulator.runtime.engine import ProcessGenerator, SimEnvironment
from simulator.runtime.idle import POLL, MenuGovernor, wake_state

__all__ = ["IDLE_TRACE_COLUMNS", "IDLE_TRACE_TABLE", "TRACE_COLUMNS", "TRACE_TABLE",
           "BusySnapshot", "CpuScheduler", "FlushHook", "MigrateHook", "SchedulerStats", "Task"]

MigrateHook = Callable[["Task", int, int], None]
"""``on_migrate(task, old_core, new_core)``: called when a task starts running on a new core."""

FlushHook = Callable[[int], None]
"""``on_private_flush(core)``: called when a core enters a state that flushes its caches."""


@dataclass(slots=True)
class SchedulerStats:
    """Machine-wide counts of the idle, wake-up and balancing events since the start.

    Attributes:
        idle_exits: wake-ups of a task on an idle thread (each leaves an idle state).
        idle_exit_ns: the exit latencies those wake-ups paid, summed.
        exits_by_state: ``idle_exits`` by the state left (``POLL`` for a polling thread).
        ipis: inter-processor interrupts: wake-ups of a halted thread (``idle.wake: hlt``, or
            a VM without idle states) and reschedule IPIs of wake-up preemptions.
        private_flushes: times a core entered a core-level state (its private caches flushed).
        migrations: times a task started running on another core than its previous one.
        wakeup_preemptions: waking tasks that preempted a thread's running task.
        newidle_pulls: tasks a thread pulled from another run queue as it went idle.
        balance_pulls: tasks an idle thread pulled at the periodic balancing.
    """

    idle_exits: int = 0
    idle_exit_ns: float = 0.0
    exits_by_state: dict[str, int] = field(default_factory=dict)
    ipis: int = 0
    private_flushes: int = 0
    migrations: int = 0
    wakeup_preemptions: int = 0
    newidle_pulls: int = 0
    balance_pulls: int = 0

    def copy(self) -> SchedulerStats:
        """An independent copy (to difference a window's counts)."""
        return replace(self, exits_by_state=dict(self.exits_by_state))

    def since(self, before: SchedulerStats) -> SchedulerStats:
        """The counts added since ``before`` (an earlier :meth:`copy`)."""
        states = {name: count - before.exits_by_state.get(name, 0)
                  for name, count in self.exits_by_state.items()}
        counts = {f.name: getattr(self, f.name) - getattr(before, f.name)
                  for f in fields(self) if f.name != "exits_by_state"}
        return SchedulerStats(exits_by_state=states, **counts)

TRACE_TABLE = "scheduler"
"""Name of the recorder table of scheduling transitions written when tracing is on."""

TRACE_COLUMNS = ("time_ns", "task", "thread", "core", "event")
"""Columns of :data:`TRACE_TABLE`."""

IDLE_TRACE_TABLE = "idle"
"""Name of the recorder table of idle periods written when tracing is on."""

IDLE_TRACE_COLUMNS = ("time_ns", "thread", "core", "state", "idle_ns", "exit_latency_ns")
"""Columns of :data:`IDLE_TRACE_TABLE`."""

_EPS_NS = 1e-9
"""Work below this many ns left after a slice boundary is rounding noise, not another segment."""

_WAKE, _SWITCH, _QUEUE = 0, 1, 2
"""How a waking task gets a thread (:meth:`CpuScheduler._place`): an idle thread after the
wake-up cost, its waker's just-freed thread after a context switch, or a run queue."""


class BusySnapshot(NamedTuple):
    """Busy time of every hardware thread at one instant (see :meth:`CpuScheduler.snapshot`)."""

    time_ns: float
    busy_ns: tuple[float, ...]


class Task:
    """A schedulable entity (a process or a client thread) driven by one SimPy process at a time.

    Create tasks with :meth:`CpuScheduler.new_task`. A task starts blocked, holding no thread.

    Attributes:
        name: label used in traces.
        thread: hardware thread the task holds (running, or reserved for it while it pays a
            wake-up or context-switch cost), ``None`` while it is blocked or queued.
        core: core of ``thread``, or ``None``.
        last_core: core it last ran on, ``None`` before its first placement.
        cpu_ns: wall time spent running ``smt_scaled`` work (includes the SMT stretch).
        stall_ns: wall time spent in ``run(..., smt_scaled=False)``.
        runqueue_wait_ns: time spent runnable in the run queue.
        wakeup_ns: time spent waking up on an idle thread.
        context_switch_ns: context-switch time paid on a thread before the task ran there.
        wakeups: blocked-to-runnable transitions, including the first placement.
        preemptions: times its slice ended with tasks waiting.
        migrations: times it started running on a different core than the previous one.
        context_switches: times it was dispatched from the run queue.
    """

    __slots__ = (
        "_active",
        "_blocked",
        "_grant",
        "_grant_extra",
        "_granted_at",
        "_last_thread",
        "_recent_thread",
        "_resched",
        "_reserved",
        "_sched",
        "_segment_start",
        "_siblings",
        "_slice_used",
        "_sync_target",
        "_vruntime_offset",
        "_waker_thread",
        "context_switch_ns",
        "context_switches",
        "core",
        "cpu_ns",
        "last_core",
        "migrations",
        "name",
        "preemptions",
        "runqueue_wait_ns",
        "stall_ns",
        "thread",
        "wakeup_ns",
        "wakeups",
    )

    def __init__(self, scheduler: CpuScheduler, name: str) -> None:
        self._sched = scheduler
        self.name = name
        self.thread: int | None = None
        self.core: int | None = None
        self.last_core: int | None = None
        self._last_thread: int | None = None
        self._recent_thread: int | None = None
        self._reserved: tuple[int, float] | None = None
        self._sync_target: int | None = None
        self._waker_thread: int | None = None  # a declared waker's thread (wakes(sync=False))
        self._blocked = False
        self._siblings: tuple[int, ...] = ()
        self._active = False
        self._grant: simpy.Event | None = None
        self._granted_at = 0.0
        self._grant_extra = 0.0
        self._resched = False
        self._segment_start = -1.0
        self._vruntime_offset = 0.0
        self._slice_used = 0.0
        self.cpu_ns = 0.0
        self.stall_ns = 0.0
        self.runqueue_wait_ns = 0.0
        self.wakeup_ns = 0.0
        self.context_switch_ns = 0.0
        self.wakeups = 0
        self.preemptions = 0
        self.migrations = 0
        self.context_switches = 0

    def __repr__(self) -> str:
        return f"Task({self.name!r}, thread={self.thread})"

    @property
    def scheduling_ns(self) -> float:
        """Time spent on scheduling so far: run-queue waits, wake-ups and context switches.

        The part of the task's elapsed time that is neither running nor blocked; a model charges
        its growth over a step to the step's scheduling cost.
        """
        return self.runqueue_wait_ns + self.wakeup_ns + self.context_switch_ns

    @property
    def vruntime_ns(self) -> float:
        """Virtual runtime: on-CPU time used, shifted by sleeper placement (``cfs`` policy)."""
        return self.cpu_ns + self.stall_ns + self._vruntime_offset

    def location(self) -> tuple[int, int]:
        """The ``(thread, core)`` the task holds.

        Raises:
            RuntimeError: the task holds no hardware thread.
        """
        if self.thread is None or self.core is None:
            raise RuntimeError(f"task {self.name!r} holds no hardware thread")
        return self.thread, self.core

    def run(self, work_ns: float, smt_scaled: bool = True) -> ProcessGenerator:
        """Execute ``work_ns`` of single-thread CPU time: ``yield from task.run(ns)``.

        Gets a thread first if the task holds none (wake-up placement or run queue). Returns with
        the thread still held, so ``task.thread`` and ``task.core`` are valid afterwards.

        Args:
            work_ns: CPU time the work would take alone on a core, in ns (>= 0).
            smt_scaled: ``False`` for memory stalls: they occupy the thread at full rate,
                unaffected by a busy SMT sibling, and count as ``stall_ns``.

        Raises:
            ValueError: ``work_ns`` is negative (raised by this call).
            RuntimeError: another process of this task is inside ``run``/``block_until``.
        """
        if not work_ns >= 0.0:
            raise ValueError(f"task {self.name!r}: work must be >= 0 ns, got {work_ns!r}")
        return self._run(float(work_ns), smt_scaled)

    def run_mixed(self, work_ns: float, stall_ns: float) -> ProcessGenerator:
        """Execute work and memory stalls together, as one segment: ``yield from``.

        The same as ``run(work_ns)`` followed by ``run(stall_ns, smt_scaled=False)`` except that
        it takes one timeout (the SMT rate is sampled once, at its start) and, when a slice ends
        inside it, the stall is consumed before the work.

        Raises:
            ValueError: a negative amount.
        """
        if not (work_ns >= 0.0 and stall_ns >= 0.0):
            raise ValueError(f"task {self.name!r}: work and stall must be >= 0 ns, got "
                             f"{work_ns!r} and {stall_ns!r}")
        if stall_ns == 0.0:
            return self._run(float(work_ns), True)
        if work_ns == 0.0:
            return self._run(float(stall_ns), False)
        return self._run_mixed(float(work_ns), float(stall_ns))

    def start_segment(self, work_ns: float, stall_ns: float) -> float | None:
        """The fast path of :meth:`run_mixed`: start a segment that needs no scheduling.

        When the task holds its thread, no process of it is inside ``run``/``block_until``,
        and the work (at the SMT rate sampled now) and the stall fit in what is left of its
        slice, the segment is charged now and its wall time returned: the caller waits that
        long (one ``env.timeout``, none if 0), exactly as ``yield from task.run_mixed(work_ns,
        stall_ns)`` would, without its generator. Amounts must not be negative.

        Returns:
            The segment's wall time in ns (>= 0), or ``None`` when the segment needs the
            scheduler (a wake-up, a slice end or a run-queue wait): nothing was charged, use
            :meth:`run_mixed`.
        """
        if self.thread is None or self._active or self._resched:
            return None
        sched = self._sched
        left = sched._slice_ns - self._slice_used
        if left <= 0.0:
            return None
        rate = 1.0
        if work_ns > 0.0:
            holder = sched._holder
            for sibling in self._siblings:
                if holder[sibling] is not None:
                    rate = sched._smt_rate
                    break
        work_wall = work_ns / rate
        wall = stall_ns + work_wall
        if wall > left:
            return None
        self._slice_used += wall
        self.stall_ns += stall_ns
        self.cpu_ns += work_wall
        return wall

    def block_until(self, event: simpy.Event) -> ProcessGenerator:
        """Release the thread, wait for ``event``, wake up: ``yield from task.block_until(ev)``.

        On return the task holds a thread again (see the module docstring for the wake-up cost
        and placement). Returns the event's value; if the event fails its exception is raised
        and the task stays blocked, holding no thread.

        Raises:
            RuntimeError: another process of this task is inside ``run``/``block_until``.
        """
        return self._block_until(event)

    def sleep(self, duration_ns: float) -> ProcessGenerator:
        """Sleep on a timer: ``yield from task.sleep(ns)``; returns holding a thread again.

        Like ``block_until(env.timeout(duration_ns))``, except that the timer is armed on the
        thread the task leaves (as a Linux hrtimer is armed on the CPU that sets it): that
        thread's idle governor sees it as its next timer until it expires.

        Raises:
            ValueError: ``duration_ns`` is negative.
            RuntimeError: another process of this task is inside ``run``/``block_until``.
        """
        if not duration_ns >= 0.0:
            raise ValueError(f"task {self.name!r}: sleep must be >= 0 ns, got {duration_ns!r}")
        return self._timed_block(None, float(duration_ns))

    def wait(self, event: simpy.Event, timeout_ns: float) -> ProcessGenerator:
        """Block until ``event`` or for ``timeout_ns``, whichever comes first: ``yield from``.

        ``poll`` with a timeout: like :meth:`sleep`, the timer is armed on the thread the task
        leaves, where the idle governor sees it. Returns whether ``event`` has happened.

        Raises:
            ValueError: ``timeout_ns`` is negative.
            RuntimeError: another process of this task is inside ``run``/``block_until``.
        """
        if not timeout_ns >= 0.0:
            raise ValueError(f"task {self.name!r}: timeout must be >= 0 ns, got {timeout_ns!r}")
        return self._timed_block(event, float(timeout_ns))

    def wakes(self, wakee: Task, *, sync: bool = True) -> None:
        """Declare a wake-up of ``wakee`` by this task, which holds its thread.

        Call it just before triggering the event ``wakee`` is blocked on. ``sync``: this task
        is about to wait for ``wakee``'s answer (a socket message: Linux's ``WF_SYNC``); the
        wakee's thread is chosen now, while this task still holds its own, as
        ``try_to_wake_up`` does on the waker's CPU (module docstring, *Placement*), and
        reserved for the wakee. Otherwise (a semaphore post) only the waker's thread is
        recorded: a wake-up preemption sends a reschedule IPI when the wakee queues on another
        thread. No effect unless this task holds a thread and ``wakee`` is blocked in
        ``block_until``.
        """
        thread = self.thread
        if thread is None or not wakee._blocked or wakee._reserved is not None:
            return
        if not sync:
            wakee._waker_thread = thread
            return
        self._recent_thread = thread  # select_task_rq_fair: current->recent_used_cpu = cpu
        self._sched._place_sync(wakee, thread)

    def release(self) -> None:
        """Give up the thread without waiting (e.g. when the task's process ends).

        The thread takes the head of its run queue, or goes idle. No effect if the task holds no
        thread. The next ``run`` places the task like a wake-up.

        Raises:
            RuntimeError: a process of this task is inside ``run``/``block_until``.
        """
        if self._active:
            raise RuntimeError(f"task {self.name!r} cannot release its thread while it is in "
                               "run() or block_until()")
        self._leave_cpu("release")

    # -- process bodies -----------------------------------------------------------------------

    def _run(self, work_ns: float, smt_scaled: bool) -> ProcessGenerator:
        """Run the work in segments cut at slice ends, one timeout per segment.

        This is the hot path: the segment loop, the SMT rate and the accounting of a completed
        run are inlined here so a ``run`` costs one generator level and one timeout.
        """
        if self._active:
            raise self._busy_error()
        self._active = True
        try:
            if self.thread is None:
                yield from self._wake()
            sched = self._sched
            holder = sched._holder
            timeout = sched.env.wait
            fast_forward = sched.env.fast_forward
            while True:
                left = sched._slice_ns - self._slice_used
                if left <= 0.0 or self._resched:
                    yield from self._end_slice()
                    continue
                rate = 1.0
                if smt_scaled:
                    for sibling in self._siblings:
                        if holder[sibling] is not None:
                            rate = sched._smt_rate
                            break
                wall = work_ns / rate
                if wall <= left:
                    if wall > 0.0 and not fast_forward(wall):
                        self._segment_start = sched.env.now
                        yield timeout(wall)
                        self._segment_start = -1.0
                    self._slice_used += wall  # inlined _charge()
                    if smt_scaled:
                        self.cpu_ns += wall
                    else:
                        self.stall_ns += wall
                    return
                if not fast_forward(left):
                    self._segment_start = sched.env.now
                    yield timeout(left)
                    self._segment_start = -1.0
                self._charge(left, smt_scaled)
                work_ns -= left * rate
                if work_ns <= _EPS_NS:
                    return
        finally:
            self._active = False

    def _run_mixed(self, work_ns: float, stall_ns: float) -> ProcessGenerator:
        """:meth:`run_mixed`: segments cut at slice ends; within a segment stall goes first."""
        if self._active:
            raise self._busy_error()
        self._active = True
        try:
            if self.thread is None:
                yield from self._wake()
            sched = self._sched
            holder = sched._holder
            timeout = sched.env.wait
            fast_forward = sched.env.fast_forward
            while True:
                left = sched._slice_ns - self._slice_used
                if left <= 0.0 or self._resched:
                    yield from self._end_slice()
                    continue
                rate = 1.0
                for sibling in self._siblings:
                    if holder[sibling] is not None:
                        rate = sched._smt_rate
                        break
                work_wall = work_ns / rate
                wall = stall_ns + work_wall
                if wall <= left:
                    if not fast_forward(wall):
                        self._segment_start = sched.env.now
                        yield timeout(wall)
                        self._segment_start = -1.0
                    self._slice_used += wall
                    self.stall_ns += stall_ns
                    self.cpu_ns += work_wall
                    return
                if not fast_forward(left):
                    self._segment_start = sched.env.now
                    yield timeout(left)
                    self._segment_start = -1.0
                stalled = min(stall_ns, left)
                self._charge(stalled, False)
                stall_ns -= stalled
                if left > stalled:
                    self._charge(left - stalled, True)
                    work_ns -= (left - stalled) * rate
                if stall_ns <= _EPS_NS and work_ns <= _EPS_NS:
                    return
                stall_ns = max(stall_ns, 0.0)
                work_ns = max(work_ns, 0.0)
        finally:
            self._active = False

    def _block_until(self, event: simpy.Event,
                     waker_event: simpy.Event | None = None) -> ProcessGenerator:
        """Block until ``event``, then wake.

        The waker is remote when ``waker_event`` (default: ``event`` unless it is a timer) has
        triggered.
        """
        if self._active:
            raise self._busy_error()
        self._active = True
        try:
            self._leave_cpu("block")
            self._blocked = True
            try:
                value = yield event
            except BaseException:
                if self._reserved is not None:  # the thread its waker chose is not used
                    self._sched._unreserve(self)
                raise
            finally:
                self._blocked = False
            if waker_event is None:
                remote = not isinstance(event, simpy.Timeout)
            else:
                remote = waker_event.triggered
            yield from self._wake(remote)
        finally:
            self._active = False
        return value

    def _timed_block(self, event: simpy.Event | None, duration_ns: float) -> ProcessGenerator:
        """Block until ``event`` (if any) or a timer armed on the thread left, then wake."""
        sched = self._sched
        thread = self.thread
        deadline = sched.env.now + duration_ns
        if thread is not None:
            bisect.insort(sched._timers[thread], deadline)
        timer = sched.env.timeout(duration_ns)
        try:
            if event is None:
                yield from self._block_until(timer)
            else:
                yield from self._block_until(sched.env.any_of([event, timer]), event)
        finally:
            if thread is not None:
                sched._timers[thread].remove(deadline)
        return event is not None and event.triggered

    def _busy_error(self) -> RuntimeError:
        return RuntimeError(
            f"task {self.name!r} is already in run() or block_until() in another process; "
            "a task is driven by one process at a time"
        )

    def _charge(self, wall: float, smt_scaled: bool) -> None:
        self._slice_used += wall
        if smt_scaled:
            self.cpu_ns += wall
        else:
            self.stall_ns += wall

    def _end_slice(self) -> ProcessGenerator:
        """Slice used up, or a wake-up preemption asked for: yield to a task queued here.

        With nothing queued on this thread the task goes on (with a new slice if it was used up).
        """
        self._resched = False
        thread = self.thread
        assert thread is not None
        if not self._sched._rq[thread]:
            if self._slice_used >= self._sched._slice_ns:
                self._slice_used = 0.0
            return
        self.preemptions += 1
        self._leave_cpu("preempt")
        yield from self._wait_in_queue(thread)

    def _wake(self, remote_waker: bool = False) -> ProcessGenerator:
        """Become runnable: take an idle thread after the wake-up cost, or queue.

        ``remote_waker``: the wake-up comes from an event another task triggered, not from a
        timer or the task's own start; a waker declared with :meth:`wakes` says which thread.
        """
        sched = self._sched
        self.wakeups += 1
        if sched._cfs:  # place_entity: a sleeper gets at most the credit before the minimum
            floor = sched._min_vruntime - sched.config.sleeper_credit_ns
            own = self.vruntime_ns
            if own < floor:
                self._vruntime_offset += floor - own
        reserved = self._reserved
        waker_thread, self._waker_thread = self._waker_thread, None
        switch = False
        if reserved is not None:  # placed by its waker (wakes)
            self._reserved = None
            thread, cost = reserved
        else:
            sync = self._sync_target is not None
            thread, cost, how = sched._place(self)
            if how == _QUEUE:
                if sync:  # queued on the waker's own thread
                    remote_waker = False
                elif waker_thread is not None:
                    remote_waker = waker_thread != thread
                sched._check_preempt_wakeup(self, thread, remote_waker)
                yield from self._wait_in_queue(thread)
                return
            switch = how == _SWITCH
            sched._occupy(thread, self)
        if cost > 0.0 and not sched.env.fast_forward(cost):
            yield sched.env.wait(cost)
        if switch:  # queued behind its waker on the waker's thread
            self.context_switches += 1
            self.context_switch_ns += cost
        else:
            self.wakeup_ns += cost
        self._start_on_cpu()

    def _wait_in_queue(self, thread: int) -> ProcessGenerator:
        """Wait in ``thread``'s run queue for a thread, then pay the context switch on it.

        A task pulled to an idle thread by load balancing also pays that thread's idle exit
        (counted as wake-up time).
        """
        sched = self._sched
        env = sched.env
        queued_at = env.now
        grant = env.event()
        self._grant = grant
        sched._enqueue(self, thread)
        yield grant  # triggered at the end of the context switch (CpuScheduler._dispatch)
        self.runqueue_wait_ns += self._granted_at - queued_at
        self.context_switches += 1
        self.context_switch_ns += sched.config.context_switch_ns
        self.wakeup_ns += self._grant_extra
        self._grant_extra = 0.0
        self._start_on_cpu()

    # -- thread bookkeeping -------------------------------------------------------------------

    def _start_on_cpu(self) -> None:
        """The task begins executing on its (already held) thread: new slice, migration check."""
        sched = self._sched
        thread, core = self.location()
        self._slice_used = 0.0
        self._resched = False
        self._last_thread = thread
        old_core = self.last_core
        self.last_core = core
        if sched.trace:
            sched._record(self, "on_cpu")
        if old_core is not None and old_core != core:
            self.migrations += 1
            sched.stats.migrations += 1
            if sched.on_migrate is not None:
                sched.on_migrate(self, old_core, core)

    def _leave_cpu(self, event: str) -> None:
        """Give the thread to the run-queue head, or make it idle."""
        thread = self.thread
        if thread is None:
            return
        sched = self._sched
        if sched.trace:
            sched._record(self, event)
        self.thread = None
        self.core = None
        sched._free(thread)


class CpuScheduler:
    """Hardware threads of a machine and their run queues (see the module docstring).

    Args:
        env: the simulation environment.
        topology: the machine's hardware threads and cores.
        config: time slice, context-switch, wake-up and IPI costs, SMT throughput.
        virtualized: the machine is a VM, so an IPI that wakes an idle thread costs ``ipi_exit_ns``.
        idle: the machine's idle states and governor (``None``: only polling, no exit latency).
        trace: record every scheduling transition in ``env.recorder`` (table ``"scheduler"``).

    Attributes:
        on_migrate: optional ``hook(task, old_core, new_core)`` called when a task starts running
            on another core than the one it last ran on.
        on_private_flush: optional ``hook(core)`` called when a core enters a core-level idle
            state, which flushes its private caches.
        wakeup_cost_ns: cost of waking a task on an idle thread, before the idle state's exit.
        stats: machine-wide idle-exit, IPI, flush and migration counts since the start.
    """

    def __init__(
        self,
        env: SimEnvironment,
        topology: Topology,
        config: SchedulerConfig,
        virtualized: bool,
        *,
        idle: IdleConfig | None = None,
        trace: bool = False,
    ) -> None:
        self.env = env
        self.topology = topology
        self.config = config
        self.virtualized = virtualized
        self.trace = trace
        self.on_migrate: MigrateHook | None = None
        self.idle = idle
        self.wakeup_cost_ns = config.wakeup_ns
        self.on_private_flush: FlushHook | None = None
        self.stats = SchedulerStats()
        self._wake_ipi = idle.wake == "hlt" if idle is not None else virtualized
        self._ipi_ns = config.ipi_exit_ns if virtualized else 0.0
        self._idle_states: tuple[IdleStateConfig, ...] = (
            (POLL, *idle.states) if idle is not None else (POLL,))
        self._menu = idle is not None and idle.governor == "menu" and len(self._idle_states) > 1
        self._timer_horizon_ns = (idle.timer_horizon_ns if idle is not None
                                  else DEFAULT_IDLE_TIMER_HORIZON_NS)
        self._smt_rate = config.smt_throughput / 2.0
        self._slice_ns = config.time_slice_ns
        n = topology.n_threads
        self._thread_core = [topology.core_of(t) for t in range(n)]
        self._core_domain = [topology.domain_of_core(c) for c in range(topology.n_cores)]
        self._siblings = [topology.siblings(t) for t in range(n)]
        self._thread_domain = [self._core_domain[core] for core in self._thread_core]
        self._llc_order: list[list[int]] = [[] for _ in range(topology.n_domains)]
        """Per LLC domain, its threads in Linux's CPU numbering (first threads of every core,
        then the second ones: ``(SMT index, core)`` order), the order of its idle scans."""
        for thread in sorted(range(n), key=lambda t: (t - topology.threads_of_core(
                self._thread_core[t]).start, self._thread_core[t])):
            self._llc_order[self._thread_domain[thread]].append(thread)
        self._llc_position = [0] * n
        for order in self._llc_order:
            for position, thread in enumerate(order):
                self._llc_position[thread] = position
        self._holder: list[Task | None] = [None] * n
        self._busy_acc = [0.0] * n
        self._busy_since = [0.0] * n
        self._idle_threads = list(range(n))
        self._core_busy = [0] * topology.n_cores
        self._idle_cores: list[list[int]] = [[] for _ in range(topology.n_domains)]
        for core, domain in enumerate(self._core_domain):
            self._idle_cores[domain].append(core)
        self._per_cpu = config.run_queues == "per_cpu"
        shared: list[tuple[float, int, Task]] = []
        self._rq: list[list[tuple[float, int, Task]]] = (
            [[] for _ in range(n)] if self._per_cpu else [shared] * n)
        """Per thread, its run queue: a heap of (virtual runtime, or 0 under fifo; arrival
        number; task). Under ``global`` every thread holds the same list."""
        self._queued = 0
        self._avg_idle_ns = [2.0 * config.migration_cost_ns] * n
        """Per thread, Linux's ``rq->avg_idle``: the running average of its idle periods."""
        self._balance_pending = False
        self._cfs = config.policy == "cfs"
        self._arrivals = 0
        self._min_vruntime = 0.0
        self._tasks: list[Task] = []
        self._timers: list[list[float]] = [[] for _ in range(n)]
        """Per thread, the deadlines of the timers armed there (sorted)."""
        self._governors = [MenuGovernor(self._timer_horizon_ns) for _ in range(n)]
        self._idle_since = [0.0] * n
        self._idle_choice = [self._choose_idle_state(t) for t in range(n)]
        self._core_entered = [self._core_scope_idle(c) for c in range(topology.n_cores)]
        """Per core, whether it sits in a core-level idle state (every thread asked for one)."""

    @classmethod
    def from_machine(
        cls, env: SimEnvironment, machine: MachineConfig, *, trace: bool = False
    ) -> CpuScheduler:
        """The scheduler of a machine: topology, scheduler costs, virtualization, idle states."""
        return cls(env, Topology.from_config(machine), machine.scheduler, machine.virtualized,
                   idle=machine.idle, trace=trace)

    # -- public API ---------------------------------------------------------------------------

    def new_task(self, name: str) -> Task:
        """Create a task, initially blocked (holding no thread)."""
        task = Task(self, name)
        self._tasks.append(task)
        return task

    def close(self) -> None:
        """Forget every task (tasks and the scheduler refer to each other) once the run is over.

        Part of tearing a finished simulation down (:meth:`SimEnvironment.close`); the
        scheduler cannot be used afterwards.
        """
        for task in self._tasks:
            task._grant = None
        self._tasks.clear()
        for queue in self._rq:
            queue.clear()
        self._queued = 0
        self._holder = [None] * len(self._holder)

    @property
    def tasks(self) -> tuple[Task, ...]:
        """All tasks created, in creation order."""
        return tuple(self._tasks)

    @property
    def min_vruntime_ns(self) -> float:
        """The run queue's minimum virtual runtime (``cfs``: sleepers are placed against it)."""
        return self._min_vruntime

    @property
    def run_queue_length(self) -> int:
        """Number of runnable tasks waiting for a thread, in all run queues."""
        return self._queued

    def queue_length(self, thread: int) -> int:
        """Number of runnable tasks waiting in ``thread``'s run queue (all of them, ``global``)."""
        return len(self._rq[thread])

    @property
    def n_idle_threads(self) -> int:
        """Number of hardware threads no task holds."""
        return len(self._idle_threads)

    def holder(self, thread: int) -> Task | None:
        """The task holding a hardware thread, or ``None`` if it is idle."""
        return self._holder[thread]

    def busy_ns(self, thread: int) -> float:
        """Time a hardware thread has been busy since the start, up to now."""
        busy = self._busy_acc[thread]
        if self._holder[thread] is not None:
            busy += self.env.now - self._busy_since[thread]
        return busy

    def busy_array(self) -> npt.NDArray[np.float64]:
        """:meth:`busy_ns` of every hardware thread."""
        return np.array([self.busy_ns(t) for t in range(len(self._holder))], dtype=np.float64)

    def snapshot(self) -> BusySnapshot:
        """Busy times now, to measure utilisation over a later window (e.g. after warm-up)."""
        return BusySnapshot(float(self.env.now), tuple(self.busy_array().tolist()))

    def utilisation(self, since: BusySnapshot | None = None) -> float:
        """Mean fraction of time the hardware threads were busy, from ``since`` (or 0) to now.

        Busy includes wake-up and context-switch costs. Returns 0.0 over an empty window.

        Args:
            since: a :meth:`snapshot` taken at the start of the window (e.g. after warm-up);
                ``None`` measures from time 0.
        """
        start, base = (0.0, 0.0) if since is None else (since.time_ns, sum(since.busy_ns))
        window = (self.env.now - start) * len(self._holder)
        if window <= 0.0:
            return 0.0
        return (float(self.busy_array().sum()) - base) / window

    # -- internals used by Task ---------------------------------------------------------------

    def _place(self, task: Task) -> tuple[int, float, int]:
        """Thread, cost and how (``_WAKE``, ``_SWITCH``, ``_QUEUE``) for an unreserved wake-up.

        A timer or an unknown waker: ``select_idle_sibling`` with its previous thread as the
        target. A synchronous wake-up whose waker found no idle thread in its LLC: the waker's
        thread if the waker has just given it up (the wakee was queued behind it there: a
        context switch, no idle exit). Failing those, with per-CPU run queues the task joins the
        target's queue (the waker's thread, else the previous one; a first placement: the
        shortest queue), where load balancing may move it; with one global queue any idle
        thread of the machine (lowest fully idle core, of the previous LLC first) takes it, else
        the queue. A first placement takes the lowest fully idle core, else an idle thread.
        """
        target = task._sync_target
        task._sync_target = None
        previous = task._last_thread
        if target is not None:
            if self._holder[target] is None and self._idle_since[target] == self.env.now:
                return target, self.config.context_switch_ns, _SWITCH  # it never idled
            thread = None
        elif previous is not None and self._idle_threads:
            thread = self._select_idle_sibling(task, previous, previous)
        else:
            thread = None
        if thread is None:
            home = target if target is not None else previous
            if self._per_cpu and home is not None:
                return home, 0.0, _QUEUE
            if not self._idle_threads:
                return self._shortest_queue(), 0.0, _QUEUE
            core = self._idle_core(previous)
            thread = (self.topology.threads_of_core(core).start if core is not None
                      else self._idle_threads[0])
        return thread, self.wakeup_cost_ns + self._leave_idle(thread), _WAKE

    def _place_sync(self, wakee: Task, waker_thread: int) -> None:
        """A synchronous wake-up by the task on ``waker_thread``: reserve the wakee's thread.

        ``wake_affine`` makes the waker's thread the target (a sync wake-up with one task
        running there); ``select_idle_sibling`` then searches the target's LLC. With no idle
        thread there the wakee waits for the waker's thread (:meth:`_place`).
        """
        thread = (self._select_idle_sibling(wakee, wakee._last_thread, waker_thread)
                  if self._idle_threads else None)
        if thread is None:
            wakee._sync_target = waker_thread
            return
        cost = self.wakeup_cost_ns + self._leave_idle(thread)
        self._occupy(thread, wakee)
        wakee._reserved = (thread, cost)

    def _unreserve(self, task: Task) -> None:
        """Give back the thread a waker reserved for ``task`` (its wait failed)."""
        assert task._reserved is not None
        thread = task._reserved[0]
        task._reserved = None
        task.thread = None
        task.core = None
        self._free(thread)

    def _select_idle_sibling(self, task: Task, previous: int | None, target: int) -> int | None:
        """Linux 5.8's ``select_idle_sibling``: an idle thread in ``target``'s LLC, or ``None``.

        In order: the target; the previous thread; the task's recently used thread (which then
        becomes the previous one); the first thread of a fully idle core, scanning the LLC in
        Linux's CPU numbering from the target (``select_idle_core``); the first idle thread
        after the target (``select_idle_cpu``, not bounded here by ``SIS_PROP``).
        """
        holder = self._holder
        if holder[target] is None:
            return target
        domain = self._thread_domain[target]
        thread_domain = self._thread_domain
        if (previous is not None and previous != target and thread_domain[previous] == domain
                and holder[previous] is None):
            return previous
        recent = task._recent_thread
        if (recent is not None and recent != previous and recent != target
                and thread_domain[recent] == domain and holder[recent] is None):
            task._recent_thread = previous
            return recent
        order = self._llc_order[domain]
        start = self._llc_position[target]
        n = len(order)
        if self._idle_cores[domain]:
            core_busy = self._core_busy
            thread_core = self._thread_core
            for i in range(n):
                thread = order[(start + i) % n]
                if core_busy[thread_core[thread]] == 0:
                    return thread
        for i in range(1, n):
            thread = order[(start + i) % n]
            if holder[thread] is None:
                return thread
        return None

    def _idle_core(self, previous: int | None) -> int | None:
        """Lowest fully idle core, of the previous thread's domain first."""
        if previous is not None:
            local = self._idle_cores[self._core_domain[self._thread_core[previous]]]
            if local:
                return local[0]
        for cores in self._idle_cores:
            if cores:
                return cores[0]
        return None

    def _shortest_queue(self) -> int:
        """The thread with the fewest waiting tasks (the lowest on a tie)."""
        if not self._per_cpu:
            return 0
        lengths = [len(queue) for queue in self._rq]
        return lengths.index(min(lengths))

    def _enqueue(self, task: Task, thread: int) -> None:
        """A runnable task without a thread joins ``thread``'s run queue (policy order)."""
        self._arrivals += 1
        key = task.vruntime_ns if self._cfs else 0.0
        heapq.heappush(self._rq[thread], (key, self._arrivals, task))
        self._queued += 1
        if self._per_cpu and self._idle_threads:
            self._schedule_balance()

    def _schedule_balance(self) -> None:
        """Arm the periodic balancing at the next tick (a multiple of the balance interval).

        A busy CPU with queued tasks kicks the idle CPUs' balancing from its tick.
        """
        if self._balance_pending:
            return
        self._balance_pending = True
        interval = self.config.balance_interval_ns
        delay = interval - self.env.now % interval
        self.env.timeout(delay if delay > 0.0 else interval).callbacks.append(
            self._periodic_balance)

    def _check_preempt_wakeup(self, wakee: Task, thread: int, remote_waker: bool) -> None:
        """``check_preempt_wakeup``: a task queued on ``thread`` may preempt its holder.

        It does (``cfs``, per-CPU queues) when it has used more than ``wakeup_granularity_ns``
        less virtual runtime than the holder.
        The holder yields the thread at the start of its next run segment (Linux preempts at
        the next preemption point); a reschedule IPI is counted when ``remote_waker`` (the
        waker runs on another thread; ``resched_curr`` on the local thread sends none). Its
        cost is not charged.
        """
        if not (self._per_cpu and self._cfs):
            return
        holder = self._holder[thread]
        if holder is None or holder._resched:
            return
        current = holder.vruntime_ns  # update_curr: with the part of its segment run so far
        if holder._segment_start >= 0.0:
            current += self.env.now - holder._segment_start
        if current - wakee.vruntime_ns > self.config.wakeup_granularity_ns:
            holder._resched = True
            self.stats.wakeup_preemptions += 1
            if remote_waker:
                self.stats.ipis += 1

    def _busiest(self, thread: int) -> int | None:
        """``find_busiest_queue``: the longest non-empty run queue's thread, or ``None``.

        In ``thread``'s LLC first, then in the machine; the lowest thread on a tie.
        """
        queues = self._rq
        best = None
        best_length = 0
        for candidate in self._llc_order[self._thread_domain[thread]]:
            length = len(queues[candidate])
            if length > best_length:
                best, best_length = candidate, length
        if best is not None:
            return best
        for candidate, queue in enumerate(queues):
            if len(queue) > best_length:
                best, best_length = candidate, len(queue)
        return best

    def _dispatch(self, thread: int, queue: list[tuple[float, int, Task]],
                  extra_ns: float = 0.0) -> None:
        """Give ``thread`` (held, or just occupied) to the head of ``queue``.

        The task runs once the context switch and ``extra_ns`` (an idle exit) are paid.
        """
        key, _, task = heapq.heappop(queue)
        self._queued -= 1
        if key > self._min_vruntime:
            self._min_vruntime = key
        self._assign(thread, task)
        grant = task._grant
        task._grant = None
        assert grant is not None, "queued task without a grant event"
        task._granted_at = self.env.now
        task._grant_extra = extra_ns
        # The thread is the task's from now; it runs once the switch is paid.
        self.env.succeed_after(grant, self.config.context_switch_ns + extra_ns)

    def _periodic_balance(self, _event: object = None) -> None:
        """Periodic (idle) balancing at the tick: idle threads pull queued tasks.

        Each idle thread, lowest first, pulls the head of the busiest run queue (of its LLC
        first); the task pays the thread's idle exit on top of the context switch.
        """
        self._balance_pending = False
        for thread in list(self._idle_threads):
            if not self._queued:
                return
            source = self._busiest(thread)
            if source is None:
                return
            self.stats.balance_pulls += 1
            self._occupy(thread, None)
            self._dispatch(thread, self._rq[source], self._leave_idle(thread))

    def _occupy(self, thread: int, task: Task | None) -> None:
        """An idle thread becomes held by ``task`` (``None``: by a task dispatched next)."""
        if task is not None:
            self._assign(thread, task)
        self._busy_since[thread] = self.env.now
        self._idle_threads.remove(thread)
        core = self._thread_core[thread]
        if self._core_busy[core] == 0:
            self._idle_cores[self._core_domain[core]].remove(core)
        self._core_busy[core] += 1

    def _free(self, thread: int) -> None:
        """A thread was given up: it takes the head of its run queue, pulls one, or idles.

        With per-CPU queues and none waiting there, it pulls the head of the busiest queue
        (``newidle_balance``) when its average idle period reaches ``migration_cost_ns``.
        """
        queue = self._rq[thread]
        if queue:
            self._dispatch(thread, queue)
            return
        if self._queued and self._per_cpu:
            if self._avg_idle_ns[thread] >= self.config.migration_cost_ns:
                source = self._busiest(thread)
                if source is not None:
                    self.stats.newidle_pulls += 1
                    self._dispatch(thread, self._rq[source])
                    return
            self._schedule_balance()
        self._holder[thread] = None
        self._busy_acc[thread] += self.env.now - self._busy_since[thread]
        self._enter_idle(thread)
        bisect.insort(self._idle_threads, thread)
        core = self._thread_core[thread]
        self._core_busy[core] -= 1
        if self._core_busy[core] == 0:
            bisect.insort(self._idle_cores[self._core_domain[core]], core)

    def _choose_idle_state(self, thread: int) -> int:
        """Index in the state table (0 = polling) of the state an idle thread enters now."""
        if self._menu:
            timers = self._timers[thread]
            now = self.env.now
            next_timer = timers[0] - now if timers else self._timer_horizon_ns
            return self._governors[thread].select(self._idle_states, max(next_timer, 0.0))
        return 1 if len(self._idle_states) > 1 else 0

    def _core_scope_idle(self, core: int) -> bool:
        """Whether every thread of ``core`` is idle and chose a core-level state."""
        states = self._idle_states
        choice = self._idle_choice
        holder = self._holder
        return all(holder[t] is None and states[choice[t]].core_scope
                   for t in self.topology.threads_of_core(core))

    def _enter_idle(self, thread: int) -> None:
        """``thread`` goes idle: the governor picks its state; a core may enter a deep state."""
        self._idle_since[thread] = self.env.now
        choice = self._choose_idle_state(thread)
        self._idle_choice[thread] = choice
        if self._idle_states[choice].core_scope:
            core = self._thread_core[thread]
            if not self._core_entered[core] and self._core_scope_idle(core):
                self._core_entered[core] = True
                self.stats.private_flushes += 1
                if self.on_private_flush is not None:
                    self.on_private_flush(core)

    def _leave_idle(self, thread: int) -> float:
        """An idle ``thread`` is woken for a task: the extra wake-up cost, in ns.

        The exit latency of the state it is woken from, and on a virtualized machine the
        hypervisor's cost of the IPI that wakes a halted vCPU. Updates the governor and the
        counters; a core in a core-level state leaves it.
        """
        core = self._thread_core[thread]
        chosen = self._idle_choice[thread]
        states = self._idle_states
        idle_ns = self.env.now - self._idle_since[thread]
        if self._menu:
            self._governors[thread].reflect(idle_ns)
        max_avg = 2.0 * self.config.migration_cost_ns  # update_avg of rq->avg_idle, capped
        average = self._avg_idle_ns[thread]
        self._avg_idle_ns[thread] = (max_avg if idle_ns > max_avg
                                     else average + (idle_ns - average) / 8.0)
        index = wake_state(states, chosen, self._core_entered[core])
        self._core_entered[core] = False
        stats = self.stats
        latency = states[index].wake_latency_ns
        stats.idle_exits += 1
        stats.idle_exit_ns += latency
        stats.exits_by_state[states[index].name] = stats.exits_by_state.get(
            states[index].name, 0) + 1
        if self._wake_ipi and (index or self.idle is None):  # a polling thread needs no IPI
            stats.ipis += 1
            latency += self._ipi_ns
        if self.trace:
            self.env.recorder.record(
                IDLE_TRACE_TABLE, time_ns=float(self.env.now), thread=thread, core=core,
                state=states[index].name, idle_ns=float(idle_ns),
                exit_latency_ns=float(latency))
        return latency

    def _assign(self, thread: int, task: Task) -> None:
        """``task`` now holds ``thread``."""
        self._holder[thread] = task
        task.thread = thread
        task.core = self._thread_core[thread]
        task._siblings = self._siblings[thread]

    def _record(self, task: Task, event: str) -> None:
        self.env.recorder.record(
            TRACE_TABLE,
            time_ns=float(self.env.now),
            task=task.name,
            thread=task.thread,
            core=task.core,
            event=event,
        )
