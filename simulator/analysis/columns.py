"""The columns of a run's tables: the point's identity, and the unit and meaning of each.

The generic columns (the point, throughput, latency, transfers by class, scheduling, the window)
are documented here; a workload model documents the columns it adds (its ``columns`` and
``column_prefixes``, :mod:`simulator.study.workload_model`), and :func:`columns_for` joins both
into the table of every column of ``curve.csv`` (``Result.curve``), ``curve_summary.csv``
(``Result.curve_summary``) and ``lines.csv`` (``Result.lines``) that ``columns.yaml`` of an
output directory is built from. A column nobody documents leaves a gap there (unit and meaning
``null``), which the tests catch for the shipped model.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

POINT_KEYS = ("machine", "algorithm", "workload", "clients", "idle_clients", "idle_kind", "seed")
"""Columns that identify a point, first in every curve and per-line row."""

TRANSACTIONS_PER_CLIENT = "transactions_per_client"
"""Curve column: the measured window's transactions per active client."""
WINDOW_CONVERGED = "window_converged"
"""Curve column: whether the 95 % interval of the point's TPS met its target (the experiment's
``precision``, 2 % for a fixed window) with the warm-up over in the window's first half."""
MAX_DURATION_REACHED = "max_duration_reached"
"""Curve column: a window grown for its precision stopped at its cap first."""

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
    "algorithm": ("-", "the workload model's algorithm (for PostgreSQL, the snapshot code)"),
    "workload": ("-", "workload name"),
    "clients": ("connections", "active clients"),
    "idle_clients": ("connections", "idle (or mostly-idle) connections"),
    "idle_kind": ("-", "kind of the idle connections (one of the model's idle kinds)"),
    "seed": ("-", "the point's own seed, derived from the root seed and the point"),
}

_CURVE = {
    "root_seed": ("-", "the experiment's root seed the point's seed derives from"),
    "tps": ("1/s", "active clients' transactions per simulated second"),
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
    "duration_ms": ("ms", "simulated time measured (with precision: as long as the point ran)"),
    "warmup_ms": ("ms", "simulated time before the window (with precision: the warm-up and "
                  "what MSER-5 truncated after it)"),
    TRANSACTIONS_PER_CLIENT: ("transactions", "window transactions per active client"),
    "tps_ci_rel": ("fraction", "half-width of the 95 % interval of tps, relative to it (batch "
                   "means of the window's completions; inf: too few batches)"),
    MAX_DURATION_REACHED: ("bool", "the window grew to max_duration_ms before its interval met "
                           "the precision"),
    WINDOW_CONVERGED: ("bool", "the interval of tps met its target (precision; 2 % for a fixed "
                       "window) and the warm-up was over in the window's first half"),
    "work_scale": ("factor", "base work scale of --single-client-tps (1 without it)"),
    "error": ("-", "empty, or why the point failed"),
    "measured_tps": ("1/s", "the published measurement of the point (named measurements)"),
    "rel_error": ("fraction", "tps / measured_tps - 1"),
}

SUMMARY_KEYS = tuple(key for key in POINT_KEYS if key != "seed")
"""Columns that identify a point of ``curve_summary.csv``: the point keys but the seed."""

NOT_SUMMARISED = ("root_seed", "duration_ms", "warmup_ms", "work_scale", "measured_tps", "error",
                  WINDOW_CONVERGED, MAX_DURATION_REACHED)
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

ColumnMeanings = Mapping[str, tuple[str, str]]
"""Column name -> ``(unit, one-line meaning)``; ``-`` for no unit."""
ColumnsDocument = dict[str, dict[str, dict[str, str | None]]]


