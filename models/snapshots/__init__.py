"""GetSnapshotData and transaction end of each PostgreSQL version, as memory operations.

Each class transcribes the shared-memory accesses of its version's ``GetSnapshotData`` and
transaction end, cited as "pa:line@version" (pa = ``src/backend/storage/ipc/procarray.c``; 9.1 =
``REL9_1_24``, 13 = ``REL_13_0``, 14 = ``REL_14_0``); one module holds each version family. The
names are the algorithm keys of an experiment:

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

from .base import SnapshotAlgorithm
from .csn import Csn
from .pg91 import Pg91
from .post14 import BARRIER_CYCLES, PgxactSplit, Post14, Post14Lockfree, Post14SharedCache
from .pre14 import Pre14
from .running_xids import RunningXids

__all__ = [
    "ALGORITHMS",
    "BARRIER_CYCLES",
    "VERSIONS",
    "Csn",
    "Pg91",
    "PgxactSplit",
    "Post14",
    "Post14Lockfree",
    "Post14SharedCache",
    "Pre14",
    "RunningXids",
    "SnapshotAlgorithm",
]

ALGORITHMS: dict[str, type[SnapshotAlgorithm]] = {
    cls.name: cls
    for cls in (Pg91, Pre14, PgxactSplit, Post14, Post14Lockfree, Csn, Post14SharedCache,
                RunningXids)
}
"""Snapshot algorithms by their contract name."""


VERSIONS: tuple[str, ...] = tuple(ALGORITHMS)
"""The algorithm keys, in :data:`ALGORITHMS`' order."""
