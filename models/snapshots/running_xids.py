"""What-if ``running_xids``: 14 without the cache, its snapshot scanning only the running xids.

A dense array of the K running top-level xids, kept at xid assignment and commit, replaces the
scan of the N ``xids[]`` slots (project issue 17). PostgreSQL has no such code: the design is an
ASSUMPTION, documented line by line in :class:`RunningXids`.
"""

from __future__ import annotations

from collections.abc import Sequence

from simulator.hardware.codes import Op
from simulator.hardware.tracked import NO_OPS, Ops, ScanPlan
from simulator.runtime.engine import ProcessGenerator

from ..backend import Backend, Category
from ..lwlock import LockMode
from .post14 import PgxactSplit


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
    running_xids_array = True

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