def _summary(curve: ColumnMeanings) -> dict[str, tuple[str, str]]:
    """The columns of ``curve_summary.csv`` of a curve with ``curve``'s columns."""
    return {
        **{key: _POINT[key] for key in SUMMARY_KEYS},
        "n_seeds": ("seeds", "root seeds of the point that succeeded: those the statistics are "
                    "over"),
        "n_failed": ("seeds", "root seeds of the point that failed (an error), left out of the "
                     "statistics"),
        WINDOW_CONVERGED: ("bool", "whether every successful seed's TPS met its precision target "
                           "(empty when none succeeded)"),
        MAX_DURATION_REACHED: ("bool", "whether a successful seed's window grew to its cap "
                               "before meeting its precision (empty when none succeeded)"),
        "measured_tps": _CURVE["measured_tps"],
        **{f"{column}_{statistic}": (unit, f"{what} of: {meaning}")
           for column, (unit, meaning) in curve.items() if column not in NOT_SUMMARISED
           for statistic, what in SUMMARY_STATISTICS.items()},
    }


@dataclass(frozen=True, slots=True)
class Columns:
    """Every documented column of a run's tables: the generic ones and a workload model's.

    ``tables``: per table, each column's ``(unit, meaning)``; ``prefixed``: per table, columns
    named by a prefix and a name (``{name}`` in the meaning), such as a workload mix's
    per-script columns.
    """

    tables: Mapping[str, ColumnMeanings]
    prefixed: Mapping[str, ColumnMeanings]

    def describe(self, table: str, column: str) -> tuple[str | None, str | None]:
        """Unit and meaning of a column of ``table`` (``None`` for both when undocumented).

        A statistic of ``curve_summary.csv`` that :attr:`tables` does not list (of a
        prefixed column) is described from the ``curve.csv`` column it summarises.
        """
        known = self.tables.get(table, {})
        if column in known:
            return known[column]
        for prefix, (unit, meaning) in self.prefixed.get(table, {}).items():
            if column.startswith(prefix) and len(column) > len(prefix):
                return unit, meaning.format(name=column.removeprefix(prefix))
        if table == "curve_summary.csv":
            for statistic, what in SUMMARY_STATISTICS.items():
                base = column.removesuffix(f"_{statistic}")
                if base != column and base not in self.tables.get("curve.csv", {}):
                    base_unit, base_meaning = self.describe("curve.csv", base)
                    if base_meaning is not None:
                        return base_unit, f"{what} of: {base_meaning}"
        return None, None

    def document(self, tables: Mapping[str, Iterable[str]]) -> ColumnsDocument:
        """``columns.yaml``: per table, each of its columns (in order) with unit and meaning.

        A column nobody documents gets ``null`` for both (not an error: a user's workload model
        may add columns it does not describe).
        """
        document: ColumnsDocument = {}
        for table, columns in tables.items():
            document[table] = {}
            for column in columns:
                unit, meaning = self.describe(table, str(column))
                document[table][column] = {"unit": unit, "meaning": meaning}
        return document


def columns_for(curve: ColumnMeanings | None = None,
                prefixed: ColumnMeanings | None = None) -> Columns:
    """The generic columns with a workload model's.

    ``curve`` adds curve columns (their seed statistics join ``curve_summary.csv``),
    ``prefixed`` curve columns named by a prefix and a name.
    """
    curve_columns = {**_POINT, **_CURVE, **(curve or {})}
    return Columns(
        tables={"curve.csv": curve_columns,
                "curve_summary.csv": _summary({**_CURVE, **(curve or {})}),
                "lines.csv": {**_POINT, **_LINES}},
        prefixed={"curve.csv": dict(prefixed or {})} if prefixed else {})


GENERIC = columns_for()
"""The columns every run has, whatever its workload model."""
COLUMNS = GENERIC.tables
"""Per table, every generic column: ``(unit, one-line meaning)``."""


def columns_document(tables: Mapping[str, Iterable[str]],
                     columns: Columns = GENERIC) -> ColumnsDocument:
    """``columns.yaml`` of tables whose columns ``columns`` documents (:meth:`Columns.document`)."""
    return columns.document(tables)


def describe(table: str, column: str, columns: Columns = GENERIC) -> tuple[str | None, str | None]:
    """Unit and meaning of a column of ``table`` (:meth:`Columns.describe`)."""
    return columns.describe(table, column)
