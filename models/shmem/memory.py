"""The value types of the modelled PostgreSQL shared memory.

They are built by :mod:`snapsim_models.shmem.build`.

:class:`PgSharedMemory` holds the named regions of one version, :class:`ProcCounts` the slot
counts, :class:`PinnedPage` the lines of a hot B-tree page access. Sources are the PostgreSQL
files cited as ``file:line@version`` ("pa" = ``src/backend/storage/ipc/procarray.c``), as in
:mod:`snapsim_models.shmem.build`.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from simulator.hardware.layout import Region, SharedMemory

__all__ = [
    "CSN_COUNTER_FIELD",
    "Layout",
    "MemoryVersion",
    "PgSharedMemory",
    "PinnedPage",
    "ProcCounts",
]

Layout = Literal["pg91", "pg13", "pg14", "csn"]
"""Layout family: 9.1, the 9.2-13 family as of 13, 14+, and 14 plus the CSN patch's state."""

CSN_COUNTER_FIELD = "nextCommitSeqNo"
"""The VariableCache field that holds the CSN counter (csn only)."""


class MemoryVersion(Protocol):
    """What the shared-memory builder needs of a version: its key, layout family and additions.

    A snapshot algorithm's class has these as class attributes
    (:class:`~snapsim_models.snapshots.base.SnapshotAlgorithm`) and is handed to the builder
    as it is, so that the builder never looks a version up by name.
    """

    @property
    def name(self) -> str:
        """The version key (an experiment's algorithm name)."""
        ...

    @property
    def layout(self) -> Layout:
        """The layout family of its shared memory."""
        ...

    @property
    def shared_snapshot(self) -> bool:
        """Whether its memory ends with one shared snapshot (a what-if, not PostgreSQL)."""
        ...

    @property
    def running_xids_array(self) -> bool:
        """Whether its memory ends with the running xids' count and dense array (a what-if)."""
        ...


@dataclass(frozen=True)
class ProcCounts:
    """How many PGPROCs and procArray slots there are (GUC defaults, ASSUMPTION where noted).

    Attributes:
        max_connections: ``max_connections``.
        autovacuum_max_workers: default 3.
        max_worker_processes: default 8 (0 in 9.1: no background workers before 9.3).
        max_wal_senders: default 10; counted here only from 12 (before, walsenders used
            ``max_connections`` slots), so 0 for 9.1.
        max_prepared_xacts: default 0.
        auxiliary_procs: NUM_AUXILIARY_PROCS, ASSUMPTION 3 in 9.1, 4 in 13, 5 in 14 (archiver).
    """

    max_connections: int
    autovacuum_max_workers: int = 3
    max_worker_processes: int = 8
    max_wal_senders: int = 10
    max_prepared_xacts: int = 0
    auxiliary_procs: int = 4

    @classmethod
    def for_layout(cls, layout: Layout, max_connections: int) -> ProcCounts:
        """Defaults of the version family."""
        if layout == "pg91":
            return cls(
                max_connections, max_worker_processes=0, max_wal_senders=0, auxiliary_procs=3
            )
        return cls(max_connections, auxiliary_procs=4 if layout == "pg13" else 5)

    @property
    def max_backends(self) -> int:
        """MaxBackends: client, autovacuum (+ launcher), background-worker and walsender slots."""
        return (
            self.max_connections
            + self.autovacuum_max_workers
            + 1
            + self.max_worker_processes
            + self.max_wal_senders
        )

    @property
    def total_procs(self) -> int:
        """PGPROC (and PGXACT / dense-array) slots: MaxBackends + auxiliary + prepared."""
        return self.max_backends + self.auxiliary_procs + self.max_prepared_xacts

    @property
    def procarray_max_procs(self) -> int:
        """``PROCARRAY_MAXPROCS`` = MaxBackends + max_prepared_xacts."""
        return self.max_backends + self.max_prepared_xacts

    @property
    def autovacuum_launcher_pgprocno(self) -> int:
        """The launcher starts first and pops the top of the autovacuum LIFO freelist."""
        return self.max_connections + self.autovacuum_max_workers

    @property
    def logical_launcher_pgprocno(self) -> int | None:
        """The logical-replication launcher (10+) pops the top of the bgworker freelist."""
        if self.max_worker_processes == 0:
            return None
        return self.max_connections + self.autovacuum_max_workers + self.max_worker_processes


