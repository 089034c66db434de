"""CPU scheduling of tasks on hardware threads: run queues, time slices, wake-ups and SMT.

The :class:`CpuScheduler` decides which hardware thread a :class:`~simulator.runtime.task.Task`
(a process or a client thread, which spends CPU time with ``yield from task.run(ns)``) runs on
and when. It holds the per-thread state (holders, run queues, idle states, timers) and the
transitions between them: placement of a waking task, queueing, dispatch, wake-up preemption,
balancing, idle entry and exit. The searches for a thread are in
:mod:`simulator.runtime.placement`, the idle threads' states, exits and IPIs in
:mod:`simulator.runtime.idle_threads` (the governor in :mod:`simulator.runtime.idle`), the
counters and trace tables in :mod:`simulator.runtime.scheduler_stats`.
It is built for speed: no ``simpy.Resource`` or ``Store`` (each acquire costs several events and
generator resumptions), one timeout per run segment, plain lists for the per-thread state, and
no randomness (the same scenario always gives the same schedule).

Modelled, after Linux (``kernel/sched/fair.c``): per-CPU run queues ordered like CFS before 6.6
(virtual runtime, sleeper credit; ``fifo`` optional) or one global queue (an ablation), wake-up
preemption, new-idle and periodic balancing of idle threads, time slices, wake-up placement as
``select_idle_sibling`` of Linux 5.8 (a synchronous wake-up keeps the waker on its thread),
wake-up and context-switch costs, idle states chosen by :mod:`simulator.runtime.idle` with their
exit latencies and IPIs, SMT throughput sharing, migrations (the ``on_migrate`` hook) and the
per-task accounting (:attr:`Task.scheduling_ns`, :attr:`CpuScheduler.stats`). With
``trace=True`` it records the ``scheduler`` and ``idle`` tables of ``env.recorder``.

Balancing leaves a cache-hot task with a working set in its queue (``task_hot``: it left a CPU
less than the migration cost ago). Left out: the scheduling domains' own balance intervals and
imbalance rules, the cache-hotness of tasks without a working set, ``wake_wide``, priorities, CPU
affinity, NUMA balancing, interrupts, the scheduler's own code beyond the configured costs, turbo
frequencies, steal time, and SimPy ``Interrupt`` inside ``run``/``block_until``.

The model, rule by rule (placement, queues, slices, idle states, SMT, accounting, the trace
tables' columns) with the Linux functions it follows: ``docs/scheduler.md``.
"""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from simulator.config.machine import (
    IdleConfig,
    MachineConfig,
    SchedulerConfig,
)
from simulator.hardware.latency import LatencyTables
from simulator.hardware.topology import Topology
from simulator.runtime.engine import SimEnvironment
from simulator.runtime.idle_threads import IdleThreads
from simulator.runtime.placement import (
    ThreadLayout,
    busiest_queue,
    first_thread,
    idle_core,
    select_idle_sibling,
    shortest_queue,
)
from simulator.runtime.scheduler_stats import (
    TRACE_TABLE,
    BusySnapshot,
    SchedulerStats,
)
from simulator.runtime.task import (
    IN_RUN_QUEUE,
    ON_IDLE_THREAD,
    ON_WAKER_THREAD,
    MigrateHook,
    Task,
)
from simulator.runtime.working_set import WorkingSets

__all__ = ["CpuScheduler", "FlushHook"]

FlushHook = Callable[[int], None]
"""``on_private_flush(core)``: called when a core enters a state that flushes its caches."""

NUMA_IMBALANCE_ALLOWED_TASKS = 2
"""Linux 5.8's balancer leaves an imbalance between NUMA nodes alone while the busier node runs
at most this many tasks (``adjust_numa_imbalance`` in kernel/sched/fair.c: "a simple pair of
communicating tasks" stays local): with no more busy tasks than this none is spread."""


