"""The columns of a run's tables: the point's identity, and the unit and meaning of each.

:data:`COLUMNS` is the one documented table of every column of ``curve.csv`` (``Result.curve``),
``curve_summary.csv`` (``Result.curve_summary``) and ``lines.csv`` (``Result.lines``);
``columns.yaml`` of an output directory is built from it (:func:`columns_document`). A workload
model that adds a column it does not document leaves a gap there (unit and meaning ``null``),
which the tests catch for the shipped model.
"""

from __future__ import annotations

from collections.abc import Iterable

POINT_KEYS = ("machine", "algorithm", "workload", "clients", "idle_clients", "idle_kind", "seed")
"""Columns that identify a point, first in every curve and per-line row."""

TRANSACTIONS_PER_CLIENT = "transactions_per_client"
"""Curve column: the measured window's transactions per active client."""
WINDOW_CONVERGED = "window_converged"
"""Curve column: whether the point's warm-up and window are long enough to trust its TPS (the
workload model's rule); ``False`` marks a point of too few transactions."""

_ACCESS_CLASSES = {
    "l1_hit": "hits in the thread's own L1d",
    "l2_hit": "hits in the core's own L2",
    "l3_hit": "hits in the domain's own L3",
    "smt_sibling": "lines supplied by the SMT sibling's private caches",
    "local_hit": "clean lines supplied by another core of the same socket",
    "local_hitm": "dirty lines (HITM) supplied by another core of the same socket",
    "cross_domain_hit": "clean lines supplied by another L3 domain of the same socket",
    "cross_domain_hitm": "dirty lines (HITM) supplied by another L3 domain of the same socket",
    "remote_hit": "clean lines supplied by another socket",
    "remote_hitm": "dirty lines (HITM) supplied by another socket",
    "dram_local": "lines read from the near memory node",
    "dram_remote": "lines read from a far memory node",
    "upgrade": "stores to a shared line that invalidate the other copies",
    "invalidations": "copies invalidated in other caches",
    "false_sharing_hitm": "HITM transfers whose bytes accessed and bytes dirtied are disjoint",
}

_POINT = {
    "machine": ("-", "machine name"),
    "algorithm": ("-", "snapshot algorithm"),
    "workload": ("-", "workload name"),
    "clients": ("connections", "active clients"),
    "idle_clients": ("connections", "idle (or mostly-idle) connections"),
    "idle_kind": ("-", "kind of the idle connections: idle or mostly-idle"),
    "seed": ("-", "the point's own seed, derived from the root seed and the point"),
}

_CURVE = {
    "root_seed": ("-", "the experiment's root seed the point's seed derives from"),
    "tps": ("1/s", "active clients' transactions per simulated second"),
    "mostly_idle_tps": ("1/s", "mostly-idle connections' transactions per simulated second"),
    "transactions": ("transactions", "transactions completed in the measured window"),
    "latency_mean_us": ("us", "mean transaction latency"),
    "latency_p50_us": ("us", "median transaction latency"),
    "latency_p99_us": ("us", "99th percentile transaction latency"),
    "cpu_utilisation": ("fraction", "busy share of the hardware threads in the window"),
    "idle_exits_per_txn": ("1/transaction", "wake-ups of a task on an idle hardware thread (any "
                           "task: clients, backends, mostly-idle ones)"),
    "idle_exit_us_per_txn": ("us/transaction", "idle-state exit latency those wake-ups waited "
                             "for"),
    "ipis_per_txn": ("1/transaction", "wake-ups that needed an inter-processor interrupt (a "
                     "halted target: HLT or WFI idle, or a VM)"),
    "migrations_per_txn": ("1/transaction", "times a task started on another core than before"),
    "private_flushes_per_txn": ("1/transaction", "times a core entered a core-level idle state "
                                "and flushed its private caches"),
    **{name: ("1/transaction", f"{meaning}, per transaction")
       for name, meaning in _ACCESS_CLASSES.items()},
    "hot_line_wait_ns": ("ns/transaction", "time queued behind transfers of hot lines"),
    "cas_attempts": ("1/transaction", "compare-and-swap attempts of load + CAS loops, failed "
                     "ones included"),
    "cas_failures": ("1/transaction", "compare-and-swap attempts that failed because the word "
                     "changed since it was read"),
    "share_get_snapshot": ("fraction", "share of transaction time in GetSnapshotData"),
    "get_snapshot_us": ("us/transaction", "time in GetSnapshotData"),
    "share_lock_wait": ("fraction", "share of transaction time waiting for locks"),
    "lock_wait_us": ("us/transaction", "time waiting for locks"),
    "share_commit": ("fraction", "share of transaction time in commit / end of transaction"),
    "commit_us": ("us/transaction", "time in commit / end of transaction"),
    "share_other": ("fraction", "share of transaction time in the rest of the work"),
    "other_us": ("us/transaction", "time in the rest of the work"),
    "share_scheduling": ("fraction", "share of transaction time waiting for a CPU"),
    "scheduling_us": ("us/transaction", "time waiting for a CPU and switching"),
    "share_connection": ("fraction", "share of transaction time in connecting and "
                         "disconnecting (a client that reconnects per transaction)"),
    "connection_us": ("us/transaction", "time in the backend's start-up and exit, its procArray "
                      "add and remove, and the free list"),
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
    "duration_ms": ("ms", "simulated time measured"),
    "warmup_ms": ("ms", "simulated warm-up before the window"),
    TRANSACTIONS_PER_CLIENT: ("transactions", "window transactions per active client"),
    WINDOW_CONVERGED: ("bool", "whether warm-up and window are long enough to trust the TPS"),
    "work_scale": ("factor", "base work scale of --single-client-tps (1 without it)"),
    "error": ("-", "empty, or why the point failed"),
    "measured_tps": ("1/s", "the published measurement of the point (named measurements)"),
    "rel_error": ("fraction", "tps / measured_tps - 1"),
}

