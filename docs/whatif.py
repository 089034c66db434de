"""Produce docs/whatif.md: the what-if studies, each answered on shipped machines.

Usage (from the project root, after ``pip install -e .``)::

    python docs/whatif.py                                # every study on its machines
    python docs/whatif.py --studies lockfree,pin --machines westmere-ex-8s
    python docs/whatif.py --jobs 2 --scratch snapsim-whatif
    python docs/whatif.py --markdown-only                # the page and plots from docs/whatif/

A study (:class:`Study`, listed in :data:`STUDIES`) is one question: the experiment file
``configs/experiments/whatif-<study>.yaml`` (its header cites where the question
comes from), the runs of it (each ``snapsim run whatif-<study> --machine M [flags]``: a layout
edit, a workload, a pin protocol), the machines it runs on, what its tables compare (the
algorithms, or the runs) against which baseline, the counts the question is about, and which
answers rest on an assumed design. Adding a study is adding one entry to :data:`STUDIES` and its
experiment file.

Each run goes to ``SCRATCH/<machine>/<study>/<run>/`` (resumable: an interrupted run, rerun,
computes only the missing points). The script then copies its curve to
``docs/whatif/<study>-<machine>-<run>.csv``, with the per-line counts the study names (loads
per snapshot, HITMs per transaction on some regions' lines, from the run's ``lines.csv``) and
each point's wall time (``timings.csv``) added as columns. Last it draws
``docs/whatif/<study>-<machine>.png`` and rewrites ``docs/whatif.md`` from every curve found
there: per point the TPS with its 95 % interval (the point's own, from its batch means, with one
seed grown to a precision target; a t-interval over seeds with several), the ratio to the
baseline with its interval, and the counts (means over the seeds). ``--studies`` and
``--machines`` restrict which runs are made (a machine outside a study's own list is skipped
for it); the page is always rewritten whole. Exit code: 2 for an unknown study or machine,
else that of the first failing ``snapsim run`` (1 or 2), else 0.
"""

from __future__ import annotations

import argparse
import math
import shlex
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from simulator.analysis.columns import POINT_KEYS
from simulator.analysis.intervals import (
    CONFIDENCE,
    NO_RATIO,
    Ratio,
    format_mean,
    format_ratio,
    ratio_interval,
    tps_interval,
)
from simulator.analysis.intervals import MeanInterval as Cell
from simulator.config.machine_file import shipped_machines
from simulator.tools.pages import check_records, record_run, report

DOCS = Path(__file__).resolve().parent
OUT = DOCS / "whatif"
PAGE = DOCS / "whatif.md"
COMMAND = "python docs/whatif.py"
HITM = ("local_hitm", "cross_domain_hitm", "remote_hitm")
"""The ``lines.csv`` columns of dirty-line transfers (HITMs), summed."""
SNAPSHOT_COLUMNS = ("full_snapshots", "reused_snapshots", "copied_snapshots")
"""Curve columns whose sum is the snapshots taken per transaction."""

Point = tuple[int, int]
"""(clients, idle connections)."""
Key = tuple[int, int, str]
"""(clients, idle connections, series)."""


@dataclass(frozen=True)
class Run:
    """One ``snapsim run`` of a study's experiment file: ``flags`` added to its command line."""

    name: str
    """Part of the file names (``docs/whatif/<study>-<machine>-<name>.csv``)."""
    label: str
    """What the tables call it."""
    flags: tuple[str, ...] = ()
    value: float | None = None
    """Its place on the study's x axis (:attr:`Study.axis`); ``None``: not on it."""
    variant: str = ""
    """Runs on the axis with the same variant are joined by one line per point."""


@dataclass(frozen=True)
class LineCount:
    """A count taken from a run's ``lines.csv``: counters summed over some regions' lines.

    A line belongs to a region when its label names it (``PGXACT[5..10]``, ``PGXACT[3]+64``,
    ``ProcArrayStruct & pgprocnos[0..5]``: the parts joined by `` & ``, each up to ``[`` or
    ``+``).
    """

    column: str
    """The column added to the curve."""
    regions: tuple[str, ...]
    counters: tuple[str, ...]
    """``lines.csv`` columns summed: ``loads``, ``rmws``, :data:`HITM`, ``false_sharing_hitm``."""
    per: Literal["transaction", "snapshot"] = "transaction"
    """Divided by the point's transactions, or by its snapshots (transactions times the sum of
    :data:`SNAPSHOT_COLUMNS`)."""


@dataclass(frozen=True)
class Count:
    """One column of a study's counts table: a curve column or a :class:`LineCount`'s."""

    column: str
    header: str
    digits: int = 2


@dataclass(frozen=True)
class Study:
    """One what-if question, how it is run and how its section of the page is laid out."""

    name: str
    """``configs/experiments/whatif-<name>.yaml``; ``--studies`` takes it."""
    title: str
    question: str
    """The question as users ask it and where it comes from (Markdown, sources cited)."""
    design: str
    """What is compared: PostgreSQL's code and the what-if (Markdown)."""
    assumed: str
    """Which answers rest on an assumed design, or why none does (Markdown, shown in bold)."""
    assumption: str | None
    """The assumed design the answers rest on, in a word (``None``: PostgreSQL's code)."""
    machines: tuple[str, ...]
    compare: Literal["algorithm", "run"]
    """The tables' columns: the algorithms of each run (one table per run), or the runs of
    each algorithm (one table per algorithm)."""
    baseline: str
    """The algorithm or run name that ratios divide by."""
    runs: tuple[Run, ...] = (Run("base", "as in the file"),)
    line_counts: tuple[LineCount, ...] = ()
    counts: tuple[Count, ...] = ()
    reading: str = ""
    """What each count measures (no result)."""
    windows: str = ""
    """Why the experiment file's windows and seeds are what they are (no result)."""
    reference: str = ""
    """Reference material kept on the page after the results (rules, hand-derived figures)."""
    axis: str = ""
    """The x axis of the plot when the runs are points on one (their :attr:`Run.value`): its
    label; empty: bars per point."""

    @property
    def experiment(self) -> str:
        """The shipped experiment's name."""
        return f"whatif-{self.name}"

    def command(self, machine: str, run: Run, out: str | None = None) -> list[str]:
        """``snapsim run`` of one run on one machine (without ``--jobs``)."""
        return ["snapsim", "run", self.experiment, "--machine", machine, *run.flags,
                "--out", out or f"{self.name}-{machine}-{run.name}"]

    def label(self, column: str, value: str) -> str:
        """How the page names a run (its label) or an algorithm (in code font)."""
        if column == "run":
            return next((r.label for r in self.runs if r.name == value), value)
        return f"`{value}`"


# ----------------------------------------------------------------------------- the studies

_LAYOUT_EDITS: tuple[tuple[str, str], ...] = (
    ("`{move: R.f, to: own_line}`",
     "`f` (with its nested fields) moves to a new line appended to each element, at offset "
     "`align_up(sizeof, 64)`; the element grows to the end of that line, its stride to a "
     "multiple of 64 and the start alignment to at least 64, so `f`'s line holds nothing "
     "else; `f`'s old bytes become padding"),
    ("`{move: R.f, to: array}`",
     "`f` leaves the element for a dense array `R.f` (one `f` per element, `sizeof(f)` apart), "
     "allocated right after `R` with `R`'s alignment; every access to `f` goes there; `R`'s "
     "size is recomputed from the fields left (their offsets do not change)"),
    ("`{pad: R, to: N}`",
     "elements `N` bytes apart (for one struct: `N` bytes allocated); `N` at least the "
     "element's size"),
    ("`{align: R, to: N}`", "`R` starts at a multiple of `N` (a power of two)"),
    ("`{reorder: R, fields: [f1, f2, ...]}`",
     "those fields back to back in that order from the lowest offset among them, each at its "
     "natural alignment (ASSUMPTION: the largest power of two dividing its size, at most 8); "
     "the other fields stay; `R`'s size is recomputed"),
)

