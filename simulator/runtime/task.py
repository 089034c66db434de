"""A task: a process or a client thread that the CPU scheduler runs on hardware threads.

A :class:`Task` (for example a PostgreSQL backend or its pgbench client) is driven by one SimPy
process at a time: it spends CPU time with ``yield from task.run(ns)`` (segments cut at slice
ends, sharing an SMT core at the configured throughput) and sleeps with ``yield from
task.block_until(event)``, ``sleep`` or ``wait``. The task does its own per-task accounting
(run, stall, run-queue, wake-up and context-switch time) and its side of a wake-up (sleeper
placement of its virtual runtime, waiting in a run queue, the migration check); where it runs
and what the hardware threads do is decided by its scheduler,
:class:`simulator.runtime.scheduler.CpuScheduler`, which it sees through
:class:`TaskScheduler` (so this module does not import the scheduler's). Left out: SimPy
``Interrupt`` inside ``run``/``block_until``. The model: ``docs/scheduler.md``.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from typing import Protocol

import simpy

from simulator.config.machine import SchedulerConfig
from simulator.runtime.engine import ProcessGenerator, SimEnvironment
from simulator.runtime.scheduler_stats import SchedulerStats
from simulator.runtime.working_set import WorkingSet, WorkingSets

__all__ = ["IN_RUN_QUEUE", "ON_IDLE_THREAD", "ON_WAKER_THREAD", "MigrateHook", "Task",
           "TaskScheduler"]

MigrateHook = Callable[["Task", int, int], None]
"""``on_migrate(task, old_core, new_core)``: called when a task starts running on a new core."""

_EPS_NS = 1e-9
"""Work below this many ns left after a slice boundary is rounding noise, not another segment."""

ON_IDLE_THREAD, ON_WAKER_THREAD, IN_RUN_QUEUE = 0, 1, 2
"""How a waking task gets a thread (:meth:`TaskScheduler._place`): an idle thread after the
wake-up cost, its waker's just-freed thread after a context switch, or a run queue."""


class TaskScheduler(Protocol):
    """What a :class:`Task` uses of its scheduler (``CpuScheduler``).

    The per-thread state a running task reads on its hot path, and the scheduler's operations
    a task's wake-up, block and preemption call. The underscored members are shared on purpose:
    they are the scheduler's internals, which its tasks (and only they) read and call directly,
    a "friend" interface kept to attribute reads for the segment loop's speed; the underscore
    keeps them out of the scheduler's public API, which models and tools use. mypy checks
    ``CpuScheduler`` against this list.
    """

    env: SimEnvironment
    config: SchedulerConfig
    trace: bool
    stats: SchedulerStats
    on_migrate: MigrateHook | None
    working_sets: WorkingSets | None
    _holder: list[Task | None]
    _slice_ns: float
    _smt_rate: float
    _smt_rate_high_ipc: float
    _cfs: bool
    _min_vruntime: float
    _rq: list[list[tuple[float, int, Task]]]
    _timers: list[list[float]]

    def _place(self, task: Task) -> tuple[int, float, int]: ...
    def _place_sync(self, wakee: Task, waker_thread: int) -> None: ...
    def _unreserve(self, task: Task) -> None: ...
    def _check_preempt_wakeup(self, wakee: Task, thread: int, remote_waker: bool) -> None: ...
    def _occupy(self, thread: int, task: Task | None) -> None: ...
    def _enqueue(self, task: Task, thread: int) -> None: ...
    def _free(self, thread: int) -> None: ...
    def _record(self, task: Task, event: str) -> None: ...


