"""A word in shared memory that processes update with atomics: loads, CAS loops, fetch-adds.

The usual lock-free update of a word, as C11 ``compare_exchange`` loops and PostgreSQL's
``LWLockAttemptLock`` and ``PinBuffer`` do it, is a plain load of the word, then a
compare-and-swap of the value seen; a CAS that finds another value fails, returns the value it
found, and the loop retries with that value without a new load. On the machine each of these is
its own memory operation on the word's line, and between the load and the CAS other cores' atomics
on the same line may come in: then the CAS fails and costs what it costs.

:class:`AtomicWord` issues them that way. The load is performed at the simulation clock (in time
order with every other process's operations); the CAS after the process has spent the load's
latency, again at the clock; it fails if any value-changing atomic on the word was issued in
between. The word's value is not stored: a *version* (the count of value-changing atomics issued
so far) is all a CAS needs to know whether it would fail, and the model that owns the word keeps
its meaning (who holds a lock).

A failed CAS is still a locked read-modify-write (Intel SDM, ``CMPXCHG``: "the destination operand
receives a write cycle without regard to the result of the comparison"): it takes the line
exclusively like a successful one, so it costs a transfer when another core had the line. The
retry follows within a few instructions while the line is in the loser's cache; it is issued in
the same instant, so it hits locally and succeeds. That is the assumption of a loser that keeps
the line for its retry (what T. Downs' CAS-loop measurements, 1.5-4.3 times a fetch-add per
success with 2-16 threads, imply; a retry that lost the line every time would livelock a
saturated line, which no measurement shows).

When the process's core already holds a valid copy of the line, its load hits locally and
nothing can come between it and the CAS a few nanoseconds later; the two are then issued in one
call without waiting in between (a speed-up that changes no cost).

Each CAS attempt, failed or not, is counted in the process's counters
(:attr:`~simulator.hardware.codes.Out.CAS_ATTEMPTS`, ``CAS_FAILURES``).

``fused`` issues the load and the first CAS as one call that never fails (the simplification of
a simulator that treats a CAS loop as one atomic): kept as an ablation.

Left out: the value itself (a CAS that finds the expected value but a changed version, an ABA,
counts as failed; the words modelled here only change by counting up or down, so ABA needs a
balanced pair of changes inside one load-to-CAS window and is rare), a retry that loses the line
before it is issued, and weak CAS (spurious failure on LL/SC machines).
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Hashable
from typing import Any, TypeVar

import simpy

from simulator.hardware.codes import Op, Out
from simulator.hardware.tracked import Ops
from simulator.runtime.engine import ProcessGenerator
from simulator.runtime.process import CpuProcess

__all__ = ["AtomicWord", "WordVersion"]

C = TypeVar("C", bound=Hashable)

_ATTEMPTS, _FAILURES = int(Out.CAS_ATTEMPTS), int(Out.CAS_FAILURES)

Changes = bool | Callable[[], bool]
"""Whether a successful CAS changes the word's value, or a function that says so at its instant."""


class WordVersion:
    """The value-changing atomics issued on one word so far: all a CAS needs to know.

    The rule of every CAS in the simulator (:class:`AtomicWord` for processes on hardware
    threads, ``snapsim ccbench``'s loops that drive the machine directly): a CAS fails when the
    version differs from the one its load (or its failed predecessor) saw; a value-changing
    atomic, a fetch-add or a CAS that succeeds and changes the value, counts one up.
    """

    __slots__ = ("count",)

    def __init__(self) -> None:
        self.count = 0

    def fails(self, seen: int) -> bool:
        """Whether a CAS that last saw version ``seen`` fails now."""
        return self.count != seen

    def changed(self, times: int = 1) -> None:
        """Note ``times`` value-changing atomics issued now."""
        self.count += times


