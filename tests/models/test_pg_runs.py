"""Whole simulated runs (:func:`snapsim_models.point.run_point`) against the counts of
PostgreSQL's code per transaction (pa = ``src/backend/storage/ipc/procarray.c`` at a release tag).

Runs are short (1 ms or less of simulated time, well under a second of wall time each) on the
shipped ``gold5215-2s``. Per-transaction quantities come from the row (``full_snapshots``,
``reused_snapshots`` are per transaction in the measurement window) or, for line counts, from the
per-line table of a run without warm-up: a single client then completes ``T = transactions``
transactions in the window plus at most one unfinished one, so a per-transaction count ``c`` shows
up as a total in ``[c·T, c·(T+1)]``.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import replace

import pandas as pd
import pytest

from simulator.config.machine import MachineConfig
from simulator.config.machine_file import load_machine
from simulator.errors import ConfigError
from snapsim_models.costs import load_costs
from snapsim_models.point import PointResult
from snapsim_models.snapshots import ALGORITHMS
from tests.models.points import simulate

GOLD: MachineConfig = replace(load_machine("gold5215-2s"), idle=None)
"""The Gold 5215 without idle states: these tests time their steps to the nanosecond."""
LOCKED = ("pg91", "pre14", "pgxact_split", "post14")


def point(algorithm: str, **overrides: object) -> PointResult:
    settings: dict[str, object] = {"duration_ns": 1e6, "warmup_ns": 2e5}
    settings.update(overrides)
    return simulate(GOLD, algorithm, **settings)


def numbers(result: PointResult) -> dict[str, float]:
    """The row's numeric columns as floats."""
    return {k: float(v) for k, v in result.row.items() if isinstance(v, int | float)}


def line_row(result: PointResult, label_part: str) -> pd.Series:
    """The single per-line row whose label contains ``label_part``."""
    rows = result.lines.loc[result.lines["label"].str.contains(label_part, regex=False)]
    assert len(rows) == 1, f"{label_part!r} matches {rows['label'].tolist()}"
    return rows.iloc[0]


def fields(text: str) -> set[str]:
    return {f for f in text.split(", ") if f}


def assert_per_transaction(total: float, per_transaction: int, transactions: int) -> None:
    """``total`` operations over ``transactions`` complete ones plus at most one unfinished."""
    assert per_transaction * transactions <= total <= per_transaction * (transactions + 1), (
        f"{total} is not {per_transaction} per transaction over {transactions} (+1) transactions")


# ------------------------------------------------------ select-only (pgbench -S -M prepared)


@pytest.mark.parametrize("algorithm", list(ALGORITHMS))
def test_select_only_two_snapshots_per_transaction(algorithm: str) -> None:
    """GetSnapshotData calls: 2 per pgbench -S transaction, every version
    (Bind and PortalStart)."""
    row = numbers(point(algorithm))
    assert row["transactions"] > 10
    assert row["full_snapshots"] + row["reused_snapshots"] + row["copied_snapshots"] == 2


@pytest.mark.parametrize("algorithm", LOCKED)
def test_select_only_proc_array_lock_atomics_per_transaction(algorithm: str) -> None:
    """ProcArrayLock RMWs: 4 per transaction (2 shared acquire/release
    pairs), no exclusive acquisition; the lock line is written by RMWs only in 9.5+, while 9.1's
    spinlock protocol adds plain stores (lwlock.c:388-439@9.1)."""
    result = point(algorithm, warmup_ns=0.0)
    lock = line_row(result, "ProcArrayLock")
    transactions = int(numbers(result)["transactions"])
    assert_per_transaction(lock["rmws"], 4, transactions)
    if algorithm == "pg91":
        assert lock["stores"] == 2 * lock["rmws"]  # shared±± and the unlock store
    else:
        assert lock["stores"] == 0
        assert lock["loads"] * 2 == lock["rmws"]  # the read before each CAS


def test_csn_select_only_takes_proc_array_lock_only_at_transaction_end() -> None:
    """csn-v8: snapshots take no lock; ``ProcArrayEndTransaction`` takes ProcArrayLock
    shared even for read-only transactions: 2 RMWs per transaction instead of 4."""
    result = point("csn", warmup_ns=0.0)
    assert_per_transaction(line_row(result, "ProcArrayLock")["rmws"], 2,
                           int(numbers(result)["transactions"]))


