"""PostgreSQL 9.2-13 (``pre14``), modelled as 13: ``pgprocnos[]`` → ``PGXACT``.

The snapshot scans ``pgprocnos`` and, through it, each entry's 12-B ``PGXACT`` (``xmin`` beside
``xid``, commit ed0b409d22), under ProcArrayLock shared (``GetSnapshotData``, pa:1504-1782@13;
citations as in :mod:`snapsim_models.snapshots`); commit with an xid uses the 9.6 group clear
(0e141c0fbb, :mod:`~snapsim_models.snapshots.group_clear`). Connects and disconnects search and
``memmove`` ``pgprocnos`` under ProcArrayLock. Left out: 9.2-12's differences from 13.
"""

from __future__ import annotations

from collections.abc import Sequence

from simulator.hardware.codes import Op
from simulator.hardware.layout import Region
from simulator.hardware.tracked import Ops, ScanPlan
from simulator.runtime.engine import ProcessGenerator

from ..backend import Backend, Category
from ..lwlock import LockMode
from .group_clear import GroupClearCommit

SCANNED_PGXACT = ("vacuumFlags", "xmin", "xid")
"""The PGXACT fields 13's snapshot reads of every entry."""


INIT_PGPROC_13 = (
    "links", "waitStatus", "lxid", "pid", "backendId", "databaseId", "roleId",
    "isBackgroundWorker", "lwWaiting", "lwWaitMode", "waitLock", "waitProcLock", "delayChkpt",
    "recoveryConflictPending", "waitLSN", "syncRepState", "syncRepLinks", "procArrayGroupMember",
    "procArrayGroupNext", "procArrayGroupMemberXid", "wait_event_info", "clogGroupMember",
    "clogGroupNext", "clogGroupMemberXid", "clogGroupMemberXidStatus", "clogGroupMemberPage",
    "clogGroupMemberLsn", "fpVXIDLock", "fpLocalTransactionId")
"""PGPROC fields ``InitProcess``@13 sets (proc.c: the ``MyProc->...`` assignments)."""
INIT_PGXACT_13 = ("xid", "xmin", "vacuumFlags")
"""PGXACT fields ``InitProcess``@13 sets (``MyPgXact->...``)."""