@dataclass(frozen=True)
class PinnedPage:
    """Shared lines of one access to a hot B-tree page's buffer.

    13/14: ``PinBuffer``/``UnpinBuffer`` CAS the descriptor's ``state`` and ``LockBuffer`` takes
    the content lock inside the descriptor (``BufferDesc``, padded to one 64-B line:
    ``BUFFERDESC_PAD_TO_SIZE``, buf_internals.h:215@14). 9.1: the buffer-header spinlock and
    ``refcount++`` (bufmgr.c:1099-1100@9.1), and the content lock in the main LWLock array.

    Attributes:
        name: the page's label: ``"BtreeRoot"`` or ``"BtreeInner<level>[<index>]"`` (level 1 is
            just below the root).
        buffer_id: index of the descriptor (ASSUMPTION, see :data:`ROOT_BUFFER_ID`).
        descriptor: the BufferDesc (a one-element view).
        header_field: field pinned by an RMW: ``"state"`` (13/14, CAS) or ``"buf_hdr_lock"``
            (9.1 spinlock; ``refcount`` is then written).
        content_lock: the region holding the content lock: the descriptor itself in 13/14, an
            LWLock of the main array in 9.1.
        content_lock_field: its atomic word (``"content_lock.state"`` or ``"mutex"``).
        partition: buffer-mapping partition (ASSUMPTION).
        mapping_lock: that partition's LWLock (a view).
        mapping_lock_field: its atomic word (``"state"`` or ``"mutex"``).
    """

    name: str
    buffer_id: int
    descriptor: Region
    header_field: str
    content_lock: Region
    content_lock_field: str
    partition: int
    mapping_lock: Region
    mapping_lock_field: str