class AtomicWord:
    """A word on one tracked line, updated with loads, CAS loops and fetch-adds.

    Args:
        word: the access to the word (one access; its operation is ignored).
        fused: issue a load and its CAS as one call that never fails (the ablation).
        lock_line: charge queueing on the word's line to the process's lock-wait category.

    Raises:
        ValueError: ``word`` is not exactly one access.
    """

    def __init__(self, word: Ops, *, fused: bool = False, lock_line: bool = True) -> None:
        if len(word) != 1:
            raise ValueError(f"an atomic word is one access, got {len(word)}")
        self.line = word[0].line
        self.fused = fused
        self.lock_line = lock_line
        self._version = WordVersion()
        self.cas_attempts = 0
        """CAS attempts on the word so far, failed ones included."""
        self.cas_failures = 0
        """Failed CAS attempts on the word so far."""
        self._load = word.with_op(Op.LOAD)
        self._rmw = word.with_op(Op.RMW)
        self._rmw_twice = self._rmw + self._rmw
        self._load_rmw = self._load + self._rmw

    @property
    def version(self) -> int:
        """Value-changing atomics issued on the word so far."""
        return self._version.count

    def load(self, process: CpuProcess[C], category: C) -> Generator[simpy.Event, Any, int]:
        """Read the word now; return the version seen (what a later CAS compares with)."""
        yield from process.ops(self._load, category, self.lock_line)
        return self._version.count

    def compare_and_swap(self, process: CpuProcess[C], seen: int, category: C, *,
                         changes: Changes = True) -> Generator[simpy.Event, Any, int]:
        """A CAS loop after a load that saw version ``seen``; return its failed attempts.

        ``changes``: whether the successful CAS changes the value, or a function asked at the
        instant of the CAS (``False`` for a CAS that writes back the value it found, as
        ``LWLockAttemptLock`` does when the lock is not free).
        """
        yield from process.sync()
        failed = self._version.fails(seen)
        yield from process.ops(self._rmw_twice if failed else self._rmw, category,
                               self.lock_line)
        self._succeeded(process, changes, failed)
        return int(failed)

    def update(self, process: CpuProcess[C], category: C, *,
               changes: Changes = True) -> Generator[simpy.Event, Any, int]:
        """Load, then CAS until it succeeds; return the failed attempts."""
        yield from process.sync()
        task = process.task
        machine = process.machine
        holds = (task is not None and task.thread is not None and machine is not None
                 and machine.holds(task.thread, self.line, check=False))
        lock_line = self.lock_line
        if self.fused or holds:
            yield from process.ops(self._load_rmw, category, lock_line)
            self._succeeded(process, changes, False)
            return 0
        # self.load(), then self.compare_and_swap(), without their generators
        yield from process.ops(self._load, category, lock_line)
        version = self._version
        seen = version.count
        yield from process.sync()
        failed = version.fails(seen)
        yield from process.ops(self._rmw_twice if failed else self._rmw, category, lock_line)
        self._succeeded(process, changes, failed)
        return int(failed)

    def fetch_add(self, process: CpuProcess[C], category: C,
                  accesses: Ops | None = None) -> ProcessGenerator:
        """Value-changing atomics without a load (``lock xadd``, ``fetch_or``, a TAS).

        ``accesses``: several of them issued back to back in one call (default: one RMW of the
        word); each RMW among them changes the word.
        """
        if accesses is None:
            yield from process.ops(self._rmw, category, self.lock_line)
            self._version.changed()
            return
        yield from process.ops(accesses, category, self.lock_line)
        self._version.changed(sum(1 for access in accesses if access.op == Op.RMW))

    def _succeeded(self, process: CpuProcess[Any], changes: Changes, failed: bool) -> None:
        """Count a finished CAS loop (one attempt, plus the failed one) and apply its change."""
        if changes is True or (changes is not False and changes()):
            self._version.changed()
        counters = process.counters
        if failed:
            counters[_ATTEMPTS] += 2
            counters[_FAILURES] += 1
            self.cas_attempts += 2
            self.cas_failures += 1
        else:
            counters[_ATTEMPTS] += 1
            self.cas_attempts += 1