def test_pre14_select_only_own_pgxact_line_stores() -> None:
    """10-13 (pa:433-437@13): 5 xmin stores + 1 vacuumFlags store per transaction on the backend's
    PGXACT line (shared with the other entries of that line)."""
    result = point("pre14", warmup_ns=0.0)
    pgxact = result.lines.loc[result.lines["label"].str.startswith("PGXACT")
                              & (result.lines["stores"] > 0)]
    assert len(pgxact) == 1
    row = pgxact.iloc[0]
    assert_per_transaction(row["stores"], 6, int(numbers(result)["transactions"]))
    assert fields(row["fields_written"]) == {"xmin", "vacuumFlags"}
    assert {"xid", "xmin", "vacuumFlags"} <= fields(row["fields_read"])


@pytest.mark.parametrize("algorithm", ["post14", "pgxact_split"])
def test_pg14_select_only_writes_no_scanned_line(algorithm: str) -> None:
    """14 (pa:690-705@14): the xmin stores go to the private PGPROC; no line that snapshots read
    (``xids[]``, header, VariableCache) is written."""
    result = point(algorithm, clients=4)
    lines = result.lines
    scanned = lines.loc[lines["label"].str.contains("xids|ProcArrayStruct|VariableCache")]
    assert scanned["stores"].sum() == 0
    assert scanned["rmws"].sum() == 0
    xmin_lines = lines.loc[lines["fields_written"].map(lambda f: "xmin" in fields(f))]
    assert len(xmin_lines) == 4
    assert xmin_lines["label"].str.startswith("PGPROC").all()
    # No other backend ever wants them: only the owner, moved to another core of its LLC by a
    # wake-up, finds its own line modified in its old core (at most once per migration).
    assert (xmin_lines[["remote_hitm", "cross_domain_hitm"]] == 0).all().all()
    migrations = float(numbers(result)["migrations_per_txn"]) * int(numbers(result)["transactions"])
    assert xmin_lines["local_hitm"].sum() <= migrations + 1e-9


@pytest.mark.parametrize("clients", [1, 8])
def test_post14_select_only_reuses_every_snapshot_after_warmup(clients: int) -> None:
    """``xactCompletionCount`` changes only when a transaction with an xid ends (pa:757@14),
    so in pgbench -S every snapshot after a backend's first is a reuse: 0 full scans and 2 reuses
    per transaction, for 1 and 8 clients."""
    row = numbers(point("post14", clients=clients))
    assert row["transactions"] > 10
    assert row["full_snapshots"] == 0
    assert row["reused_snapshots"] == 2


# ----------------------------------------------------------------- tpcb (pgbench's default)


@pytest.mark.parametrize("algorithm", list(ALGORITHMS))
def test_tpcb_ten_snapshots_xid_assignment_and_commit(algorithm: str) -> None:
    """tpcb: 10 GetSnapshotData calls per transaction (5 DML x 2); XidGenLock
    taken at the first UPDATE (its line RMW'd) and nextXid written on the VariableCache line; the
    commit with an xid writes latestCompletedXid there (and ``xactCompletionCount`` in 14; csn
    CASes latestCompletedXid and fetch-adds ``nextCommitSeqNo``)."""
    result = point(algorithm, workload="tpcb", clients=4)
    row = numbers(result)
    assert row["transactions"] > 10
    assert row["full_snapshots"] + row["reused_snapshots"] + row["copied_snapshots"] == 10
    assert line_row(result, "XidGenLock")["rmws"] > 0
    vc = line_row(result, "VariableCache")
    written = fields(vc["fields_written"])
    assert written & {"nextXid", "nextFullXid"}
    assert "latestCompletedXid" in written
    if algorithm in ("post14", "post14_lockfree", "pgxact_split", "post14_shared_cache",
                     "running_xids"):
        assert "xactCompletionCount" in written
    if algorithm == "csn":
        assert "nextCommitSeqNo" in written
        assert vc["rmws"] > 0


