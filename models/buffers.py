"""Buffer accesses of the hot B-tree pages: mapping-partition lock, pin, content lock, unpin.

Every ``pgbench -S`` transaction descends the accounts index through its root and inner page,
and ``ReadBuffer`` → ``BufferAlloc``, ``PinBuffer``, ``LockBuffer`` and ``UnpinBuffer``
(``src/backend/storage/buffer/bufmgr.c``) update the same few words for every backend:

* 13/14 (``atomic`` words): the buffer-mapping partition lock taken shared (a load and CAS loop,
  later an atomic sub), ``PinBuffer`` (bufmgr.c:1589@13, :1692@14: a load of the descriptor's
  ``state``, then a CAS loop that adds one to the refcount and the usage count, waiting in
  ``WaitBufHdrUnlocked`` while ``BM_LOCKED`` is set), the content lock taken shared (load and CAS
  loop, later an atomic sub; an LWLock inside the 64-byte descriptor since 9.6, commit 6150a1b0)
  and ``UnpinBuffer`` (bufmgr.c:1712@13, :1840@14: load and CAS loop, refcount - 1). Each load
  and CAS is its own operation at the simulation clock (an
  :class:`~simulator.runtime.atomic_word.AtomicWord` per word), so a CAS fails when another
  backend changed the word in between.
* 9.1 (``spinlock`` words): the same steps on its own words, each one test-and-set
  (:class:`~snapsim_models.shmem.memory.PinnedPage`: the buffer-header spinlock, the LWLocks'
  ``mutex``), issued as one sequence.

The buffer-header lock (``LockBufHdr``: a ``fetch_or`` of ``BM_LOCKED``) is taken by the paths
that change a buffer's identity or flags, none of which a read-only transaction of a hot page
runs; :meth:`HotPage.lock_header` takes it for the model's users that need it, and a pin then
waits as ``WaitBufHdrUnlocked`` does (:mod:`snapsim_models.spin`).

Left out: the buffer-mapping hash lookup (private work), the usage-count ceiling (a CAS that
changes the word either way), and any path that evicts or dirties a hot page.
"""

from __future__ import annotations

from simulator.hardware.codes import Op
from simulator.hardware.layout import Region
from simulator.hardware.tracked import Ops, TrackedMemory
from simulator.runtime.atomic_word import AtomicWord
from simulator.runtime.engine import ProcessGenerator

from .backend import Backend, Category
from .shmem.memory import PinnedPage
from .spin import SpinDelay

PIN_PROTOCOLS = ("atomic", "spinlock")
"""How ``PinBuffer``/``UnpinBuffer`` update the buffer header: a CAS loop (9.6+, commit
48354581a4) or under the header spinlock (9.2-9.5)."""


