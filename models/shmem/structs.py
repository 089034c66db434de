"""Byte layouts of the PostgreSQL shared-memory structs the snapshot models touch (x86-64, LP64).

Sources: the struct declarations in the PostgreSQL sources, cited as ``file:line@version`` (pa =
``src/backend/storage/ipc/procarray.c``; proc.h, transam.h, lwlock.h, buf_internals.h under
``src/include``). Offsets and sizes not marked otherwise were *compiled*: measured on replicas of
those declarations built with gcc for x86-64/LP64 (Linux, no LOCK_DEBUG, 16 lock partitions, 16
fast-path slots), not on a PostgreSQL build, so small structs are exact and ``sizeof(PGPROC)``
totals may be off by 8 B. Every other offset is marked **ASSUMPTION** with how it was obtained:
recomputed by hand from the struct declaration with LP64 alignment rules (int and
pointers aligned to their size, bool/uint8 1 B, ``slock_t`` 1 B on x86, ``pg_atomic_uint32`` 4 B,
``pg_atomic_uint64`` 8 B, ``SHM_QUEUE``/``dlist_*`` 16 B, ``proclist_node`` 8 B).

Field names follow the C names; nested members are dotted (``"subxids.xids"``,
``"content_lock.state"``). Structs are keyed by layout family: ``pg91`` (9.1), ``pg13`` (the
9.2-13 family as of 13), ``pg14`` (14+), ``csn`` (14 plus the csn-v8 patch's variables);
:data:`SHARED_SNAPSHOT` belongs to no PostgreSQL version (the ``post14_shared_cache`` what-if).
"""

from __future__ import annotations

from simulator.hardware.layout import Struct

__all__ = [
    "BUFFER_DESC_13",
    "BUFFER_DESC_91",
    "LWLOCK_13",
    "LWLOCK_91",
    "PGPROC_13",
    "PGPROC_14",
    "PGPROC_91",
    "PGPROC_CSN",
    "PGXACT_13",
    "PROCARRAY_13",
    "PROCARRAY_91",
    "PROC_HDR_13",
    "PROC_HDR_14",
    "PROC_HDR_91",
    "RUNNING_XIDS_ENTRY",
    "RUNNING_XIDS_HDR",
    "SHARED_SNAPSHOT",
    "VARIABLE_CACHE_13",
    "VARIABLE_CACHE_14",
    "VARIABLE_CACHE_91",
    "VARIABLE_CACHE_CSN",
]

# ---------------------------------------------------------------------------------------- PGPROC

PGPROC_91 = Struct(
    "PGPROC",
    656,
    {
        # proc.h:68-140@9.1 (all offsets below compiled)
        "links": (0, 16),
        "sem": (16, 8),
        "waitStatus": (24, 4),
        "lxid": (28, 4),  # written at every xact start and end (H line)
        "xid": (32, 4),  # read by snapshots
        "xmin": (36, 4),  # read by snapshots; written >= 2x per xact
        "pid": (40, 4),
        "backendId": (44, 4),
        "databaseId": (48, 4),
        "roleId": (52, 4),
        "inCommit": (56, 1),
        "vacuumFlags": (57, 1),  # read by snapshots
        "recoveryConflictPending": (58, 1),
        "myProcLocks": (136, 256),
        "subxids.overflowed": (392, 1),  # S line, read for every other proc (pa:1358@9.1)
        "subxids.nxids": (396, 4),
        "subxids.xids": (400, 256),
    },
)
"""PGPROC in 9.1: 656 B (656 = 16 mod 64, so each slot's phase shifts by 16 B)."""