class Task:
    """A schedulable entity (a process or a client thread) driven by one SimPy process at a time.

    Create tasks with :meth:`CpuScheduler.new_task`. A task starts blocked, holding no thread.

    Attributes:
        name: label used in traces.
        busy: the task runs most of the time (a closed-loop client and its server), so Linux's
            load balancer, which evens runnable tasks between LLC domains, has spread it: its
            first placement takes the LLC domain with the most idle threads. A task that mostly
            sleeps is never queued where the balancer could take it and stays on its parent's
            node, where it was forked (the lowest idle core).
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
        refill_ns: time spent refilling its private working set before running (a cold start
            after a migration, a flush of its core or other tasks' lines: ``set_working_set``).
        refills: cold starts that paid a refill.
    """

    __slots__ = (
        "_active",
        "_blocked",
        "_grant",
        "_grant_extra",
        "_granted_at",
        "_last_thread",
        "_left_ns",
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
        "_working_set",
        "busy",
        "context_switch_ns",
        "context_switches",
        "core",
        "cpu_ns",
        "last_core",
        "migrations",
        "name",
        "preemptions",
        "refill_ns",
        "refills",
        "runqueue_wait_ns",
        "stall_ns",
        "thread",
        "wakeup_ns",
        "wakeups",
    )

    def __init__(self, scheduler: TaskScheduler, name: str, busy: bool = False) -> None:
        self._sched = scheduler
        self.name = name
        self.busy = busy
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
        self._working_set: WorkingSet | None = None
        self._left_ns = -1e18  # when it last left a CPU (balancing's cache-hotness test)
        self.refill_ns = 0.0
        self.refills = 0

    def __repr__(self) -> str:
        return f"Task({self.name!r}, thread={self.thread})"

    @property
    def scheduling_ns(self) -> float:
        """Time spent on scheduling so far: run-queue waits, wake-ups, switches, refills.

        Refills of the private working set are the indirect cost of a switch or a migration.
        The part of the task's elapsed time that is neither running its work nor blocked; a
        model charges its growth over a step to the step's scheduling cost.
        """
        return self.runqueue_wait_ns + self.wakeup_ns + self.context_switch_ns + self.refill_ns

    @property
    def vruntime_ns(self) -> float:
        """Virtual runtime: on-CPU time used, shifted by sleeper placement (``cfs`` policy)."""
        return self.cpu_ns + self.stall_ns + self.refill_ns + self._vruntime_offset

    @property
    def working_set_lines(self) -> int:
        """Size of the task's working set in lines, its program's code included (0: none)."""
        block = self._working_set
        if block is None:
            return 0
        return block.lines + (0 if block.code is None else block.code.lines)

    def set_working_set(self, lines: int, *, program: str | None = None,
                        code_lines: int = 0, warm_start: bool = False,
                        streaming: bool = False) -> None:
        """Give the task a private working set of ``lines`` cache lines and its program's code.

        Each time the task starts running on a CPU it first refills the lines its core's
        private caches lost since it last ran (:mod:`simulator.runtime.working_set`), as
        on-CPU time counted in :attr:`refill_ns`. ``program`` names the read-only code of
        ``code_lines`` lines that every task of the same program shares (none: no code block).
        ``warm_start``: its first run finds both whole on its core (a busy process that ran
        before the simulated window). ``streaming``: the private lines are walked in address
        order (an array), refilled at the machine's ``mlp.stream``. Nothing (the default) is no
        working set. Set it before the task first runs.

        Raises:
            ValueError: a negative or non-integer size, or a program's code with another size.
            RuntimeError: the task has already run, or its scheduler models no working sets.
        """
        for name, value in (("lines", lines), ("code_lines", code_lines)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"task {self.name!r}: {name} must be a non-negative number of "
                                 f"lines, got {value!r}")
        if self.last_core is not None:
            raise RuntimeError(f"task {self.name!r}: set its working set before it first runs")
        program = program if code_lines else None
        if not (lines or program):
            self._working_set = None
            return
        working_sets = self._sched.working_sets
        if working_sets is None:
            raise RuntimeError(f"task {self.name!r}: its scheduler models no working sets (build "
                               "it with CpuScheduler.from_machine)")
        code = None if program is None else working_sets.shared(program, code_lines)
        self._working_set = working_sets.new(lines, code, warm_start, streaming)

    @property
    def smt_rates(self) -> tuple[float, float]:
        """The rates of ordinary and of high-IPC work while the SMT sibling is busy (of 1)."""
        return self._sched._smt_rate, self._sched._smt_rate_high_ipc

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
        if smt_scaled:
            return self._segments(float(work_ns), 0.0)
        return self._segments(0.0, float(work_ns))

    def run_mixed(self, work_ns: float, stall_ns: float,
                  high_ipc_ns: float = 0.0) -> ProcessGenerator:
        """Execute work and memory stalls together, as one segment: ``yield from``.

        The same as ``run(work_ns)`` followed by ``run(stall_ns, smt_scaled=False)`` except that
        it takes one timeout (the SMT rates are sampled once, at its start) and, when a slice
        ends inside it, the stall is consumed before the work. ``high_ipc_ns``: work of code
        that alone issues near the core's width (a tight loop), stretched by a busy sibling at
        the scheduler's ``smt_throughput_high_ipc``; a slice end consumes both kinds of work in
        proportion.

        Raises:
            ValueError: a negative amount.
        """
        if not (work_ns >= 0.0 and stall_ns >= 0.0 and high_ipc_ns >= 0.0):
            raise ValueError(f"task {self.name!r}: work and stall must be >= 0 ns, got "
                             f"{work_ns!r}, {high_ipc_ns!r} and {stall_ns!r}")
        return self._segments(float(work_ns), float(stall_ns), float(high_ipc_ns))

    def start_segment(self, work_ns: float, stall_ns: float,
                      high_ipc_ns: float = 0.0) -> float | None:
        """The fast path of :meth:`run_mixed`: start a segment that needs no scheduling.

        When the task holds its thread, no process of it is inside ``run``/``block_until``,
        and the work (at the SMT rates sampled now) and the stall fit in what is left of its
        slice, the segment is charged now and its wall time returned: the caller waits that
        long (one ``env.timeout``, none if 0), exactly as ``yield from task.run_mixed(work_ns,
        stall_ns, high_ipc_ns)`` would, without its generator. Amounts must not be negative.

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
        rate = high_rate = 1.0
        if work_ns > 0.0 or high_ipc_ns > 0.0:
            holder = sched._holder
            for sibling in self._siblings:
                if holder[sibling] is not None:
                    rate = sched._smt_rate
                    high_rate = sched._smt_rate_high_ipc
                    break
        work_wall = work_ns / rate
        if high_ipc_ns:
            work_wall += high_ipc_ns / high_rate
        wall = stall_ns + work_wall
        if wall > left:
            return None
        self._slice_used += wall
        self.stall_ns += stall_ns
        self.cpu_ns += work_wall
        return wall

    def block_until(self, event: simpy.Event) -> ProcessGenerator:
        """Release the thread, wait for ``event``, wake up: ``yield from task.block_until(ev)``.

        On return the task holds a thread again (the wake-up cost and placement:
        ``docs/scheduler.md``). Returns the event's value; if the event fails its exception is
        raised and the task stays blocked, holding no thread.

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
        ``try_to_wake_up`` does on the waker's CPU (``docs/scheduler.md``, *Placement*), and
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

    def _segments(self, work_ns: float, stall_ns: float,
                  high_ipc_ns: float = 0.0) -> ProcessGenerator:
        """:meth:`run` and :meth:`run_mixed`: segments cut at slice ends, one timeout each.

        The one generator loop: every ``run`` (a client's round trip, a kernel thread's burst,
        ``run(0)`` to get a thread) and the segments :meth:`start_segment` leaves to the
        scheduler (a wake-up, a slice end, a run-queue wait). A segment's rule is
        :meth:`start_segment`'s, which keeps its own copy for the hot path (no generator): the
        work runs at the SMT rate sampled at the segment's start, the stall at full rate, and
        when a slice ends inside the segment the stall is consumed before the work.
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
                rate = high_rate = 1.0
                if work_ns > 0.0 or high_ipc_ns > 0.0:
                    for sibling in self._siblings:
                        if holder[sibling] is not None:
                            rate = sched._smt_rate
                            high_rate = sched._smt_rate_high_ipc
                            break
                work_wall = work_ns / rate
                if high_ipc_ns:
                    work_wall += high_ipc_ns / high_rate
                wall = stall_ns + work_wall
                if wall <= left:
                    if wall > 0.0 and not fast_forward(wall):  # run(0): only get a thread
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
                    if high_ipc_ns:  # both kinds of work in proportion to their wall time
                        done = (left - stalled) / work_wall
                        work_ns -= work_ns * done
                        high_ipc_ns -= high_ipc_ns * done
                    else:
                        work_ns -= (left - stalled) * rate
                if stall_ns <= _EPS_NS and work_ns <= _EPS_NS and high_ipc_ns <= _EPS_NS:
                    return
                stall_ns = max(stall_ns, 0.0)
                work_ns = max(work_ns, 0.0)
                high_ipc_ns = max(high_ipc_ns, 0.0)
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
            if how == IN_RUN_QUEUE:
                if sync:  # queued on the waker's own thread
                    remote_waker = False
                elif waker_thread is not None:
                    remote_waker = waker_thread != thread
                sched._check_preempt_wakeup(self, thread, remote_waker)
                yield from self._wait_in_queue(thread)
                return
            switch = how == ON_WAKER_THREAD
            sched._occupy(thread, self)
        if cost > 0.0 and not sched.env.fast_forward(cost):
            yield sched.env.wait(cost)
        if switch:  # queued behind its waker on the waker's thread
            self.context_switches += 1
            self.context_switch_ns += cost
        else:
            self.wakeup_ns += cost
        refill = self._start_on_cpu()
        if refill > 0.0:
            yield from self._refill(refill)

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
        refill = self._start_on_cpu()
        if refill > 0.0:
            yield from self._refill(refill)

    def _refill(self, refill_ns: float) -> ProcessGenerator:
        """Refill the private working set on the thread just taken: on-CPU time before work.

        Counted in the slice (a slice end inside it is noticed at the next run segment).
        """
        sched = self._sched
        self.refills += 1
        self.refill_ns += refill_ns
        self._slice_used += refill_ns
        stats = sched.stats
        stats.refills += 1
        stats.refill_ns += refill_ns
        if not sched.env.fast_forward(refill_ns):
            yield sched.env.wait(refill_ns)

    # -- thread bookkeeping -------------------------------------------------------------------

    def _start_on_cpu(self) -> float:
        """The task begins executing on its (already held) thread: new slice, migration check.

        Returns the refill its working set needs first (ns; 0 without one).
        """
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
        working_set = self._working_set
        if working_set is None:
            return 0.0
        working_sets = sched.working_sets
        assert working_sets is not None  # set_working_set checked it
        return working_sets.start(working_set, core)

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
        self._left_ns = sched.env.now
        sched._free(thread)
