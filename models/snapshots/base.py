"""The interface every snapshot algorithm implements, with the parts all versions share.

:class:`SnapshotAlgorithm` is one PostgreSQL version's ``GetSnapshotData`` and transaction-end
code as memory operations, with what all versions share (LWLocks, the pinned B-tree pages, xid
assignment counters); the subclasses, one module per version family, are in
:mod:`snapsim_models.snapshots`. The semantic state they act on is the
:class:`~snapsim_models.procarray.ProcArray`.

Connections that come and go (``options.churn``) change the procArray while it is in use: a
connect runs ``InitProcess`` (a pop of the LIFO PGPROC free list under ``ProcStructLock``, the
own fields' initialisation; proc.c@9.1/@13/@14) and ``ProcArrayAdd``, a disconnect
``ProcArrayRemove`` and ``ProcKill`` (the push back). :meth:`SnapshotAlgorithm.init_process`,
:meth:`~SnapshotAlgorithm.proc_array_add`, :meth:`~SnapshotAlgorithm.proc_array_remove` and
:meth:`~SnapshotAlgorithm.proc_kill` issue their memory operations; each version supplies the
steps under the lock (``_add_steps``, ``_remove_steps``) and the own fields ``InitProcess``
initialises (``_init_fields``). The free list's contents are kept by the caller
(:mod:`snapsim_models.churn`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import ClassVar, Protocol

from simulator.hardware.codes import Op
from simulator.hardware.layout import Region
from simulator.hardware.tracked import Ops, ScanPlan, TrackedMemory
from simulator.runtime.engine import ProcessGenerator

from ..backend import Backend, Category
from ..buffers import HotPage
from ..costs import PgCosts
from ..lwlock import LockMode, LWLock
from ..procarray import ProcArray
from ..shmem.memory import Layout, PgSharedMemory
from ..spin import SpinLock

ATOMIC_USERS = ("lwlock", "buffer")
"""Who updates words with load + CAS loops, each of which can be fused for an ablation: the
LWLocks (``LWLockAttemptLock``) and the hot pages' buffer words (``PinBuffer``, ``UnpinBuffer``,
their mapping and content locks)."""


class AlgorithmOptions(Protocol):
    """What an algorithm reads of the model's options.

    :class:`~snapsim_models.options.PgOptions` has these, and more, as fields; declared here so
    that the algorithms need not import the options module (which checks layouts against them).
    """

    @property
    def costs(self) -> PgCosts:
        """The global cost model (the algorithm reads its per-entry scan costs)."""
        ...

    @property
    def entries_per_chunk(self) -> int:
        """ProcArray entries per scan chunk."""
        ...

    @property
    def fused_atomics(self) -> frozenset[str]:
        """Users of atomics whose load + CAS loops are fused (:data:`ATOMIC_USERS`)."""
        ...

    @property
    def pin_protocol(self) -> str:
        """How pins update a buffer header (:data:`~snapsim_models.buffers.PIN_PROTOCOLS`)."""
        ...

    @property
    def lwlock_queue(self) -> str:
        """The LWLocks' queue discipline (:data:`~snapsim_models.lwlock.QUEUES`)."""
        ...


PLAN_CACHE_ENTRIES = 256
"""Scan plans kept per cache of an algorithm (a cache is emptied when it is full): connections
that come and go through a LIFO free list bring the procArray back to the same few contents."""