PGPROC_13 = Struct(
    "PGPROC",
    856,  # compiled (proc.h:95-206@13)
    {
        # ASSUMPTION: every offset except subxids.xids (416, compiled) and the size (856) was
        # recomputed from proc.h:95-206@13 (Latch = 12 B in 13). The recomputation reproduces
        # both compiled numbers, which is the check on it.
        "links": (0, 16),
        "procgloballist": (16, 8),
        "sem": (24, 8),
        "waitStatus": (32, 4),
        "procLatch": (36, 12),
        "lxid": (48, 4),  # W at every xact start and end (own line)
        "pid": (52, 4),
        "pgprocno": (56, 4),
        "backendId": (60, 4),
        "databaseId": (64, 4),
        "roleId": (68, 4),
        "tempNamespaceId": (72, 4),
        "isBackgroundWorker": (76, 1),
        "recoveryConflictPending": (77, 1),
        "lwWaiting": (78, 1),
        "lwWaitMode": (79, 1),
        "lwWaitLink": (80, 8),
        "cvWaitLink": (88, 8),
        "waitLock": (96, 8),
        "waitProcLock": (104, 8),
        "waitLockMode": (112, 4),
        "heldLocks": (116, 4),
        "delayChkpt": (120, 1),  # moved from PGXACT in 13 (75848bc744)
        "waitLSN": (128, 8),
        "syncRepState": (136, 4),
        "syncRepLinks": (144, 16),
        "myProcLocks": (160, 256),
        "subxids.xids": (416, 256),  # memcpy'd by snapshots when nxids > 0 (pa:1652@13)
        "procArrayGroupMember": (672, 1),
        "procArrayGroupNext": (676, 4),
        "procArrayGroupMemberXid": (680, 4),
        "wait_event_info": (684, 4),
        "clogGroupMember": (688, 1),
        "clogGroupNext": (692, 4),
        "clogGroupMemberXid": (696, 4),
        "clogGroupMemberXidStatus": (700, 4),
        "clogGroupMemberPage": (704, 4),
        "clogGroupMemberLsn": (712, 8),
        "fpInfoLock": (720, 16),
        "fpLockBits": (736, 8),
        "fpRelId": (744, 64),
        "fpVXIDLock": (808, 1),
        "fpLocalTransactionId": (812, 4),
        "lockGroupLeader": (816, 8),
        "lockGroupMembers": (824, 16),
        "lockGroupLink": (840, 16),
    },
)
"""PGPROC in 13: 856 B (= 24 mod 64); the xid/xmin/flags live in PGXACT."""

_PGPROC_14_FIELDS: dict[str, tuple[int, int]] = {
    # proc.h:121-254@14. Compiled offsets: xid 52, xmin 56, lxid 60, pgxactoff 68,
    # pgprocno 72, delayChkpt 144, statusFlags 145, subxidStatus 440, subxids.xids 444..699,
    # procArrayGroupMember 700, procArrayGroupNext 704. The others are ASSUMPTION (recomputed
    # from the declaration, Latch = 16 B in 14; the recomputation reproduces all of the above and
    # the 880 B total).
    "links": (0, 16),
    "procgloballist": (16, 8),
    "sem": (24, 8),
    "waitStatus": (32, 4),
    "procLatch": (36, 16),
    "xid": (52, 4),  # mirrored in ProcGlobal->xids[pgxactoff]
    "xmin": (56, 4),  # only in PGPROC; private in 14
    "lxid": (60, 4),
    "pid": (64, 4),
    "pgxactoff": (68, 4),  # written for every later entry by ProcArrayAdd (pa:524-531@14)
    "pgprocno": (72, 4),
    "backendId": (76, 4),
    "databaseId": (80, 4),
    "roleId": (84, 4),
    "tempNamespaceId": (88, 4),
    "isBackgroundWorker": (92, 1),
    "recoveryConflictPending": (93, 1),
    "lwWaiting": (94, 1),
    "lwWaitMode": (95, 1),
    "lwWaitLink": (96, 8),
    "cvWaitLink": (104, 8),
    "waitLock": (112, 8),
    "waitProcLock": (120, 8),
    "waitLockMode": (128, 4),
    "heldLocks": (132, 4),
    "waitStart": (136, 8),
    "delayChkpt": (144, 1),
    "statusFlags": (145, 1),  # mirrored in ProcGlobal->statusFlags[pgxactoff]
    "waitLSN": (152, 8),
    "syncRepState": (160, 4),
    "syncRepLinks": (168, 16),
    "myProcLocks": (184, 256),
    "subxidStatus": (440, 2),  # mirrored in ProcGlobal->subxidStates[pgxactoff]
    "subxidStatus.count": (440, 1),
    "subxidStatus.overflowed": (441, 1),
    "subxids.xids": (444, 256),
    "procArrayGroupMember": (700, 1),
    "procArrayGroupNext": (704, 4),
    "procArrayGroupMemberXid": (708, 4),
    "wait_event_info": (712, 4),
    "clogGroupMember": (716, 1),
    "clogGroupNext": (720, 4),
    "clogGroupMemberXid": (724, 4),
    "clogGroupMemberXidStatus": (728, 4),
    "clogGroupMemberPage": (732, 4),
    "clogGroupMemberLsn": (736, 8),
    "fpInfoLock": (744, 16),
    "fpLockBits": (760, 8),
    "fpRelId": (768, 64),
    "fpVXIDLock": (832, 1),
    "fpLocalTransactionId": (836, 4),
    "lockGroupLeader": (840, 8),
    "lockGroupMembers": (848, 16),
    "lockGroupLink": (864, 16),
}

