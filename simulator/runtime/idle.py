"""CPU idle states of hardware threads and Linux's ``menu`` governor that chooses among them.

When a hardware thread has nothing to run, Linux's idle loop asks a governor for an idle state
(``cpuidle_select``), enters it, and on wake-up tells the governor how long it actually slept
(``cpuidle_reflect``). A deeper state saves more power and takes longer to leave; a task woken
on that thread waits for the exit. This module holds the pure logic: which state a thread
enters (:class:`MenuGovernor`), what a wake-up from it costs (:func:`wake_state`); the
scheduler (:mod:`simulator.runtime.idle_threads`) calls it at idle entry and at wake-up.

**The menu governor** as in ``drivers/cpuidle/governors/menu.c`` (Linux 5.x, the default
governor: rating 20 against teo's 19), per hardware thread:

* the *next timer* is the time to the earliest timer armed on the thread; with none, the
  machine's ``idle.timer_horizon`` (the tick is stopped and the kernel's own timers are far);
* a next timer shorter than the first physical state's target residency means polling;
* otherwise the prediction is the next timer times a *correction factor* (one per order of
  magnitude of the next timer: below 10 us, 100 us, 1 ms, 10 ms, 100 ms, and above; a decaying
  average, weight 1/8, of measured/next-timer, a sleep of 50 ms or more counting as 1), lowered
  to the *typical interval* when the last 8 idle intervals are regular (their mean, when the
  standard deviation is at most 20 us or a sixth of the mean; otherwise the largest value, all
  its copies at once, is dropped and the test repeated while more than 6 samples remain);
* every factor starts at 1 and the interval history as a thread that has long been idle (see
  :class:`MenuGovernor`);
* the state is the deepest whose target residency and exit latency both fit the prediction
  (the latency limit is the prediction divided by the performance multiplier, 1 without
  I/O waiters); a prediction between polling and the first state's residency still takes the
  first physical state if the next timer allows it (``menu_select``'s "use a physical idle
  state, not busy polling" rule).

Left out: the tick (a kept tick that wakes a shallow thread after at most one tick period, and
``menu_update``'s treatment of tick wake-ups), I/O waiters, PM QoS latency limits, and the
``teo`` and ``haltpoll`` governors. ``shallowest`` (always the first state) stands for a machine
whose idle loop has no choice (``default_idle``'s HLT, or a guest's).

**Core-level states.** A ``core_scope`` state (core C6) is reached only when every thread of the
core sits in it: a thread that asked for it while a sibling was awake (or in a thread-level
state) paid only the deepest thread-level state below it (:func:`wake_state`). The core's private
caches are flushed when it enters such a state (the scheduler calls a hook).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from simulator.config.machine import IdleStateConfig

__all__ = [
    "INTERVALS",
    "MAX_INTERESTING_NS",
    "POLL",
    "MenuGovernor",
    "bucket_of",
    "typical_interval_ns",
    "wake_state",
]

POLL = IdleStateConfig("POLL", 0.0, 0.0, 0.0)
"""State 0 of every machine: the thread busy-waits for work (``intel_idle``'s polling state)."""

INTERVALS = 8
"""Idle intervals remembered per thread (menu.c ``INTERVALS``)."""
DECAY = 8
"""Weight of the history in the correction factor (menu.c ``DECAY``)."""
MAX_INTERESTING_NS = 50e6
"""A sleep at least this long counts as a perfect prediction (menu.c ``MAX_INTERESTING``)."""
_BUCKET_LIMITS_NS = (10e3, 100e3, 1e6, 10e6, 100e6)
"""Upper limits of the next-timer magnitudes of the correction factors (menu.c which_bucket)."""
_STDDEV_LIMIT_NS2 = 400e6
"""400 us^2: below this variance the intervals are regular whatever their mean."""


def bucket_of(next_timer_ns: float) -> int:
    """The correction factor used for a next timer this far away (no I/O waiters)."""
    for bucket, limit in enumerate(_BUCKET_LIMITS_NS):
        if next_timer_ns < limit:
            return bucket
    return len(_BUCKET_LIMITS_NS)


def typical_interval_ns(intervals: Sequence[float], predicted_ns: float) -> float:
    """menu.c ``get_typical_interval``: the mean of regular recent intervals, else infinity.

    The intervals are regular when their variance is at most 400 us^2, or when the mean exceeds
    six standard deviations and at least 3/4 of the samples remain; otherwise the largest value
    (every copy of it) is dropped and the test repeated while more than 3/4 of the samples
    remain.
    """
    threshold = math.inf
    while True:
        kept = [value for value in intervals if value <= threshold]
        if not kept or min(kept) >= predicted_ns:
            return math.inf
        mean = sum(kept) / len(kept)
        variance = sum((value - mean) ** 2 for value in kept) / len(kept)
        regular = mean * mean > 36.0 * variance and 4 * len(kept) >= 3 * len(intervals)
        if regular or variance <= _STDDEV_LIMIT_NS2:
            return mean
        if 4 * len(kept) <= 3 * len(intervals):
            return math.inf
        threshold = max(kept) * (1.0 - 1e-12)  # menu.c: max - 1 us, every copy of the max


class MenuGovernor:
    """The menu governor's memory for one hardware thread (see the module docstring).

    Call :meth:`select` when the thread goes idle and :meth:`reflect` when it wakes.

    Args:
        initial_interval_ns: the scale of the idle intervals the history starts with: a thread
            of a machine that was idle before the run remembers the long intervals of its quiet
            past, eight values spread from 0.5 to 1.375 times this (menu.c starts from zeros at
            boot, which is not the state of a server when a benchmark starts; spread, as real
            intervals are, because the outlier rule drops every copy of the largest value at
            once and identical values would leave any single short interval "typical").
    """

    __slots__ = ("_bucket", "_factors", "_intervals", "_next", "_next_timer_ns")

    def __init__(self, initial_interval_ns: float = 0.0) -> None:
        self._factors = [1.0] * (len(_BUCKET_LIMITS_NS) + 1)
        self._intervals = [initial_interval_ns * (0.5 + k / INTERVALS) for k in range(INTERVALS)]
        self._next = 0
        self._bucket = 0
        self._next_timer_ns = math.inf

    @property
    def intervals_ns(self) -> tuple[float, ...]:
        """The remembered idle intervals, oldest slot first (ring order)."""
        return tuple(self._intervals)

    def correction_factor(self, next_timer_ns: float) -> float:
        """The correction factor for a next timer this far away (1.0 until learnt)."""
        return self._factors[bucket_of(next_timer_ns)]

    def select(self, states: Sequence[IdleStateConfig], next_timer_ns: float) -> int:
        """Index in ``states`` (``states[0]`` is :data:`POLL`) of the state to enter now."""
        self._next_timer_ns = next_timer_ns
        self._bucket = bucket_of(next_timer_ns)
        if len(states) <= 1 or next_timer_ns < states[1].target_residency_ns:
            return 0
        predicted = next_timer_ns * self._factors[self._bucket]
        predicted = min(predicted, typical_interval_ns(self._intervals, predicted))
        latency_limit = predicted  # performance multiplier 1: no I/O waiters
        chosen = 0
        for index in range(1, len(states)):
            state = states[index]
            if state.target_residency_ns > predicted:
                if (chosen == 0 and state.exit_latency_ns <= latency_limit
                        and state.target_residency_ns <= next_timer_ns):
                    chosen = index
                break
            if state.exit_latency_ns > latency_limit:
                break
            chosen = index
        return chosen

    def reflect(self, idle_ns: float) -> None:
        """Learn from an idle period of ``idle_ns`` (menu.c ``menu_update``).

        ``idle_ns`` runs from idle entry to the wake-up event (the exit latency, which menu.c
        deducts from its measurement, is not in it); it is capped at the next timer, as there.
        """
        measured = min(max(idle_ns, 0.0), self._next_timer_ns)  # factors stay <= 1
        factor = self._factors[self._bucket] * (1.0 - 1.0 / DECAY)
        if self._next_timer_ns > 0 and measured < MAX_INTERESTING_NS:
            factor += measured / self._next_timer_ns / DECAY
        else:
            factor += 1.0 / DECAY
        self._factors[self._bucket] = factor
        self._intervals[self._next] = measured
        self._next = (self._next + 1) % INTERVALS


def wake_state(states: Sequence[IdleStateConfig], chosen: int, core_entered: bool) -> int:
    """The state a thread that chose ``states[chosen]`` is actually woken from.

    A core-level state counts only if the whole core entered it (``core_entered``); otherwise
    the thread sat in the deepest thread-level state below it.
    """
    if not states[chosen].core_scope or core_entered:
        return chosen
    index = chosen
    while index > 0 and states[index].core_scope:
        index -= 1
    return index
