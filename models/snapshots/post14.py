"""PostgreSQL 14's layout (``pgxact_split``), 14 itself (``post14``) and two what-ifs on it.

* :class:`PgxactSplit`: 14's dense ``xids[]`` scan (xmin out of the scanned data, 1f51c17c68;
  dense arrays, 941697c3c1), without the snapshot cache.
* :class:`Post14`: the same plus the snapshot cache keyed by ``xactCompletionCount`` (623a9ba79b),
  checked under ProcArrayLock (``GetSnapshotDataReuse``, pa:2122@14).
* :class:`Post14Lockfree` (what-if): the reuse check made without the lock.
* :class:`Post14SharedCache` (what-if): one snapshot shared by all backends.

Citations as in :mod:`snapsim_models.snapshots`. Commit with an xid uses the 9.6 group clear
(:mod:`~snapsim_models.snapshots.group_clear`); connects and disconnects take ProcArrayLock and
XidGenLock exclusive, move four arrays and rewrite ``pgxactoff`` in every later PGPROC. Left out:
subtransaction xid arrays (never copied: no backend has subtransactions in pgbench) and hot
standby (``KnownAssignedXids``).
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence

from simulator.hardware.codes import Op
from simulator.hardware.layout import Region
from simulator.hardware.tracked import NO_OPS, Access, Ops, ScanPlan
from simulator.runtime.engine import ProcessGenerator

from ..backend import Backend, Category
from ..lwlock import LockMode
from .group_clear import GroupClearCommit

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



class PgxactSplit(GroupClearCommit):
    """14's layout and full scan of the dense ``xids[]`` array, without the snapshot cache."""

    name = "pgxact_split"
    layout = "pg14"
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
        tracked, shm = self.tracked, self.shmem
        xids = shm.xids
        assert xids is not None

        def pgproc(op: Op, *fields: str) -> Ops:
            return self._own_fields(backend, shm.pgproc, op, *fields)

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
    shared_snapshot = True

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