class HotPage:
    """The accesses of one buffer access to a hot page.

    Args:
        tracked: the tracked memory the accesses are registered in.
        page: the page's lines.
        protocol: ``"atomic"`` (9.5+: load + CAS loops) or ``"spinlock"`` (9.1).
        fused_atomics: ``atomic`` only: issue the whole access as one sequence, as 9.1's, so no
            other backend's operation comes between its steps and no CAS fails (the ablation).
        pin: ``atomic`` only: ``"atomic"`` (9.6+: ``PinBuffer``/``UnpinBuffer`` as CAS loops) or
            ``"spinlock"`` (9.2-9.5: each takes the buffer-header spinlock, changes the refcount
            and releases it; see :meth:`spinlock_pin`), the what-if of the 9.6 change.
    """

    def __init__(self, tracked: TrackedMemory, page: PinnedPage, protocol: str = "atomic",
                 fused_atomics: bool = False, pin: str = "atomic") -> None:
        if protocol not in ("atomic", "spinlock"):
            raise ValueError(f"unknown buffer protocol {protocol!r}")
        if pin not in PIN_PROTOCOLS:
            raise ValueError(f"unknown pin protocol {pin!r} (choose {' or '.join(PIN_PROTOCOLS)})")

        def rmw(region: Region, field: str) -> Ops:
            return tracked.access(region, 0, field, Op.RMW)

        self.name = page.name
        self.fused = fused_atomics or protocol == "spinlock"
        self.spinlock_pins = pin == "spinlock"
        mapping = rmw(page.mapping_lock, page.mapping_lock_field)
        header = rmw(page.descriptor, page.header_field)
        content = rmw(page.content_lock, page.content_lock_field)
        self.mapping = AtomicWord(mapping)
        """The buffer-mapping partition lock's state word."""
        self.header = AtomicWord(header)
        """The descriptor's ``state`` (refcount, usage count, ``BM_LOCKED``)."""
        self.content = AtomicWord(content)
        """The content lock's state word."""
        self.header_locked_by: Backend | None = None
        """The backend holding the buffer-header lock (``BM_LOCKED``), if any."""
        self.accesses = (
            mapping.with_op(Op.LOAD) + mapping + header + mapping + content + content + header
        )
        """The steps as one sequence (9.1, and the ablation of 13/14's load + CAS loops)."""

    def access(self, backend: Backend, category: Category) -> ProcessGenerator:
        """One buffer access: mapping lock, pin, mapping unlock, content lock and unlock, unpin."""
        if self.fused:
            yield from backend.ops(self.accesses, category, lock_line=True)
            return
        yield from self.mapping.update(backend, category)
        if self.spinlock_pins:
            yield from self.spinlock_pin(backend, category)
        else:
            yield from self.pin(backend, category)
        yield from self.mapping.fetch_add(backend, category)
        yield from self.content.update(backend, category)
        yield from self.content.fetch_add(backend, category)
        if self.spinlock_pins:
            yield from self.spinlock_pin(backend, category)  # UnpinBuffer: the same, refcount - 1
        else:
            yield from self.header.update(backend, category)  # UnpinBuffer

    def pin(self, backend: Backend, category: Category) -> ProcessGenerator:
        """``PinBuffer``: load, wait while the header is locked, then the CAS loop."""
        yield from backend.sync()
        if self.header_locked_by is None:
            yield from self.header.update(backend, category)
            return
        delay = SpinDelay()  # WaitBufHdrUnlocked: loads under perform_spin_delay
        seen = yield from self.header.load(backend, Category.LOCK_WAIT)
        while self.header_locked():
            yield from delay.spin(backend, Category.LOCK_WAIT)
            seen = yield from self.header.load(backend, Category.LOCK_WAIT)
        yield from self.header.compare_and_swap(backend, seen, category)

    def header_locked(self) -> bool:
        """Whether a backend holds the header's spinlock.

        Read afresh after every wait, since other backends run meanwhile (a test of the
        attribute itself would stay narrowed for the type checker).
        """
        return self.header_locked_by is not None

    def spinlock_pin(self, backend: Backend, category: Category) -> ProcessGenerator:
        """9.2-9.5's ``PinBuffer``/``UnpinBuffer``: ``LockBufHdr``, refcount +- 1, unlock.

        The header lock is an ``slock_t`` (``S_LOCK``, ``s_lock.h``/``s_lock.c``): one TAS; while
        another backend holds it, ``perform_spin_delay``, then ``TAS_SPIN``: a read of the word and
        a TAS only when it looks free. The refcount change is a store under the lock; the unlock
        (``S_UNLOCK``) a store of the word.
        """
        delay = SpinDelay()
        yield from self.header.fetch_add(backend, category)  # TAS
        while self.header_locked():
            yield from delay.spin(backend, Category.LOCK_WAIT)
            yield from self.header.load(backend, Category.LOCK_WAIT)  # TAS_SPIN's read
            if not self.header_locked():
                yield from self.header.fetch_add(backend, category)  # its TAS
        self.header_locked_by = backend
        yield from self.unlock_header(backend, category)

    def lock_header(self, backend: Backend, category: Category) -> ProcessGenerator:
        """``LockBufHdr``: ``fetch_or(BM_LOCKED)``, spinning while another backend holds it."""
        delay = SpinDelay()
        while True:
            yield from self.header.fetch_add(backend, category)
            if self.header_locked_by is None:
                self.header_locked_by = backend
                return
            yield from delay.spin(backend, Category.LOCK_WAIT)

    def unlock_header(self, backend: Backend, category: Category) -> ProcessGenerator:
        """``UnlockBufHdr``: a store of the state without ``BM_LOCKED``."""
        if self.header_locked_by is not backend:
            raise RuntimeError(f"{self.name}: header unlocked by a backend that does not hold it")
        yield from backend.sync()
        self.header_locked_by = None
        yield from self.header.fetch_add(backend, category)
