"""GetSnapshotData and transaction end of each PostgreSQL version, as memory operations.

Each class transcribes the shared-memory accesses of its version's ``GetSnapshotData`` and
transaction end, cited as "pa:line@version" (pa = ``src/backend/storage/ipc/procarray.c``; 9.1 =
``REL9_1_24``, 13 = ``REL_13_0``, 14 = ``REL_14_0``). The names are the algorithm keys of an
experiment:

* ``pg91``: 9.1, the scan reads every ``PGPROC`` directly (pointer array, the xid/xmin line and the
  subxid header of every proc).
* ``pre14``: 9.2-13 as of 13: ``pgprocnos[]`` → ``PGXACT`` with ``xmin`` beside ``xid`` (commit
  ed0b409d22); the 9.6 group clear of xids at commit (0e141c0fbb).
* ``pgxact_split``: 14's layout (xmin out of the scanned data, 1f51c17c68; dense ``xids[]``,
  941697c3c1), no snapshot cache.
* ``post14``: 14+: the same plus the snapshot cache keyed by ``xactCompletionCount``, checked under
  ProcArrayLock.
* ``post14_lockfree``: a what-if, post14 with the reuse check made without the lock (suggested by
  the commit that added the cache, 623a9ba79b; see :class:`Post14Lockfree`).
* ``post14_shared_cache``: a what-if, post14 plus one snapshot shared by all backends, copied
  instead of scanned while ``xactCompletionCount`` is unchanged (a next step listed in 623a9ba79b's
  discussion; see :class:`Post14SharedCache`).
* ``csn``: commit sequence numbers (Heikki Linnakangas' csn-v8 patch, as applied in
  ``github:hackorum-dev/postgres`` d880c47d8a): a snapshot reads one counter line; commit
  increments it and writes the CSN log.
* ``running_xids``: a what-if, 14 without the cache whose snapshot scans a dense array of the
  running xids only (K entries, not N), kept at xid assignment and commit (project issue 17;
  see :class:`RunningXids`).

Simplifications (each costs at most one line per snapshot): ``pg91`` also reads its own subxid
header (9.1 skips MyProc); subtransaction xid arrays are never copied (no backend has
subtransactions in pgbench).

Connections that come and go (``options.churn``, :mod:`snapsim_models.churn`): each class gives
its version's ``ProcArrayAdd``/``ProcArrayRemove`` steps and the own fields ``InitProcess`` sets.
``pg91`` appends and moves the last entry into a removed one's slot; ``pre14`` searches and
moves ``pgprocnos`` (``memmove``) under ProcArrayLock; ``pgxact_split`` and every 14 variant
(``post14``, ``post14_lockfree``, ``post14_shared_cache``, ``running_xids``) do 14's: both
ProcArrayLock and XidGenLock exclusive, four arrays moved, ``pgxactoff`` rewritten in every later
backend's PGPROC (``running_xids`` also renumbers its entries); ``csn`` models none.
"""

from __future__ import annotations

import bisect
import weakref
from collections.abc import Sequence

import simpy

from simulator.hardware.codes import Op
from simulator.hardware.layout import Region
from simulator.hardware.tracked import NO_OPS, Access, Ops, ScanPlan
from simulator.runtime.engine import ProcessGenerator

from .backend import Backend, Category
from .lwlock import WAKE_CYCLES, LockMode
from .procarray import SnapshotAlgorithm

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
INIT_PGPROC_14 = (
    "links", "waitStatus", "lxid", "xid", "xmin", "pid", "backendId", "databaseId", "roleId",
    "tempNamespaceId", "isBackgroundWorker", "statusFlags", "delayChkpt",
    "recoveryConflictPending", "lwWaiting", "lwWaitMode", "waitLock", "waitProcLock", "waitLSN",
    "syncRepState", "syncRepLinks", "procArrayGroupMember", "procArrayGroupNext",
    "procArrayGroupMemberXid", "wait_event_info", "clogGroupMember", "clogGroupNext",
    "clogGroupMemberXid", "clogGroupMemberXidStatus", "clogGroupMemberPage", "clogGroupMemberLsn",
    "fpVXIDLock", "fpLocalTransactionId")
"""PGPROC fields ``InitProcess``@14 sets (xid, xmin and statusFlags are in PGPROC in 14; the
dense arrays' slots are written by ``ProcArrayAdd``)."""
SCANNED_PGPROC_91 = ("vacuumFlags", "xmin", "xid")
"""The PGPROC fields 9.1's snapshot reads of every entry (its H line)."""
SCANNED_SUBXIDS_91 = ("subxids.overflowed", "subxids.nxids")
"""The subxid-cache header 9.1's snapshot reads of every entry (its S line)."""
INIT_PGPROC_91 = (
    "links", "waitStatus", "lxid", "xid", "xmin", "pid", "backendId", "databaseId", "roleId",
    "inCommit", "vacuumFlags", "recoveryConflictPending")
"""PGPROC fields ``InitProcess``@9.1 sets (its H line is read by every snapshot)."""


class _GroupClearCommit(SnapshotAlgorithm):
    """9.6+ commit of a transaction with an xid: the group clear when ProcArrayLock is busy."""

    group: _GroupClear

    def _new_group_clear(self) -> _GroupClear:
        head = self.tracked.access(self.shmem.proc_hdr, 0, "procArrayGroupFirst", Op.RMW)
        return _GroupClear(self, head)

    def end_transaction_with_xid(self, backend: Backend) -> ProcessGenerator:
        """Conditional exclusive acquire, else join the group clear (pa:416@13, pa:654@14)."""
        taken = yield from self.proc_array_lock.conditional_acquire(
            backend, LockMode.EXCLUSIVE, Category.COMMIT)
        if taken:
            yield from self._end_xid_and_release(backend)
        else:
            yield from self.group.join(backend)