@dataclass(frozen=True)
class PgSharedMemory:
    """The modelled shared memory of one version. Regions absent from a version are ``None``.

    Attributes:
        version: version key (:attr:`MemoryVersion.name`).
        layout: layout family.
        procs: slot counts.
        memory: the allocator with every region (for labels and the list of lines).
        variable_cache: ``ShmemVariableCache`` (one struct).
        lwlocks: the main LWLock array (``MainLWLockArray``; 9.1 ``LWLockArray``).
        proc_array_lock: view of ProcArrayLock; its atomic word is :attr:`lwlock_word`.
        xid_gen_lock: view of XidGenLock.
        lwlock_word: ``"state"`` (13/14) or ``"mutex"`` (9.1, then ``shared`` is written).
        proc_hdr: ``ProcGlobal`` (PROC_HDR).
        pgproc: PGPROC array indexed by pgprocno (9.1: backends then autovacuum procs).
        procarray: the ProcArrayStruct header (one struct).
        pgprocnos: the procArray's per-entry array: ``int pgprocnos[]`` (pre14, 14, csn) or, in
            9.1, ``PGPROC *procs[]`` (8 B, region name ``procs``).
        buffer_descs: the BufferDesc array.
        btree_root: the root page of ``pgbench_accounts_pkey``.
        btree_inner: its inner pages, per level from the root down (empty when the root is
            directly over the leaves; :mod:`snapsim_models.btree`).
        pgxact: PGXACT array indexed by pgprocno (pre14 only).
        xids, subxid_states, status_flags: the 14 dense arrays indexed by pgxactoff.
        csn_log: CSN-log slots, 8 B per xid (csn only).
        commit_seq_no_lock, csn_log_control_lock: their LWLocks (csn only).
        shared_snapshot, shared_snapshot_xids: the one shared snapshot's header and xid array
            (``post14_shared_cache`` only, a what-if).
        running_hdr, running_xids: the count and the dense array of running xids (the
            ``running_xids`` what-if only).
        proc_struct_lock: ``ProcStructLock``, the spinlock of the PGPROC free lists
            (``InitProcess`` pops, ``ProcKill`` pushes); placed last (see
            :mod:`snapsim_models.shmem.build`).
    """

    version: str
    layout: Layout
    procs: ProcCounts
    memory: SharedMemory
    variable_cache: Region
    lwlocks: Region
    proc_array_lock: Region
    xid_gen_lock: Region
    lwlock_word: str
    proc_hdr: Region
    pgproc: Region
    procarray: Region
    pgprocnos: Region
    buffer_descs: Region
    btree_root: PinnedPage
    btree_inner: tuple[tuple[PinnedPage, ...], ...]
    pgxact: Region | None = None
    xids: Region | None = None
    subxid_states: Region | None = None
    status_flags: Region | None = None
    csn_log: Region | None = None
    commit_seq_no_lock: Region | None = None
    csn_log_control_lock: Region | None = None
    shared_snapshot: Region | None = None
    shared_snapshot_xids: Region | None = None
    running_hdr: Region | None = None
    running_xids: Region | None = None
    proc_struct_lock: Region | None = None

    @property
    def procarray_sorted(self) -> bool:
        """True when the procArray is kept sorted by pgprocno (all but 9.1)."""
        return self.layout != "pg91"

    @property
    def csn_counter(self) -> Region | None:
        """The region holding the CSN counter (csn only).

        It is the VariableCache; the field is :data:`CSN_COUNTER_FIELD` (``nextCommitSeqNo``).
        """
        return self.variable_cache if self.layout == "csn" else None

    def pgprocno_for_connection(self, k: int) -> int:
        """The pgprocno of the k-th client to connect (0-based, no disconnects).

        ``InitProcGlobal`` pushes pgprocnos 0..max_connections-1 on the LIFO ``freeProcs`` list
        (proc.c:244-249@13) and ``InitProcess`` pops its top (proc.c:338-342@14), so clients get
        descending pgprocnos; ``ProcKill`` pushes a disconnecting backend's back on top, so the
        next client to connect takes it again (:meth:`free_pgprocnos`).
        """
        if not 0 <= k < self.procs.max_connections:
            raise IndexError(f"connection {k} outside 0..{self.procs.max_connections - 1}")
        return self.procs.max_connections - 1 - k

    def free_pgprocnos(self, connected: int) -> list[int]:
        """The ``freeProcs`` list once ``connected`` clients are connected, as a stack.

        The last element is the top, the pgprocno the next ``InitProcess`` pops (``connected``
        clients hold ``max_connections - 1`` down to ``max_connections - connected``).
        """
        if not 0 <= connected <= self.procs.max_connections:
            raise IndexError(f"{connected} connections outside 0..{self.procs.max_connections}")
        return list(range(self.procs.max_connections - connected))

    def procarray_build(self, pgprocnos: Sequence[int]) -> list[int]:
        """The procArray after ``ProcArrayAdd`` of each pgprocno in turn (no removals).

        The same list as repeated :meth:`procarray_add`, in O(N log N): sorted versions end up
        sorted whatever the order of the adds, 9.1 in the order of the adds.
        """
        if len(set(pgprocnos)) != len(pgprocnos):
            raise ValueError("a pgprocno is added twice to the procArray")
        if len(pgprocnos) > self.procs.procarray_max_procs:
            raise IndexError("procArray is full")
        return sorted(pgprocnos) if self.procarray_sorted else list(pgprocnos)

    def procarray_add(self, entries: list[int], pgprocno: int) -> int:
        """ProcArrayAdd on a list of pgprocnos; returns the index written.

        Sorted versions insert in order and shift the entries from that index up (pa:~300-317@13,
        pa:499-513@14); 9.1 appends (pa:274@9.1).
        """
        if pgprocno in entries:
            raise ValueError(f"pgprocno {pgprocno} is already in the procArray")
        if len(entries) >= self.procs.procarray_max_procs:
            raise IndexError("procArray is full")
        if not self.procarray_sorted:
            entries.append(pgprocno)
            return len(entries) - 1
        index = bisect.bisect_left(entries, pgprocno)
        entries.insert(index, pgprocno)
        return index

    def procarray_remove(self, entries: list[int], pgprocno: int) -> int:
        """ProcArrayRemove on a list of pgprocnos; returns the index the entry had.

        Sorted versions move the later entries down one slot (``ProcArrayRemove``, procarray.c@13
        and @14: a ``memmove``); 9.1 moves the last entry into the freed slot (pa:323@9.1).
        """
        try:
            index = entries.index(pgprocno)
        except ValueError:
            raise ValueError(f"pgprocno {pgprocno} is not in the procArray") from None
        if self.procarray_sorted:
            del entries[index]
        else:
            last = entries.pop()
            if index < len(entries):
                entries[index] = last
        return index

    def csn_log_slot(self, xid: int) -> int:
        """Index in :attr:`csn_log` of an xid's CSN (csn only)."""
        if self.csn_log is None:
            raise ValueError(f"version {self.version} has no CSN log")
        return xid % self.csn_log.count

    def label_for_line(self, line: int) -> str:
        """perf-c2c-style label of a line (see :mod:`simulator.hardware.layout`)."""
        return self.memory.label_for_line(line)
