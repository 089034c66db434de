"""PostgreSQL's LWLocks: shared/exclusive locks whose atomic word is a cache line.

Two protocols, as in ``src/backend/storage/lmgr/lwlock.c``:

* ``atomic`` (9.5+, commit ab5194e6f6 "Improve LWLock scalability"): an acquire
  (``LWLockAttemptLock``, lwlock.c:826@13, :821@14) is a plain load of the state word, then a
  CAS loop (lwlock.c:869@13, :864@14) that retries with the value a failed CAS returned; the CAS
  is issued even when the lock is not free (it then writes back the value it found). Each load
  and CAS is its own operation at the simulation clock
  (:class:`~simulator.runtime.atomic_word.AtomicWord`), so a CAS fails when another backend
  changed the word in between. A release is one atomic ``sub_fetch`` (lwlock.c:1843-1845@13).
  A backend that cannot get the lock queues itself (``LWLockQueueSelf``: ``fetch_or`` of the
  wait-list lock bit, ``fetch_or`` of ``LW_FLAG_HAS_WAITERS``, ``fetch_and`` releasing the
  wait-list lock: three atomics on the word) and sleeps on its semaphore until a releaser that
  finds waiters (``LWLockWakeup``: the wait-list lock, then the CAS clearing the flags) wakes it.
* ``spinlock`` (9.1): acquire and release are each a test-and-set of the lock's spinlock, a store
  of the shared count and the store that frees the spinlock, all on the lock's line
  (``LWLockAcquire``, lwlock.c:388-439@9.1; ``LWLockRelease``, :593-641@9.1).

The lock's *state* (shared holders, exclusive holder, FIFO of sleepers) is plain Python; its
*cost* is the memory operations on the lock word, which the coherence model serializes when the
word is hot. A waker pays ``wake_cycles`` per woken backend (the semaphore post); the woken
backend pays the scheduler's wake-up.

``fused_atomics`` issues the load and the CAS as one call that never fails: the simplification
kept as an ablation.

Queue discipline (``queue``): ``overtake`` (the default) follows PostgreSQL:
``LWLockAttemptLock`` looks only at the lock's state (a shared acquirer gets the lock whenever no
exclusive holder has it, waiters or not; an exclusive one whenever it is free), and a release
that leaves the lock free for the head waiter grants it as ``LWLockWakeup`` wakes (lwlock.c@13,
@14): the head alone if it waits exclusive, else the head and every shared waiter behind it,
exclusive ones skipped. An exclusive waiter thus waits until the shared holders drain, which
under heavy shared traffic can be long (PostgreSQL's LWLocks are not fair either). ``fifo``, the
ablation, lets no newcomer overtake a waiter, so a shared acquirer queues behind a waiting
exclusive one, and a release hands the lock to the head waiter and to the shared ones right
behind it.

Left out: spinning before sleeping (9.1's repeated TAS is the hot-line queue itself), the
``LW_FLAG_RELEASE_OK`` subtleties, the second ``LWLockAttemptLock`` after queueing (a grant is
handed over by the releaser instead, so a woken waiter never finds the lock retaken), spinning
on a held wait-list lock, and LWLockAcquireOrWait.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Generator
from enum import Enum
from typing import Any

import simpy

from simulator.hardware.codes import Op
from simulator.hardware.tracked import Access, Ops
from simulator.runtime.atomic_word import AtomicWord
from simulator.runtime.engine import ProcessGenerator

from .backend import Backend, Category

WAKE_CYCLES = 2000
"""ASSUMPTION: cycles of a semaphore post (a futex wake system call) per woken waiter."""

QUEUES = ("fifo", "overtake")
"""Queue disciplines: no newcomer overtakes a waiter, or PostgreSQL's (module docstring)."""

DEFAULT_QUEUE = "overtake"
"""PostgreSQL's own discipline; ``fifo`` is the ablation."""


class LockMode(Enum):
    """LWLock acquisition mode."""

    SHARED = "shared"
    EXCLUSIVE = "exclusive"