class Pre14(_GroupClearCommit):
    """PostgreSQL 9.2-13, modelled as 13 (``GetSnapshotData``, pa:1504-1782@13)."""

    name = "pre14"

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
        tracked, pgxact, pgproc = self.tracked, self.shmem.pgxact, self.shmem.pgproc
        pgprocno = backend.pgprocno
        assert pgxact is not None

        def store(region: Region, *fields: str) -> Ops:
            return Ops((access for field in fields
                        for access in tracked.access(region, pgprocno, field, Op.STORE)), tracked)

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


class PgxactSplit(_GroupClearCommit):
    """14's layout and full scan of the dense ``xids[]`` array, without the snapshot cache."""

    name = "pgxact_split"
    churn_takes_xid_gen_lock = True

    def prepare(self, backends: Sequence[Backend]) -> None:
        """Register the dense-array scan and the fixed lines."""
        shm = self.shmem
        assert shm.xids is not None
        n = len(self.procarray)
        self.plan: ScanPlan = self.tracked.scan([(shm.xids, range(n), None)], n,
                                                self.entries_per_chunk, "stream")
        self.header = self.tracked.access(shm.procarray, 0, "numProcs", Op.LOAD)
        self.after_scan = self.tracked.access(shm.procarray, 0, "replication_slot_xmin", Op.LOAD)
        self.vc_read = (self._vc("latestCompletedXid", Op.LOAD) + self._vc("oldestXid", Op.LOAD)
                        + self._vc("xactCompletionCount", Op.LOAD))
        self.reuse_check = self.vc_read[-1:]
        # Only a running backend can hold an xid: the entries of the others are never read here.
        status_flags, subxid_states = shm.status_flags, shm.subxid_states
        assert status_flags is not None
        assert subxid_states is not None
        self.xid_extras = {
            backend.index: self.tracked.access(status_flags, backend.index, None, Op.LOAD)
            + self.tracked.access(subxid_states, backend.index, None, Op.LOAD)
            for backend in sorted(backends, key=lambda backend: backend.index)}
        self._own_by_index: dict[tuple[int, int], dict[str, Ops]] = {}
        """Own accesses by (connection, index), once the entries move (connections that come
        and go)."""
        self.group = self._new_group_clear()
        super().prepare(backends)

    def own_accesses(self, backend: Backend) -> dict[str, Ops]:
        """Own PGPROC fields (private) and the entry's slot in the dense arrays."""
        tracked, shm, pgprocno = self.tracked, self.shmem, backend.pgprocno
        xids = shm.xids
        assert xids is not None

        def pgproc(op: Op, *fields: str) -> Ops:
            return Ops((access for field in fields
                        for access in tracked.access(shm.pgproc, pgprocno, field, op)), tracked)

        xid_slot_store = tracked.access(xids, backend.index, None, Op.STORE)
        return {
            "xmin": pgproc(Op.STORE, "xmin"),
            "lxid": pgproc(Op.STORE, "lxid"),
            "end": pgproc(Op.STORE, "lxid", "xmin", "delayChkpt", "recoveryConflictPending"),
            "my_slot": pgproc(Op.LOAD, "pgxactoff")
            + tracked.access(xids, backend.index, None, Op.LOAD),
            "assign_xid": self._vc("nextXid", Op.LOAD) + self._vc("nextXid", Op.STORE)
            + pgproc(Op.STORE, "xid") + xid_slot_store,
            "end_xid": xid_slot_store
            + pgproc(Op.STORE, "xid", "lxid", "xmin", "delayChkpt", "recoveryConflictPending")
            + self._vc("latestCompletedXid", Op.LOAD) + self._vc("latestCompletedXid", Op.STORE)
            + self._vc("xactCompletionCount", Op.LOAD)
            + self._vc("xactCompletionCount", Op.STORE),
            "group_member": pgproc(Op.STORE, "procArrayGroupMember", "procArrayGroupNext"),
        }

    # ------------------------------------------------------------- connect and disconnect

    def _init_fields(self) -> list[tuple[Region, tuple[str, ...]]]:
        """``InitProcess``@14: the own PGPROC's fields (xid, xmin, statusFlags among them)."""
        return [(self.shmem.pgproc, INIT_PGPROC_14)]

    def _churn_own_accesses(self, backend: Backend) -> dict[str, Ops]:
        """Also the own ``pgxactoff`` and the own fields ``ProcArrayAdd`` copies.

        ``pgxactoff`` is W by ``ProcArrayAdd`` and R by ``ProcArrayRemove``; ``add_own`` is that
        store and R of the own xid, ``subxidStatus`` and ``statusFlags``.
        """
        own = super()._churn_own_accesses(backend)
        tracked, pgproc, pgprocno = self.tracked, self.shmem.pgproc, backend.pgprocno
        offset = tracked.access(pgproc, pgprocno, "pgxactoff", Op.LOAD)
        own["pgxactoff"] = offset
        own["add_own"] = (offset.with_op(Op.STORE)
                          + Ops((access for field in ("xid", "subxidStatus", "statusFlags")
                                 for access in tracked.access(pgproc, pgprocno, field, Op.LOAD)),
                                tracked))
        return own

    def _dense_arrays(self) -> tuple[Region, Region, Region, Region]:
        """The four arrays ``ProcArrayAdd``/``ProcArrayRemove`` move.

        ``pgprocnos``, ``xids``, ``subxidStates``, ``statusFlags``.
        """
        shm = self.shmem
        assert shm.xids is not None
        assert shm.subxid_states is not None
        assert shm.status_flags is not None
        return shm.pgprocnos, shm.xids, shm.subxid_states, shm.status_flags

    def _prepare_moves(self, pool: Sequence[Backend]) -> None:
        """The four arrays up to the capacity, and ``pgxactoff`` of the PGPROCs.

        Of every PGPROC that can be in the array (its entries and the free slots); shared lines.
        """
        capacity = self.procarray.capacity
        for region in self._dense_arrays():
            self._elements(region, 0, capacity)
        pgprocnos = {*self.procarray.entries, *(backend.pgprocno for backend in pool)}
        for pgprocno in sorted(pgprocnos):
            self.tracked.access(self.shmem.pgproc, pgprocno, "pgxactoff", Op.STORE)

    def _add_steps(self, backend: Backend, index: int, n: int) -> ProcessGenerator:
        """``ProcArrayAdd``@14 at ``index`` of ``n`` (ProcArrayLock and XidGenLock held).

        R the header (numProcs, maxProcs); the search (R ``pgprocnos[0..index]``); the four
        ``memmove`` up (R elements ``index..n-1`` of ``pgprocnos``, ``xids``, ``subxidStates``,
        ``statusFlags``; W elements ``index..n``, the new entry's included); W the own
        ``pgxactoff``, R the own xid, ``subxidStatus`` and ``statusFlags``; W ``numProcs``;
        then W ``allProcs[pgprocnos[i]].pgxactoff`` for every later entry (a line of each of
        their PGPROCs), a loop charged ``scan_costs.dense`` cycles an entry (the moves cost
        only their lines: a ``memmove`` moves tens of bytes an instruction).
        """
        arrays = self._dense_arrays()
        category = Category.CONNECTION
        yield from backend.ops(self._header_load, category)
        yield from self._run_plans(backend, [self._elements(arrays[0], 0, min(index + 1, n))],
                                   self.scan_costs.dense)
        later = tuple(self.procarray.entries[index:n])
        yield from self._run_plans(backend, [self._elements(a, index, n) for a in arrays])
        yield from backend.ops(self.own(backend, "add_own"), category)
        yield from self._run_plans(backend, [self._elements(a, index, n + 1, Op.STORE)
                                             for a in arrays])
        yield from backend.ops(self._header_store, category)
        yield from self._run_plans(backend, [self._offsets(later)], self.scan_costs.dense)

    def _remove_steps(self, backend: Backend, index: int, n: int) -> ProcessGenerator:
        """``ProcArrayRemove``@14 of entry ``index`` of ``n`` (both locks held).

        R the own ``pgxactoff`` and ``numProcs``; W ``statusFlags[index]`` (0); the four
        ``memmove`` down (R elements ``index+1..n-1``, W elements ``index..n-2``); W
        ``pgprocnos[n-1]`` (-1); W ``numProcs``; W ``pgxactoff`` of every later entry. No
        search: the own ``pgxactoff`` is the index.
        """
        arrays = self._dense_arrays()
        category = Category.CONNECTION
        yield from backend.ops(self.own(backend, "pgxactoff") + self._count_load, category)
        yield from self._run_plans(backend, [self._elements(arrays[3], index, index + 1,
                                                            Op.STORE)])
        later = tuple(self.procarray.entries[index + 1:n])
        yield from self._run_plans(backend, [self._elements(a, index + 1, n) for a in arrays])
        yield from self._run_plans(backend, [self._elements(arrays[0], index, n, Op.STORE)]
                                   + [self._elements(a, index, n - 1, Op.STORE)
                                      for a in arrays[1:]])
        yield from backend.ops(self._header_store, category)
        yield from self._run_plans(backend, [self._offsets(later)], self.scan_costs.dense)

    def _offsets(self, pgprocnos: tuple[int, ...]) -> ScanPlan | None:
        """W ``pgxactoff`` of the PGPROCs of ``pgprocnos`` (14's renumbering loop)."""
        return self._of_procs(pgprocnos, "pgxactoff", Op.STORE)

    def _entries_changed(self, moved: list[Backend]) -> None:
        """The scan covers the new count; a moved backend's own slot accesses follow it."""
        xids = self.shmem.xids
        assert xids is not None
        n = len(self.procarray)
        self.plan = self._cached_plan(
            ("snapshot", n),
            lambda: self.tracked.scan([(xids, range(n), None)], n, self.entries_per_chunk,
                                      "stream"))
        own = self._own
        for backend in moved:
            if backend.connection in own:
                own[backend.connection] = self._own_at(backend)

    def _own_at(self, backend: Backend) -> dict[str, Ops]:
        """The own accesses at the backend's current index (cached per index)."""
        key = (backend.connection, backend.index)
        own = self._own_by_index.get(key)
        if own is None:
            own = self._own_by_index[key] = self._own_accesses_of(backend)
        return own

    def _extras(self, index: int) -> Ops:
        """R ``statusFlags[index]`` and ``subxidStates[index]`` (an xid holder's flags)."""
        extras = self.xid_extras.get(index)
        if extras is None:
            shm = self.shmem
            assert shm.status_flags is not None
            assert shm.subxid_states is not None
            extras = self.xid_extras[index] = (
                self.tracked.access(shm.status_flags, index, None, Op.LOAD)
                + self.tracked.access(shm.subxid_states, index, None, Op.LOAD))
        return extras

    def release(self) -> None:
        """Also drop the per-index own accesses."""
        super().release()
        self._own_by_index.clear()

    def get_snapshot(self, backend: Backend) -> ProcessGenerator:
        """Lock shared, then the full path (pa:2205@14)."""
        yield from self.proc_array_lock.acquire(backend, LockMode.SHARED, Category.GET_SNAPSHOT)
        yield from self._full_snapshot(backend)
        yield from self.proc_array_lock.release(backend, LockMode.SHARED, Category.GET_SNAPSHOT)

    def _full_snapshot(self, backend: Backend) -> ProcessGenerator:
        backend.record.full_snapshots += 1
        yield from backend.ops(self.vc_read + self.own(backend, "my_slot") + self.header,
                               Category.GET_SNAPSHOT)
        yield from backend.scan(self.plan, self.scan_costs.dense, Category.GET_SNAPSHOT)
        yield from self._after_scan(backend, sorted(self.procarray.xid_holders.items()))

    def _after_scan(self, backend: Backend,
                    holders: Sequence[tuple[int, Backend]]) -> ProcessGenerator:
        """The flags of the other xid holders (procArray index, backend), the tail, xmin."""
        extras: list[Access] = []
        seen: set[int] = set()
        xmax = self.procarray.latest_completed_xid + 1
        for index, holder in holders:
            # pa:2323-2340@14: the own entry and xids >= xmax are skipped before the
            # statusFlags / subxidStates reads.
            if holder is backend or holder.xid >= xmax:
                continue
            for access in self._extras(index):
                if access.line not in seen:
                    seen.add(access.line)
                    extras.append(access)
        tail = self.after_scan if backend.xmin_set else self.after_scan + self.own(backend, "xmin")
        yield from backend.ops(Ops(extras) + tail if extras else tail, Category.GET_SNAPSHOT)
        backend.xmin_set = True
        backend.snapshot_completion_count = self.procarray.completion_count


