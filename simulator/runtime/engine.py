"""The simulation environment: SimPy with nanoseconds, a seeded random generator and a recorder.

:class:`SimEnvironment` is a plain :class:`simpy.Environment` (nothing in SimPy is patched or
overridden) with two additions that every model component needs:

* ``rng``: a :class:`numpy.random.Generator` seeded from the point's seed, so a simulation is
  deterministic: the same seed gives the same draws in the same order.
* ``recorder``: a :class:`~simulator.runtime.recorder.Recorder` collecting result rows in plain
lists.

Four methods save time, events and memory without changing any result:
:meth:`~SimEnvironment.fast_forward` (a timeout that nothing else could interleave with moves the
clock at once), :meth:`~SimEnvironment.wait` (a timeout built without SimPy's checks),
:meth:`~SimEnvironment.succeed_after` (trigger an event later: a trigger and a timeout in one)
and :meth:`~SimEnvironment.close` (break a finished simulation's reference cycles). They read
SimPy's event queue and clock, build a timeout and set an event's outcome the way SimPy does:
SimPy 4's internals, checked by ``tests/simulator/runtime/test_engine.py``.

It also counts the events it processes (:attr:`SimEnvironment.events_processed`, and
:attr:`SimEnvironment.events_total` over every environment of the process, which ``snapsim bench``
reads), at no cost per event: :meth:`SimEnvironment.run` reads SimPy's event-id counter when it
returns.

**Time unit.** One unit of simulated time is one **nanosecond**: ``env.now`` is in ns, and every
``env.timeout(delay)`` takes its delay in ns (``env.timeout(1_000)`` is one microsecond). Times are
floats; latencies such as 0.5 ns are allowed.

Processes are generator functions; :data:`ProcessGenerator` is their type.
"""

from __future__ import annotations

import itertools
from collections.abc import Generator, Iterable
from heapq import heappush
from typing import Any, ClassVar, TypeAlias

import numpy as np
import simpy

from simulator.runtime.recorder import Recorder

__all__ = ["ProcessGenerator", "SimEnvironment", "Step"]

ProcessGenerator: TypeAlias = Generator[simpy.Event, Any, Any]
"""A SimPy process body: yields events, receives their values, may return a value."""

Step: TypeAlias = ProcessGenerator | tuple[()]
"""What a step of a process returns, to ``yield from``: a generator, or an empty tuple when the
step has nothing to wait for (no generator object is created for it)."""


class SimEnvironment(simpy.Environment):
    """A SimPy environment whose time unit is the nanosecond, with a seeded RNG and a recorder.

    Args:
        seed: seed of the random generator, an int or a :class:`numpy.random.SeedSequence`
            (e.g. one spawned per sweep point).
        initial_time: simulated time at which the environment starts, in ns.

    Attributes:
        rng: the only source of randomness of the simulation; deterministic for a given seed.
        recorder: collects result rows per named table.
        events_processed: events processed by :meth:`run` so far (scheduled minus still queued).
        fast_forwards: timeouts saved by :meth:`fast_forward`.
    """

    events_total: ClassVar[int] = 0
    """Events processed by :meth:`run` in every environment of this process (for benchmarks)."""

    def __init__(self, seed: int | np.random.SeedSequence, initial_time: float = 0.0) -> None:
        super().__init__(initial_time)
        self.rng: np.random.Generator = np.random.default_rng(seed)
        self.recorder: Recorder = Recorder()
        self.events_processed = 0
        self.fast_forwards = 0

    def run(self, until: simpy.core.SimTime | simpy.Event | None = None) -> Any:
        """:meth:`simpy.Environment.run`, counting the events it processes."""
        before = self._ids_used() - len(self._queue)
        try:
            return super().run(until)
        finally:
            processed = self._ids_used() - len(self._queue) - before
            self.events_processed += processed
            SimEnvironment.events_total += processed

    def fast_forward(self, delay: float) -> bool:
        """Advance the clock by ``delay`` ns at once if nothing else can happen meanwhile.

        When every queued event lies strictly after ``now + delay``, no other process can act
        before then, so the calling process may continue at ``now + delay`` without yielding:
        the result is exactly that of ``yield env.timeout(delay)`` (same clock value, same order
        of every later event; an event queued at exactly ``now + delay`` would be processed
        before the timeout, so that case is refused). Returns whether the clock moved; if not,
        the caller must yield a timeout as usual. Saves one event per call when a process runs
        alone, e.g. one client against idle connections.
        """
        queue = self._queue
        target = self._now + delay
        if queue and queue[0][0] <= target:
            return False
        self._now = target
        self.fast_forwards += 1
        return True

    def close(self, processes: Iterable[tuple[simpy.Process, Generator[Any, Any, Any]]]) -> None:
        """Tear down a finished simulation so that reference counting frees it.

        Processes, their generators and the events they wait on refer to each other (a waiting
        process holds its target event, whose callbacks hold the process; a suspended generator
        holds the model), so a finished simulation is a large reference cycle that only Python's
        cyclic collector frees, walking every object of it. This closes each generator of
        ``processes`` (``(process, generator)`` pairs, the generator given to
        :meth:`process`), detaches every process from its target and discards every scheduled
        event. The environment cannot run afterwards.
        """
        for process, generator in processes:
            target = process.target
            if target is not None and target.callbacks:
                target.callbacks.clear()
            generator.close()
        for _, _, _, event in self._queue:
            if event.callbacks:
                event.callbacks.clear()
        self._queue.clear()

    def wait(self, delay: float) -> simpy.Timeout:
        """``timeout(delay)`` for the hot paths: the same event, scheduled with the same id.

        Built without SimPy's bound-class lookup and checks (about a quarter of an event's
        cost): ``delay`` must be a non-negative float, which the caller guarantees.
        """
        event = simpy.Timeout.__new__(simpy.Timeout)
        event.env = self
        event.callbacks = []
        event._value = None
        event._delay = delay
        event._ok = True
        heappush(self._queue, (self._now + delay, simpy.events.NORMAL, next(self._eid), event))
        return event

    def succeed_after(self, event: simpy.Event, delay: float, value: Any = None) -> None:
        """Trigger ``event`` successfully ``delay`` ns from now (``event.succeed`` is at now).

        The event's callbacks run at ``now + delay``, as after a timeout; a process waiting on
        it resumes then. One event instead of a trigger now and a timeout after it.
        """
        if event.triggered:
            raise RuntimeError(f"{event!r} has already been triggered")
        if not delay >= 0.0:
            raise ValueError(f"delay must not be negative, got {delay!r}")
        event._ok = True
        event._value = value
        self.schedule(event, simpy.events.NORMAL, delay)

    def _ids_used(self) -> int:
        """Events scheduled so far.

        SimPy numbers events with an ``itertools.count`` (ties break by that id): read it and
        restart it at the same id, so that later ids do not change.
        """
        used = next(self._eid)
        self._eid = itertools.count(used)
        return used