PGPROC_14 = Struct("PGPROC", 880, _PGPROC_14_FIELDS)
"""PGPROC in 14: 880 B (= 48 mod 64); bytes 52..63 (xid, xmin, lxid) never straddle a line."""

PGPROC_CSN = Struct("PGPROC", 888, {**_PGPROC_14_FIELDS, "snapshotcsn": (880, 8)})
"""PGPROC for ``csn``: ASSUMPTION. The csn-v8 patch keeps ``snapshotcsn`` in PGXACT, which the
PG 14 layout no longer has; we append it (u64) to the 14 PGPROC (888 B). It is only written by its
owner, so its placement changes no sharing."""

# ---------------------------------------------------------------------------------------- PGXACT

PGXACT_13 = Struct(
    "PGXACT",
    12,  # 11 B padded to 12, 4-B aligned (proc.h:222-237@13)
    {
        "xid": (0, 4),
        "xmin": (4, 4),
        "vacuumFlags": (8, 1),
        "overflowed": (9, 1),
        "nxids": (10, 1),  # 13: delayChkpt moved to PGPROC, nxids at 10
    },
)
"""PGXACT (9.2-13, 13 field set): 5.33 entries per 64-B line."""

# -------------------------------------------------------------------------------- ProcArrayStruct

_PROCARRAY_COMMON: dict[str, tuple[int, int]] = {
    "numProcs": (0, 4),
    "maxProcs": (4, 4),
    "maxKnownAssignedXids": (8, 4),
    "numKnownAssignedXids": (12, 4),
    "tailKnownAssignedXids": (16, 4),
    "headKnownAssignedXids": (20, 4),
    "known_assigned_xids_lck": (24, 1),
    "lastOverflowedXid": (28, 4),
}

PROCARRAY_91 = Struct("ProcArrayStruct", 32, _PROCARRAY_COMMON)
"""9.1 header (pa:62-90@9.1): 32 B, then ``PGPROC *procs[]`` (8 B each) at offset 32.
Offsets 8..28 are ASSUMPTION (recomputed); only numProcs is read by snapshots."""

PROCARRAY_13 = Struct(
    "ProcArrayStruct",
    40,
    {
        **_PROCARRAY_COMMON,
        "replication_slot_xmin": (32, 4),  # 9.4+
        "replication_slot_catalog_xmin": (36, 4),
    },
)
"""13/14 header (pa:70-100@13): 40 B, then ``int pgprocnos[]`` sorted ascending."""

RUNNING_XIDS_HDR = Struct("RunningXids", 8, {"numRunning": (0, 4)})
"""``running_xids`` what-if (ASSUMPTION, no PostgreSQL code): the count of the dense array of
running xids, padded to 8 B so that the 8-B entries that follow it stay aligned; the count and
the first 7 entries share a line."""

RUNNING_XIDS_ENTRY = Struct("runningXids", 8, {"xid": (0, 4), "pgxactoff": (4, 4)})
"""``running_xids`` what-if (ASSUMPTION): one running top-level xid and the ``pgxactoff`` of its
backend (GetSnapshotData then reads ``statusFlags``/``subxidStates`` of that slot, as 14 does)."""

# ------------------------------------------------------------------------------- VariableCacheData

_VC_LIMITS_32: dict[str, tuple[int, int]] = {
    "nextOid": (0, 4),
    "oidCount": (4, 4),
}

VARIABLE_CACHE_91 = Struct(
    "VariableCache",
    40,  # compiled (transam.h:97-122@9.1)
    {
        **_VC_LIMITS_32,
        "nextXid": (8, 4),
        "oldestXid": (12, 4),
        "xidVacLimit": (16, 4),
        "xidWarnLimit": (20, 4),
        "xidStopLimit": (24, 4),
        "xidWrapLimit": (28, 4),
        "oldestXidDB": (32, 4),
        "latestCompletedXid": (36, 4),
    },
)