class Post14(PgxactSplit):
    """PostgreSQL 14+: the snapshot cache, reused while ``xactCompletionCount`` is unchanged."""

    name = "post14"

    def get_snapshot(self, backend: Backend) -> ProcessGenerator:
        """Lock shared; ``GetSnapshotDataReuse`` (pa:2122@14) under the lock; else full path."""
        yield from self.proc_array_lock.acquire(backend, LockMode.SHARED, Category.GET_SNAPSHOT)
        cached = backend.snapshot_completion_count
        if cached:
            reuse = cached == self.procarray.completion_count
            check = self.reuse_check  # R xactCompletionCount (the VariableCache line)
            if reuse:
                store = NO_OPS if backend.xmin_set else self.own(backend, "xmin")
                yield from backend.ops(check + store, Category.GET_SNAPSHOT)
                backend.xmin_set = True
                backend.record.reused_snapshots += 1
            else:
                yield from backend.ops(check, Category.GET_SNAPSHOT)
                yield from self._full_snapshot(backend)
        else:
            yield from self._full_snapshot(backend)
        yield from self.proc_array_lock.release(backend, LockMode.SHARED, Category.GET_SNAPSHOT)


BARRIER_CYCLES = 20
"""``pg_memory_barrier()`` on x86-64 is ``lock; addl $0,0(%rsp)``: an uncontended locked RMW on
the backend's own stack line, ~18-20 cycles for an uncontended ``lock xadd``/CAS on a line in M
state in the own L1 (the upper value; Haswell: 5e8 atomic increments by one thread take 3.1 s,
stackoverflow.com/questions/46919032). Charged as CPU work: nobody else touches that
line. ASSUMPTION for the non-x86 machines (an ARM ``dmb ish`` is used alike)."""


