"""The procArray's contents and the interface every snapshot algorithm implements.

:class:`ProcArray` is the semantic state the algorithms need (which pgprocnos are in the array and
in which order, who holds an xid, the shared counters' values); the costs come from the memory
operations the algorithms issue. :class:`SnapshotAlgorithm` is the interface of one PostgreSQL
version's ``GetSnapshotData`` and transaction-end code, with the parts all versions share
(LWLocks, the pinned B-tree pages, xid assignment counters). Subclasses live in
:mod:`snapsim_models.snapshots`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import ClassVar

from simulator.hardware.codes import Op
from simulator.hardware.layout import Region
from simulator.hardware.tracked import Ops, TrackedMemory
from simulator.runtime.engine import ProcessGenerator

from .backend import Backend, Category
from .buffers import HotPage
from .costs import ScanCosts
from .lwlock import LockMode, LWLock
from .shmem.memory import PgSharedMemory

ATOMIC_USERS = ("lwlock", "buffer")
"""Who updates words with load + CAS loops, each of which can be fused for an ablation: the
LWLocks (``LWLockAttemptLock``) and the hot pages' buffer words (``PinBuffer``, ``UnpinBuffer``,
their mapping and content locks)."""

FIRST_XID = 1000
"""The first xid handed out (any normal xid works; only identities matter)."""


class ProcArray:
    """Entries of the procArray (pgprocnos in array order) and the shared transaction counters.

    Args:
        shmem: the version's shared memory (sorting rule, launcher slots).
        backends: every client connection, in connection order.
        extra_pgprocnos: non-client entries (the launchers).
    """

    def __init__(self, shmem: PgSharedMemory, backends: Sequence[Backend],
                 extra_pgprocnos: Sequence[int]) -> None:
        entries = shmem.procarray_build([*(b.pgprocno for b in backends), *extra_pgprocnos])
        self.entries = entries
        position = {pgprocno: index for index, pgprocno in enumerate(entries)}
        for backend in backends:
            backend.index = position[backend.pgprocno]
        self.xid_holders: dict[int, Backend] = {}
        """procArray index → backend, for entries whose transaction has an xid."""
        self.next_xid = FIRST_XID
        self.latest_completed_xid = FIRST_XID - 1
        self.completion_count = 1
        """PG 14's ``xactCompletionCount``: +1 at every end of a transaction with an xid."""

    def __len__(self) -> int:
        return len(self.entries)