class SnapshotAlgorithm(ABC):
    """One PostgreSQL version's snapshot and transaction-end code, as memory operations.

    Lifecycle: construct, :meth:`prepare` (registers every line it will touch), build the machine,
    then run. Every method that touches memory is a generator to ``yield from`` in a backend's
    process.
    """

    name: ClassVar[str]
    layout: ClassVar[Layout]
    """The shared-memory layout family the version runs on
    (:func:`~snapsim_models.shmem.build.build_shared_memory`, which is handed the class: a
    :class:`~snapsim_models.shmem.memory.MemoryVersion`). ``pgxact_split`` and the variants
    built on it share 14's memory; ``post14_shared_cache`` appends its shared snapshot to it and
    ``running_xids`` its count and array (allocated last: nothing else moves)."""
    shared_snapshot: ClassVar[bool] = False
    """Whether the version's shared memory ends with one shared snapshot (a what-if)."""
    running_xids_array: ClassVar[bool] = False
    """Whether it ends with a count and a dense array of the running xids (a what-if)."""
    lock_protocol: ClassVar[str] = "atomic"
    supports_churn: ClassVar[bool] = True
    """Whether connections can come and go (:meth:`proc_array_add`, :meth:`proc_array_remove`)."""
    churn_takes_xid_gen_lock: ClassVar[bool] = False
    """Whether ``ProcArrayAdd``/``ProcArrayRemove`` also take XidGenLock exclusive (14)."""

    def __init__(self, shmem: PgSharedMemory, tracked: TrackedMemory, procarray: ProcArray,
                 options: AlgorithmOptions) -> None:
        self.shmem = shmem
        self.lwlock_queue = options.lwlock_queue
        """The LWLocks' queue discipline (:data:`~snapsim_models.lwlock.QUEUES`)."""
        self.tracked = tracked
        self.procarray = procarray
        self.scan_costs = options.costs.scan
        self.entries_per_chunk = options.entries_per_chunk
        fused_atomics = options.fused_atomics
        self.fused_atomics = fused_atomics
        pin_protocol = options.pin_protocol
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
        self._churning: set[int] = set()
        """Connections of the PGPROC slots that connect and disconnect (:meth:`prepare_churn`)."""
        self._plan_cache: dict[object, ScanPlan] = {}
        """Scan plans of moved, searched or scanned entries, by what they cover."""

    # ------------------------------------------------------------------ setup

    def prepare(self, backends: Sequence[Backend]) -> None:
        """Register the lines of every backend that runs (and the scans); called once."""
        for backend in backends:
            with self.tracked.registering_for(backend.connection):
                self._own[backend.connection] = self._own_accesses_of(backend)

    def prepare_churn(self, pool: Sequence[Backend]) -> None:
        """Register what connections that come and go touch; after :meth:`prepare`, once.

        ``pool`` holds a backend per PGPROC slot a connecting client can pop (not in the array
        yet, index -1). Registered: ``ProcStructLock`` and the free list's fields of
        ``PROC_HDR``, each slot's own accesses (its connect and disconnect steps included) and
        the lines the version's moves and scans of up to :attr:`ProcArray.capacity` entries
        touch (:meth:`_prepare_moves`), as lines shared by every backend.

        Raises:
            ValueError: the version models no connect or disconnect.
        """
        if not self.supports_churn:
            raise ValueError(f"{self.name} models no connect or disconnect")
        self._churning = {backend.connection for backend in pool}
        shm, tracked = self.shmem, self.tracked
        assert shm.proc_struct_lock is not None
        self.proc_struct_lock = SpinLock(tracked.access(shm.proc_struct_lock, 0, "value",
                                                        Op.RMW))
        """``ProcStructLock``, taken by ``InitProcess`` and ``ProcKill``."""
        free_procs = tracked.access(shm.proc_hdr, 0, "freeProcs", Op.LOAD)
        spins = tracked.access(shm.proc_hdr, 0, "spins_per_delay", Op.LOAD)
        self._free_list_load = spins + free_procs
        self._free_list_store = free_procs.with_op(Op.STORE)
        self._spins_store = spins.with_op(Op.STORE)
        num_procs = tracked.access(shm.procarray, 0, "numProcs", Op.LOAD)
        self._header_load = num_procs + tracked.access(shm.procarray, 0, "maxProcs", Op.LOAD)
        """R ``numProcs`` and ``maxProcs`` (the ProcArray header line; the full check)."""
        self._count_load = num_procs
        """R ``numProcs`` alone (``ProcArrayRemove``)."""
        self._header_store = num_procs.with_op(Op.STORE)
        """W ``numProcs``."""
        self._prepare_moves(pool)
        for backend in pool:
            backend.index = 0  # a valid index for the index-dependent own accesses (14)
            with tracked.registering_for(backend.connection):
                self._own[backend.connection] = self._own_accesses_of(backend)
            backend.index = -1

    def _prepare_moves(self, pool: Sequence[Backend]) -> None:
        """Register the lines of the version's connect and disconnect steps and scans.

        Those of up to :attr:`ProcArray.capacity` entries (``pool``: the slots not in the array
        yet). None by default.
        """
        return

    def _own_accesses_of(self, backend: Backend) -> dict[str, Ops]:
        """:meth:`own_accesses`, with a connection's own steps when connections come and go."""
        own = self.own_accesses(backend)
        if backend.connection in self._churning:
            own.update(self._churn_own_accesses(backend))
        return own

    def _churn_own_accesses(self, backend: Backend) -> dict[str, Ops]:
        """The own accesses of a connect and a disconnect.

        ``links`` (R ``links.next`` of the own PGPROC), ``links_store`` and ``init``
        (``InitProcess``'s own stores).
        """
        tracked, pgproc, pgprocno = self.tracked, self.shmem.pgproc, backend.pgprocno
        links = tracked.access(pgproc, pgprocno, "links", Op.LOAD)
        init = Ops((access for region, fields in self._init_fields() for field in fields
                    for access in tracked.access(region, pgprocno, field, Op.STORE)), tracked)
        return {"links": links, "links_store": links.with_op(Op.STORE), "init": init}

    def _own_fields(self, backend: Backend, region: Region, op: Op, *fields: str) -> Ops:
        """``op`` on each of ``fields`` of ``backend``'s own element of ``region``, in order."""
        tracked, pgprocno = self.tracked, backend.pgprocno
        return Ops((access for field in fields
                    for access in tracked.access(region, pgprocno, field, op)), tracked)

    def _init_fields(self) -> list[tuple[Region, tuple[str, ...]]]:
        """The fields of the own slot ``InitProcess`` initialises, per region (pgprocno-indexed)."""
        return []

    @abstractmethod
    def own_accesses(self, backend: Backend) -> dict[str, Ops]:
        """The backend's own stores by name (``xmin``, ``lxid``, ``end``, ...)."""

    def release(self) -> None:
        """Drop the per-backend accesses once the run is over (see ``TrackedMemory.release``)."""
        self._own.clear()
        self._plan_cache.clear()

    def own(self, backend: Backend, name: str) -> Ops:
        """Precomputed accesses ``name`` of a backend."""
        return self._own[backend.connection][name]

    def _lwlock(self, name: str, lock: Region) -> LWLock:
        word = self.tracked.access(lock, 0, self.shmem.lwlock_word, Op.RMW)
        if self.lock_protocol == "spinlock":
            word += self.tracked.access(lock, 0, "shared", Op.STORE)
        return LWLock(name, word, self.lock_protocol, "lwlock" in self.fused_atomics,
                      self.lwlock_queue)

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

    # ------------------------------------------------------------------ connect and disconnect

    def init_process(self, backend: Backend) -> ProcessGenerator:
        """``InitProcess``'s shared steps (proc.c@9.1/@13/@14), the slot already popped.

        Under ``ProcStructLock``: R ``spins_per_delay`` and ``freeProcs`` (``PROC_HDR``), R the
        popped PGPROC's ``links.next``, W ``freeProcs``; then, unlocked, W the own fields the
        version initialises (:meth:`_init_fields`: 13's PGXACT entry among them).
        """
        category = Category.CONNECTION
        yield from self.proc_struct_lock.acquire(backend, category)
        yield from backend.ops(self._free_list_load + self.own(backend, "links")
                               + self._free_list_store, category)
        yield from self.proc_struct_lock.release(backend, category)
        yield from backend.ops(self.own(backend, "init"), category)

    def proc_kill(self, backend: Backend) -> ProcessGenerator:
        """``ProcKill``'s shared steps (proc.c@9.1/@13/@14); the caller pushes the slot back.

        Under ``ProcStructLock``: R ``spins_per_delay`` and ``freeProcs``, W the own
        ``links.next`` and ``freeProcs`` (the push), W ``spins_per_delay``
        (``update_spins_per_delay``).
        """
        category = Category.CONNECTION
        yield from self.proc_struct_lock.acquire(backend, category)
        yield from backend.ops(self._free_list_load + self.own(backend, "links_store")
                               + self._free_list_store + self._spins_store, category)
        yield from self.proc_struct_lock.release(backend, category)

    def proc_array_add(self, backend: Backend) -> ProcessGenerator:
        """``ProcArrayAdd`` (``InitProcessPhase2``): the locks exclusive, the version's steps."""
        category = Category.CONNECTION
        yield from self._lock_for_change(backend)
        procarray = self.procarray
        yield from self._add_steps(backend, procarray.insertion_index(backend.pgprocno),
                                   len(procarray))
        yield from backend.sync()
        self._entries_changed(procarray.add(backend))
        yield from self._unlock_after_change(backend, category)

    def proc_array_remove(self, backend: Backend) -> ProcessGenerator:
        """``ProcArrayRemove`` (``RemoveProcFromArray`` at exit): locks, the version's steps."""
        category = Category.CONNECTION
        yield from self._lock_for_change(backend)
        procarray = self.procarray
        yield from self._remove_steps(backend, backend.index, len(procarray))
        yield from backend.sync()
        self._entries_changed(procarray.remove(backend))
        yield from self._unlock_after_change(backend, category)

    def _lock_for_change(self, backend: Backend) -> ProcessGenerator:
        category = Category.CONNECTION
        yield from self.proc_array_lock.acquire(backend, LockMode.EXCLUSIVE, category)
        if self.churn_takes_xid_gen_lock:
            yield from self.xid_gen_lock.acquire(backend, LockMode.EXCLUSIVE, category)

    def _unlock_after_change(self, backend: Backend, category: Category) -> ProcessGenerator:
        """Release in the reverse order (14 releases XidGenLock first)."""
        if self.churn_takes_xid_gen_lock:
            yield from self.xid_gen_lock.release(backend, LockMode.EXCLUSIVE, category)
        yield from self.proc_array_lock.release(backend, LockMode.EXCLUSIVE, category)

    def _add_steps(self, backend: Backend, index: int, n: int) -> ProcessGenerator:
        """The memory operations of ``ProcArrayAdd`` at ``index`` of ``n`` entries, locked."""
        raise NotImplementedError(f"{self.name} models no ProcArrayAdd")

    def _remove_steps(self, backend: Backend, index: int, n: int) -> ProcessGenerator:
        """The memory operations of ``ProcArrayRemove`` of entry ``index`` of ``n``, locked."""
        raise NotImplementedError(f"{self.name} models no ProcArrayRemove")

    def _entries_changed(self, moved: list[Backend]) -> None:
        """After an add or a remove: ``moved`` changed index (scan plans follow the entries)."""
        return

    # ------------------------------------------------------------------ plans of entries

    def _cached_plan(self, key: object, build: Callable[[], ScanPlan]) -> ScanPlan:
        plans = self._plan_cache
        plan = plans.get(key)
        if plan is None:
            if len(plans) >= PLAN_CACHE_ENTRIES:
                plans.clear()
            plan = plans[key] = build()
        return plan

    def _elements(self, region: Region | None, start: int, stop: int, op: Op = Op.LOAD,
                  fields: tuple[str, ...] | None = None) -> ScanPlan | None:
        """A scan of elements ``start..stop-1`` of an array (whole elements by default)."""
        if stop <= start:
            return None
        assert region is not None
        return self._cached_plan(
            (id(region), start, stop, op, fields),
            lambda: self.tracked.scan([(region, range(start, stop), fields)], stop - start,
                                      self.entries_per_chunk, "stream", op))

    def _of_procs(self, pgprocnos: tuple[int, ...], field: str, op: Op) -> ScanPlan | None:
        """One field of the PGPROCs of ``pgprocnos``, in that order (an indirect pattern)."""
        if not pgprocnos:
            return None
        pgproc = self.shmem.pgproc
        return self._cached_plan(
            ("pgproc", field, op, pgprocnos),
            lambda: self.tracked.scan([(pgproc, pgprocnos, (field,))], len(pgprocnos),
                                      self.entries_per_chunk, "indirect", op))

    def _run_plans(self, backend: Backend, plans: Sequence[ScanPlan | None],
                   cycles_per_entry: float = 0.0) -> ProcessGenerator:
        """Issue scans in order, skipping the empty ones (``memmove`` costs only its lines)."""
        for plan in plans:
            if plan is not None:
                yield from backend.scan(plan, cycles_per_entry, Category.CONNECTION)