class Post14Lockfree(Post14):
    """What-if: post14 with ``GetSnapshotDataReuse``'s check made without ProcArrayLock.

    The commit that added the snapshot cache (623a9ba79b, PG 14) checks ``xactCompletionCount``
    under the lock and says the check is "likely possible" without it but needs "careful
    analysis", and that "there'd be another significant gain on top". PostgreSQL has no such
    code, so the sequence is an ASSUMPTION, one safe design (a seqlock-style re-check):

    1. R ``xactCompletionCount`` (the VariableCache line). If it differs from the cached count
       (or nothing is cached), take the lock shared and build the snapshot in full, as post14.
    2. If the backend's xmin is unset: W ``MyProc->xmin`` (own PGPROC line, private), a full
       memory barrier (:data:`BARRIER_CYCLES`) so that a concurrent ``ComputeXidHorizons`` either
       sees the xmin or ends a transaction the re-check notices, then R ``xactCompletionCount``
       again; if it moved, fall back to the locked full path. The xmin already published stays
       (as in PostgreSQL, the full path sets xmin only when it is unset): it is older than the
       new snapshot's, so it holds back no less than needed.

    A reuse therefore touches one shared line (read) and no lock word. Transaction end is
    post14's (the lock is still taken to clear an xid).
    """

    name = "post14_lockfree"

    def get_snapshot(self, backend: Backend) -> ProcessGenerator:
        """Lock-free reuse when ``xactCompletionCount`` is unchanged, else post14's full path."""
        cached = backend.snapshot_completion_count
        if cached:
            check = self.reuse_check
            # performed now: the count as of this instant
            yield from backend.ops(check, Category.GET_SNAPSHOT)
            if cached == self.procarray.completion_count:
                if backend.xmin_set:
                    backend.record.reused_snapshots += 1
                    return
                yield from backend.ops(self.own(backend, "xmin"), Category.GET_SNAPSHOT)
                yield from backend.compute(BARRIER_CYCLES, Category.GET_SNAPSHOT)
                yield from backend.ops(check, Category.GET_SNAPSHOT)
                backend.xmin_set = True
                if cached == self.procarray.completion_count:
                    backend.record.reused_snapshots += 1
                    return
        yield from PgxactSplit.get_snapshot(self, backend)  # the lock shared, the full path