SUMMARY_KEYS = tuple(key for key in POINT_KEYS if key != "seed")
"""Columns that identify a point of ``curve_summary.csv``: the point keys but the seed."""

NOT_SUMMARISED = ("root_seed", "duration_ms", "warmup_ms", "work_scale", "measured_tps", "error",
                  WINDOW_CONVERGED)
"""Curve columns without statistics in ``curve_summary.csv``, numbers among them: the root seed
(what the summary is over), the run's settings (the same for every seed), the measurement
compared with (carried as it is), the error and the trust flag (summarised their own way)."""

SUMMARY_STATISTICS = {
    "mean": "mean over the point's successful seeds",
    "sd": "sample standard deviation over the point's successful seeds (empty below two)",
    "low": "lower bound of the 95 % Student-t interval of the mean over the seeds (empty below "
           "two)",
    "high": "upper bound of the 95 % Student-t interval of the mean over the seeds (empty below "
            "two)",
}
"""What ``curve_summary.csv`` gives of each summarised column: ``<column>_<statistic>``, over
the point's successful seeds that have a value (the interval's coverage is
:data:`simulator.analysis.intervals.CONFIDENCE`)."""

_SUMMARY = {
    **{key: _POINT[key] for key in SUMMARY_KEYS},
    "n_seeds": ("seeds", "root seeds of the point that succeeded: those the statistics are over"),
    "n_failed": ("seeds", "root seeds of the point that failed (an error), left out of the "
                 "statistics"),
    WINDOW_CONVERGED: ("bool", "whether every successful seed's warm-up and window are long "
                       "enough to trust its TPS (empty when none succeeded)"),
    "measured_tps": _CURVE["measured_tps"],
    **{f"{column}_{statistic}": (unit, f"{what} of: {meaning}")
       for column, (unit, meaning) in _CURVE.items() if column not in NOT_SUMMARISED
       for statistic, what in SUMMARY_STATISTICS.items()},
}

_LINES = {
    "label": ("-", "the cache line's name, e.g. PGXACT[5..10]"),
    "address": ("bytes", "the line's address in the simulated memory"),
    "home": ("-", "the line's home memory node"),
    "loads": ("accesses", "loads of the line in the window"),
    "stores": ("accesses", "stores to the line in the window"),
    "rmws": ("accesses", "atomic read-modify-writes of the line in the window"),
    **{name: ("accesses", f"{meaning}, in the window")
       for name, meaning in _ACCESS_CLASSES.items()},
    "wait_ns": ("ns", "time queued behind other transfers of the line in the window"),
    "bytes_read": ("bitmask", "64-bit mask of the bytes read (bit i = byte i of the line)"),
    "bytes_written": ("bitmask", "64-bit mask of the bytes written"),
    "fields_read": ("-", "the struct fields read, space separated"),
    "fields_written": ("-", "the struct fields written, space separated"),
}

COLUMNS: dict[str, dict[str, tuple[str, str]]] = {
    "curve.csv": {**_POINT, **_CURVE},
    "curve_summary.csv": _SUMMARY,
    "lines.csv": {**_POINT, **_LINES},
}
"""Per table, every documented column: ``(unit, one-line meaning)``; ``-`` for no unit."""


ColumnsDocument = dict[str, dict[str, dict[str, str | None]]]


PREFIXED: dict[str, dict[str, tuple[str, str]]] = {
    "curve.csv": {
        "tps_": ("1/s", "transactions per simulated second of the mix's script {name}"),
        "latency_mean_us_": ("us", "mean latency of the mix's script {name}"),
    },
}
"""Columns named by a prefix and a name (a workload mix's per-script columns)."""


def describe(table: str, column: str) -> tuple[str | None, str | None]:
    """Unit and meaning of a column of ``table`` (``None`` for both when undocumented).

    A statistic of ``curve_summary.csv`` that :data:`COLUMNS` does not list (of a
    :data:`PREFIXED` column) is described from the ``curve.csv`` column it summarises.
    """
    known = COLUMNS.get(table, {})
    if column in known:
        return known[column]
    for prefix, (unit, meaning) in PREFIXED.get(table, {}).items():
        if column.startswith(prefix) and len(column) > len(prefix):
            return unit, meaning.format(name=column.removeprefix(prefix))
    if table == "curve_summary.csv":
        for statistic, what in SUMMARY_STATISTICS.items():
            base = column.removesuffix(f"_{statistic}")
            if base != column and base not in COLUMNS["curve.csv"]:
                base_unit, base_meaning = describe("curve.csv", base)
                if base_meaning is not None:
                    return base_unit, f"{what} of: {base_meaning}"
    return None, None


def columns_document(tables: dict[str, Iterable[str]]) -> ColumnsDocument:
    """``columns.yaml``: per table, each of its columns (in order) with unit and meaning.

    A column neither :data:`COLUMNS` nor :data:`PREFIXED` documents gets ``null`` for both (not
    an error: a user's workload model may add columns).
    """
    document: ColumnsDocument = {}
    for table, columns in tables.items():
        document[table] = {}
        for column in columns:
            unit, meaning = describe(table, str(column))
            document[table][column] = {"unit": unit, "meaning": meaning}
    return document