LAYOUT_REFERENCE = "\n".join([
    "### Layout edits (`options.layout`)",
    "",
    "`options.layout` is a list of edits applied, in order, to the structs and arrays of the "
    "shared memory as each version allocates it (`simulator/hardware/layout_edits.py` has the "
    "exact rules; `models/shmem/build.py` the allocations). The addresses, the line labels, "
    "the lines a snapshot reads and the per-line table (`lines.csv`, `snapsim c2c`) all follow "
    "the edited layout.",
    "",
    "A struct or array is named by its region, as the per-line table labels it: `PGXACT`, "
    "`PGPROC`, `VariableCache`, `ProcArrayStruct`, `pgprocnos`, `xids`, `subxidStates`, "
    "`statusFlags`, `PROC_HDR`, `MainLWLockArray` (9.1: `LWLockArray`), `BufferDescriptors`, "
    "`CSNLog`, `SharedSnapshot`, `sharedSnapshotXids`, `RunningXids`, `runningXids`; a field "
    "as `region.field`, with the C names of `models/shmem/structs.py` (`PGXACT.xmin`, "
    "`VariableCache.latestCompletedXid`, `BufferDescriptors.content_lock`). The edits:",
    "",
    "| edit | effect |",
    "|---|---|",
    *(f"| {edit} | {effect} |" for edit, effect in _LAYOUT_EDITS),
    "",
    "An edit applies to every version whose shared memory has its struct and fields and is "
    "skipped by the others: `{move: PGXACT.xmin, to: own_line}` changes `pre14` only (14 has "
    "no PGXACT), and `{move: PGPROC.xmin, to: own_line}` changes `pg91` and the 14 layouts "
    "(13's PGPROC has no xmin). An edit that fits no version, overlapping fields after a "
    "`reorder`, a pad below the element's size, a size below 1, an alignment that is not a "
    "power of two or an unknown edit kind is bad input: one line naming the key "
    "(`options.layout[0].to: ...`), exit 2.",
])

LOCKFREE = Study(
    name="lockfree",
    title="A lock-free reuse check (`post14_lockfree`)",
    question=(
        "What if `GetSnapshotDataReuse`'s check were lock-free? PostgreSQL 14's snapshot cache "
        "(commit 623a9ba79b, \"snapshot scalability: cache snapshots using a xact completion "
        "counter\") reuses a backend's last snapshot while `xactCompletionCount` is unchanged "
        "and checks that under ProcArrayLock held shared; the commit message says the check "
        "is likely possible without the lock but needs careful analysis, and that \"If we were "
        "able to safely avoid the lock there'd be another significant gain on top of that\"."),
    design=(
        "`post14` is PostgreSQL 14's `GetSnapshotData` with `GetSnapshotDataReuse` "
        "(procarray.c@14). `post14_lockfree` (`Post14Lockfree` in "
        "`models/snapshots/post14.py`) makes the reuse check without the lock: read "
        "`xactCompletionCount`; if it equals the cached count and the backend's xmin is set, "
        "reuse; if xmin is unset, store it, a full "
        "memory barrier, read the count again (a seqlock-style re-check). A changed count "
        "falls back to post14's full path under the lock; transaction end is post14's."),
    assumed=(
        "`post14_lockfree` is an assumed design: PostgreSQL has no lock-free reuse check. The "
        "`post14` columns are PostgreSQL 14's code."),
    assumption="`post14_lockfree`",
    machines=("gold5215-2s", "westmere-ex-8s"),
    compare="algorithm",
    baseline="post14",
    line_counts=(
        LineCount("procarraylock_atomics_per_txn", ("ProcArrayLock",), ("rmws",)),
        LineCount("procarraylock_hitm_per_txn", ("ProcArrayLock",), HITM),
    ),
    counts=(
        Count("reused_snapshots", "reused snapshots / txn"),
        Count("procarraylock_atomics_per_txn", "ProcArrayLock atomics / txn"),
        Count("procarraylock_hitm_per_txn", "ProcArrayLock HITM / txn"),
        Count("lock_wait_us", "lock waits µs / txn"),
        Count("get_snapshot_us", "GetSnapshotData µs / txn"),
    ),
    reading=(
        "ProcArrayLock atomics and HITMs are the read-modify-writes of the lock word's line and "
        "its dirty transfers, per transaction, from the per-line table; a select-only "
        "transaction takes two snapshots, both reused once the cache is warm."),
    windows=(
        "select-only, no idle connection; 20 ms measured after 10 ms of warm-up (as "
        "`predict-whatif`)."),
)

SHARED_CACHE = Study(
    name="shared-cache",
    title="One snapshot cache shared by all backends (`post14_shared_cache`)",
    question=(
        "What if one snapshot cache were shared by all backends? PostgreSQL 14 caches each "
        "backend's last snapshot and reuses it while `xactCompletionCount` is unchanged "
        "(commit 623a9ba79b); a cache shared by all backends is named there as a possible "
        "next step. A select-only transaction assigns no xid and so never invalidates a cache; "
        "the study runs pgbench's TPC-B-like script (`tpcb`), whose commits do."),
    design="\n".join([
        "`post14` is PostgreSQL 14. `post14_shared_cache` (`Post14SharedCache` in "
        "`models/snapshots/post14.py`) is post14 plus one snapshot shared by all backends:",
        "",
        "* **Shared memory**: post14's, plus at its end a `SharedSnapshot` header alone on a "
        "128-aligned line (`count` it was built at, `claim`, xmin, xmax, xcnt) and an xid "
        "array of `GetMaxSnapshotXidCount()` = `procArray->maxProcs` entries "
        "(`models/shmem/build.py`).",
        "* **Read**: under ProcArrayLock shared, as post14. Own cache valid (read "
        "`xactCompletionCount`): reuse. Else read the header's `count`; equal to "
        "`xactCompletionCount`: read xmin, xmax, xcnt and the ceil(4·xcnt/64) array lines, "
        "store the own xmin if unset; the copy becomes the own cache.",
        "* **Publish**: else read `claim`, build in full as post14, then CAS `claim` from the "
        "value read to the count (one publisher per count; skipped if `claim` already equals "
        "it, nothing written if the CAS fails), store the array lines, then xmin, xmax, xcnt "
        "and last `count`. Commits take ProcArrayLock exclusive, so the count cannot move "
        "while a snapshot is copied or published. The publisher's own xid goes into the array "
        "(`GetSnapshotData` leaves it out of its own snapshot).",
        "* **Left out**: the memcpy's CPU cycles (only its lines are charged), "
        "subtransactions. Transaction end is post14's.",
    ]),
    assumed=(
        "`post14_shared_cache` is an assumed design, one safe variant: PostgreSQL has no shared "
        "snapshot cache. The `post14` columns are PostgreSQL 14's code."),
    assumption="`post14_shared_cache`",
    machines=("gold5215-2s",),
    compare="algorithm",
    baseline="post14",
    line_counts=(
        LineCount("xids_loads_per_snapshot", ("xids",), ("loads",), "snapshot"),
        LineCount("shared_loads_per_snapshot", ("SharedSnapshot", "sharedSnapshotXids"),
                  ("loads",), "snapshot"),
        LineCount("shared_hitm_per_txn", ("SharedSnapshot", "sharedSnapshotXids"), HITM),
    ),
    counts=(
        Count("full_snapshots", "full / txn"),
        Count("reused_snapshots", "reused / txn"),
        Count("copied_snapshots", "copied / txn"),
        Count("xids_loads_per_snapshot", "`xids` loads / snapshot", 1),
        Count("shared_loads_per_snapshot", "shared-snapshot loads / snapshot"),
        Count("shared_hitm_per_txn", "shared-snapshot HITM / txn"),
        Count("get_snapshot_us", "GetSnapshotData µs / txn"),
    ),
    reading=(
        "Full, reused and copied are the snapshots per transaction built in full, reused from "
        "the own cache and copied from the shared one (a tpcb transaction takes ten). Loads per "
        "snapshot are the loads of those regions' lines in the per-line table divided by all "
        "snapshots taken (reused ones included); HITMs are per transaction."),
    windows=(
        "tpcb; 20 ms measured after 20 ms of warm-up (a tpcb transaction takes seven round "
        "trips, and shorter windows leave too few transactions per client)."),
    reference="\n".join([
        "### Lines per snapshot, derived by hand",
        "",
        "Checked by `tests/models/test_pg_whatif_shared_cache.py`: a reuse of the own cache "
        "reads 2 shared lines, as post14; a copy 3 + ceil(4·xcnt/64) (lock, VariableCache, "
        "header, array), independent of the N procArray entries; a full build and publish "
        "post14's 3 + ceil(4N/64) plus the header line, with one more atomic (the CAS) and the "
        "array and header stores.",
    ]),
)