class Post14SharedCache(Post14):
    """What-if: post14 plus one snapshot cache shared by all backends.

    PostgreSQL has no such code (the author of the 14 snapshot cache, 623a9ba79b, lists a shared
    cache as a possible next step); the design is an ASSUMPTION, one safe variant built on
    ``GetSnapshotDataReuse`` (pa:2122-2169@14) and ``GetSnapshotData`` (pa:2205-2555@14). Shared
    memory gains a header line (``SharedSnapshot``: the ``count`` it was built at, a ``claim``
    word, xmin, xmax, xcnt) and an xid array of ``GetMaxSnapshotXidCount()`` =
    ``procArray->maxProcs`` entries (procarray.c@14), see :mod:`snapsim_models.shmem.build`.
    Everything below runs under ProcArrayLock held shared, as post14's snapshot; commits take it
    exclusive, so ``xactCompletionCount`` cannot move meanwhile and every snapshot built at one
    count has the same contents (xids assigned later are >= xmax).

    1. The own cache, as post14: R ``xactCompletionCount``; equal to the cached count: reuse.
    2. Else R ``SharedSnapshot.count``. Equal to ``xactCompletionCount``: R xmin, xmax, xcnt and
       the ``ceil(4 xcnt / 64)`` array lines (a memcpy), W own xmin if unset (private), and the
       copy becomes the own cache.
    3. Else R ``claim``, build in full as post14, then publish unless ``claim`` already equals
       the count: CAS ``claim`` from the value read to the count (one publisher per count; a
       failed CAS skips publishing), W the array lines, W xmin, xmax, xcnt and last ``count``
       (x86 keeps store order; ``pg_write_barrier`` is a compiler barrier there). The published
       array also holds the publisher's own xid if it is < xmax (``GetSnapshotData`` skips it,
       pa:2323-2340@14; a reader's own xid in its snapshot is harmless, its own changes are
       recognised as its own before the snapshot is consulted).

    Left out: the memcpy's CPU cycles (at most ``maxProcs`` 4-B words; only its lines are
    charged), subtransaction xids (none in pgbench, as everywhere here) and the statusFlags
    filter of the xids (pgbench has no vacuum or logical-decoding backends). Transaction end is
    post14's, and so are connects and disconnects: ``ProcArrayAdd``/``ProcArrayRemove`` change
    no xid and no ``xactCompletionCount``, so neither the own caches nor the shared snapshot go
    stale (a new backend has no cache and builds, or copies, its first snapshot).
    """

    name = "post14_shared_cache"

    def prepare(self, backends: Sequence[Backend]) -> None:
        """Register the shared snapshot's header fields and one access per array line."""
        header, xids = self.shmem.shared_snapshot, self.shmem.shared_snapshot_xids
        assert header is not None
        assert xids is not None
        tracked = self.tracked

        def fields(op: Op, *names: str) -> Ops:
            return Ops((access for name in names
                        for access in tracked.access(header, 0, name, op)), tracked)

        self.read_count = fields(Op.LOAD, "count")
        self.read_claim = fields(Op.LOAD, "claim")
        self.read_scalars = fields(Op.LOAD, "xmin", "xmax", "xcnt")
        self.claim_cas = fields(Op.RMW, "claim")
        self.write_header = fields(Op.STORE, "xmin", "xmax", "xcnt", "count")
        first_of_line: dict[int, int] = {}
        for index in range(xids.count):
            first_of_line.setdefault(xids.line_of(index, None), index)
        self._line_end = sorted({*(index for index in first_of_line.values()), xids.count})[1:]
        """Exclusive end index of each array line's xids, in line order."""
        self._xid_loads = [tracked.access(xids, index, None, Op.LOAD)
                           for index in sorted(first_of_line.values())]
        self._xid_stores = [ops.with_op(Op.STORE) for ops in self._xid_loads]
        self._array_ops: dict[tuple[int, Op], Ops] = {}
        self.shared_count = 0
        """``SharedSnapshot.count``: the completion count of the published snapshot (0: none)."""
        self.shared_claim = 0
        """``SharedSnapshot.claim``: the count a publisher has claimed."""
        self.shared_xcnt = 0
        """``SharedSnapshot.xcnt``: xids in the published array."""
        super().prepare(backends)

    def _array(self, xcnt: int, op: Op) -> Ops:
        """Loads or stores of the array lines holding the first ``xcnt`` xids."""
        key = (xcnt, op)
        ops = self._array_ops.get(key)
        if ops is None:
            lines = bisect.bisect_left(self._line_end, xcnt) + 1 if xcnt else 0
            source = self._xid_loads if op is Op.LOAD else self._xid_stores
            ops = Ops((access for line in source[:lines] for access in line), self.tracked)
            self._array_ops[key] = ops
        return ops

    def _published_xcnt(self) -> int:
        """Xids of the snapshot built now: every holder's xid below xmax, the builder's too."""
        xmax = self.procarray.latest_completed_xid + 1
        return sum(1 for holder in self.procarray.xid_holders.values() if holder.xid < xmax)

    def get_snapshot(self, backend: Backend) -> ProcessGenerator:
        """Own cache, else the shared copy, else post14's full path and a publish; lock shared."""
        yield from self.proc_array_lock.acquire(backend, LockMode.SHARED, Category.GET_SNAPSHOT)
        yield from backend.ops(self.reuse_check, Category.GET_SNAPSHOT)  # R xactCompletionCount
        count = self.procarray.completion_count
        own_xmin = NO_OPS if backend.xmin_set else self.own(backend, "xmin")
        if backend.snapshot_completion_count == count:
            yield from backend.ops(own_xmin, Category.GET_SNAPSHOT)
            backend.record.reused_snapshots += 1
        else:
            yield from backend.ops(self.read_count, Category.GET_SNAPSHOT)
            if self.shared_count == count:
                xcnt = self.shared_xcnt
                yield from backend.ops(self.read_scalars + self._array(xcnt, Op.LOAD) + own_xmin,
                                       Category.GET_SNAPSHOT)
                backend.snapshot_completion_count = count
                backend.record.copied_snapshots += 1
            else:
                yield from backend.ops(self.read_claim, Category.GET_SNAPSHOT)
                seen = self.shared_claim
                yield from self._full_snapshot(backend)
                if seen != count:
                    yield from self._publish(backend, seen, count)
        backend.xmin_set = True
        yield from self.proc_array_lock.release(backend, LockMode.SHARED, Category.GET_SNAPSHOT)

    def _publish(self, backend: Backend, seen: int, count: int) -> ProcessGenerator:
        """CAS ``claim`` from ``seen`` to ``count``; the winner writes the array, then header."""
        yield from backend.ops(self.claim_cas, Category.GET_SNAPSHOT)
        yield from backend.sync()
        if self.shared_claim != seen:
            return  # another backend claimed this count first: the CAS failed
        self.shared_claim = count
        xcnt = self._published_xcnt()
        yield from backend.ops(self._array(xcnt, Op.STORE) + self.write_header,
                               Category.GET_SNAPSHOT)
        yield from backend.sync()
        assert self.procarray.completion_count == count, "a commit under ProcArrayLock shared"
        self.shared_count, self.shared_xcnt = count, xcnt