def test_post14_tpcb_snapshot_cache_misses() -> None:
    """Under TPC-B other backends' commits change ``xactCompletionCount``,
    so the cache misses. A statement's first snapshot comes a client round trip after the previous
    one, with commits of others in between, so at 32 clients nearly every statement's first
    snapshot is a full scan (4-5 of the 5 per transaction); reuse stays possible between a
    statement's bind and execute. With fewer clients there are fewer commits to miss on."""
    few = numbers(point("post14", workload="tpcb", clients=4))
    many = numbers(point("post14", workload="tpcb", clients=32))
    assert few["full_snapshots"] > 0
    assert many["full_snapshots"] >= 4
    assert many["full_snapshots"] > few["full_snapshots"]
    assert many["full_snapshots"] + many["reused_snapshots"] == pytest.approx(10)


def test_post14_tpcb_other_backends_commits_invalidate_the_cache() -> None:
    """With 4 tpcb clients, 3 of every 4 commits are other backends'.
    A statement's first snapshot comes a round trip (~20 us) after the previous one, and commits
    arrive every ~35 us, so besides the one full scan after the backend's own commit a good share
    of the other statements' first snapshots must miss too: more than 1 full scan per
    transaction on average. Over three seeds: one seed alone can phase-lock the 4 clients so that
    every commit falls between the same statements (seed 0 gives exactly 1.0, seeds 1 and 2 give
    1.6 and 2.3)."""
    full = [numbers(point("post14", workload="tpcb", clients=4, duration_ns=2e6,
                          seed=seed))["full_snapshots"] for seed in (0, 1, 2)]
    assert min(full) >= 1.0
    assert sum(full) / len(full) > 1.2


# ---------------------------------------------------------------------------------- determinism


@pytest.mark.parametrize(("algorithm", "overrides"), [
    ("pre14", {"clients": 4, "idle_clients": 50}),
    ("post14", {"workload": "tpcb", "clients": 4}),
    ("post14_lockfree", {"workload": "tpcb", "clients": 8}),
    ("post14_shared_cache", {"workload": "tpcb", "clients": 8}),
    ("csn", {"clients": 2, "idle_clients": 20, "idle_kind": "mostly-idle"}),
])
def test_run_point_is_deterministic(algorithm: str, overrides: dict[str, object]) -> None:
    """The same config and seed give identical rows (wall time aside) and line tables; the
    mostly-idle case exercises the seeded random phases."""
    first = point(algorithm, **overrides)
    second = point(algorithm, **overrides)
    a = {k: v for k, v in first.row.items() if k != "wall_s"}
    b = {k: v for k, v in second.row.items() if k != "wall_s"}
    assert a.keys() == b.keys()
    for key, value in a.items():
        other = b[key]
        if isinstance(value, float) and math.isnan(value):
            assert isinstance(other, float)
            assert math.isnan(other), key
        else:
            assert value == other, key
    pd.testing.assert_frame_equal(first.lines, second.lines)
    pd.testing.assert_frame_equal(first.transactions, second.transactions)


def test_a_window_without_a_completed_transaction_is_an_error_not_zero_tps() -> None:
    """20 clients on 40 threads cannot finish a ~30 us transaction in a 5 us window after no
    warm-up: the point must fail with a message naming the fix, not report 0 TPS."""
    from snapsim_models.point import NoTransactionError

    with pytest.raises(NoTransactionError, match="increase duration_ms and warmup_ms"):
        point("pre14", clients=20, duration_ns=5e3, warmup_ns=0.0)


def test_a_failing_window_is_recorded_by_the_sweep() -> None:
    """Through the experiment API the point's error lands in the curve instead of a TPS.

    The window is refused up front (it is below the first transactions' bound); ``force``
    runs it anyway, so that the sweep's own recording is what is checked.
    """
    import simulator

    experiment = simulator.Experiment(
        machine="gold5215-2s", algorithms=("pre14",), clients=(20,), duration_ms=0.005,
        warmup_ms=0.0)
    with pytest.raises(ConfigError, match="cannot hold one transaction"):
        simulator.run(experiment, jobs=1, progress=False)
    result = simulator.run(experiment, jobs=1, progress=False, force=True)
    row = result.curve.iloc[0]
    assert "NoTransactionError" in str(row["error"])


# ----------------------------------------------------- clients, warm-up, cost model, breakdown