VARIABLE_CACHE_13 = Struct(
    "VariableCache",
    56,  # compiled (transam.h:167-204@13); 20..44 ASSUMPTION (recomputed)
    {
        **_VC_LIMITS_32,
        "nextFullXid": (8, 8),  # XidGenLock
        "oldestXid": (16, 4),
        "xidVacLimit": (20, 4),
        "xidWarnLimit": (24, 4),
        "xidStopLimit": (28, 4),
        "xidWrapLimit": (32, 4),
        "oldestXidDB": (36, 4),
        "oldestCommitTsXid": (40, 4),
        "newestCommitTsXid": (44, 4),
        "latestCompletedXid": (48, 4),  # ProcArrayLock
        "oldestClogXid": (52, 4),
    },
)

VARIABLE_CACHE_14 = Struct(
    "VariableCache",
    72,  # compiled (transam.h:204-250@14); 20..44 ASSUMPTION (recomputed)
    {
        **_VC_LIMITS_32,
        "nextXid": (8, 8),  # u64 FullTransactionId, XidGenLock
        "oldestXid": (16, 4),
        "xidVacLimit": (20, 4),
        "xidWarnLimit": (24, 4),
        "xidStopLimit": (28, 4),
        "xidWrapLimit": (32, 4),
        "oldestXidDB": (36, 4),
        "oldestCommitTsXid": (40, 4),
        "newestCommitTsXid": (44, 4),
        "latestCompletedXid": (48, 8),  # u64 FullTransactionId, ProcArrayLock
        "xactCompletionCount": (56, 8),  # u64, written under exclusive ProcArrayLock
        "oldestClogXid": (64, 4),  # the only field on line 1
    },
)

VARIABLE_CACHE_CSN = Struct(
    "VariableCache",
    72,
    {
        # The csn-v8 patch's VariableCacheData (src/include/access/mvccvars.h@d880c47d8a in
        # github:hackorum-dev/postgres). ASSUMPTION: offsets recomputed from that
        # declaration (pg_atomic_uint64 is 8-B aligned): all the CSN fields and nextXid share
        # line 0 when the struct is 128-aligned.
        **_VC_LIMITS_32,
        "nextXid": (8, 4),
        "oldestXid": (12, 4),
        "xidVacLimit": (16, 4),
        "xidWarnLimit": (20, 4),
        "xidStopLimit": (24, 4),
        "xidWrapLimit": (28, 4),
        "oldestXidDB": (32, 4),
        "nextCommitSeqNo": (40, 8),  # fetch_add at every commit with an xid
        "latestCompletedXid": (48, 4),  # CAS loop at commit
        "oldestActiveXid": (52, 4),
        "oldestCommitTsXid": (56, 4),
        "newestCommitTsXid": (60, 4),
        "oldestClogXid": (64, 4),
    },
)

# ------------------------------------------------------------------------------------ LWLock

LWLOCK_91 = Struct(
    "LWLock",
    24,  # lwlock.c:40-49@9.1; padded to LWLOCK_PADDED_SIZE = 32 (lwlock.c:63@9.1)
    {
        "mutex": (0, 1),  # spinlock: lock xchgb
        "releaseOK": (1, 1),
        "exclusive": (2, 1),
        "shared": (4, 4),
        "head": (8, 8),
        "tail": (16, 8),
    },
)

LWLOCK_13 = Struct(
    "LWLock",
    16,  # lwlock.h:32-41@13, :31-40@14; padded to PG_CACHE_LINE_SIZE = 128
    {
        "tranche": (0, 2),
        "state": (4, 4),  # the atomic word: R + CAS to acquire, sub_fetch to release
        "waiters": (8, 8),
    },
)

# ------------------------------------------------------------------------------------ PROC_HDR

PROC_HDR_91 = Struct(
    "PROC_HDR",
    40,
    {
        # ASSUMPTION: recomputed from proc.h@9.1; no group-clear fields before 9.6.
        "freeProcs": (0, 8),
        "autovacFreeProcs": (8, 8),
        "spins_per_delay": (16, 4),
        "startupProc": (24, 8),
        "startupProcPid": (32, 4),
        "startupBufferPinWaitBufId": (36, 4),
    },
)