RUNNING_XIDS = Study(
    name="running-xids",
    title="Scanning only the running xids (`running_xids`)",
    question=(
        "What if `GetSnapshotData` scanned only the xids that are running, instead of one slot "
        "per connection? PostgreSQL 14 made the scanned xids dense (commit 941697c3c1, "
        "`ProcGlobal->xids`) but still reads all N slots (connections plus launchers), most of "
        "them empty when most connections are idle."),
    design="\n".join([
        "`pgxact_split` is 14's layout without the snapshot cache, `post14` PostgreSQL 14. "
        "`running_xids` (`RunningXids` in `models/snapshots/running_xids.py`, documented line by "
        "line there) keeps a second dense array holding only the K running top-level xids, "
        "built on 14's code paths:",
        "",
        "* **Shared memory** (`models/shmem/build.py`): one more 128-aligned allocation, a 4-B "
        "count `numRunning` padded to 8 B, then 8-B entries `{xid, pgxactoff}`. The count and "
        "entries 0..6 share a line, so K entries take ceil((8 + 8K)/64) lines.",
        "* **Assignment** (`GetNewTransactionId`): the append goes where 14 stores "
        "`xids[pgxactoff]`, under XidGenLock exclusive, which is already held: R count, W "
        "entry, W count. This adds no lock. A snapshot running at the same time sees K or "
        "K + 1 entries; both are correct, because the new xid is at or above its xmax, as with "
        "14's unlocked `xids[]` store. 14's own stores stay, because "
        "`TransactionIdIsInProgress` and `ComputeXidHorizons` still read `xids[]`.",
        "* **Commit/abort** (`ProcArrayEndTransactionInternal`, ProcArrayLock exclusive "
        "already held, directly or by the group-clear leader): 14's stores. Then XidGenLock "
        "exclusive, to exclude appends, nested in the order 14's `GetRunningTransactionData` "
        "already uses (ProcArrayLock, then XidGenLock; the reverse nesting could deadlock with "
        "it). Then a linear search for the xid, as 9.1's `ProcArrayRemove`, and "
        "swap-with-last.",
        "* **Snapshot**: ProcArrayLock shared, the VariableCache line as in 14, the own "
        "`PGPROC.xid` (private), the count and the K entries. For each other running xid below "
        "xmax it reads `statusFlags` and `subxidStates` at that xid's `pgxactoff`, as 14 does, "
        "so vacuum and logical decoding are still skipped. Then `replication_slot_xmin` and "
        "the own xmin store. 14's `numProcs` and `xids[]` are not read. **No snapshot cache**: "
        "the comparison is with `pgxact_split`, and a cache would hide the very scan this "
        "what-if shrinks. Each scanned entry costs 4 cycles of instructions, 13's fitted "
        "per-entry work (an assumption, range 1.5-6), because every entry holds an xid that "
        "passes the skip test.",
    ]),
    assumed=(
        "`running_xids` is an assumed design: PostgreSQL has no array of the running xids. The "
        "`pgxact_split` and `post14` columns are PostgreSQL 14's code (without and with its "
        "snapshot cache)."),
    assumption="`running_xids`",
    machines=("gold5215-2s",),
    compare="algorithm",
    baseline="pgxact_split",
    runs=(Run("select-only", "select-only"),
          Run("tpcb", "tpcb", ("--workload", "tpcb", "--duration-ms", "20", "--warmup-ms",
                               "10"))),
    line_counts=(
        LineCount("array_loads_per_snapshot", ("xids", "RunningXids", "runningXids"),
                  ("loads",), "snapshot"),
        LineCount("array_hitm_per_txn", ("xids", "RunningXids", "runningXids"), HITM),
    ),
    counts=(
        Count("array_loads_per_snapshot", "array loads / snapshot", 1),
        Count("array_hitm_per_txn", "array HITM / txn"),
        Count("reused_snapshots", "reused / txn"),
        Count("lock_wait_us", "lock waits µs / txn"),
        Count("get_snapshot_us", "GetSnapshotData µs / txn"),
    ),
    reading=(
        "Array loads are the loads of the scanned array's lines (`xids[]` for `pgxact_split` "
        "and `post14`, the count and `runningXids` for `running_xids`) in the per-line table, "
        "divided by all snapshots taken (two per select-only transaction, ten per tpcb one; "
        "`post14`'s reused snapshots read none). They include the read of the own `xids[]` "
        "slot and, for `running_xids`, the count reads and searches of appends and removals; "
        "array HITMs are per transaction."),
    windows=(
        "select-only: 5 ms measured after 5 ms of warm-up; tpcb: 20 ms after 10 ms (a tpcb "
        "transaction takes seven round trips)."),
    reference="\n".join([
        "### Lines per snapshot, derived by hand",
        "",
        "Checked by `tests/models/test_pg_whatif_running.py`: a `running_xids` snapshot reads "
        "3 + ceil((8 + 8K)/64) shared lines plus the `statusFlags`/`subxidStates` lines of the "
        "other running xids below xmax. With no running xid that is 4 lines whatever N; "
        "`pgxact_split` reads 3 + ceil(4N/64), which is 4 at N = 3 and 66 at N = 1002. With 10 "
        "running xids among 1000 connections it is 8 lines against `pgxact_split`'s 69. "
        "Compared with `pgxact_split`, a tpcb transaction adds one XidGenLock acquire and "
        "release at commit.",
    ]),
)

