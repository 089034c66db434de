"""PostgreSQL 9.1 (``pg91``): the snapshot reads every ``PGPROC`` directly.

The scan follows the ``procs[]`` pointer array to each PGPROC's xid/xmin line (H) and subxid
header (S) under ProcArrayLock shared, with 9.1's spinlock LWLocks (pa:1225-1443@9.1; citations
as in :mod:`snapsim_models.snapshots`). Connects append; disconnects move the last entry into the
removed one's slot. Simplification (one line per snapshot at most): the snapshot also reads its
own subxid header (9.1 skips MyProc).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

from simulator.hardware.codes import Op
from simulator.hardware.layout import Region
from simulator.hardware.tracked import Ops, ScanPlan
from simulator.runtime.engine import ProcessGenerator

from ..backend import Backend, Category
from ..lwlock import LockMode
from .base import SnapshotAlgorithm

SCANNED_PGPROC_91 = ("vacuumFlags", "xmin", "xid")
"""The PGPROC fields 9.1's snapshot reads of every entry (its H line)."""
SCANNED_SUBXIDS_91 = ("subxids.overflowed", "subxids.nxids")
"""The subxid-cache header 9.1's snapshot reads of every entry (its S line)."""
INIT_PGPROC_91 = (
    "links", "waitStatus", "lxid", "xid", "xmin", "pid", "backendId", "databaseId", "roleId",
    "inCommit", "vacuumFlags", "recoveryConflictPending")
"""PGPROC fields ``InitProcess``@9.1 sets (its H line is read by every snapshot)."""



class Pg91(SnapshotAlgorithm):
    """PostgreSQL 9.1: the snapshot reads every PGPROC (pa:1225-1443@9.1); spinlock LWLocks."""

    name = "pg91"
    layout = "pg91"
    lock_protocol = "spinlock"

    def prepare(self, backends: Sequence[Backend]) -> None:
        """Register the pointer array, the H fields and the subxid header of every proc."""
        shm = self.shmem
        self.plan: ScanPlan = self._snapshot_plan()
        self.before_scan = (self._vc("latestCompletedXid", Op.LOAD)
                            + self.tracked.access(shm.procarray, 0, "numProcs", Op.LOAD))
        super().prepare(backends)

    def _snapshot_plan(self) -> ScanPlan:
        """The scan of the current entries: ``procs[i]``, then that PGPROC's H and S fields."""
        shm = self.shmem
        entries = list(self.procarray.entries)
        n = len(entries)
        return self.tracked.scan(
            [(shm.pgprocnos, range(n), None),
             (shm.pgproc, entries, SCANNED_PGPROC_91),
             (shm.pgproc, entries, SCANNED_SUBXIDS_91)],
            n, self.entries_per_chunk, "indirect")

    # ------------------------------------------------------------- connect and disconnect

    def _init_fields(self) -> list[tuple[Region, tuple[str, ...]]]:
        """``InitProcess``@9.1: the own PGPROC's fields.

        Its H line, read by every snapshot, among them.
        """
        return [(self.shmem.pgproc, INIT_PGPROC_91)]

    def _prepare_moves(self, pool: Sequence[Backend]) -> None:
        """``procs[]`` up to the capacity, and each free slot's PGPROC as the scan reads it."""
        shm = self.shmem
        self._elements(shm.pgprocnos, 0, self.procarray.capacity)
        for backend in pool:
            for field in (*SCANNED_PGPROC_91, *SCANNED_SUBXIDS_91):
                self.tracked.access(shm.pgproc, backend.pgprocno, field, Op.LOAD)

    def _add_steps(self, backend: Backend, index: int, n: int) -> ProcessGenerator:
        """``ProcArrayAdd``@9.1: R the header, W ``procs[numProcs]`` (an append), W ``numProcs``."""
        store = self._elements(self.shmem.pgprocnos, n, n + 1, Op.STORE)
        yield from backend.ops(self._header_load, Category.CONNECTION)
        yield from self._run_plans(backend, [store])
        yield from backend.ops(self._header_store, Category.CONNECTION)

    def _remove_steps(self, backend: Backend, index: int, n: int) -> ProcessGenerator:
        """``ProcArrayRemove``@9.1 (pa:323@9.1).

        R ``numProcs``, the search (R ``procs[0..index]``), R ``procs[n-1]`` and W
        ``procs[index]`` (the last entry moves into the slot; nothing when it is the last),
        W ``numProcs``.
        """
        procs = self.shmem.pgprocnos
        yield from backend.ops(self._count_load, Category.CONNECTION)
        yield from self._run_plans(backend, [self._elements(procs, 0, index + 1)],
                                   self.scan_costs.dense)
        if index != n - 1:
            yield from self._run_plans(backend, [self._elements(procs, n - 1, n),
                                                 self._elements(procs, index, index + 1,
                                                                Op.STORE)])
        yield from backend.ops(self._header_store, Category.CONNECTION)

    def _entries_changed(self, moved: list[Backend]) -> None:
        """The snapshot scans the new entries, in their new order."""
        self.plan = self._cached_plan(("snapshot", self.procarray.key), self._snapshot_plan)

    def own_accesses(self, backend: Backend) -> dict[str, Ops]:
        """All of a 9.1 backend's published fields are on its H line(s) of PGPROC."""
        store = functools.partial(self._own_fields, backend, self.shmem.pgproc, Op.STORE)
        return {
            "xmin": store("xmin"),
            "lxid": store("lxid"),
            "end": store("lxid", "xmin", "vacuumFlags", "inCommit", "recoveryConflictPending"),
            "assign_xid": self._vc("nextXid", Op.LOAD) + self._vc("nextXid", Op.STORE)
            + store("xid"),
            "end_xid": store("xid", "lxid", "xmin", "vacuumFlags", "inCommit",
                             "recoveryConflictPending", "subxids.nxids", "subxids.overflowed")
            + self._vc("latestCompletedXid", Op.LOAD) + self._vc("latestCompletedXid", Op.STORE),
        }

    def get_snapshot(self, backend: Backend) -> ProcessGenerator:
        """Lock shared (spinlock protocol), scan every PGPROC, set xmin, release (pa:1225)."""
        backend.record.full_snapshots += 1
        yield from self.proc_array_lock.acquire(backend, LockMode.SHARED, Category.GET_SNAPSHOT)
        yield from backend.ops(self.before_scan, Category.GET_SNAPSHOT)
        yield from backend.scan(self.plan, self.scan_costs.pg91, Category.GET_SNAPSHOT)
        if not backend.xmin_set:
            yield from backend.ops(self.own(backend, "xmin"), Category.GET_SNAPSHOT)
        backend.xmin_set = True
        yield from self.proc_array_lock.release(backend, LockMode.SHARED, Category.GET_SNAPSHOT)