class CpuScheduler:
    """Hardware threads of a machine and their run queues (model: ``docs/scheduler.md``).

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
        working_sets: the tasks' private working sets (:meth:`Task.set_working_set`); built by
            :meth:`from_machine`, ``None`` otherwise (no task may then have one).
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
        self.working_sets: WorkingSets | None = None
        self.stats = SchedulerStats()
        self._smt_rate = config.smt_throughput / 2.0
        self._smt_rate_high_ipc = config.high_ipc_smt_throughput / 2.0
        self._slice_ns = config.time_slice_ns
        n = topology.n_threads
        layout = ThreadLayout.of(topology)
        self._layout = layout
        self._thread_core = layout.thread_core
        self._core_domain = layout.core_domain
        self._siblings = layout.siblings
        self._holder: list[Task | None] = [None] * n
        self._busy_acc = [0.0] * n
        self._busy_since = [0.0] * n
        self._idle_threads = list(range(n))
        self._core_busy = [0] * topology.n_cores
        self._idle_cores: list[list[int]] = [[] for _ in range(topology.n_domains)]
        for core, domain in enumerate(self._core_domain):
            self._idle_cores[domain].append(core)
        self._per_cpu = config.run_queues == "per_cpu"
        self._spread = config.first_placement in ("spread", "spread_all")
        self._spread_all = config.first_placement == "spread_all"
        self._busy_tasks = 0
        shared: list[tuple[float, int, Task]] = []
        self._rq: list[list[tuple[float, int, Task]]] = (
            [[] for _ in range(n)] if self._per_cpu else [shared] * n)
        """Per thread, its run queue: a heap of (virtual runtime, or 0 under fifo; arrival
        number; task). Under ``global`` every thread holds the same list."""
        self._queued = 0
        self._balance_pending = False
        self._cfs = config.policy == "cfs"
        self._arrivals = 0
        self._min_vruntime = 0.0
        self._tasks: list[Task] = []
        self._idle = IdleThreads(env, topology, config, virtualized, idle, self._holder,
                                 self.stats, trace)
        self._idle_since = self._idle.since
        self._avg_idle_ns = self._idle.avg_idle_ns
        self._timers = self._idle.timers
        """Per thread, the deadlines of the timers armed there (sorted; tasks arm them)."""

    @classmethod
    def from_machine(
        cls, env: SimEnvironment, machine: MachineConfig, *, trace: bool = False,
        topology: Topology | None = None, tables: LatencyTables | None = None,
    ) -> CpuScheduler:
        """The scheduler of a machine: topology, scheduler costs, virtualization, idle states.

        ``topology`` and ``tables`` (the latency tables its working sets' refills read): the
        machine's, when the caller has built them already (a point builds them once for its
        scheduler and its machine); built from ``machine`` if not given.
        """
        if topology is None:
            topology = Topology.from_config(machine)
        scheduler = cls(env, topology, machine.scheduler, machine.virtualized, idle=machine.idle,
                        trace=trace)
        scheduler.working_sets = WorkingSets(machine, topology, tables)
        return scheduler

    # -- public API ---------------------------------------------------------------------------

    def new_task(self, name: str, busy: bool = False) -> Task:
        """Create a task, initially blocked (holding no thread).

        ``busy``: it will run most of the time (:attr:`Task.busy`: its first placement spreads
        it over the LLC domains once more than :data:`NUMA_IMBALANCE_ALLOWED_TASKS` tasks are
        busy). Create every busy task before the run starts.
        """
        task = Task(self, name, busy)
        self._tasks.append(task)
        self._busy_tasks += busy
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
        self._holder[:] = [None] * len(self._holder)  # shared with the idle bookkeeping

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
        """Thread, cost and how (``ON_IDLE_THREAD``, ...) for a wake-up its waker did not place.

        A timer or an unknown waker: ``select_idle_sibling`` with its previous thread as the
        target. A synchronous wake-up whose waker found no idle thread in its LLC: the waker's
        thread if the waker has just given it up (the wakee was queued behind it there: a
        context switch, no idle exit). Failing those, with per-CPU run queues the task joins the
        target's queue (the waker's thread, else the previous one; a first placement: the
        shortest queue), where load balancing may move it; with one global queue any idle
        thread of the machine (lowest fully idle core, of the previous LLC first) takes it, else
        the queue. A busy task's first placement, once more than
        :data:`NUMA_IMBALANCE_ALLOWED_TASKS` tasks are busy, takes the LLC domain with the most
        idle threads, its lowest fully idle core, else its lowest idle thread
        (:func:`first_thread`); any other first placement (its parent's node, simplified;
        every one with ``first_placement: lowest``) the machine's lowest fully idle core, else
        its lowest idle thread. ``spread_all`` spreads every first placement.
        """
        target = task._sync_target
        task._sync_target = None
        previous = task._last_thread
        if target is not None:
            if self._holder[target] is None and self._idle_since[target] == self.env.now:
                return target, self.config.context_switch_ns, ON_WAKER_THREAD  # it never idled
            thread = None
        elif previous is not None and self._idle_threads:
            thread = self._select_idle_sibling(task, previous, previous)
        else:
            thread = None
        if thread is None:
            home = target if target is not None else previous
            if self._per_cpu and home is not None:
                return home, 0.0, IN_RUN_QUEUE
            if not self._idle_threads:
                return shortest_queue(self._rq, self._per_cpu), 0.0, IN_RUN_QUEUE
            if previous is None and self._spread and (
                    self._spread_all
                    or (task.busy and self._busy_tasks > NUMA_IMBALANCE_ALLOWED_TASKS)):
                thread = first_thread(self._layout, self._idle_threads, self._idle_cores)
            else:
                core = idle_core(self._layout, self._idle_cores, previous)
                thread = (self._layout.core_first_thread[core] if core is not None
                          else self._idle_threads[0])
        return thread, self.wakeup_cost_ns + self._idle.leave(thread), ON_IDLE_THREAD

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
        cost = self.wakeup_cost_ns + self._idle.leave(thread)
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
        """:func:`select_idle_sibling` for ``task``, keeping its recent thread up to date.

        Taking the recent thread makes the previous one the recent (``recent_used_cpu``).
        """
        thread, took_recent = select_idle_sibling(
            self._layout, self._holder, self._idle_cores, self._core_busy, target, previous,
            task._recent_thread)
        if took_recent:
            task._recent_thread = previous
        return thread

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
            source = busiest_queue(self._layout, self._rq, thread)
            if source is None:
                return
            if self._cache_hot(source):
                self._schedule_balance()  # the next tick tries again
                continue
            self.stats.balance_pulls += 1
            self._occupy(thread, None)
            self._dispatch(thread, self._rq[source], self._idle.leave(thread))

    def _cache_hot(self, source: int) -> bool:
        """``task_hot``: whether balancing must leave the head of ``source``'s queue there.

        It is hot when it left a CPU less than ``migration_cost_ns`` ago and has a working set
        to lose (:meth:`Task.set_working_set`). Linux tests every task (``can_migrate_task``),
        here only those with a working set (a task without one loses nothing by moving, and
        results without working sets stay as they were), and only the head of the queue (Linux
        tries the others).
        """
        head = self._rq[source][0][2]
        return (head._working_set is not None
                and self.env.now - head._left_ns < self.config.migration_cost_ns)

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
                source = busiest_queue(self._layout, self._rq, thread)
                if source is not None and not self._cache_hot(source):
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

    def _enter_idle(self, thread: int) -> None:
        """``thread`` goes idle; a core entering a core-level state has its caches flushed.

        The tasks' working sets leave the core's private caches and ``on_private_flush`` is
        called.
        """
        if self._idle.enter(thread):
            core = self._thread_core[thread]
            if self.working_sets is not None:
                self.working_sets.flush(core)
            if self.on_private_flush is not None:
                self.on_private_flush(core)

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
