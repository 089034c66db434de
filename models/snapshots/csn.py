"""Commit sequence numbers (``csn``): a snapshot reads one counter line, no lock and no scan.

Transcribes Heikki Linnakangas' csn-v8 patch, as applied in ``github:hackorum-dev/postgres``
d880c47d8a, run on 14's memory with the patch's state added (the CSN counter, the CSN log and
its locks). Left out: connects and disconnects (the patch's ``ProcArrayAdd``/``ProcArrayRemove``
are not transcribed).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

from simulator.hardware.codes import Op
from simulator.hardware.tracked import Ops
from simulator.runtime.engine import ProcessGenerator

from ..backend import Backend, Category
from ..lwlock import LockMode
from .base import SnapshotAlgorithm


class Csn(SnapshotAlgorithm):
    """Commit-sequence-number snapshots (csn-v8's ``GetSnapshotData``): no lock, no scan.

    Connections cannot come and go (:attr:`supports_churn`): the patch's ``ProcArrayAdd`` and
    ``ProcArrayRemove`` are not transcribed (the patch was written against a 13-era procArray,
    the model runs it on 14's memory), so a run with ``options.churn`` refuses it.
    """

    name = "csn"
    layout = "csn"
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
        store = functools.partial(self._own_fields, backend, self.shmem.pgproc, Op.STORE)
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