class Pre14(GroupClearCommit):
    """PostgreSQL 9.2-13, modelled as 13 (``GetSnapshotData``, pa:1504-1782@13)."""

    name = "pre14"
    layout = "pg13"

    def prepare(self, backends: Sequence[Backend]) -> None:
        """Register the scan (every entry's pgprocnos slot and PGXACT) and the fixed lines."""
        shm = self.shmem
        assert shm.pgxact is not None
        self.plan: ScanPlan = self._snapshot_plan()
        self.before_scan = (self._vc("latestCompletedXid", Op.LOAD)
                            + self.tracked.access(shm.procarray, 0, "numProcs", Op.LOAD))
        self.after_scan = self.tracked.access(shm.procarray, 0, "replication_slot_xmin", Op.LOAD)
        self.group = self._new_group_clear()
        super().prepare(backends)

    def _snapshot_plan(self) -> ScanPlan:
        """The scan of the current entries: ``pgprocnos[i]``, then that entry's PGXACT."""
        shm = self.shmem
        assert shm.pgxact is not None
        entries = self.procarray.entries
        return self.tracked.scan(
            [(shm.pgprocnos, range(len(entries)), None),
             (shm.pgxact, list(entries), SCANNED_PGXACT)],
            len(entries), self.entries_per_chunk, "indirect")

    # ------------------------------------------------------------- connect and disconnect

    def _init_fields(self) -> list[tuple[Region, tuple[str, ...]]]:
        """``InitProcess``@13: the own PGPROC's fields and PGXACT's xid, xmin, vacuumFlags.

        The PGXACT line is shared with 4-5 neighbours, and every snapshot reads it.
        """
        assert self.shmem.pgxact is not None
        return [(self.shmem.pgproc, INIT_PGPROC_13), (self.shmem.pgxact, INIT_PGXACT_13)]

    def _prepare_moves(self, pool: Sequence[Backend]) -> None:
        """``pgprocnos`` up to the capacity, and each free slot's PGXACT as the scan reads it."""
        shm = self.shmem
        assert shm.pgxact is not None
        self._elements(shm.pgprocnos, 0, self.procarray.capacity)
        for backend in pool:
            for field in SCANNED_PGXACT:
                self.tracked.access(shm.pgxact, backend.pgprocno, field, Op.LOAD)

    def _add_steps(self, backend: Backend, index: int, n: int) -> ProcessGenerator:
        """``ProcArrayAdd``@13 at ``index`` of ``n`` (ProcArrayLock held).

        R the header (numProcs, maxProcs), the search (R ``pgprocnos[0..index]``), the
        ``memmove`` up (R ``pgprocnos[index..n-1]``, W ``pgprocnos[index..n]``, the new entry
        included), W ``numProcs``. No other backend's PGPROC or PGXACT is touched.
        """
        pgprocnos = self.shmem.pgprocnos
        yield from backend.ops(self._header_load, Category.CONNECTION)
        yield from self._run_plans(backend, [self._elements(pgprocnos, 0, min(index + 1, n))],
                                   self.scan_costs.dense)
        yield from self._run_plans(backend, [self._elements(pgprocnos, index, n),
                                             self._elements(pgprocnos, index, n + 1, Op.STORE)])
        yield from backend.ops(self._header_store, Category.CONNECTION)

    def _remove_steps(self, backend: Backend, index: int, n: int) -> ProcessGenerator:
        """``ProcArrayRemove``@13 of entry ``index`` of ``n`` (ProcArrayLock held).

        R ``numProcs``, the search (R ``pgprocnos[0..index]``), the ``memmove`` down (R
        ``pgprocnos[index+1..n-1]``, W ``pgprocnos[index..n-2]``), W ``pgprocnos[n-1]`` (-1),
        W ``numProcs``.
        """
        pgprocnos = self.shmem.pgprocnos
        yield from backend.ops(self._count_load, Category.CONNECTION)
        yield from self._run_plans(backend, [self._elements(pgprocnos, 0, index + 1)],
                                   self.scan_costs.dense)
        yield from self._run_plans(backend, [self._elements(pgprocnos, index + 1, n),
                                             self._elements(pgprocnos, index, n, Op.STORE)])
        yield from backend.ops(self._header_store, Category.CONNECTION)

    def _entries_changed(self, moved: list[Backend]) -> None:
        """The snapshot scans the new entries."""
        self.plan = self._cached_plan(("snapshot", self.procarray.key), self._snapshot_plan)

    def own_accesses(self, backend: Backend) -> dict[str, Ops]:
        """Own PGXACT fields (shared line) and own PGPROC fields (private line)."""
        pgxact, pgproc = self.shmem.pgxact, self.shmem.pgproc
        assert pgxact is not None

        def store(region: Region, *fields: str) -> Ops:
            return self._own_fields(backend, region, Op.STORE, *fields)

        return {
            "xmin": store(pgxact, "xmin"),
            "lxid": store(pgproc, "lxid"),
            "end": store(pgxact, "xmin", "vacuumFlags")
            + store(pgproc, "lxid", "delayChkpt", "recoveryConflictPending"),
            "assign_xid": self._vc("nextFullXid", Op.LOAD) + self._vc("nextFullXid", Op.STORE)
            + store(pgxact, "xid"),
            "end_xid": store(pgxact, "xid", "xmin", "vacuumFlags", "nxids", "overflowed")
            + store(pgproc, "lxid", "delayChkpt", "recoveryConflictPending")
            + self._vc("latestCompletedXid", Op.LOAD) + self._vc("latestCompletedXid", Op.STORE),
            "group_member": store(pgproc, "procArrayGroupMember", "procArrayGroupNext"),
        }

    def get_snapshot(self, backend: Backend) -> ProcessGenerator:
        """Lock shared, read latestCompletedXid, scan all entries, set xmin, release (pa:1504)."""
        backend.record.full_snapshots += 1
        yield from self.proc_array_lock.acquire(backend, LockMode.SHARED, Category.GET_SNAPSHOT)
        yield from backend.ops(self.before_scan, Category.GET_SNAPSHOT)
        yield from backend.scan(self.plan, self.scan_costs.pre14, Category.GET_SNAPSHOT)
        tail = self.after_scan if backend.xmin_set else self.after_scan + self.own(backend, "xmin")
        yield from backend.ops(tail, Category.GET_SNAPSHOT)
        backend.xmin_set = True
        yield from self.proc_array_lock.release(backend, LockMode.SHARED, Category.GET_SNAPSHOT)