PROC_HDR_13 = Struct(
    "PROC_HDR",
    104,
    {
        # proc.h:242-273@13. freeProcs 24, procArrayGroupFirst 56, clogGroupFirst 60 are the
        # compiled; the rest, and the size, ASSUMPTION (recomputed).
        "allProcs": (0, 8),
        "allPgXact": (8, 8),
        "allProcCount": (16, 4),
        "freeProcs": (24, 8),
        "autovacFreeProcs": (32, 8),
        "bgworkerFreeProcs": (40, 8),
        "walsenderFreeProcs": (48, 8),
        "procArrayGroupFirst": (56, 4),
        "clogGroupFirst": (60, 4),
        "walwriterLatch": (64, 8),
        "checkpointerLatch": (72, 8),
        "spins_per_delay": (80, 4),
        "startupProc": (88, 8),
        "startupProcPid": (96, 4),
        "startupBufferPinWaitBufId": (100, 4),
    },
)

PROC_HDR_14 = Struct(
    "PROC_HDR",
    120,
    {
        # proc.h:315-360@14. Array pointers 8/16/24 (line 0, read-only) and procArrayGroupFirst
        # 72 / clogGroupFirst 76 (line 1) are compiled; the rest, and the size,
        # ASSUMPTION (recomputed).
        "allProcs": (0, 8),
        "xids": (8, 8),
        "subxidStates": (16, 8),
        "statusFlags": (24, 8),
        "allProcCount": (32, 4),
        "freeProcs": (40, 8),
        "autovacFreeProcs": (48, 8),
        "bgworkerFreeProcs": (56, 8),
        "walsenderFreeProcs": (64, 8),
        "procArrayGroupFirst": (72, 4),
        "clogGroupFirst": (76, 4),
        "walwriterLatch": (80, 8),
        "checkpointerLatch": (88, 8),
        "spins_per_delay": (96, 4),
        "startupProc": (104, 8),
        "startupProcPid": (112, 4),
        "startupBufferPinWaitBufId": (116, 4),
    },
)

# ---------------------------------------------------------------------------------- BufferDesc

BUFFER_DESC_91 = Struct(
    "BufferDesc",
    52,
    {
        # ASSUMPTION: recomputed from buf_internals.h@9.1 (not compiled). No padding in
        # 9.1 (BufferDescPadded came in 9.5), so descriptors are 52 B apart and some straddle.
        "tag": (0, 20),
        "flags": (20, 2),
        "usage_count": (22, 2),
        "refcount": (24, 4),  # refcount++ under the header spinlock (bufmgr.c:1099-1100@9.1)
        "wait_backend_pid": (28, 4),
        "buf_hdr_lock": (32, 1),  # the buffer-header spinlock
        "buf_id": (36, 4),
        "freeNext": (40, 4),
        "io_in_progress_lock": (44, 4),  # LWLockId into the main array
        "content_lock": (48, 4),  # LWLockId into the main array
    },
)

BUFFER_DESC_13 = Struct(
    "BufferDesc",
    52,  # padded to BUFFERDESC_PAD_TO_SIZE = 64 (buf_internals.h:215@14)
    {
        "tag": (0, 20),
        "buf_id": (20, 4),
        "state": (24, 4),  # PinBuffer/UnpinBuffer CAS (bufmgr.c:1632, :1751@13)
        "wait_backend_pid": (28, 4),
        "freeNext": (32, 4),
        "content_lock": (36, 16),  # an LWLock inside the descriptor (LockBuffer)
        "content_lock.state": (40, 4),  # its atomic word (LWLock.state at 4)
    },
)

# ------------------------------------------------------------------------------ SharedSnapshot

SHARED_SNAPSHOT = Struct(
    "SharedSnapshot",
    32,
    {
        # ASSUMPTION: no PostgreSQL version has this struct (the post14_shared_cache what-if,
        # snapsim_models.snapshots.Post14SharedCache). Fields chosen as a patch would: two u64
        # counters (pg_atomic_uint64, 8-B aligned) then the snapshot's scalars; offsets by LP64
        # alignment rules, 28 B padded to 32. The xids follow in their own allocation.
        "count": (0, 8),  # xactCompletionCount the published snapshot was built at
        "claim": (8, 8),  # CAS'd to a count by the one backend that publishes it
        "xmin": (16, 4),
        "xmax": (20, 4),
        "xcnt": (24, 4),  # xids in the shared array
    },
)
"""The header of the one shared snapshot (what-if): alone on its line when 128-aligned."""
