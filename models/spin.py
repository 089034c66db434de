"""PostgreSQL's spinlocks and spin-delay loop (``src/backend/storage/lmgr/s_lock.c``, 13 and 14).

A backend that finds a spinlock, a buffer-header lock or an LWLock's wait-list lock taken calls
``perform_spin_delay`` once per look at the word: every call executes ``SPIN_DELAY()`` (``PAUSE``
on x86-64, ``include/storage/s_lock.h``); after ``spins_per_delay`` calls it sleeps
(``pg_usleep``), first for ``MIN_DELAY_USEC``, then for a delay that grows by a random factor
between 1 and 2 each time and wraps back to the minimum past ``MAX_DELAY_USEC``; after
``NUM_DELAYS`` sleeps the lock is declared stuck (``s_lock_stuck``, a PANIC).

Left out: the adaptation of ``spins_per_delay`` by ``finish_spin_delay`` (each backend starts at
the default) and the timer slack of a real ``pg_usleep``.
"""

from __future__ import annotations

from simulator.hardware.codes import Op
from simulator.hardware.tracked import Ops
from simulator.runtime.atomic_word import AtomicWord
from simulator.runtime.engine import ProcessGenerator

from .backend import Backend, Category

DEFAULT_SPINS_PER_DELAY = 100
"""Spins before the first sleep (``DEFAULT_SPINS_PER_DELAY``, s_lock.h:1012@13, :1036@14)."""
NUM_DELAYS = 1000
"""Sleeps before the lock is declared stuck (s_lock.c:56-60)."""
MIN_DELAY_NS = 1_000_000.0
"""First sleep: ``MIN_DELAY_USEC`` = 1,000 µs (s_lock.c:56-60)."""
MAX_DELAY_NS = 1_000_000_000.0
"""Longest sleep: ``MAX_DELAY_USEC`` = 1,000,000 µs (s_lock.c:56-60)."""
PAUSE_CYCLES = 140.0
"""ASSUMPTION: cycles of one ``PAUSE``. About 140 on Skylake and later Intel cores, about 10 on
earlier ones and 10-50 on AMD (MariaDB commit 042fc29, MDEV-19845; MySQL WL#12616 "~15x" on
Skylake). The machine files do not carry it; the path only runs while a buffer header or a
wait-list lock is held, which no modelled read-only transaction does for long."""


class StuckSpinlockError(RuntimeError):
    """``NUM_DELAYS`` sleeps without getting the lock (PostgreSQL PANICs: "stuck spinlock")."""


class SpinDelay:
    """The state of one wait (``SpinDelayStatus``): spins and sleeps so far, the next delay."""

    def __init__(self, spins_per_delay: int = DEFAULT_SPINS_PER_DELAY) -> None:
        if spins_per_delay < 1:
            raise ValueError(f"spins_per_delay must be at least 1, got {spins_per_delay}")
        self.spins_per_delay = spins_per_delay
        self.spins = 0
        self.delays = 0
        self.cur_delay_ns = 0.0

    def spin(self, backend: Backend, category: Category) -> ProcessGenerator:
        """One ``perform_spin_delay``: a PAUSE, and a sleep every ``spins_per_delay`` calls."""
        yield from backend.compute(PAUSE_CYCLES, category)
        self.spins += 1
        if self.spins < self.spins_per_delay:
            return
        self.delays += 1
        if self.delays > NUM_DELAYS:
            raise StuckSpinlockError(f"{backend.name}: stuck spinlock after {NUM_DELAYS} delays")
        if self.cur_delay_ns == 0.0:
            self.cur_delay_ns = MIN_DELAY_NS
        env = backend.env
        yield from backend.flush()
        yield from backend.sleep(env.timeout(self.cur_delay_ns), category)
        # cur_delay += (int) (cur_delay * pg_prng_double(...) + 0.5), in whole microseconds
        self.cur_delay_ns += round(self.cur_delay_ns / 1e3 * float(env.rng.random())) * 1e3
        if self.cur_delay_ns > MAX_DELAY_NS:
            self.cur_delay_ns = MIN_DELAY_NS
        self.spins = 0


class SpinLock:
    """An ``slock_t`` (``include/storage/s_lock.h``, x86-64): ``S_LOCK`` and ``S_UNLOCK``.

    ``S_LOCK`` is a TAS (``lock xchgb``, an RMW of the word's line); while another backend holds
    the lock, ``s_lock`` loops over ``perform_spin_delay`` (:class:`SpinDelay`) and
    ``TAS_SPIN``: a read of the word, and a TAS only when it looks free. ``S_UNLOCK`` is a plain
    store. The holder is plain Python state; the cost is the operations on the word's line.

    Args:
        word: the access to the lock byte (one access; its operation is ignored).
    """

    def __init__(self, word: Ops) -> None:
        self.word = AtomicWord(word)
        self._store = word.with_op(Op.STORE)
        self.holder: Backend | None = None
        self.acquisitions = 0

    def held(self) -> bool:
        """Whether a backend holds the lock.

        Read afresh after every wait, since other backends run meanwhile (a test of the
        attribute itself would stay narrowed for the type checker).
        """
        return self.holder is not None

    def acquire(self, backend: Backend, category: Category) -> ProcessGenerator:
        """``S_LOCK``: TAS; while held, spin delays and ``TAS_SPIN`` until a TAS gets it."""
        delay = SpinDelay()
        yield from self.word.fetch_add(backend, category)
        while self.held():
            yield from delay.spin(backend, Category.LOCK_WAIT)
            yield from self.word.load(backend, Category.LOCK_WAIT)
            if not self.held():
                yield from self.word.fetch_add(backend, category)
        self.holder = backend
        self.acquisitions += 1

    def release(self, backend: Backend, category: Category) -> ProcessGenerator:
        """``S_UNLOCK``: a store of the word, free from this instant."""
        if self.holder is not backend:
            raise RuntimeError(f"{backend.name} releases a spinlock it does not hold")
        yield from backend.sync()
        self.holder = None
        yield from backend.ops(self._store, category, lock_line=True)