LAYOUT = Study(
    name="layout",
    title="Layout what-ifs (`options.layout`): xmin out of PGXACT, PGXACT padded",
    question=(
        "What if pre14 kept xmin out of PGXACT, or PGXACT were padded to a line? In PostgreSQL "
        "9.2-13 every snapshot reads every PGXACT entry's `xid`, `xmin` and `vacuumFlags` "
        "(`GetSnapshotData`, procarray.c:1504-1782@13), and a backend writes its own `xmin` "
        "several times per read-only transaction. PGXACT is 12 B (proc.h:222-237@13), 5.33 "
        "entries per line, so one backend's writes invalidate lines that other backends' "
        "entries share. 14 moved xmin out of the scanned data (commit 1f51c17c68, \"snapshot "
        "scalability: Move PGXACT->xmin back to PGPROC\")."),
    design=(
        "PostgreSQL 13's snapshot (`pre14`) with its shared memory edited by `options.layout` "
        "(the edits and their rules are in the reference part at the end of this section): "
        "xmin alone on a second line of each PGXACT entry (PGXACT becomes 128 B); xmin in a "
        "dense array of its own with PGXACT packed to 8 B; PGXACT padded to 64 B and "
        "64-aligned, one entry per line. 14's own answer, not reading other backends' xmin in "
        "the snapshot at all (`pgxact_split`, `post14`), changes the algorithm, which no "
        "layout edit of pre14 expresses."),
    assumed=(
        "No assumed code: every variant runs PostgreSQL 13's accesses. The layouts other than "
        "13's are hypothetical (PostgreSQL shipped none of them); what they cost is the "
        "model's answer under its cache-coherence costs."),
    assumption=None,
    machines=("gold5215-2s",),
    compare="run",
    baseline="as13",
    runs=(
        Run("as13", "as in 13"),
        Run("xmin-own-line", "xmin on its own line",
            ("--set", "options.layout=[{move: PGXACT.xmin, to: own_line}]")),
        Run("xmin-array", "xmin array, PGXACT 8 B",
            ("--set", "options.layout=[{move: PGXACT.xmin, to: array}, {reorder: PGXACT, "
                      "fields: [xid, vacuumFlags, overflowed, nxids]}]")),
        Run("pad64", "PGXACT padded to 64 B",
            ("--set", "options.layout=[{pad: PGXACT, to: 64}, {align: PGXACT, to: 64}]")),
    ),
    line_counts=(
        LineCount("pgxact_loads_per_snapshot", ("PGXACT", "PGXACT.xmin"), ("loads",),
                  "snapshot"),
        LineCount("pgxact_hitm_per_txn", ("PGXACT",), HITM),
        LineCount("pgxact_false_sharing_per_txn", ("PGXACT",), ("false_sharing_hitm",)),
        LineCount("xmin_array_hitm_per_txn", ("PGXACT.xmin",), HITM),
        LineCount("xmin_array_false_sharing_per_txn", ("PGXACT.xmin",),
                  ("false_sharing_hitm",)),
    ),
    counts=(
        Count("pgxact_loads_per_snapshot", "PGXACT loads / snapshot", 1),
        Count("pgxact_hitm_per_txn", "PGXACT HITM / txn"),
        Count("pgxact_false_sharing_per_txn", "PGXACT false-sharing HITM / txn"),
        Count("xmin_array_hitm_per_txn", "xmin-array HITM / txn"),
        Count("xmin_array_false_sharing_per_txn", "xmin-array false-sharing HITM / txn"),
        Count("get_snapshot_us", "GetSnapshotData µs / txn"),
    ),
    reading=(
        "PGXACT loads are the loads of the PGXACT lines (and of the xmin array's, when xmin has "
        "one) per snapshot; HITMs and false-sharing HITMs (transfers whose bytes read and bytes "
        "dirtied are disjoint) are per transaction on the PGXACT lines and, separately, on the "
        "`PGXACT.xmin` array's lines. With xmin on its own line both lines of an entry count as "
        "PGXACT lines."),
    windows="select-only; 5 ms measured after 5 ms of warm-up.",
    reference=LAYOUT_REFERENCE,
)

MIX = Study(
    name="mix",
    title="A read/write mix (`workload: mix`)",
    question=(
        "What does PostgreSQL 14's snapshot work gain when a tenth of the transactions write? "
        "pgbench runs such a mix with `-b select-only@9 -b tpcb-like@1`. Every tpcb commit "
        "advances `xactCompletionCount` (commit 623a9ba79b) and so invalidates every "
        "backend's cached snapshot, while select-only transactions alone never do."),
    design=(
        "PostgreSQL 13's snapshot (`pre14`), 14's layout without the cache (`pgxact_split`) "
        "and 14 (`post14`), each running the mix `options.mix: {select-only: 9, tpcb: 1}` "
        "(each transaction draws its script by weight, as pgbench's `-b name@weight`) and, "
        "for reference, select-only alone. The mix's per-script throughputs are the curve's "
        "`tps_select_only` and `tps_tpcb` columns."),
    assumed=(
        "No assumed design: all three are PostgreSQL's code (13, and 14 without and with its "
        "snapshot cache)."),
    assumption=None,
    machines=("gold5215-2s",),
    compare="algorithm",
    baseline="pre14",
    runs=(Run("mix", "90 % select-only, 10 % tpcb"),
          Run("select-only", "select-only alone", ("--workload", "select-only",
                                                   "--set", "options.mix={}",
                                                   "--duration-ms", "5", "--warmup-ms", "5"))),
    counts=(
        Count("tps_select_only", "select-only TPS", 0),
        Count("tps_tpcb", "tpcb TPS", 0),
        Count("full_snapshots", "full / txn"),
        Count("reused_snapshots", "reused / txn"),
        Count("lock_wait_us", "lock waits µs / txn"),
        Count("get_snapshot_us", "GetSnapshotData µs / txn"),
    ),
    reading=(
        "Full and reused are the snapshots per transaction (of either script) built in full "
        "and reused from the own cache; only `post14` reuses."),
    windows=(
        "20 ms after 10 ms of warm-up, grown until the interval is within 2 % (at most "
        "400 ms): which script each transaction draws varies the throughput from one batch "
        "of transactions to the next, and the interval carries that spread."),
)

PIN = Study(
    name="pin",
    title="The historical pin: 9.6's atomic `PinBuffer` against 9.2-9.5's spinlock",
    question=(
        "What did PostgreSQL 9.6's atomic buffer pins gain? Before 9.6, `PinBuffer` and "
        "`UnpinBuffer` changed the refcount under the buffer header's spinlock; commit "
        "48354581a4 (9.6, \"Allow Pin/UnpinBuffer to operate in a lockfree manner\") made them "
        "CAS loops and reported up to 2.5x read-only pgbench throughput at 128 clients on an "
        "8-socket, 64-core machine. Every `pgbench -S` transaction pins the index root, so its "
        "buffer header is the hottest line of the workload. `westmere-ex-8s` (8 sockets, 64 "
        "cores) is the shipped stand-in for that machine."),
    design=(
        "`options.pin: spinlock` runs 9.2-9.5's pins (`S_LOCK`'s test-and-set, then "
        "`s_lock.c`'s spin delay with a read before each further test-and-set; the refcount "
        "changed under the lock; the unlock store); `options.pin: atomic` (the default) runs "
        "9.6's CAS loops (`models/buffers.py`). Both run PostgreSQL 13's snapshot (`pre14`), "
        "whose PGXACT scan is 9.2-13's."),
    assumed=(
        "No assumed design: both pin protocols are PostgreSQL's code (9.5's and 9.6's "
        "`bufmgr.c`). The rest of each transaction is 13's, not 9.5's or 9.6's: the answer "
        "isolates the pins."),
    assumption=None,
    machines=("westmere-ex-8s",),
    compare="run",
    baseline="spinlock",
    runs=(Run("spinlock", "spinlock pins (9.2-9.5)", ("--set", "options.pin=spinlock")),
          Run("atomic", "atomic pins (9.6)")),
    line_counts=(
        LineCount("root_atomics_per_txn", ("BtreeRootBuf",), ("rmws",)),
        LineCount("root_hitm_per_txn", ("BtreeRootBuf",), HITM),
    ),
    counts=(
        Count("root_atomics_per_txn", "root buffer atomics / txn"),
        Count("root_hitm_per_txn", "root buffer HITM / txn"),
        Count("cas_failures", "failed CAS / txn"),
        Count("hot_line_wait_ns", "hot-line waits ns / txn", 0),
        Count("lock_wait_us", "lock waits µs / txn"),
    ),
    reading=(
        "Root buffer atomics and HITMs are the read-modify-writes of the index root's buffer "
        "descriptor line (test-and-sets of the header spinlock, or the pins' and the content "
        "lock's CASes) and its dirty transfers, per transaction; hot-line waits are the time "
        "queued behind transfers of contended lines."),
    windows=(
        "select-only, no idle connection; 50 ms measured after 20 ms of warm-up, grown until "
        "the interval is within 2 % (at most 200 ms): with spinlock pins the clients' order at "
        "the root's header persists, so a short window holds few independent batches."),
)