class Pg91(SnapshotAlgorithm):
    """PostgreSQL 9.1: the snapshot reads every PGPROC (pa:1225-1443@9.1); spinlock LWLocks."""

    name = "pg91"
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
        tracked, pgproc, pgprocno = self.tracked, self.shmem.pgproc, backend.pgprocno

        def store(*fields: str) -> Ops:
            return Ops((access for field in fields
                        for access in tracked.access(pgproc, pgprocno, field, Op.STORE)), tracked)

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


class Csn(SnapshotAlgorithm):
    """Commit-sequence-number snapshots (csn-v8's ``GetSnapshotData``): no lock, no scan.

    Connections cannot come and go (:attr:`supports_churn`): the patch's ``ProcArrayAdd`` and
    ``ProcArrayRemove`` are not transcribed (the patch was written against a 13-era procArray,
    the model runs it on 14's memory), so a run with ``options.churn`` refuses it.
    """

    name = "csn"
    supports_churn = False

    def prepare(self, backends: Sequence[Backend]) -> None:
        """Register the counter line, the CSN log and its locks."""
        shm = self.shmem
        assert shm.csn_log is not None
        assert shm.commit_seq_no_lock is not None
        assert shm.csn_log_control_lock is not None
        self.commit_seq_no_lock = self._lwlock("CommitSeqNoLock", shm.commit_seq_no_lock)
        self.csn_log_lock = self._lwlock("CSNLogControlLock", shm.csn_log_control_lock)
        self.oldest_active = self._vc("oldestActiveXid", Op.LOAD)
        self.counter = self._vc("nextCommitSeqNo", Op.LOAD)
        self.latest = self._vc("latestCompletedXid", Op.LOAD)
        self.commit_cas = self._vc("latestCompletedXid", Op.RMW)
        self.commit_fetch_add = self._vc("nextCommitSeqNo", Op.RMW)
        log = shm.csn_log
        self.log_stores = [self.tracked.access(log, slot, None, Op.STORE)
                           for slot in range(log.count)]
        super().prepare(backends)

    def own_accesses(self, backend: Backend) -> dict[str, Ops]:
        """Own PGPROC fields (14 layout plus ``snapshotcsn``)."""
        tracked, pgproc, pgprocno = self.tracked, self.shmem.pgproc, backend.pgprocno

        def store(*fields: str) -> Ops:
            return Ops((access for field in fields
                        for access in tracked.access(pgproc, pgprocno, field, Op.STORE)), tracked)

        return {
            "xmin": store("xmin"),
            "snapshotcsn": store("snapshotcsn"),
            "lxid": store("lxid"),
            "clear": store("xid", "xmin", "snapshotcsn", "lxid"),
            "assign_xid": self._vc("nextXid", Op.LOAD) + self._vc("nextXid", Op.STORE)
            + store("xid"),
        }

    def get_snapshot(self, backend: Backend) -> ProcessGenerator:
        """R oldestActiveXid (W xmin, R again), R nextCommitSeqNo (W own csn), R xmax."""
        backend.record.full_snapshots += 1
        steps = self.oldest_active
        if not backend.xmin_set:
            steps = steps + self.own(backend, "xmin") + self.oldest_active
        steps = steps + self.counter
        if not backend.xmin_set:
            steps = steps + self.own(backend, "snapshotcsn")
        steps = steps + self.latest
        yield from backend.ops(steps, Category.GET_SNAPSHOT)
        backend.xmin_set = True

    def clear_xmin(self, backend: Backend) -> ProcessGenerator:
        """``SnapshotResetXmin``: store an invalid xmin (the CSN is cleared at transaction end)."""
        yield from backend.ops(self.own(backend, "xmin"), Category.OTHER)
        backend.xmin_set = False

    def end_transaction(self, backend: Backend) -> ProcessGenerator:
        """ProcArrayLock **shared** even for read-only transactions, clear own fields."""
        yield from self.proc_array_lock.acquire(backend, LockMode.SHARED, Category.COMMIT)
        yield from backend.ops(self.own(backend, "clear"), Category.COMMIT)
        yield from self.proc_array_lock.release(backend, LockMode.SHARED, Category.COMMIT)
        backend.xmin_set = False

    def end_transaction_with_xid(self, backend: Backend) -> ProcessGenerator:
        """Commit with an xid under CSN (csn-v8 ``TransactionIdAsyncCommitTree``, transam.c).

        CommitSeqNoLock shared; CAS latestCompletedXid; CSN log COMMITTING; fetch_add the counter;
        CSN log final value; then the read-only end.
        """
        log_store = self.log_stores[self.shmem.csn_log_slot(backend.xid)]
        category = Category.COMMIT
        yield from self.commit_seq_no_lock.acquire(backend, LockMode.SHARED, category)
        for step in (self.commit_cas, log_store, self.commit_fetch_add, log_store):
            if step is log_store:
                yield from self.csn_log_lock.acquire(backend, LockMode.SHARED, category)
                yield from backend.ops(step, category)
                yield from self.csn_log_lock.release(backend, LockMode.SHARED, category)
            else:
                yield from backend.ops(step, category, lock_line=True)
        yield from self.commit_seq_no_lock.release(backend, LockMode.SHARED, category)
        yield from backend.sync()
        self._completed(backend)
        yield from self.end_transaction(backend)


