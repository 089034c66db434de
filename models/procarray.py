"""The procArray's contents: which pgprocnos are in the array, who holds an xid, the counters.

:class:`ProcArray` is the semantic state the snapshot algorithms (:mod:`snapsim_models.snapshots`)
need: which pgprocnos are in the array and in which order, who holds an xid, the shared
counters' values. The costs come from the memory operations the algorithms issue; connections
that come and go change the entries (:meth:`ProcArray.add`, :meth:`ProcArray.remove`).
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence

from .backend import Backend
from .shmem.memory import PgSharedMemory

FIRST_XID = 1000
"""The first xid handed out (any normal xid works; only identities matter)."""



class ProcArray:
    """Entries of the procArray (pgprocnos in array order) and the shared transaction counters.

    Args:
        shmem: the version's shared memory (sorting rule, launcher slots).
        backends: every client connection, in connection order.
        extra_pgprocnos: non-client entries (the launchers).
    """

    def __init__(self, shmem: PgSharedMemory, backends: Sequence[Backend],
                 extra_pgprocnos: Sequence[int]) -> None:
        entries = shmem.procarray_build([*(b.pgprocno for b in backends), *extra_pgprocnos])
        self.shmem = shmem
        self.entries = entries
        position = {pgprocno: index for index, pgprocno in enumerate(entries)}
        self._backends: dict[int, Backend] = {}
        """pgprocno → the backend in the array (the launchers have none)."""
        for backend in backends:
            backend.index = position[backend.pgprocno]
            self._backends[backend.pgprocno] = backend
        self.xid_holders: dict[int, Backend] = {}
        """procArray index → backend, for entries whose transaction has an xid."""
        self.next_xid = FIRST_XID
        self.latest_completed_xid = FIRST_XID - 1
        self.completion_count = 1
        """PG 14's ``xactCompletionCount``: +1 at every end of a transaction with an xid."""
        self.capacity = len(entries)
        """The most entries the array can hold in this run: its entries, plus the PGPROC slots
        of connections that come and go (set before the algorithm is prepared)."""
        self.changes = 0
        """Entries added and removed so far (connections that come and go)."""
        self._key: tuple[int, ...] = tuple(entries)

    def __len__(self) -> int:
        return len(self.entries)

    @property
    def key(self) -> tuple[int, ...]:
        """The entries as a tuple (what a scan plan of them is cached by)."""
        return self._key

    def insertion_index(self, pgprocno: int) -> int:
        """Where ``ProcArrayAdd`` will put ``pgprocno``: its sorted place, or the end (9.1)."""
        if self.shmem.procarray_sorted:
            return bisect.bisect_left(self.entries, pgprocno)
        return len(self.entries)

    def add(self, backend: Backend) -> list[Backend]:
        """``ProcArrayAdd``'s effect; returns the backends whose index changed (it included).

        Raises:
            IndexError: the array is at its capacity.
        """
        if len(self.entries) >= self.capacity:
            raise IndexError(f"procArray at its capacity of {self.capacity} entries")
        index = self.shmem.procarray_add(self.entries, backend.pgprocno)
        self._backends[backend.pgprocno] = backend
        return self._changed(index)

    def remove(self, backend: Backend) -> list[Backend]:
        """``ProcArrayRemove``'s effect; returns the backends whose index changed.

        Raises:
            RuntimeError: the backend still holds an xid (a disconnect ends its transaction
                first).
        """
        if backend.xid:
            raise RuntimeError(f"{backend.name} leaves the procArray holding xid {backend.xid}")
        index = self.shmem.procarray_remove(self.entries, backend.pgprocno)
        del self._backends[backend.pgprocno]
        backend.index = -1
        return self._changed(index)

    def _changed(self, start: int) -> list[Backend]:
        """Renumber the backends from index ``start`` on; rekey the xid holders."""
        moved = []
        backends = self._backends
        entries = self.entries
        for index in range(start, len(entries)):
            backend = backends.get(entries[index])
            if backend is not None and backend.index != index:
                backend.index = index
                moved.append(backend)
        if self.xid_holders:
            self.xid_holders = {holder.index: holder for holder in self.xid_holders.values()}
        self.changes += 1
        self._key = tuple(entries)
        return moved

