"""The idle side of the hardware threads: the state each idle thread sits in and its exit.

When the scheduler lets a thread go idle, :class:`IdleThreads` has the thread's governor
(:mod:`simulator.runtime.idle`) choose a state, marks a core whose threads all chose a
core-level state as having entered it (its private caches are flushed); when a task wakes the
thread it charges the exit latency of the state actually left (a core-level state only if the
whole core entered it), the IPI of a halted thread (a hypervisor's cost on a VM), keeps Linux's
``rq->avg_idle`` for new-idle balancing, counts in :class:`SchedulerStats` and writes the
``idle`` trace table. It also holds the timers armed on each thread, which the menu governor
sees. Left out: the tick's re-evaluation of a too-shallow state, the waker's own cost of
sending an IPI (charged to the woken task).
"""

from __future__ import annotations

from collections.abc import Sequence

from simulator.config.machine import (
    DEFAULT_IDLE_TIMER_HORIZON_NS,
    IdleConfig,
    IdleStateConfig,
    SchedulerConfig,
)
from simulator.hardware.topology import Topology
from simulator.runtime.engine import SimEnvironment
from simulator.runtime.idle import POLL, MenuGovernor, wake_state
from simulator.runtime.scheduler_stats import IDLE_TRACE_TABLE, SchedulerStats

__all__ = ["IdleThreads"]


class IdleThreads:
    """Per hardware thread: its idle state, since when it idles, its timers and ``avg_idle``.

    Args:
        env: the simulation environment.
        topology: the machine's hardware threads and cores.
        config: the scheduler's costs (``ipi_exit_ns``, ``migration_cost_ns``).
        virtualized: the machine is a VM (waking a halted thread costs ``ipi_exit_ns``).
        idle: the machine's idle states and governor (``None``: only polling, no exit latency).
        holder: the scheduler's list of who holds each thread (``None``: idle), read, not written.
        stats: the scheduler's counters, updated here.
        trace: write the ``idle`` table of ``env.recorder``.

    Attributes:
        since: per thread, when it last went idle.
        avg_idle_ns: per thread, Linux's ``rq->avg_idle``: the running average of its idle periods.
        timers: per thread, the deadlines of the timers armed there (sorted).
    """

    def __init__(self, env: SimEnvironment, topology: Topology, config: SchedulerConfig,
                 virtualized: bool, idle: IdleConfig | None, holder: Sequence[object | None],
                 stats: SchedulerStats, trace: bool) -> None:
        self.env = env
        self.topology = topology
        self.config = config
        self.idle = idle
        self.stats = stats
        self.trace = trace
        self._holder = holder
        self._thread_core = [topology.core_of(t) for t in range(topology.n_threads)]
        self._wake_ipi = idle.wake == "hlt" if idle is not None else virtualized
        self._ipi_ns = config.ipi_exit_ns if virtualized else 0.0
        self._states: tuple[IdleStateConfig, ...] = (
            (POLL, *idle.states) if idle is not None else (POLL,))
        self._menu = idle is not None and idle.governor == "menu" and len(self._states) > 1
        self._timer_horizon_ns = (idle.timer_horizon_ns if idle is not None
                                  else DEFAULT_IDLE_TIMER_HORIZON_NS)
        n = topology.n_threads
        self.avg_idle_ns = [2.0 * config.migration_cost_ns] * n
        self.timers: list[list[float]] = [[] for _ in range(n)]
        self._governors = [MenuGovernor(self._timer_horizon_ns) for _ in range(n)]
        self.since = [0.0] * n
        self._choice = [self._choose_state(t) for t in range(n)]
        self._core_entered = [self._core_scope_idle(c) for c in range(topology.n_cores)]
        """Per core, whether it sits in a core-level idle state (every thread asked for one)."""

    def _choose_state(self, thread: int) -> int:
        """Index in the state table (0 = polling) of the state an idle thread enters now."""
        if self._menu:
            timers = self.timers[thread]
            now = self.env.now
            next_timer = timers[0] - now if timers else self._timer_horizon_ns
            return self._governors[thread].select(self._states, max(next_timer, 0.0))
        return 1 if len(self._states) > 1 else 0

    def _core_scope_idle(self, core: int) -> bool:
        """Whether every thread of ``core`` is idle and chose a core-level state."""
        states = self._states
        choice = self._choice
        holder = self._holder
        return all(holder[t] is None and states[choice[t]].core_scope
                   for t in self.topology.threads_of_core(core))

    def enter(self, thread: int) -> bool:
        """``thread`` goes idle: the governor picks its state; a core may enter a deep state.

        Returns:
            Whether its core entered a core-level state now (its private caches are flushed;
            counted in ``stats.private_flushes``).
        """
        self.since[thread] = self.env.now
        choice = self._choose_state(thread)
        self._choice[thread] = choice
        if self._states[choice].core_scope:
            core = self._thread_core[thread]
            if not self._core_entered[core] and self._core_scope_idle(core):
                self._core_entered[core] = True
                self.stats.private_flushes += 1
                return True
        return False

    def leave(self, thread: int) -> float:
        """An idle ``thread`` is woken for a task: the extra wake-up cost, in ns.

        The exit latency of the state it is woken from, and on a virtualized machine the
        hypervisor's cost of the IPI that wakes a halted vCPU. Updates the governor and the
        counters; a core in a core-level state leaves it.
        """
        core = self._thread_core[thread]
        chosen = self._choice[thread]
        states = self._states
        idle_ns = self.env.now - self.since[thread]
        if self._menu:
            self._governors[thread].reflect(idle_ns)
        max_avg = 2.0 * self.config.migration_cost_ns  # update_avg of rq->avg_idle, capped
        average = self.avg_idle_ns[thread]
        self.avg_idle_ns[thread] = (max_avg if idle_ns > max_avg
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