class _GroupClear:
    """9.6+ ``ProcArrayGroupClearXid`` (pa:485@13, pa:773@14).

    A backend that fails the conditional exclusive acquire pushes itself on the group list (CAS on
    ``procArrayGroupFirst``, a PROC_HDR line). The first member becomes the leader: it takes
    ProcArrayLock exclusively, detaches the list (atomic exchange), clears every member's entry,
    releases and wakes the members, which sleep on their semaphores meanwhile.
    """

    def __init__(self, algorithm: _GroupClearCommit, head: Ops) -> None:
        # A weak reference: the algorithm owns this object (no cycle for the collector to walk).
        self._algorithm = weakref.ref(algorithm)
        self.head = head
        self.read_head = head.with_op(Op.LOAD)
        self.members: list[Backend] = []
        self.done: dict[int, simpy.Event] = {}

    def join(self, backend: Backend) -> ProcessGenerator:
        algorithm = self._algorithm()
        assert algorithm is not None, "the snapshot algorithm is gone"
        push = algorithm.own(backend, "group_member") + self.read_head + self.head
        yield from backend.ops(push, Category.COMMIT, lock_line=True)
        yield from backend.sync()
        leader = not self.members
        self.members.append(backend)
        if not leader:
            event = backend.env.event()
            self.done[backend.connection] = event
            yield from backend.sleep(event, Category.LOCK_WAIT)
            return
        lock = algorithm.proc_array_lock
        yield from lock.acquire(backend, LockMode.EXCLUSIVE, Category.COMMIT)
        yield from backend.ops(self.head, Category.COMMIT, lock_line=True)  # exchange
        group, self.members = self.members, []
        for member in group:
            yield from algorithm._clear_xid(backend, member)
        yield from lock.release(backend, LockMode.EXCLUSIVE, Category.COMMIT)
        followers = [m for m in group if m is not backend]
        if followers:
            yield from backend.flush()  # the followers wake at the leader's logical time
        for member in followers:
            yield from backend.ops(algorithm.own(member, "group_member"), Category.COMMIT)
            if backend.task is not None and member.task is not None:
                backend.task.wakes(member.task, sync=False)
            self.done.pop(member.connection).succeed()
        if followers:
            yield from backend.compute(WAKE_CYCLES * len(followers), Category.COMMIT)