class LWLock:
    """One LWLock.

    Args:
        name: label for reports (``"ProcArrayLock"``).
        word: the accesses to the lock's atomic word: one access (``atomic``) or, for
            ``spinlock``, the mutex byte then the shared-count word (two accesses).
        protocol: ``"atomic"`` (9.5+) or ``"spinlock"`` (9.1).
        fused_atomics: ``atomic`` only: issue the acquire's load and CAS as one call that never
            fails (the ablation of the read + CAS loop).
        queue: ``fifo`` or ``overtake`` (:data:`QUEUES`, module docstring).
    """

    def __init__(self, name: str, word: Ops, protocol: str, fused_atomics: bool = False,
                 queue: str = DEFAULT_QUEUE) -> None:
        if protocol not in ("atomic", "spinlock"):
            raise ValueError(f"unknown LWLock protocol {protocol!r}")
        if queue not in QUEUES:
            raise ValueError(f"unknown LWLock queue {queue!r} (choose {' or '.join(QUEUES)})")
        self.name = name
        self.protocol = protocol
        self.overtake = queue == "overtake"
        self.shared_holders = 0
        self.exclusive_holder: Backend | None = None
        self.waiters: deque[tuple[Backend, LockMode, simpy.Event]] = deque()
        self.grants: dict[LockMode, int] = dict.fromkeys(LockMode, 0)
        """Acquisitions granted so far, by mode (conditional ones and hand-offs included)."""
        line = word[0].line
        mask = word[0].mask
        rmw = Access(line, Op.RMW, mask, word[0].field)
        self.word = AtomicWord(Ops([rmw]), fused=fused_atomics)
        """The state word (``atomic``); its version counts the atomics that changed it."""
        if protocol == "atomic":  # an attempt is the word's load + CAS loop (_attempt_lock)
            self._release = Ops([rmw])
            self._queue = Ops([rmw, rmw, rmw])
        else:
            count = word[1] if len(word) > 1 else word[0]
            store_count = Access(count.line, Op.STORE, count.mask, count.field)
            store_mutex = Access(line, Op.STORE, mask, word[0].field)
            self._attempt = Ops([rmw, store_count, store_mutex])
            self._release = Ops([rmw, store_count, store_mutex])
            self._queue = Ops([rmw, store_mutex])

        self._release_queue_lock = self._queue[:1]

    @property
    def held(self) -> bool:
        """Whether anyone holds the lock."""
        return self.shared_holders > 0 or self.exclusive_holder is not None

    def _free_for(self, mode: LockMode) -> bool:
        if self.exclusive_holder is not None:
            return False
        return mode is LockMode.SHARED or self.shared_holders == 0

    def _grant(self, backend: Backend, mode: LockMode) -> None:
        self.grants[mode] += 1
        if mode is LockMode.SHARED:
            self.shared_holders += 1
        else:
            self.exclusive_holder = backend

    def _attempt_lock(self, backend: Backend, mode: LockMode,
                      category: Category) -> ProcessGenerator:
        """``LWLockAttemptLock``: the load and CAS loop (``atomic``) or the spinlock steps."""
        if self.protocol == "atomic":
            yield from self.word.update(backend, category,
                                        changes=lambda: self._can_take(mode))
        else:
            yield from backend.ops(self._attempt, category, lock_line=True)

    def _can_take(self, mode: LockMode) -> bool:
        return self._free_for(mode) and (self.overtake or not self.waiters)

    def _word_atomics(self, backend: Backend, accesses: Ops,
                      category: Category) -> ProcessGenerator:
        """Value-changing atomics on the word (a release, the wait-list steps)."""
        if self.protocol == "atomic":
            yield from self.word.fetch_add(backend, category, accesses)
        else:
            yield from backend.ops(accesses, category, lock_line=True)

    def acquire(self, backend: Backend, mode: LockMode, category: Category) -> ProcessGenerator:
        """Acquire; if the lock is busy (or others wait), queue FIFO and sleep until granted."""
        yield from self._attempt_lock(backend, mode, category)
        if self._can_take(mode):
            self._grant(backend, mode)
            return
        # Queue in the same instant as the failed attempt (LWLockQueueSelf followed by the
        # re-check of LWLockAcquire): a release during the queueing work still finds us.
        event = backend.env.event()
        self.waiters.append((backend, mode, event))
        yield from self._word_atomics(backend, self._queue, Category.LOCK_WAIT)
        if not event.triggered:
            yield from backend.sleep(event, Category.LOCK_WAIT)

    def conditional_acquire(self, backend: Backend, mode: LockMode,
                            category: Category) -> Generator[simpy.Event, Any, bool]:
        """One attempt (``LWLockConditionalAcquire``); returns whether the lock was taken."""
        yield from self._attempt_lock(backend, mode, category)
        if self._can_take(mode):
            self._grant(backend, mode)
            return True
        return False

    def release(self, backend: Backend, mode: LockMode, category: Category) -> ProcessGenerator:
        """Release and hand the lock to the waiters that can now have it."""
        yield from backend.sync()  # the lock is free from this instant (and sleepers wake)
        if mode is LockMode.SHARED:
            if self.shared_holders <= 0:
                raise RuntimeError(f"{self.name}: shared release without a holder")
            self.shared_holders -= 1
        else:
            if self.exclusive_holder is not backend:
                raise RuntimeError(f"{self.name}: exclusive release by a non-holder")
            self.exclusive_holder = None
        woken = self._hand_off(backend)
        yield from self._word_atomics(backend, self._release, category)
        if woken:
            yield from self._word_atomics(backend, self._release_queue_lock, Category.LOCK_WAIT)
            yield from backend.compute(WAKE_CYCLES * woken, category)

    def _hand_off(self, releaser: Backend) -> int:
        """Grant the lock to the head waiter, and to every shared waiter behind a shared head.

        PostgreSQL wakes waiters to retry; granting them directly is the same order without a
        window where the lock is free while sleepers wait (a newcomer never overtakes them).
        The releaser posts each one's semaphore from its own thread (an asynchronous wake-up).
        """
        if self.overtake:
            return self._hand_off_as_wakeup(releaser)
        woken = 0
        while self.waiters:
            backend, mode, event = self.waiters[0]
            if not self._free_for(mode):
                break
            self.waiters.popleft()
            self._wake(releaser, backend, mode, event)
            woken += 1
            if mode is LockMode.EXCLUSIVE:
                break
        return woken

    def _hand_off_as_wakeup(self, releaser: Backend) -> int:
        """``LWLockWakeup``'s choice: an exclusive head alone, else every shared waiter."""
        waiters = self.waiters
        if not waiters or not self._free_for(waiters[0][1]):
            return 0
        if waiters[0][1] is LockMode.EXCLUSIVE:
            self._wake(releaser, *waiters.popleft())
            return 1
        kept: deque[tuple[Backend, LockMode, simpy.Event]] = deque()
        woken = 0
        for backend, mode, event in waiters:
            if mode is LockMode.SHARED:
                self._wake(releaser, backend, mode, event)
                woken += 1
            else:
                kept.append((backend, mode, event))
        self.waiters = kept
        return woken

    def _wake(self, releaser: Backend, backend: Backend, mode: LockMode,
              event: simpy.Event) -> None:
        """Grant the lock to a waiter and post its semaphore from the releaser's thread."""
        self._grant(backend, mode)
        if releaser.task is not None and backend.task is not None:
            releaser.task.wakes(backend.task, sync=False)
        event.succeed()