def test_idle_connections_are_procarray_entries_that_never_run() -> None:
    """Scope "idle connections (present in the proc array, never run)": with 1 active client and
    100 idle ones the pgxact_split scan reads xids[] for N = 101 + 2 launchers entries, exactly
    ceil(4N/64) = 7 lines (128-B aligned), which nobody writes; no idle transaction is counted."""
    result = point("pgxact_split", idle_clients=100)
    row = numbers(result)
    xids = result.lines.loc[result.lines["label"].str.startswith("xids[")]
    assert len(xids) == math.ceil(4 * 103 / 64) == 7
    assert (xids["loads"] > 0).all()
    assert xids["stores"].sum() == 0
    assert row["mostly_idle_tps"] == 0
    assert row["tps"] == row["transactions"] / 1e-3  # the 1 ms window, active client only


def test_mostly_idle_transactions_have_their_own_column() -> None:
    """Scope: ``tps`` counts the active clients' transactions and ``mostly_idle_tps`` the
    sleepers'. 2000 connections loop ``\\sleep 100ms; SELECT 1`` with uniform random phases, so
    each completes one SELECT 1 per ~100 ms: 2000 x 3 ms / 100 ms = 60 expected in the window
    (binomial, sd ~8; seeded, so the check is deterministic)."""
    result = point("post14", idle_clients=2000, idle_kind="mostly-idle",
                   duration_ns=3e6, warmup_ns=5e5)
    row = numbers(result)
    assert row["tps"] == row["transactions"] / 3e-3 == len(result.transactions) / 3e-3
    expected = 2000 * 3e-3 / 0.1 / 3e-3  # per second
    assert row["mostly_idle_tps"] == pytest.approx(expected, rel=0.35)


def test_line_table_excludes_the_warm_up() -> None:
    """post14 select-only scans ``xids[]`` only on a backend's first snapshot: with a warm-up the
    measured window (and its line table) holds no scan; without one it does."""
    warmed = point("post14", clients=2)
    cold = point("post14", clients=2, warmup_ns=0.0)
    warm_xids = warmed.lines.loc[warmed.lines["label"].str.startswith("xids[")]
    cold_xids = cold.lines.loc[cold.lines["label"].str.startswith("xids[")]
    assert warm_xids["loads"].sum() == 0
    assert cold_xids["loads"].sum() > 0
    assert numbers(cold)["full_snapshots"] > 0


def test_cost_model_is_cycles_scaled_by_the_machine_clock() -> None:
    """Scope: the non-snapshot work is a global cost model in cycles, the same numbers on every
    machine, turned into time by the clock. The same machine at 5 GHz instead of 2.5 runs the
    select-only statement's 30000 cycles in 6 us instead of 12: ``other_us`` drops by exactly
    6 us (its memory operations are the same L1/L2 hits, given in ns; at scale 1 the index root
    is over the leaves, so no random inner page brings a miss now and then)."""
    costs = load_costs()
    assert costs.statements.select_only == 30000
    fast = dataclasses.replace(GOLD, clock_ghz=5.0)
    base = numbers(point("post14", pgbench_scale=1))
    quick = numbers(simulate(fast, "post14", duration_ns=1e6,
                                          warmup_ns=2e5, pgbench_scale=1))
    saved_us = costs.statements.select_only * (1 / 2.5 - 1 / 5.0) / 1e3
    assert base["other_us"] - quick["other_us"] == pytest.approx(saved_us, rel=1e-9)


def test_footprint_evicts_the_backends_lines_from_its_private_cache() -> None:
    """Scope: the non-snapshot work has a memory footprint that evicts private-cache lines. One
    post14 client touches only its own lines; without a footprint every access is an L1 hit, with
    the 64 KiB footprint (2x the L1, 1/16 of the L2) each line it touches comes back from its L2
    once per transaction: l2_hit per transaction = the number of lines touched, 6 (ProcArrayLock,
    VariableCache, the index root's buffer descriptor and its mapping-partition lock, the two own
    PGPROC lines holding lxid/xmin and delayChkpt/recoveryConflictPending; at scale 1 the root
    is over the leaves, so there is no inner page)."""
    with_footprint = point("post14", pgbench_scale=1)
    none = dataclasses.replace(load_costs(), footprint_private_bytes=0, footprint_l3_bytes=0)
    without = numbers(point("post14", costs=none, pgbench_scale=1))
    row = numbers(with_footprint)
    lines = with_footprint.lines
    touched = lines.loc[(lines["loads"] + lines["stores"] + lines["rmws"]) > 0]
    assert row["l2_hit"] == len(touched) == 6
    assert without["l2_hit"] == 0
    assert without["l1_hit"] == row["l1_hit"] + row["l2_hit"]