class RunningXids(PgxactSplit):
    """What-if: GetSnapshotData scans a dense array of the K running xids, not the N slots.

    Asked by project issue 17. PostgreSQL has no such code: the design is an ASSUMPTION, built
    on 14's code paths (:class:`PgxactSplit`, no snapshot cache: the comparison is with
    ``pgxact_split``, and a cache would hide the scan this what-if shrinks).

    * Shared memory: ``numRunning`` (own 128-aligned allocation) followed by 8-B entries
      ``{xid, pgxactoff}`` (:data:`~snapsim_models.shmem.structs.RUNNING_XIDS_ENTRY`): the
      count and entries 0..6 share a line, so K entries take ceil((8 + 8K)/64) lines.
    * Assignment (``GetNewTransactionId``, varsup.c@14): 14 stores the xid in
      ``ProcGlobal->xids`` before releasing XidGenLock, so that "every active XID older than
      latestCompletedXid is present in the ProcArray". The append goes there too, under
      XidGenLock exclusive (already held, no new lock): R ``numRunning``, W ``runningXids[K]``,
      then W ``numRunning`` (x86 keeps the two stores in order; ``pg_write_barrier`` is a
      compiler barrier). A snapshot running meanwhile sees K or K + 1 entries, both correct:
      the new xid is above its xmax (latestCompletedXid + 1, read first), as for 14's unlocked
      ``xids[]`` store. 14's own stores (``PGPROC.xid``, ``xids[pgxactoff]``) stay:
      ``TransactionIdIsInProgress`` and ``ComputeXidHorizons`` still read ``xids[]``.
    * Commit/abort (``ProcArrayEndTransactionInternal``, procarray.c@14, ProcArrayLock
      exclusive already held, directly or by a group-clear leader): 14's stores, then XidGenLock
      exclusive to exclude appends (which write the count too), nested in ProcArrayLock in the
      order 14's ``GetRunningTransactionData`` already uses (ProcArrayLock, then XidGenLock;
      the reverse nesting, ProcArrayLock taken at assignment under XidGenLock, could deadlock
      with it). Under it: R ``numRunning``, a linear search of entries 0..pos for the xid, as
      9.1's ``ProcArrayRemove`` searches ``procs[]`` (pa:323@9.1), then swap-with-last:
      R ``runningXids[K-1]``, W ``runningXids[pos]`` (skipped when pos = K-1),
      W ``numRunning``. A group-clear leader takes XidGenLock once per member.
    * Snapshot (pa:2205-2446@14 with the loop over the K entries): ProcArrayLock shared; R the
      VariableCache line (latestCompletedXid, oldestXid, xactCompletionCount, as 14);
      R ``MyProc->xid`` (own PGPROC, to skip the own entry, pa:2323@14); R ``numRunning`` and
      the K entries; for each other entry with xid < xmax R ``statusFlags[pgxactoff]`` and
      ``subxidStates[pgxactoff]`` (vacuum and logical decoding are still skipped, subxids still
      counted, pa:2303-2387@14); xmin is the minimum of those xids, computed in registers;
      R ``replication_slot_xmin`` (ProcArray header line); W own xmin if unset (private).
      14's ``numProcs`` and ``xids[]`` are not read.

    Instruction cost: every entry scanned holds a valid xid that passes 14's skip test, so it
    is charged ``scan_costs.pre14`` cycles (ASSUMPTION: 4, the fitted per-entry work of the
    13 loop, which also compares and copies; range 1.5-6 between 14's skip-only loop and
    9.1's); the removal's search compares only (``scan_costs.dense``). Subtransactions, hot
    standby (``KnownAssignedXids``) and prepared transactions are left out.

    Connects and disconnects are 14's, plus (ASSUMPTION) a store to each running entry whose
    backend's ``pgxactoff`` they change, under the XidGenLock 14 already holds there.
    """

    name = "running_xids"

    def prepare(self, backends: Sequence[Backend]) -> None:
        """Register the count, every entry slot (K can reach the N entries) and 14's lines."""
        shm = self.shmem
        assert shm.running_hdr is not None
        assert shm.running_xids is not None
        self.running_entries = shm.running_xids
        self.count_load = self.tracked.access(shm.running_hdr, 0, "numRunning", Op.LOAD)
        self.count_store = self.count_load.with_op(Op.STORE)
        slots = range(self.procarray.capacity)  # the entries, and any connecting later
        self.slot_load = [self.tracked.access(shm.running_xids, i, None, Op.LOAD) for i in slots]
        self.slot_store = [load.with_op(Op.STORE) for load in self.slot_load]
        self.running: list[Backend] = []
        """The array's contents: slot i holds the xid of ``running[i]``."""
        self._plans: dict[int, ScanPlan] = {}
        super().prepare(backends)

    def _plan(self, k: int) -> ScanPlan:
        """The scan of entries 0..k-1 (their lines are registered by :meth:`prepare`)."""
        plan = self._plans.get(k)
        if plan is None:
            plan = self.tracked.scan([(self.running_entries, range(k), None)], k,
                                     self.entries_per_chunk, "stream")
            self._plans[k] = plan
        return plan

    def own_accesses(self, backend: Backend) -> dict[str, Ops]:
        """14's own accesses plus ``my_xid``: R own ``PGPROC.xid`` (private)."""
        own = super().own_accesses(backend)
        own["my_xid"] = self.tracked.access(self.shmem.pgproc, backend.pgprocno, "xid", Op.LOAD)
        return own

    def get_snapshot(self, backend: Backend) -> ProcessGenerator:
        """Lock shared, read the count and the K running entries, the holders' flags, xmin."""
        yield from self.proc_array_lock.acquire(backend, LockMode.SHARED, Category.GET_SNAPSHOT)
        backend.record.full_snapshots += 1
        yield from backend.ops(self.vc_read + self.own(backend, "my_xid") + self.count_load,
                               Category.GET_SNAPSHOT)
        if self.running:
            yield from backend.scan(self._plan(len(self.running)), self.scan_costs.pre14,
                                    Category.GET_SNAPSHOT)
        yield from self._after_scan(backend, [(holder.index, holder) for holder in self.running])
        yield from self.proc_array_lock.release(backend, LockMode.SHARED, Category.GET_SNAPSHOT)

    def _assignment_ops(self, backend: Backend) -> Ops:
        """14's stores of ``GetNewTransactionId`` and the append, under XidGenLock exclusive."""
        append = self.count_load + self.slot_store[len(self.running)] + self.count_store
        return self.own(backend, "assign_xid") + append

    def _add_steps(self, backend: Backend, index: int, n: int) -> ProcessGenerator:
        """14's ``ProcArrayAdd``, then W the ``pgxactoff`` of every running entry that moved.

        ASSUMPTION (the what-if's design): an entry carries its backend's ``pgxactoff``, which
        ``ProcArrayAdd`` changes for every later backend; XidGenLock, held here as in 14, keeps
        appends out while the entries are rewritten.
        """
        yield from super()._add_steps(backend, index, n)
        yield from self._renumber_entries(backend, index)

    def _remove_steps(self, backend: Backend, index: int, n: int) -> ProcessGenerator:
        """14's ``ProcArrayRemove``, then W the ``pgxactoff`` of every running entry that moved."""
        yield from super()._remove_steps(backend, index, n)
        yield from self._renumber_entries(backend, index + 1)

    def _renumber_entries(self, backend: Backend, first: int) -> ProcessGenerator:
        """W the entries of the running xids whose backends are at index ``first`` or later."""
        stores = [access for pos, holder in enumerate(self.running) if holder.index >= first
                  for access in self.slot_store[pos]]
        if stores:
            yield from backend.ops(Ops(stores, self.tracked), Category.CONNECTION)

    def _xid_assigned(self, backend: Backend) -> None:
        """The new xid also takes the array's next slot."""
        super()._xid_assigned(backend)
        self.running.append(backend)

    def _clear_xid(self, actor: Backend, member: Backend) -> ProcessGenerator:
        """14's clear of ``member``'s xid, then its removal under XidGenLock.

        The removal searches the entries for the xid and moves the last entry into its slot.
        """
        yield from actor.ops(self.own(member, "end_xid"), Category.COMMIT)
        yield from self.xid_gen_lock.acquire(actor, LockMode.EXCLUSIVE, Category.COMMIT)
        running = self.running
        pos, last = running.index(member), len(running) - 1
        yield from actor.ops(self.count_load, Category.COMMIT)
        yield from actor.scan(self._plan(pos + 1), self.scan_costs.dense, Category.COMMIT)
        move = self.slot_load[last] + self.slot_store[pos] if pos != last else NO_OPS
        yield from actor.ops(move + self.count_store, Category.COMMIT)
        yield from actor.sync()
        running[pos] = running[last]
        running.pop()
        self._completed(member)
        yield from self.xid_gen_lock.release(actor, LockMode.EXCLUSIVE, Category.COMMIT)

ALGORITHMS: dict[str, type[SnapshotAlgorithm]] = {
    cls.name: cls
    for cls in (Pg91, Pre14, PgxactSplit, Post14, Post14Lockfree, Csn, Post14SharedCache,
                RunningXids)
}
"""Snapshot algorithms by their contract name."""
