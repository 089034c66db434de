"""The columns the PostgreSQL model adds to a run's curve: unit and meaning of each.

The generic columns (the point, TPS, latency, transfers by class, scheduling, the window) are
:mod:`simulator.analysis.columns`'; these are the model's: where a transaction's time went
(:class:`~snapsim_models.backend.Category`), snapshots computed, reused or copied, connections
that come and go, and a workload mix's per-script columns. The plugin hands them to the machine
as ``PostgresModel.columns`` and ``column_prefixes``.
"""

from __future__ import annotations

CURVE_COLUMNS: dict[str, tuple[str, str]] = {
    "mostly_idle_tps": ("1/s", "mostly-idle connections' transactions per simulated second"),
    "share_get_snapshot": ("fraction", "share of transaction time in GetSnapshotData"),
    "get_snapshot_us": ("us/transaction", "time in GetSnapshotData"),
    "share_lock_wait": ("fraction", "share of transaction time waiting for locks"),
    "lock_wait_us": ("us/transaction", "time waiting for locks"),
    "share_commit": ("fraction", "share of transaction time in commit / end of transaction"),
    "commit_us": ("us/transaction", "time in commit / end of transaction"),
    "share_other": ("fraction", "share of transaction time in the rest of the work"),
    "other_us": ("us/transaction", "time in the rest of the work"),
    "share_scheduling": ("fraction", "share of transaction time waiting for a CPU"),
    "scheduling_us": ("us/transaction", "time waiting for a CPU and switching (with "
                      "options.working_sets, refilling the backend's working set too)"),
    "share_connection": ("fraction", "share of transaction time in connecting and "
                         "disconnecting (a client that reconnects per transaction)"),
    "connection_us": ("us/transaction", "time in the backend's start-up and exit, its procArray "
                      "add and remove, and the free list"),
    "refill_us_per_txn": ("us/transaction", "time every process (backends, pgbench threads) "
                          "spent refilling its private working set after it went cold (a "
                          "migration, a core C6 flush, other processes on its core), per "
                          "active-client transaction"),
    "full_snapshots": ("1/transaction", "snapshots computed in full"),
    "reused_snapshots": ("1/transaction", "snapshots reused from the cache"),
    "copied_snapshots": ("1/transaction", "snapshots copied from a cache shared by all backends"),
    "connects_per_s": ("1/s", "connections that joined the procArray (ProcArrayAdd) per "
                       "simulated second"),
    "disconnects_per_s": ("1/s", "connections that left the procArray (ProcArrayRemove) per "
                          "simulated second"),
    "procarray_exclusive_per_txn": ("1/transaction", "exclusive ProcArrayLock acquisitions "
                                    "(commits with an xid, group clears, procArray adds and "
                                    "removes) per active-client transaction"),
}
"""Curve columns of the model: ``(unit, one-line meaning)``."""

CURVE_COLUMN_PREFIXES: dict[str, tuple[str, str]] = {
    "tps_": ("1/s", "transactions per simulated second of the mix's script {name}"),
    "latency_mean_us_": ("us", "mean latency of the mix's script {name}"),
}
"""Curve columns named by a prefix and a mix's script (``tps_tpcb``)."""