class SnapshotAlgorithm(ABC):
    """One PostgreSQL version's snapshot and transaction-end code, as memory operations.

    Lifecycle: construct, :meth:`prepare` (registers every line it will touch), build the machine,
    then run. Every method that touches memory is a generator to ``yield from`` in a backend's
    process.
    """

    name: ClassVar[str]
    lock_protocol: ClassVar[str] = "atomic"

    def __init__(self, shmem: PgSharedMemory, tracked: TrackedMemory, procarray: ProcArray,
                 scan_costs: ScanCosts, entries_per_chunk: int,
                 fused_atomics: frozenset[str] = frozenset(), pin_protocol: str = "atomic") -> None:
        self.shmem = shmem
        self.tracked = tracked
        self.procarray = procarray
        self.scan_costs = scan_costs
        self.entries_per_chunk = entries_per_chunk
        unknown = fused_atomics - set(ATOMIC_USERS)
        if unknown:
            raise ValueError(f"unknown users of atomics {sorted(unknown)} "
                             f"(choose from {', '.join(ATOMIC_USERS)})")
        self.fused_atomics = fused_atomics
        self.proc_array_lock = self._lwlock("ProcArrayLock", shmem.proc_array_lock)
        self.xid_gen_lock = self._lwlock("XidGenLock", shmem.xid_gen_lock)
        fused_buffers = "buffer" in fused_atomics
        self.root_page = HotPage(tracked, shmem.btree_root, self.lock_protocol, fused_buffers,
                                 pin_protocol)
        """The B-tree root: every transaction's descent starts there."""
        self.inner_levels = [[HotPage(tracked, page, self.lock_protocol, fused_buffers,
                                      pin_protocol)
                              for page in level] for level in shmem.btree_inner]
        """The inner pages per level from the root down; a descent visits one per level."""
        self._own: dict[int, dict[str, Ops]] = {}

    # ------------------------------------------------------------------ setup

    def prepare(self, backends: Sequence[Backend]) -> None:
        """Register the lines of every backend that runs (and the scans); called once."""
        for backend in backends:
            with self.tracked.registering_for(backend.connection):
                self._own[backend.connection] = self.own_accesses(backend)

    @abstractmethod
    def own_accesses(self, backend: Backend) -> dict[str, Ops]:
        """The backend's own stores by name (``xmin``, ``lxid``, ``end``, ...)."""

    def release(self) -> None:
        """Drop the per-backend accesses once the run is over (see ``TrackedMemory.release``)."""
        self._own.clear()

    def own(self, backend: Backend, name: str) -> Ops:
        """Precomputed accesses ``name`` of a backend."""
        return self._own[backend.connection][name]

    def _lwlock(self, name: str, lock: Region) -> LWLock:
        word = self.tracked.access(lock, 0, self.shmem.lwlock_word, Op.RMW)
        if self.lock_protocol == "spinlock":
            word += self.tracked.access(lock, 0, "shared", Op.STORE)
        return LWLock(name, word, self.lock_protocol, "lwlock" in self.fused_atomics)

    def _vc(self, field: str, op: Op) -> Ops:
        return self.tracked.access(self.shmem.variable_cache, 0, field, op)

    # ------------------------------------------------------------------ the interface

    @abstractmethod
    def get_snapshot(self, backend: Backend) -> ProcessGenerator:
        """GetSnapshotData: sets the backend's xmin if it was unset."""

    def start_transaction(self, backend: Backend) -> ProcessGenerator:
        """StartTransaction's shared effects (the lxid store)."""
        yield from backend.ops(self.own(backend, "lxid"), Category.OTHER)

    def clear_xmin(self, backend: Backend) -> ProcessGenerator:
        """``SnapshotResetXmin`` with no snapshot left: store an invalid xmin."""
        yield from backend.ops(self.own(backend, "xmin"), Category.OTHER)
        backend.xmin_set = False

    def end_transaction(self, backend: Backend) -> ProcessGenerator:
        """``ProcArrayEndTransaction`` of a transaction without an xid (no lock, own stores)."""
        yield from backend.ops(self.own(backend, "end"), Category.COMMIT)
        backend.xmin_set = False

    def assign_xid(self, backend: Backend) -> ProcessGenerator:
        """``GetNewTransactionId``: XidGenLock exclusive, advance nextXid, publish the xid."""
        yield from self.xid_gen_lock.acquire(backend, LockMode.EXCLUSIVE, Category.OTHER)
        yield from backend.ops(self._assignment_ops(backend), Category.OTHER)
        yield from backend.sync()
        backend.xid = self.procarray.next_xid
        self.procarray.next_xid += 1
        self._xid_assigned(backend)
        yield from self.xid_gen_lock.release(backend, LockMode.EXCLUSIVE, Category.OTHER)

    def _assignment_ops(self, backend: Backend) -> Ops:
        """The memory operations of an xid assignment under XidGenLock (the version's stores)."""
        return self.own(backend, "assign_xid")

    def _xid_assigned(self, backend: Backend) -> None:
        """Bookkeeping after ``backend`` got its xid, still under XidGenLock: it holds one."""
        self.procarray.xid_holders[backend.index] = backend

    def end_transaction_with_xid(self, backend: Backend) -> ProcessGenerator:
        """Commit of a transaction with an xid: ProcArrayLock exclusive, clear, counters."""
        yield from self.proc_array_lock.acquire(backend, LockMode.EXCLUSIVE, Category.COMMIT)
        yield from self._end_xid_and_release(backend)

    def _end_xid_and_release(self, backend: Backend) -> ProcessGenerator:
        """``ProcArrayEndTransactionInternal`` under ProcArrayLock held exclusive, then release."""
        yield from self._clear_xid(backend, backend)
        yield from self.proc_array_lock.release(backend, LockMode.EXCLUSIVE, Category.COMMIT)

    def _clear_xid(self, actor: Backend, member: Backend) -> ProcessGenerator:
        """``actor``, holding ProcArrayLock exclusive, ends ``member``'s xid.

        ``member`` is ``actor`` itself or, when ``actor`` leads a group clear, another backend.
        """
        yield from actor.ops(self.own(member, "end_xid"), Category.COMMIT)
        yield from actor.sync()
        self._completed(member)

    def _completed(self, backend: Backend) -> None:
        procarray = self.procarray
        procarray.xid_holders.pop(backend.index, None)
        procarray.latest_completed_xid = max(procarray.latest_completed_xid, backend.xid)
        procarray.completion_count += 1
        backend.xid = 0
        backend.xmin_set = False

    def pin_hot_pages(self, backend: Backend) -> ProcessGenerator:
        """The index descent's buffer accesses: the root, then one page per inner level.

        The key is uniform (pgbench's random ``aid``), so the inner page of each level is drawn
        uniformly. The leaf and heap pages are left out: one in tens of thousands, they are not
        shared lines.
        """
        yield from self.root_page.access(backend, Category.OTHER)
        for level in self.inner_levels:
            page = level[int(backend.env.rng.integers(len(level)))] if len(level) > 1 else level[0]
            yield from page.access(backend, Category.OTHER)