@pytest.mark.parametrize(("algorithm", "overrides"), [
    ("pre14", {"clients": 4, "idle_clients": 200}),
    ("post14", {"workload": "tpcb", "clients": 4}),
    ("post14_lockfree", {"workload": "tpcb", "clients": 8}),
])
def test_time_shares_add_up_to_one(algorithm: str, overrides: dict[str, object]) -> None:
    """The breakdown's shares (get_snapshot, lock_wait, commit, other, scheduling) partition the
    backends' time: they sum to 1, each in [0, 1], and match the per-transaction µs columns."""
    row = numbers(point(algorithm, **overrides))
    categories = ("get_snapshot", "lock_wait", "commit", "other", "scheduling")
    shares = [row[f"share_{c}"] for c in categories]
    assert all(0.0 <= s <= 1.0 for s in shares)
    assert sum(shares) == pytest.approx(1.0, abs=1e-12)
    total_us = sum(row[f"{c}_us"] for c in categories)
    for category, share in zip(categories, shares, strict=True):
        assert row[f"{category}_us"] / total_us == pytest.approx(share, rel=1e-9)


def _garbage_left_by(run: Callable[[], object]) -> int:
    """Objects the cyclic collector frees after ``run`` (with the collector paused meanwhile)."""
    import gc

    gc.collect()
    enabled = gc.isenabled()
    gc.disable()
    try:
        run()
        return gc.collect()
    finally:
        if enabled:
            gc.enable()


@pytest.mark.parametrize("algorithm", ["pre14", "post14"])
@pytest.mark.parametrize("idle_kind", ["idle", "mostly-idle"])
def test_a_finished_point_leaves_no_garbage_for_the_cyclic_collector(
        algorithm: str, idle_kind: str) -> None:
    """The run tears itself down (processes, events, tasks, registered accesses), so reference
    counting frees it: with thousands of tasks, leaving it to the collector cost about a tenth
    of a large point's wall time."""
    point(algorithm, clients=2, idle_clients=2, idle_kind=idle_kind)  # first-use garbage
    left = _garbage_left_by(
        lambda: point(algorithm, clients=40, idle_clients=200, idle_kind=idle_kind))
    # A point of 240 connections alone is thousands of objects in cycles without the tear-down.
    assert left < 200, left


def test_a_failed_point_is_torn_down_too() -> None:
    from snapsim_models.point import NoTransactionError

    def failing() -> None:
        with pytest.raises(NoTransactionError):
            point("pre14", clients=20, duration_ns=5e3, warmup_ns=0.0)

    point("pre14", clients=2)  # first-use garbage
    left = _garbage_left_by(failing)
    assert left < 200, left


@pytest.mark.parametrize(("policy", "steady"), [("cfs", True), ("fifo", False)])
def test_many_clients_on_few_threads_complete_steadily_under_cfs(policy: str, steady: bool) -> None:
    """100 closed-loop clients on 2 threads. Under a FIFO run queue every step waits a full
    turn of the queue, the clients fall into step and transactions complete in bursts; CFS lets
    the short client steps overtake the backends' and the completions are steady."""
    import numpy as np

    from tests.toy_machines import toy_machine

    machine = toy_machine(sockets=1, cores_per_domain=2, threads_per_core=1)
    machine = dataclasses.replace(
        machine, scheduler=dataclasses.replace(machine.scheduler, policy=policy))
    # no working sets: the toy machine's 16-line L2 holds none, and the run queue is the point
    result = simulate(machine, "pre14", clients=100, duration_ns=10e6, warmup_ns=10e6,
                      working_sets=False)
    ends_ms = result.transactions["end_us"].to_numpy() / 1e3
    per_ms, _ = np.histogram(ends_ms, np.linspace(10.0, 20.0, 11))
    variation = per_ms.std() / per_ms.mean()
    assert bool(variation < 0.05) is steady, (policy, per_ms.tolist())
