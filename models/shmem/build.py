"""PostgreSQL shared memory per version, laid out byte-exactly.

The layouts use :mod:`simulator.hardware.layout`.

:func:`build_shared_memory` places, in PostgreSQL's allocation order, the structures the snapshot
models touch and returns a :class:`PgSharedMemory` with named regions. Sources are the PostgreSQL
files, cited as ``file:line@version`` (pa = ``src/backend/storage/ipc/procarray.c``, shmem.c =
``src/backend/storage/ipc/shmem.c``); struct layouts are in
:mod:`snapsim_models.shmem.structs`. The builder is handed the version
(:class:`~snapsim_models.shmem.memory.MemoryVersion`: an algorithm's class, with its key, its
layout family and the what-if regions it appends) and never looks one up by name. Version keys
and their layout family (each algorithm class's
:attr:`~snapsim_models.snapshots.base.SnapshotAlgorithm.layout`):

==================  ========  ===============================================================
version             layout    shared memory
==================  ========  ===============================================================
``pg91``            pg91      9.1: PGPROC array scanned directly, ``PGPROC *procs[]`` unsorted
``pre14``           pg13      9.2-13 as of 13: PGXACT (128-aligned), sorted ``pgprocnos[]``
``pgxact_split``    pg14      14: dense ``xids``/``subxidStates``/``statusFlags``, xmin in PGPROC
``post14``          pg14      identical to ``pgxact_split`` (they differ only in algorithm)
``post14_lockfree`` pg14      the same (a what-if of the algorithm, :mod:`snapsim_models.snapshots`)
``csn``             csn       14 plus the csn-v8 patch's VariableCache, CSN log and two LWLocks
``running_xids``    pg14      14 plus a what-if's count and dense array of running xids, last
==================  ========  ===============================================================

``post14_shared_cache`` (layout pg14) is post14's memory plus, at the end, one shared snapshot (a
what-if: a header line and an xid array of ``procArray->maxProcs`` entries; its class's
``shared_snapshot``); ``running_xids`` appends its count and array (``running_xids_array``).

Allocation rules: 9.1's ``ShmemAlloc`` MAXALIGNs (8 B) and BUFFERALIGNs (32 B) requests of at
least BLCKSZ (shmem.c:167-208@9.2); 9.6+ CACHELINEALIGN (128 B = ``PG_CACHE_LINE_SIZE``,
pg_config_manual.h:260@13) every allocation (shmem.c:190@9.6, :212@13; commit 09adc9a8c0).

Address space: offset 0 is the start of the shared-memory segment, which is page-aligned, so an
offset's phase modulo 64 or 128 is the real address's. Allocations the models do not touch (shmem
index, buffer blocks, lock tables, ...) are omitted. That is exact for 13/14 (every allocation is
128-aligned, so omitting one moves later ones by multiples of 128). For 9.1 the phase of regions
after the LWLock array depends on allocations not modelled; each such region is placed at an
ASSUMPTION phase
(see :func:`build_shared_memory`).

Layout what-ifs: ``layout_edits`` (:mod:`simulator.hardware.layout_edits`, the experiment's
``options.layout``) change the structs and arrays as they are allocated, by region name (the
names above and in the per-line labels: ``PGXACT``, ``PGPROC``, ``VariableCache``, ``xids``,
``MainLWLockArray``, ...); an edit whose region or field a version lacks is skipped for that
version, and :func:`check_layout_edits` rejects one that fits no version.

Ordering facts: pre14 and 14 keep the procArray sorted by pgprocno (``ProcArrayAdd`` inserts in
order, pa:~300-317@13, pa:499-513@14; ``ProcArrayRemove`` memmoves down); 9.1 appends (pa:274@9.1)
and removes by swapping the last entry in (pa:323@9.1). pgprocnos come from a LIFO freelist
(``InitProcGlobal``, proc.c:244-249@13): connection k (0-based, in connect order, no disconnects)
gets ``max_connections - 1 - k``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from simulator.errors import ConfigError
from simulator.hardware.layout import Region, Struct
from simulator.hardware.layout_edits import EditedSharedMemory, LayoutEdit, Move

from ..btree import DEFAULT_PGBENCH_SCALE, inner_level_pages
from . import structs as st
from .memory import (
    Layout,
    MemoryVersion,
    PgSharedMemory,
    PinnedPage,
    ProcCounts,
)

__all__ = ["build_shared_memory", "check_layout_edits", "check_layout_edits_apply"]


MAXALIGN = 8
BUFFERALIGN = 32  # ALIGNOF_BUFFER
CACHELINEALIGN = 128  # PG_CACHE_LINE_SIZE (pg_config_manual.h:260@13, :266@14)
BLCKSZ = 8192
PG_SHMEM_HEADER_BYTES = 48  # sizeof(PGShmemHeader), pg_shmem.h (Linux, non-EXEC_BACKEND)

# Individual LWLock ids (lwlocknames.txt; 9.1: the LWLockId enum in lwlock.h@9.1).
OID_GEN_LOCK = 2
XID_GEN_LOCK = 3
PROC_ARRAY_LOCK = 4
SINVAL_READ_LOCK = 5
CSN_LOG_CONTROL_LOCK = 12  # csn-v8 patch lwlocknames.txt@d880c47d8a (replaces SubtransControlLock)
COMMIT_SEQ_NO_LOCK = 43  # csn-v8 patch lwlocknames.txt@d880c47d8a

# 13/14 MainLWLockArray: ASSUMPTION NUM_INDIVIDUAL_LWLOCKS = 48 (lwlocknames.txt@13/14 ends at
# NotifyQueueTailLock 47); then 128 buffer-mapping, 16 lock-manager, 16 predicate partitions.
NUM_INDIVIDUAL_LWLOCKS_13 = 48
NUM_BUFFER_PARTITIONS_13 = 128
NUM_MAIN_LWLOCKS_13 = NUM_INDIVIDUAL_LWLOCKS_13 + NUM_BUFFER_PARTITIONS_13 + 16 + 16

# 9.1 LWLockArray: ASSUMPTION (counted from lwlock.h@9.1): 33 individual locks, then
# 16 buffer-mapping, 16 lock-manager and 16 predicate partitions (NumFixedLWLocks = 81); 64 SLRU
# buffer locks (clog 8, subtrans 32, multixact 8 + 16) are assigned next, then per buffer an
# io_in_progress lock and a content lock (buf_init.c@9.1).
FIRST_BUF_MAPPING_LOCK_91 = 33
NUM_BUFFER_PARTITIONS_91 = 16
FIRST_BUFFER_LWLOCK_91 = 81 + 64

# Buffers (bufmgr.c, buf_internals.h). ASSUMPTION: shared_buffers = 128 MB. Which buffers and
# mapping partitions the pages of pgbench_accounts_pkey land in is arbitrary: the root takes buffer
# 64 (a multiple of 64 puts 9.1's 52-B descriptor on a line start), the inner pages consecutive
# buffers from 128 on (top level first), and the partitions stand in for the hash of each page's
# buffer tag (BufTableHashPartition): the k-th inner page takes partition (first + 37 k) mod the
# partition count, which spreads the first 128 (9.1: 16) inner pages over every partition.
N_BUFFERS = 16384
ROOT_BUFFER_ID = 64
INNER_BUFFER_ID = 128
ROOT_PARTITION = {"pg91": 5, "pg13": 17, "pg14": 17, "csn": 17}
INNER_PARTITION = {"pg91": 11, "pg13": 93, "pg14": 93, "csn": 93}
INNER_PARTITION_STRIDE = 37
MAX_INNER_PAGES = N_BUFFERS - INNER_BUFFER_ID
DEFAULT_INNER_PAGES = inner_level_pages(DEFAULT_PGBENCH_SCALE)

# CSN log (csn-v8 patch, csnlog.c@d880c47d8a): 8 B per xid, 1024 per 8-KiB page. ASSUMPTION: the
# SLRU buffer pool is modelled as 8 contiguous pages, xid x in slot x mod 8192.
CSN_LOG_ENTRIES = 8 * 1024

_PG_SHMEM_HEADER = Struct("PGShmemHeader", PG_SHMEM_HEADER_BYTES, {})
_SPINLOCK = Struct("ShmemLock", 1, {"value": (0, 1)})
_PROC_STRUCT_LOCK = Struct("ProcStructLock", 1, {"value": (0, 1)})
"""``ProcStructLock``: the ``slock_t`` that guards the PGPROC free lists (``InitProcGlobal``,
proc.c@9.1/@13/@14: a ``ShmemAlloc`` of its own, after the PGPROC arrays)."""
_SUBXID_STATUS = Struct("subxidStates", 2, {"count": (0, 1), "overflowed": (1, 1)})


@dataclass(frozen=True, slots=True)
class _PageSlot:
    """Where one B-tree page's buffer is: its level's label, index, buffer id and partition."""

    level: str
    index: int | None
    buffer_id: int
    partition: int

    def label(self, suffix: str = "") -> str:
        """``BtreeRoot<suffix>`` or ``BtreeInner<level><suffix>[<index>]``."""
        return self.level + suffix + ("" if self.index is None else f"[{self.index}]")


def _btree_slots(layout: Layout, inner_pages: Sequence[int]) -> list[list[_PageSlot]]:
    """The root's slot, then each inner level's (top-down), as lists."""
    if any(pages < 1 for pages in inner_pages):
        raise ConfigError("btree_inner_pages", f"every level needs a page, got {list(inner_pages)}")
    if sum(inner_pages) > MAX_INNER_PAGES:
        raise ConfigError("btree_inner_pages", f"{sum(inner_pages)} inner pages do not fit in "
                          f"{MAX_INNER_PAGES} buffers")
    n_partitions = NUM_BUFFER_PARTITIONS_91 if layout == "pg91" else NUM_BUFFER_PARTITIONS_13
    slots = [[_PageSlot("BtreeRoot", None, ROOT_BUFFER_ID, ROOT_PARTITION[layout])]]
    k = 0
    for level, pages in enumerate(inner_pages, start=1):
        level_slots = []
        for index in range(pages):
            partition = (INNER_PARTITION[layout] + INNER_PARTITION_STRIDE * k) % n_partitions
            level_slots.append(_PageSlot(f"BtreeInner{level}", index, INNER_BUFFER_ID + k,
                                         partition))
            k += 1
        slots.append(level_slots)
    return slots


def _buffer_names(slots: list[list[_PageSlot]]) -> dict[int, str]:
    return {slot.buffer_id: slot.label("Buf") for level in slots for slot in level}


def _lwlock_names(layout: Layout, slots: list[list[_PageSlot]]) -> dict[int, str]:
    names = {
        OID_GEN_LOCK: "OidGenLock",
        XID_GEN_LOCK: "XidGenLock",
        PROC_ARRAY_LOCK: "ProcArrayLock",
        SINVAL_READ_LOCK: "SInvalReadLock",
    }
    first = FIRST_BUF_MAPPING_LOCK_91 if layout == "pg91" else NUM_INDIVIDUAL_LWLOCKS_13
    for level in slots:
        for slot in level:
            names[first + slot.partition] = f"BufMappingLock[{slot.partition}]"
            if layout == "pg91":
                names[FIRST_BUFFER_LWLOCK_91 + 2 * slot.buffer_id + 1] = slot.label("ContentLock")
    if layout == "csn":
        names[CSN_LOG_CONTROL_LOCK] = "CSNLogControlLock"
        names[COMMIT_SEQ_NO_LOCK] = "CommitSeqNoLock"
    return names


def _pinned_page(layout: Layout, slot: _PageSlot, descs: Region, lwlocks: Region) -> PinnedPage:
    name, buffer_id, partition = slot.label(), slot.buffer_id, slot.partition
    descriptor = descs.view(buffer_id)
    if layout == "pg91":
        content_lock = lwlocks.view(FIRST_BUFFER_LWLOCK_91 + 2 * buffer_id + 1)
        return PinnedPage(
            name,
            buffer_id,
            descriptor,
            "buf_hdr_lock",
            content_lock,
            "mutex",
            partition,
            lwlocks.view(FIRST_BUF_MAPPING_LOCK_91 + partition),
            "mutex",
        )
    return PinnedPage(
        name,
        buffer_id,
        descriptor,
        "state",
        descriptor,
        "content_lock.state",
        partition,
        lwlocks.view(NUM_INDIVIDUAL_LWLOCKS_13 + partition),
        "state",
    )


def _build_pg91(version: str, procs: ProcCounts, base: int, pgproc_phase: int,
                inner_pages: Sequence[int], edits: Sequence[LayoutEdit]) -> PgSharedMemory:
    slots = _btree_slots("pg91", inner_pages)
    shm = EditedSharedMemory(base, edits)
    shm.alloc("PGShmemHeader", _PG_SHMEM_HEADER, align=MAXALIGN)
    shm.alloc("ShmemLock", _SPINLOCK, align=MAXALIGN)
    shm.reserve(MAXALIGN - 1)  # MAXALIGN(sizeof(slock_t)) (shmem.c:138-153@9.2)
    vc = shm.alloc("VariableCache", st.VARIABLE_CACHE_91, align=MAXALIGN)  # offset 56
    # CreateLWLocks (lwlock.c:256@9.1): a >= BLCKSZ ShmemAlloc (BUFFERALIGN), 2 ints of counters,
    # then the array aligned to LWLOCK_PADDED_SIZE = 32. Computed: the array starts at offset 128
    # (= 0 mod 64), so ProcArrayLock (id 4) shares its line with SInvalReadLock (5), not XidGenLock
    # (3). The source alone does not settle it: it rests on the ASSUMPTIONs that nothing else is
    # allocated between VariableCache and the LWLocks and that the header is 48 B.
    shm.reserve(8, align=BUFFERALIGN)
    n_locks = FIRST_BUFFER_LWLOCK_91 + 2 * N_BUFFERS
    lwlocks = shm.alloc(
        "LWLockArray",
        st.LWLOCK_91,
        n_locks,
        align=32,
        stride=32,
        element_names=_lwlock_names("pg91", slots),
    )
    # ASSUMPTION: descriptor array 64-aligned (BUFFERALIGN guarantees only 32).
    shm.skip_to(64)
    descs = shm.alloc(
        "BufferDescriptors",
        st.BUFFER_DESC_91,
        N_BUFFERS,
        align=MAXALIGN,
        element_names=_buffer_names(slots),
    )
    proc_hdr = shm.alloc("PROC_HDR", st.PROC_HDR_91, align=MAXALIGN)
    # 9.1 InitProcGlobal allocates the backends' PGPROCs, then the autovacuum ones, with nothing
    # in between, so they are one contiguous array (the second request is MAXALIGNed and the first
    # ends on a multiple of 8). ASSUMPTION: its phase mod 64 is ``pgproc_phase`` (0: 1 slot in 4
    # straddles the xid/xmin/vacuumFlags bytes, 1.25 H lines per proc; 8: 2 in 4: the 656-B
    # PGPROC is 16 mod 64, so each slot's phase shifts by 16 B).
    shm.skip_to(64, pgproc_phase)
    n_pgproc = procs.max_connections + procs.autovacuum_max_workers + 1
    pgproc = shm.alloc("PGPROC", st.PGPROC_91, n_pgproc, align=MAXALIGN)
    # ASSUMPTION: ProcArrayStruct 64-aligned (header + 4 pointers on its first line), so that the
    # header and N pointers take ceil((32 + 8N)/64) lines.
    shm.skip_to(64)
    procarray = shm.alloc("ProcArrayStruct", st.PROCARRAY_91, align=MAXALIGN)
    pointers = shm.alloc("procs", 8, procs.procarray_max_procs, align=8)
    # ASSUMPTION: ProcStructLock (a MAXALIGNed ShmemAlloc in InitProcGlobal@9.1, right after the
    # PGPROCs) is placed last, alone on a 64-B line: the allocations around it are not modelled,
    # and appending it moves nothing else.
    shm.skip_to(64)
    proc_struct_lock = shm.alloc("ProcStructLock", _PROC_STRUCT_LOCK, align=MAXALIGN)
    memory = _shared_memory(version, "pg91", procs, shm, variable_cache=vc, lwlocks=lwlocks,
                            proc_hdr=proc_hdr, pgproc=pgproc, procarray=procarray,
                            pgprocnos=pointers, descs=descs, slots=slots)
    return replace(memory, proc_struct_lock=proc_struct_lock)


def _build_modern(version: MemoryVersion, procs: ProcCounts, base: int,
                  inner_pages: Sequence[int], edits: Sequence[LayoutEdit]) -> PgSharedMemory:
    layout = version.layout
    slots = _btree_slots(layout, inner_pages)
    shm = EditedSharedMemory(base, edits)
    shm.alloc("PGShmemHeader", _PG_SHMEM_HEADER, align=MAXALIGN)
    shm.alloc("ShmemLock", _SPINLOCK, align=MAXALIGN)  # ShmemAllocUnlocked
    # InitShmemAllocation then rounds the free offset up to a cache line (128), and ShmemAlloc
    # CACHELINEALIGNs every later request (shmem.c:137,149,212@13): VariableCache at 128.
    vc_struct = {
        "pg13": st.VARIABLE_CACHE_13,
        "pg14": st.VARIABLE_CACHE_14,
        "csn": st.VARIABLE_CACHE_CSN,
    }[layout]
    vc = shm.alloc("VariableCache", vc_struct, align=CACHELINEALIGN)
    # CreateLWLocks (lwlock.c:490@13, :486@14): an int counter, then MainLWLockArray aligned to
    # LWLOCK_PADDED_SIZE = 128 (lwlock.h:73@13, :52@14); each lock alone in its 128 B.
    shm.reserve(4, align=CACHELINEALIGN)
    lwlocks = shm.alloc(
        "MainLWLockArray",
        st.LWLOCK_13,
        NUM_MAIN_LWLOCKS_13,
        align=CACHELINEALIGN,
        stride=128,
        element_names=_lwlock_names(layout, slots),
    )
    descs = shm.alloc(
        "BufferDescriptors",
        st.BUFFER_DESC_13,
        N_BUFFERS,
        align=CACHELINEALIGN,
        stride=64,
        element_names=_buffer_names(slots),
    )
    proc_hdr = shm.alloc(
        "PROC_HDR", st.PROC_HDR_13 if layout == "pg13" else st.PROC_HDR_14, align=CACHELINEALIGN
    )
    pgproc_struct = {"pg13": st.PGPROC_13, "pg14": st.PGPROC_14, "csn": st.PGPROC_CSN}[layout]
    pgproc = shm.alloc("PGPROC", pgproc_struct, procs.total_procs, align=CACHELINEALIGN)
    pgxact: Region | None = None
    xids: Region | None = None
    subxid_states: Region | None = None
    status_flags: Region | None = None
    if layout == "pg13":  # proc.c:215@13
        pgxact = shm.alloc("PGXACT", st.PGXACT_13, procs.total_procs, align=CACHELINEALIGN)
    else:  # proc.c:209-215@14: three separate ShmemAllocs
        xids = shm.alloc("xids", 4, procs.total_procs, align=CACHELINEALIGN)
        subxid_states = shm.alloc(
            "subxidStates", _SUBXID_STATUS, procs.total_procs, align=CACHELINEALIGN
        )
        status_flags = shm.alloc("statusFlags", 1, procs.total_procs, align=CACHELINEALIGN)
    # CreateSharedProcArray: 40-B header, then int pgprocnos[] right after it.
    procarray = shm.alloc("ProcArrayStruct", st.PROCARRAY_13, align=CACHELINEALIGN)
    pgprocnos = shm.alloc("pgprocnos", 4, procs.procarray_max_procs, align=4)
    csn_log: Region | None = None
    commit_seq_no_lock: Region | None = None
    csn_log_control_lock: Region | None = None
    if layout == "csn":
        csn_log = shm.alloc("CSNLog", 8, CSN_LOG_ENTRIES, align=CACHELINEALIGN)
        commit_seq_no_lock = lwlocks.view(COMMIT_SEQ_NO_LOCK)
        csn_log_control_lock = lwlocks.view(CSN_LOG_CONTROL_LOCK)
    # ProcStructLock is one of InitProcGlobal's ShmemAllocs (proc.c@13/@14), before the ProcArray;
    # ASSUMPTION: allocated after the version's own regions here instead (before the what-ifs'
    # additions), so that no region modelled before it moves. Being CACHELINEALIGNed it is alone
    # on its 128 B wherever it is: only its address differs.
    proc_struct_lock = shm.alloc("ProcStructLock", _PROC_STRUCT_LOCK, align=CACHELINEALIGN)
    shared_snapshot: Region | None = None
    shared_snapshot_xids: Region | None = None
    if version.shared_snapshot:
        # ASSUMPTION (a what-if, no PostgreSQL version): allocated last, as a patch would from
        # CreateSharedProcArray after the procArray, so every other region keeps post14's address.
        # The xid array holds GetMaxSnapshotXidCount() = procArray->maxProcs entries (procarray.c
        # @14), the size of a snapshot's xip[]; each ShmemAlloc is CACHELINEALIGNed.
        shared_snapshot = shm.alloc("SharedSnapshot", st.SHARED_SNAPSHOT, align=CACHELINEALIGN)
        shared_snapshot_xids = shm.alloc("sharedSnapshotXids", 4, procs.procarray_max_procs,
                                         align=CACHELINEALIGN)
    running_hdr: Region | None = None
    running_xids: Region | None = None
    if version.running_xids_array:  # ASSUMPTION (a what-if): one more ShmemAlloc, 128-aligned
        running_hdr = shm.alloc("RunningXids", st.RUNNING_XIDS_HDR, align=CACHELINEALIGN)
        running_xids = shm.alloc("runningXids", st.RUNNING_XIDS_ENTRY,
                                 procs.procarray_max_procs, align=8)
    memory = _shared_memory(version.name, layout, procs, shm, variable_cache=vc, lwlocks=lwlocks,
                            proc_hdr=proc_hdr, pgproc=pgproc, procarray=procarray,
                            pgprocnos=pgprocnos, descs=descs, slots=slots)
    return replace(memory, proc_struct_lock=proc_struct_lock, pgxact=pgxact, xids=xids,
                   subxid_states=subxid_states,
                   status_flags=status_flags, csn_log=csn_log,
                   commit_seq_no_lock=commit_seq_no_lock,
                   csn_log_control_lock=csn_log_control_lock, shared_snapshot=shared_snapshot,
                   shared_snapshot_xids=shared_snapshot_xids,
                   running_hdr=running_hdr, running_xids=running_xids)


def _shared_memory(version: str, layout: Layout, procs: ProcCounts,
                   shm: EditedSharedMemory, *,
                   variable_cache: Region, lwlocks: Region, proc_hdr: Region, pgproc: Region,
                   procarray: Region, pgprocnos: Region, descs: Region,
                   slots: list[list[_PageSlot]]) -> PgSharedMemory:
    """The regions every layout has; the two LWLocks and the B-tree pages are views of them."""
    return PgSharedMemory(
        version=version,
        layout=layout,
        procs=procs,
        memory=shm,
        variable_cache=variable_cache,
        lwlocks=lwlocks,
        proc_array_lock=lwlocks.view(PROC_ARRAY_LOCK),
        xid_gen_lock=lwlocks.view(XID_GEN_LOCK),
        lwlock_word="mutex" if layout == "pg91" else "state",
        proc_hdr=proc_hdr,
        pgproc=pgproc,
        procarray=procarray,
        pgprocnos=pgprocnos,
        buffer_descs=descs,
        btree_root=_pinned_page(layout, slots[0][0], descs, lwlocks),
        btree_inner=tuple(tuple(_pinned_page(layout, slot, descs, lwlocks) for slot in level)
                          for level in slots[1:]),
    )


def build_shared_memory(
    version: MemoryVersion,
    max_connections: int,
    *,
    procs: ProcCounts | None = None,
    base: int = 0,
    pg91_pgproc_phase: int = 0,
    btree_inner_pages: Sequence[int] = DEFAULT_INNER_PAGES,
    layout_edits: Sequence[LayoutEdit] = (),
) -> PgSharedMemory:
    """Lay out the shared memory of a PostgreSQL version.

    Args:
        version: the version to lay out: its key, layout family and what-if regions (an
            algorithm's class, :class:`~snapsim_models.snapshots.base.SnapshotAlgorithm`).
        max_connections: ``max_connections`` (client PGPROC slots).
        procs: slot counts; defaults to :meth:`ProcCounts.for_layout` (its ``max_connections``
            must then equal ``max_connections``).
        base: byte address of the segment start (a multiple of 128).
        pg91_pgproc_phase: 9.1 only, ASSUMPTION: address of the PGPROC array mod 64 (a multiple
            of 8), which depends on earlier allocations: a phase = 0 (mod 16) makes 1 slot in
            4 straddle a line in its hot bytes 32..57, a phase = 8 (mod 16) 2 in 4.
        btree_inner_pages: pages of each inner level of ``pgbench_accounts_pkey``, top-down
            (:func:`snapsim_models.btree.inner_level_pages`; default: scale 100).
        layout_edits: layout what-ifs applied in order (:mod:`simulator.hardware.layout_edits`);
            an edit naming a region or field this version lacks is skipped.

    Returns:
        The regions of that version.

    Raises:
        ConfigError: bad counts or a layout edit that cannot be made (names the offending key).
    """
    layout = version.layout
    if max_connections < 1:
        raise ConfigError("max_connections", f"must be at least 1, got {max_connections}")
    if base < 0 or base % CACHELINEALIGN:
        raise ConfigError("base", f"must be a non-negative multiple of 128, got {base}")
    if procs is None:
        procs = ProcCounts.for_layout(layout, max_connections)
    elif procs.max_connections != max_connections:
        raise ConfigError("procs.max_connections", "differs from max_connections")
    if layout == "pg91":
        if pg91_pgproc_phase % MAXALIGN or not 0 <= pg91_pgproc_phase < 64:
            raise ConfigError(
                "pg91_pgproc_phase", f"must be 0, 8, ..., 56; got {pg91_pgproc_phase}"
            )
        return _build_pg91(version.name, procs, base, pg91_pgproc_phase, btree_inner_pages,
                           layout_edits)
    return _build_modern(version, procs, base, btree_inner_pages, layout_edits)


def check_layout_edits(edits: Sequence[LayoutEdit],
                       versions: Sequence[MemoryVersion]) -> dict[int, list[str]]:
    """Check layout edits against the shared memory of ``versions`` (every algorithm's).

    Each edit must fit at least one layout family (its region, and the fields it names, exist
    there) and be possible wherever it fits.

    Returns:
        per edit (by index), the keys of the versions it changes, in the order of ``versions``.

    Raises:
        ConfigError: an edit that fits no version (an unknown struct, array or field) or cannot
            be made in a version (a pad below the element size, overlapping fields), named by
            the edit's key.
    """
    applied_in: dict[int, list[str]] = {index: [] for index in range(len(edits))}
    if not edits:
        return applied_in
    reasons: dict[int, str] = {}
    names: set[str] = set()
    for version in versions:  # every version: the what-ifs append regions of their own
        try:
            memory = build_shared_memory(version, 1, layout_edits=edits)
        except ConfigError as exc:
            raise ConfigError(exc.key, f"{exc.message} (version {version.name})") from None
        shm = memory.memory
        assert isinstance(shm, EditedSharedMemory)
        for index in shm.applied:
            applied_in[index].append(version.name)
        for index, reason in shm.unapplied.items():
            if reason:
                reasons.setdefault(index, f"{reason} (version {version.name})")
        names.update(region.name for region in shm.regions)
    for index, edit in enumerate(edits):
        if applied_in[index]:
            continue
        if index in reasons:  # the region exists, a field does not
            field_key = "fields" if edit.kind == "reorder" else edit.kind
            raise ConfigError(f"{edit.key}.{field_key}", reasons[index])
        stem = edit.target.split(".", 1)[0] if isinstance(edit, Move) else edit.target
        raise ConfigError(f"{edit.key}.{edit.kind}", f"no version's shared memory has a struct or "
                          f"array named {stem!r} (names: {', '.join(sorted(names))})")
    return applied_in


def check_layout_edits_apply(edits: Sequence[LayoutEdit], versions: Sequence[str],
                             every_version: Sequence[MemoryVersion]) -> None:
    """Check that each layout edit changes at least one of ``versions`` (an experiment's keys).

    ``every_version``: every algorithm's (:func:`check_layout_edits`).

    An edit that fits only versions the experiment does not run would change nothing it
    simulates (``{move: PGPROC.xmin, to: own_line}`` with ``pre14`` alone: 13's PGPROC has no
    ``xmin``), which a user would take for a result.

    Raises:
        ConfigError: :func:`check_layout_edits`'s errors, or an edit that applies to none of
            ``versions``, named by the edit's key with the versions it does change.
    """
    applied_in = check_layout_edits(edits, every_version)
    for index, edit in enumerate(edits):
        if not set(applied_in[index]) & set(versions):
            raise ConfigError(f"{edit.key}.{edit.kind}", f"changes none of the experiment's "
                              f"algorithms ({', '.join(versions)}); it changes "
                              f"{', '.join(applied_in[index])}")