CHURN_RATES = (0, 500, 1000, 2000, 5000)
"""Connections per second of the churn study's runs."""

CHURN = Study(
    name="churn",
    title="Connection churn (`options.churn`) in 13 and 14",
    question=(
        "What does connection churn cost in 13 and 14? An application without a connection "
        "pooler opens a connection per request, and `pgbench -C` one per transaction. Every "
        "connect and disconnect changes the procArray under exclusive locks, and 14 made that "
        "change larger. PostgreSQL 13's `ProcArrayAdd` and `ProcArrayRemove` (procarray.c@13) "
        "take ProcArrayLock exclusive and memmove the sorted `pgprocnos` array. 14's "
        "(procarray.c@14; the dense arrays come from commit 941697c3c1, \"snapshot "
        "scalability: Introduce dense array of in-progress xids\", and its successors) take "
        "ProcArrayLock and XidGenLock exclusive, move four dense arrays (`pgprocnos`, "
        "`ProcGlobal->xids`, `subxidStates`, `statusFlags`) and rewrite `pgxactoff` in the "
        "PGPROC of every later entry. Around them, `InitProcess` pops the backend's PGPROC "
        "from `ProcGlobal->freeProcs` and `ProcKill` pushes it back, both under "
        "`ProcStructLock` (proc.c@13 and proc.c@14)."),
    design=(
        "`pre14` is PostgreSQL 13's code and `post14` 14's: 48 active pgbench -S clients with "
        "0, 1,000 and 10,000 idle connections, while further connections arrive evenly spaced "
        "at `options.churn.rate_per_s` per second (`models/churn.py`). The postmaster forks "
        "each one (serially, in its one process); the backend pops the top PGPROC of the free "
        "list, joins the procArray (`ProcArrayAdd`), takes the snapshot of its start-up "
        "transaction, runs one select-only transaction and leaves (`ProcArrayRemove`, "
        "`ProcKill`). The TPS is the 48 clients': the churning connections' own transactions "
        "are not counted. Each rate is one run, and the ratios divide by the run at rate 0. "
        "LWLock waiters queue as PostgreSQL's `LWLockAttemptLock` and `LWLockWakeup` "
        "(lwlock.c) queue them (`options.lwlock_queue: overtake`, the default): a shared "
        "acquirer looks only at the lock word, so snapshots pass a connecting backend that "
        "waits for ProcArrayLock exclusive. The last column runs the ablation, `--set "
        "options.lwlock_queue=fifo` (the snapshots queue behind that backend), at 1,000 "
        "connections per second with 10,000 idle connections."),
    assumed=(
        "No assumed code: both columns run PostgreSQL's code paths (13's and 14's). The cost "
        "of a connection's private work rests on assumptions. The `connection:` entries of "
        "`configs/postgres-costs.yaml` (the postmaster's fork and reaping, the backend's "
        "start-up until ReadyForQuery, its exit) are each an ASSUMPTION with a stated range, "
        "and `--set options.costs.connection.backend_startup='5000000 cycles'` runs one end of "
        "a range. The churning connections' clients cost nothing (no client CPU, no network). "
        "The answers also depend on the LWLock discipline. Under PostgreSQL's, an exclusive "
        "acquirer waits until no shared holder is left. With 13's long snapshots at 10,000 "
        "idle connections the shared holders need never drain, so a connecting backend can "
        "starve: the realised connects / s show how many connections got in at all. Under "
        "`fifo` the snapshots wait for it instead."),
    assumption=None,
    machines=("gold5215-2s",),
    compare="run",
    baseline="r0",
    runs=(*(Run(f"r{rate}", f"{rate:,}/s", ("--set", f"options.churn.rate_per_s={rate}"),
                value=rate) for rate in CHURN_RATES),
          Run("r1000-fifo", "1,000/s, fifo", ("--set", "options.churn.rate_per_s=1000",
                                              "--set", "options.lwlock_queue=fifo",
                                              "--idle-clients", "10000"),
              value=1000, variant="fifo")),
    counts=(
        Count("connects_per_s", "connects / s", 0),
        Count("disconnects_per_s", "disconnects / s", 0),
        Count("procarray_exclusive_per_txn", "ProcArrayLock exclusive / txn", 3),
        Count("lock_wait_us", "lock waits µs / txn"),
        Count("get_snapshot_us", "GetSnapshotData µs / txn"),
    ),
    reading=(
        "Connects and disconnects / s are the rates realised in the measured window: below the "
        "set rate when connections wait for a lock, a little above it when connections that "
        "waited get in within the window. ProcArrayLock exclusive / txn counts the exclusive "
        "acquisitions (the connects' `ProcArrayAdd` and the disconnects' "
        "`ProcArrayRemove`; a select-only commit takes none) per transaction of the 48 "
        "clients. Lock waits and "
        "GetSnapshotData are the 48 clients' time per transaction."),
    windows=(
        "select-only, 48 clients; 20 ms measured after 5 ms of warm-up (10 connections in the "
        "window at 500/s, 100 at 5,000/s); the `fifo` run at 10,000 idle "
        "connections only."),
    reference="\n".join([
        "### `pgbench -C`",
        "",
        "`pgbench -C` (a new connection for every transaction, its connect and disconnect "
        "counted in the transaction's time) is `options.churn.per_transaction: true`: "
        "`snapsim run whatif-churn --set options.churn.rate_per_s=0 --set "
        "options.churn.per_transaction=true`.",
    ]),
    axis="connections per second (`options.churn.rate_per_s`)",
)

STUDIES: tuple[Study, ...] = (LOCKFREE, SHARED_CACHE, RUNNING_XIDS, LAYOUT, MIX, PIN, CHURN)
"""Every study, in page order. A new question is one more entry here and its
``configs/experiments/whatif-<name>.yaml``."""


# ----------------------------------------------------------------------------- runs


def regions_of(label: str) -> frozenset[str]:
    """The region names a per-line table label names (see :class:`LineCount`)."""
    names = set()
    for part in label.split(" & "):
        cut = len(part)
        for mark in ("[", "+"):
            position = part.find(mark)
            if position >= 0:
                cut = min(cut, position)
        names.add(part[:cut])
    return frozenset(names)


