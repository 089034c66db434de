"""What the CPU scheduler counts and traces: its machine-wide counters and its trace tables.

:class:`SchedulerStats` counts idle exits, IPIs, cache flushes, migrations, wake-up preemptions,
balancing pulls and working-set refills (:attr:`simulator.runtime.scheduler.CpuScheduler.stats`);
:class:`BusySnapshot` is the hardware threads' busy time at an instant, to measure utilisation
over a window. With tracing on, the scheduler writes the :data:`TRACE_TABLE` and
:data:`IDLE_TRACE_TABLE` tables of ``env.recorder``; their columns are described in
``docs/scheduler.md``. Per-task accounting lives on :class:`simulator.runtime.task.Task`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import NamedTuple

__all__ = ["IDLE_TRACE_COLUMNS", "IDLE_TRACE_TABLE", "TRACE_COLUMNS", "TRACE_TABLE",
           "BusySnapshot", "SchedulerStats"]


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
        refills: tasks that started on a CPU with part of their private working set missing
            (:mod:`simulator.runtime.working_set`).
        refill_ns: the time those refills took, summed.
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
    refills: int = 0
    refill_ns: float = 0.0

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


class BusySnapshot(NamedTuple):
    """Busy time of every hardware thread at one instant (see :meth:`CpuScheduler.snapshot`)."""

    time_ns: float
    busy_ns: tuple[float, ...]