def add_line_counts(curve: pd.DataFrame, lines: pd.DataFrame,
                    counts: Sequence[LineCount]) -> pd.DataFrame:
    """``curve`` with one column per :class:`LineCount`, from the points' per-line table."""
    result = curve.copy()
    if not counts:
        return result
    keys = [key for key in POINT_KEYS if key in curve.columns and key in lines.columns]
    regions = lines["label"].map(regions_of)
    transactions = result["transactions"].astype(float).to_numpy()
    present = [c for c in SNAPSHOT_COLUMNS if c in result.columns]
    snapshots = transactions * result[present].astype(float).sum(axis=1).to_numpy()
    index = pd.MultiIndex.from_frame(result[keys])
    for count in counts:
        wanted = frozenset(count.regions)
        selected = lines[[bool(names & wanted) for names in regions]]
        total = selected[list(count.counters)].astype(float).sum(axis=1)
        summed = total.groupby([selected[k] for k in keys]).sum()
        values = summed.reindex(index, fill_value=0.0).to_numpy(dtype=float)
        divisor = snapshots if count.per == "snapshot" else transactions
        with np.errstate(divide="ignore", invalid="ignore"):
            result[count.column] = np.where(divisor > 0, values / divisor, np.nan)
    return result


def run_study(study: Study, machine: str, run: Run, scratch: Path, jobs: int | None,
              out: Path = OUT) -> int:
    """``snapsim run`` of one run on one machine; copy its curve with the line counts added."""
    directory = scratch / machine / study.name / run.name
    command = [sys.executable, "-m", "simulator",
               *study.command(machine, run, str(directory))[1:]]
    if jobs is not None:
        command += ["--jobs", str(jobs)]
    print(f"== {study.name} {machine} {run.name}: {shlex.join(command[1:])}", file=sys.stderr,
          flush=True)
    code = subprocess.call(command)
    if (directory / "curve.csv").exists():
        curve = pd.read_csv(directory / "curve.csv")
        lines = pd.read_csv(directory / "lines.csv")
        curve = add_line_counts(curve, lines, study.line_counts)
        timings = pd.read_csv(directory / "timings.csv")
        keys = [k for k in POINT_KEYS if k in timings.columns]
        curve = curve.merge(timings[[*keys, "wall_s"]], on=keys, how="left")
        out.mkdir(exist_ok=True)
        target = out / f"{study.name}-{machine}-{run.name}.csv"
        tmp = target.with_suffix(".csv.tmp")
        curve.to_csv(tmp, index=False)
        tmp.replace(target)
        if code == 0:
            record_run(directory, target)
    return code


# ----------------------------------------------------------------------------- statistics


# ----------------------------------------------------------------------------- the page


@dataclass(frozen=True)
class Table:
    """One table of a study on a machine: per point and series, TPS, ratios and counts."""

    group: str
    """The run (tables of algorithms) or the algorithm (tables of runs)."""
    series: list[str]
    """The columns, the baseline first."""
    points: list[Point]
    tps: dict[Key, Cell]
    ratios: dict[Key, Ratio]
    flagged: dict[Key, int]
    """Seeds whose point failed or whose window did not converge."""
    counts: dict[Key, dict[str, float]]


def load_study(study: Study, machine: str, out: Path = OUT) -> pd.DataFrame | None:
    """Every run's curve of a study on a machine found in ``out``, with a ``run`` column."""
    frames = []
    for run in study.runs:
        path = out / f"{study.name}-{machine}-{run.name}.csv"
        if path.exists():
            frame = pd.read_csv(path)
            frame.insert(0, "run", run.name)
            frames.append(frame)
    return pd.concat(frames, ignore_index=True) if frames else None


def layout_of(study: Study, curve: pd.DataFrame) -> tuple[str, list[str], str, list[str]]:
    """(series column, series, group column, groups) in the study's order, baseline first."""
    runs = [r.name for r in study.runs if r.name in set(curve["run"])]
    algorithms = list(dict.fromkeys(str(a) for a in curve["algorithm"]))
    if study.compare == "algorithm":
        series, group_column, groups = algorithms, "run", runs
    else:
        series, group_column, groups = runs, "algorithm", algorithms
    ordered = [s for s in series if s == study.baseline] + [s for s in series
                                                            if s != study.baseline]
    return study.compare, ordered, group_column, groups


def build_tables(study: Study, curve: pd.DataFrame) -> list[Table]:
    """The study's tables from its curves on one machine (one row per point and root seed)."""
    series_column, series, group_column, groups = layout_of(study, curve)
    tables = []
    for group in groups:
        part = curve[curve[group_column] == group]
        points = sorted({(int(c), int(i)) for c, i in zip(part["clients"], part["idle_clients"],
                                                          strict=True)})
        tps: dict[Key, Cell] = {}
        flagged: dict[Key, int] = {}
        counts: dict[Key, dict[str, float]] = {}
        present = [s for s in series if s in set(part[series_column])]
        for clients, idle in points:
            for name in present:
                rows = part[(part["clients"] == clients) & (part["idle_clients"] == idle)
                            & (part[series_column] == name)]
                if rows.empty:
                    continue
                key = (clients, idle, name)
                tps[key] = tps_interval(
                    [float(v) for v in rows["tps"]],
                    [float(v) for v in rows["tps_ci_rel"]] if "tps_ci_rel" in rows else None)
                bad = rows["tps"].isna()
                if "window_converged" in rows.columns:
                    bad |= ~rows["window_converged"].fillna(False).astype(bool)
                flagged[key] = int(bad.sum())
                counts[key] = {
                    count.column: (float(pd.to_numeric(rows[count.column]).mean())
                                   if count.column in rows.columns else math.nan)
                    for count in study.counts}
        ratios = {}
        for (clients, idle, name), cell in tps.items():
            base = tps.get((clients, idle, study.baseline))
            if name != study.baseline and base is not None:
                ratios[(clients, idle, name)] = ratio_interval(cell, base)
        tables.append(Table(group, present, points, tps, ratios, flagged, counts))
    return tables


def tps_table(study: Study, table: Table) -> list[str]:
    """Markdown: one row per point, TPS mean ± interval per series, ratios to the baseline."""
    others = [s for s in table.series if s != study.baseline]
    names = {s: study.label(study.compare, s) for s in table.series}
    header = ["clients", "idle", *(f"{names[s]} TPS" for s in table.series),
              *(f"{names[s]} / {names[study.baseline]}" for s in others if study.baseline
                in names)]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for clients, idle in table.points:
        cells = [f"{clients:,}", f"{idle:,}"]
        for name in table.series:
            cell = table.tps.get((clients, idle, name))
            text = "-" if cell is None else format_mean(cell)
            if table.flagged.get((clients, idle, name)):
                text += " *"
            cells.append(text)
        if study.baseline in names:
            cells += [format_ratio(table.ratios.get((clients, idle, name), NO_RATIO))
                      for name in others]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def counts_table(study: Study, table: Table) -> list[str]:
    """Markdown: one row per point and series, the study's counts (means over the seeds)."""
    if not study.counts:
        return []
    header = ["clients", "idle", "algorithm" if study.compare == "algorithm" else "variant",
              *(c.header for c in study.counts)]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for clients, idle in table.points:
        for name in table.series:
            values = table.counts.get((clients, idle, name))
            if values is None:
                continue
            cells = [f"{clients:,}", f"{idle:,}", study.label(study.compare, name)]
            for count in study.counts:
                value = values[count.column]
                cells.append("-" if math.isnan(value) else f"{value:,.{count.digits}f}")
            lines.append("| " + " | ".join(cells) + " |")
    return lines


def answers(study: Study, table: Table) -> list[str]:
    """Per ratio: its range over the table's points and where its interval excludes 1."""
    result = []
    base = study.label(study.compare, study.baseline)
    for name in table.series:
        found = [(key, value) for key, value in table.ratios.items()
                 if key[2] == name and not math.isnan(value[0])]
        if name == study.baseline or not found:
            continue
        low_key, low = min(found, key=lambda item: item[1][0])
        high_key, high = max(found, key=lambda item: item[1][0])
        above = sum(1 for _, v in found if v[1] > 1)
        below = sum(1 for _, v in found if v[2] < 1)
        if len(found) == 1:
            result.append(
                f"{study.label(study.compare, name)} / {base}: {format_ratio(low)} at "
                f"{point_name(low_key)}, its one point; the interval lies "
                f"{'wholly above 1' if above else 'wholly below 1' if below else 'across 1'}")
            continue
        result.append(
            f"{study.label(study.compare, name)} / {base}: {format_ratio(low)} at "
            f"{point_name(low_key)} to {format_ratio(high)} at {point_name(high_key)}; the "
            f"interval lies wholly above 1 at {above} and wholly below 1 at {below} of "
            f"{len(found)} points")
    return result


def point_name(key: Key) -> str:
    """``1 client and 1,000 idle``."""
    clients, idle = key[0], key[1]
    return f"{clients:,} client{'s' if clients != 1 else ''} and {idle:,} idle"


def plot(study: Study, machine: str, tables: list[Table], path: Path) -> None:
    """TPS (top) and the ratios to the baseline (bottom) per table, with their intervals."""
    figure, axes = plt.subplots(2, len(tables), figsize=(5.5 * len(tables), 6.5),
                                squeeze=False, sharex="col")
    group_column = "run" if study.compare == "algorithm" else "algorithm"
    for column, table in enumerate(tables):
        x = np.arange(len(table.points))
        width = 0.8 / max(1, len(table.series))
        top, bottom = axes[0][column], axes[1][column]
        for index, name in enumerate(table.series):
            cells = [table.tps.get((c, i, name), Cell(math.nan, math.nan, 0))
                     for c, i in table.points]
            top.bar(x + (index - (len(table.series) - 1) / 2) * width,
                    [cell.mean for cell in cells], width,
                    yerr=np.nan_to_num([cell.half for cell in cells]), capsize=3,
                    color=f"C{index}", label=study.label(study.compare, name).strip("`"))
        others = [s for s in table.series if s != study.baseline]
        for index, name in enumerate(others):
            values = [table.ratios.get((c, i, name), NO_RATIO) for c, i in table.points]
            ratios = np.array([v[0] for v in values])
            below = np.nan_to_num(ratios - np.array([v[1] for v in values]))
            above = np.nan_to_num(np.array([v[2] for v in values]) - ratios)
            bottom.errorbar(x + (index - (len(others) - 1) / 2) * 0.15, ratios,
                            yerr=[below, above], fmt="o", capsize=4,
                            color=f"C{table.series.index(name)}",
                            label=study.label(study.compare, name).strip("`"))
        bottom.axhline(1.0, color="grey", linewidth=0.8)
        group = study.label(group_column, table.group).strip("`")
        top.set_title(f"{machine}: {group}", fontsize=10)
        top.set_yscale("log")
        top.set_ylabel(f"TPS (mean, {100 * CONFIDENCE:.0f} % interval; log)")
        bottom.set_ylabel(f"ratio to {study.label(study.compare, study.baseline).strip('`')}")
        bottom.set_xticks(x, [f"{c:,} cl.\n{i:,} idle" for c, i in table.points], fontsize=8)
        top.legend(fontsize=8)
        if others:
            bottom.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=80, metadata={"Software": None})
    plt.close(figure)


def plot_axis(study: Study, machine: str, tables: list[Table], path: Path) -> None:
    """TPS (top) and the ratios to the baseline (bottom) against the runs' :attr:`Run.value`.

    One panel per table, one line per point and variant, with their intervals.
    """
    figure, axes = plt.subplots(2, len(tables), figsize=(5.5 * len(tables), 6.5),
                                squeeze=False, sharex="col")
    variants = list(dict.fromkeys(r.variant for r in study.runs if r.value is not None))
    styles = ("o-", "s", "^", "D")
    for column, table in enumerate(tables):
        top, bottom = axes[0][column], axes[1][column]
        for index, (clients, idle) in enumerate(table.points):
            for number, variant in enumerate(variants):
                runs = [r for r in study.runs if r.value is not None and r.variant == variant
                        and (clients, idle, r.name) in table.tps]
                if not runs:
                    continue
                x = [float(r.value or 0.0) for r in runs]
                cells = [table.tps[(clients, idle, r.name)] for r in runs]
                label = f"{clients:,} cl., {idle:,} idle" + (f", {variant}" if variant else "")
                style = styles[number % len(styles)]
                top.errorbar(x, [c.mean for c in cells],
                             yerr=np.nan_to_num([c.half for c in cells]), fmt=style,
                             capsize=3, color=f"C{index}", label=label,
                             mfc="none" if variant else None)
                values = [(float(r.value or 0.0), table.ratios[(clients, idle, r.name)])
                          for r in runs if (clients, idle, r.name) in table.ratios]
                if not values:
                    continue
                ratios = np.array([v[1][0] for v in values])
                below = np.nan_to_num(ratios - np.array([v[1][1] for v in values]))
                above = np.nan_to_num(np.array([v[1][2] for v in values]) - ratios)
                bottom.errorbar([v[0] for v in values], ratios, yerr=[below, above],
                                fmt=style, capsize=3, color=f"C{index}", label=label,
                                mfc="none" if variant else None)
        bottom.axhline(1.0, color="grey", linewidth=0.8)
        top.set_title(f"{machine}: {study.label('algorithm', table.group).strip('`')}",
                      fontsize=10)
        top.set_yscale("log")
        top.set_ylabel(f"TPS (mean, {100 * CONFIDENCE:.0f} % interval; log)")
        bottom.set_ylabel(f"ratio to {study.label('run', study.baseline)}")
        bottom.set_xlabel(study.axis.replace("`", ""))
        top.legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(path, dpi=80, metadata={"Software": None})
    plt.close(figure)


PAGE_OPENING = """\
# What-ifs

Generated by `{command}`: it runs every study below (`snapsim run` of the experiment files
`configs/experiments/whatif-*.yaml`), keeps each run's curve in `docs/whatif/` and rewrites this
page and its plots from them; `{command} --markdown-only` rewrites the page and plots from the
kept curves alone. The prose is in `docs/whatif.py`; every figure comes from the runs.

Each section asks one question, says what is compared and **which answers rest on an assumed
design** (code PostgreSQL does not have), gives the commands that reproduce its runs, and shows
per machine a plot, a table of throughput and a table of the counts the question is about.

## How to read the tables

* Every study runs its experiment file with one root seed (a seed sets the clients' start
  phases and every random draw) and grows each point's window until the {confidence:.0f} %
  interval of its TPS is within 2 % of it (`precision: 0.02` in the file, up to its
  `max_duration_ms`): the interval comes from batch means of the point's transaction
  completions after MSER-5's warm-up (README, "How precise is a printed TPS"). **TPS** cells
  are the TPS ± the half-width of that interval (with several seeds: the mean ± the half-width
  of the t-interval over them). **Ratios** are the ratio of two cells with its
  {confidence:.0f} % interval in brackets, the log ratio's standard error by the delta method.
  An interval wholly above or below 1 is a difference the model's own noise does not explain;
  one that holds 1 is not.
* **Counts** are per transaction or per snapshot as their header says (means over the seeds
  where there are several); counts on named lines come from the per-line table (`lines.csv`,
  `snapsim c2c`).
* A TPS cell marked `*` has a point that failed or whose interval did not meet its target
  within its longest window (`window_converged` false, `max_duration_reached` in the curve).
* Every run uses the one global cost model as is (`single_client_tps: null`: no per-machine
  work scale, the same costs on every machine and for every workload). `docs/predictions.md`
  and `docs/validation.md` scale `gold5215-2s`'s work to its measured select-only single-client
  TPS, which raises the base work of every transaction: there absolute TPS are lower, and a
  ratio that comes from the snapshot's share of a transaction is closer to 1 than here.
* LWLock waiters queue as PostgreSQL queues them (`options.lwlock_queue: overtake`, lwlock.c's
  `LWLockAttemptLock` and `LWLockWakeup`): a shared acquirer looks only at the lock word and
  passes a waiting exclusive one, and a release wakes an exclusive head alone or every shared
  waiter. This decides what the exclusive acquisitions cost: the commits of the tpcb runs
  (ProcArrayLock exclusive) and the connects and disconnects of the churn study.
* Every answer is the model's, not a measurement of PostgreSQL.
"""


def section(study: Study, number: int, out: Path,
            draw: bool = True) -> tuple[list[str], list[str], float]:
    """A study's section, its lines for the summary, and its points' wall seconds."""
    body = [f"## {number}. {study.title}", "", f"**Question.** {study.question}", "",
            f"**Design.** {study.design}", "", f"**Assumed design?** **{study.assumed}**", ""]
    if study.windows:
        body += [f"**Runs.** {study.windows}", ""]
    summary: list[str] = []
    wall_s = 0.0
    found = False
    group_column = "run" if study.compare == "algorithm" else "algorithm"
    for machine in study.machines:
        curve = load_study(study, machine, out)
        if curve is None:
            continue
        found = True
        if "wall_s" in curve.columns:
            wall_s += float(pd.to_numeric(curve["wall_s"]).sum())
        tables = build_tables(study, curve)
        image = out / f"{study.name}-{machine}.png"
        if draw:
            (plot_axis if study.axis else plot)(study, machine, tables, image)
        ran = [run for run in study.runs if run.name in set(curve["run"])]
        body += [f"### {machine}", "", "```bash",
                 *(shlex.join(study.command(machine, run)) for run in ran), "```", "",
                 f"![{study.name} on {machine}]({out.name}/{image.name})", ""]
        for table in tables:
            if len(tables) > 1 or study.compare == "run":
                body += [f"**{study.label(group_column, table.group)}**", ""]
            body += [*tps_table(study, table), ""]
            flagged = sum(1 for v in table.flagged.values() if v)
            if flagged:
                body += [f"`*`: {flagged} of {len(table.tps)} cells have a seed whose point "
                         "failed or whose window did not converge.", ""]
            body += [*counts_table(study, table), ""]
            lines = answers(study, table)
            body += [*(f"* {line}." for line in lines), ""]
            where = f"{study.name} on {machine}"
            if len(tables) > 1:
                where += f", {study.label(group_column, table.group)}"
            summary += [f"* {where}: {line}." for line in lines]
        spans = {str(name): window_span(rows)
                 for name, rows in curve.groupby("run", sort=False)}
        windows = (next(iter(spans.values())) if len(set(spans.values())) == 1 else
                   "; ".join(f"{study.label('run', name)}: {span}"
                             for name, span in spans.items()))
        seeds = sorted(int(s) for s in curve["root_seed"].unique())
        files = ", ".join(f"`{out.name}/{study.name}-{machine}-{run.name}.csv`" for run in ran)
        body += [f"Windows: {windows}; root seed{'s' if len(seeds) > 1 else ''} "
                 f"{', '.join(map(str, seeds))}; curves: "
                 f"{files}.", ""]
    if not found:
        body += [f"Not run yet: `{COMMAND} --studies {study.name}`.", ""]
    if study.reading:
        body += [f"**Counts.** {study.reading}", ""]
    if study.reference:
        body += [study.reference, ""]
    return body, summary, wall_s


def window_span(rows: pd.DataFrame) -> str:
    """The windows a run's points measured: ``20 ms after 10 ms``, or ranges where they differ.

    A point grown to its precision target measures longer, and MSER-5 moves its warm-up's end.
    """

    def span(column: str) -> str:
        low, high = float(rows[column].min()), float(rows[column].max())
        return f"{low:g} ms" if low == high else f"{low:g}-{high:g} ms"
    return f"{span('duration_ms')} after {span('warmup_ms')}"


def write_markdown(out: Path = OUT, page: Path = PAGE) -> Path:
    """Rewrite ``page`` and the plots in ``out`` from the curves in ``out``."""
    text = render_markdown(out)
    tmp = page.with_suffix(".md.tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(page)
    return page


def render_markdown(out: Path = OUT, draw: bool = True) -> str:
    """The page the curves in ``out`` give (and their plots, drawn with ``draw``)."""
    lines = PAGE_OPENING.format(command=COMMAND, confidence=100 * CONFIDENCE).splitlines()
    summary: list[str] = []
    body: list[str] = []
    wall_s = 0.0
    for number, study in enumerate(STUDIES, start=1):
        part, found, seconds = section(study, number, out, draw)
        body += part
        summary += found
        wall_s += seconds
    lines += ["", "## Questions", "", "| # | question | rests on an assumed design |",
              "|---|---|---|"]
    lines += [f"| {number} | {study.title} | "
              f"{'**yes**: ' + study.assumption if study.assumption else 'no'} |"
              for number, study in enumerate(STUDIES, start=1)]
    lines += ["", "## Answers at a glance", "",
              "Each ratio's lowest and highest value over the points of a table, with their "
              "intervals, and at how many points the interval lies wholly above or below 1.",
              "", *(summary or ["No study has been run yet."]), ""]
    if wall_s:
        lines += [f"The points took {wall_s / 60:.0f} min of simulation in all (the sum of the "
                  "curves' `wall_s`, one process per point).", ""]
    lines += body
    return "\n".join(lines).rstrip() + "\n"


def check(out: Path = OUT, page: Path = PAGE) -> int:
    """0 if the page and every curve in ``out`` are current, else 1 (printing what changed)."""
    curves = sorted(out.glob("*.csv"))
    return report(page, check_records(curves), render_markdown(out, draw=False))


def main(argv: list[str] | None = None) -> int:
    """Run the chosen studies, then rewrite the page."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    names = [s.name for s in STUDIES]
    parser.add_argument("--studies", default=",".join(names),
                        help=f"comma-separated studies (default: {','.join(names)})")
    parser.add_argument("--machines",
                        help="comma-separated shipped machines (default: each study's own)")
    parser.add_argument("--scratch", default="snapsim-whatif", type=Path,
                        help="where the full run directories go (default: ./snapsim-whatif)")
    parser.add_argument("--jobs", type=int, help="worker processes per run")
    parser.add_argument("--markdown-only", action="store_true",
                        help="only rewrite docs/whatif.md and its plots from docs/whatif/")
    parser.add_argument("--check", action="store_true",
                        help="run nothing: exit 0 if docs/whatif.md and its curves are current, "
                             "1 naming what changed since they were made")
    args = parser.parse_args(argv)
    if args.check:
        return check()
    studies = [s.strip() for s in args.studies.split(",") if s.strip()]
    machines = ([m.strip() for m in args.machines.split(",") if m.strip()]
                if args.machines else None)
    unknown = [s for s in studies if s not in names]
    unknown += [m for m in machines or [] if m not in shipped_machines()]
    if unknown:
        print(f"whatif: unknown study or machine {unknown[0]!r}", file=sys.stderr)
        return 2
    code = 0
    if not args.markdown_only:
        for study in STUDIES:
            if study.name not in studies:
                continue
            for machine in study.machines:
                if machines is not None and machine not in machines:
                    continue
                for run in study.runs:
                    result = run_study(study, machine, run, args.scratch, args.jobs)
                    code = code or result
    OUT.mkdir(exist_ok=True)
    print(f"wrote {write_markdown()}", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
