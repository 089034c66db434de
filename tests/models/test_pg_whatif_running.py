"""The ``running_xids`` what-if: GetSnapshotData scans a dense array of the running xids only.

PostgreSQL has no such code; :class:`snapsim_models.snapshots.RunningXids` documents the assumed
design (``numRunning`` and 8-B ``{xid, pgxactoff}`` entries, appended at xid assignment under
XidGenLock, removed at commit under ProcArrayLock and XidGenLock by a search and
swap-with-last).
These tests pin its accesses down line by line with the harness (:mod:`tests.models.harness`),
check whole runs, and check that undoing its distinctive steps makes them fail.

**Lines of the array.** ``RunningXids`` (the 4-B count, padded to 8 B) is 128-aligned and the
8-B entries follow it, so K entries and the count take ceil((8 + 8K)/64) lines: 1 for K <= 7,
2 for K = 8..15.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest

import simulator
from simulator.cli import main
from simulator.config.machine_file import load_machine
from simulator.runtime.engine import ProcessGenerator
from snapsim_models.backend import Backend, Category
from snapsim_models.lwlock import LockMode
from snapsim_models.point import PointResult
from snapsim_models.snapshots import ALGORITHMS, PgxactSplit, RunningXids, SnapshotAlgorithm
from tests.models.harness import (
    CONNECTIONS,
    PgHarness,
    build_harness,
    check_group_clear,
    count_stores,
    entries,
    pg14_full_formula,
    select_only_transaction,
    snapshot,
    tpcb_transaction,
)
from tests.models.points import simulate

NAME = "running_xids"
GOLD = replace(load_machine("gold5215-2s"), idle=None)


def running_formula(k: int) -> int:
    """Shared lines of a snapshot with K running xids, none of them another's below xmax:
    3 (lock, VariableCache, ProcArray header) + ceil((8 + 8K)/64) (count and entries)."""
    return 3 + math.ceil((8 + 8 * k) / 64)


def count_line(h: PgHarness) -> int:
    return h.line(h.shmem.running_hdr, 0, "numRunning")


def entry_line(h: PgHarness, slot: int) -> int:
    return h.line(h.shmem.running_xids, slot, None)


def running(h: PgHarness) -> list[Backend]:
    algorithm = h.algorithm
    assert isinstance(algorithm, RunningXids)
    return algorithm.running


def test_registered_last() -> None:
    assert list(ALGORITHMS)[-1] == NAME
    assert ALGORITHMS[NAME] is RunningXids
    assert issubclass(RunningXids, PgxactSplit)


# ------------------------------------------------------------------- lines per snapshot


@pytest.mark.parametrize("connections", CONNECTIONS)
def test_snapshot_with_no_running_xid_reads_four_lines_whatever_n(connections: int) -> None:
    """K = 0: the lock line, the VariableCache line, the ProcArray header line
    (``replication_slot_xmin``) and the count line: 3 + ceil(8/64) = 4 shared lines for N = 3 to
    1002 entries (pgxact_split: 3 + ceil(4N/64), 4 to 66). 2 RMWs (the shared acquire and
    release), both on the lock line; the one own-line read is ``MyProc->xid``; the one store is
    the own xmin (private PGPROC)."""
    h = build_harness(NAME, connections)
    me = h.running[0]
    delta = snapshot(h, me)
    own = h.own_pgproc_lines(me)
    shared = delta.read - own
    assert shared == {h.lock_line, h.vc_line, h.header_line, count_line(h)}
    assert len(shared) == running_formula(0) == 4
    assert delta.read & own == {h.line(h.shmem.pgproc, me.pgprocno, "xid")}
    assert delta.rmw == {h.lock_line}
    assert delta.count(h.lock_line, "rmws") == 2
    assert delta.written == {h.line(h.shmem.pgproc, me.pgprocno, "xmin")}
    assert not h.lines_of(h.shmem.xids, range(entries(h)), None) & delta.read


def _tpcb_like_state(connections: int, algorithm: str = NAME) -> tuple[PgHarness, Backend]:
    """Connections 0..9 hold xids 1000..1009; connection 10 takes 1010 and commits (so
    latestCompletedXid = 1010 and xmax = 1011: the ten are below it); the last connection
    snapshots. K = 10 after the commit."""
    active = (*range(11), connections - 1)
    h = build_harness(algorithm, connections, active=active)
    *holders, committer, me = h.running
    alg = h.algorithm

    def setup() -> ProcessGenerator:
        for backend in holders:
            yield from alg.assign_xid(backend)
        yield from alg.assign_xid(committer)
        yield from alg.end_transaction_with_xid(committer)

    h.run(setup())
    assert [b.xid for b in holders] == list(range(1000, 1010))
    assert h.procarray.latest_completed_xid == 1010
    return h, me


def test_snapshot_with_ten_running_xids_among_a_thousand_connections() -> None:
    """K = 10 of N = 1002 entries (1000 connections and the 2 launchers), by hand:

    * 3 fixed lines (lock, VariableCache, ProcArray header);
    * count and entries 0..9: bytes 0..87 of the 128-aligned allocation: ceil(88/64) = 2 lines;
    * each of the 10 holders is another backend with xid < xmax: its ``statusFlags`` and
      ``subxidStates`` (pa:2341-2387@14). Connection k has procArray index 999 - k (descending
      pgprocnos, sorted array), so the holders are indices 990..999: ``statusFlags`` bytes
      990..999 of a 128-aligned array, line 15 only (1 line); ``subxidStates`` (2 B) bytes
      1980..1999, lines 30 and 31 (2 lines).

    8 shared lines; pgxact_split in the same state: 3 + ceil(4·1002/64) + 3 = 69.
    """
    h, me = _tpcb_like_state(1000)
    delta = h.measure(lambda: h.algorithm.get_snapshot(me))
    holders = running(h)
    assert len(holders) == 10
    indices = sorted(b.index for b in holders)
    assert indices == list(range(990, 1000))
    flags = h.lines_of(h.shmem.status_flags, indices, None)
    subxids = h.lines_of(h.shmem.subxid_states, indices, None)
    assert (len(flags), len(subxids)) == (1, 2)
    array = {count_line(h), count_line(h) + 1}
    assert {entry_line(h, slot) for slot in range(10)} == array
    shared = delta.read - h.own_pgproc_lines(me)
    assert shared == {h.lock_line, h.vc_line, h.header_line} | array | flags | subxids
    assert len(shared) == running_formula(10) + 3 == 8
    split, split_me = _tpcb_like_state(1000, "pgxact_split")
    split_delta = split.measure(lambda: split.algorithm.get_snapshot(split_me))
    split_shared = split_delta.read - split.own_pgproc_lines(split_me)
    assert len(split_shared) == pg14_full_formula(entries(split)) + 3 == 69


@pytest.mark.parametrize("holder", ["own", "newer"])
def test_own_and_newer_xids_cost_no_flags(holder: str) -> None:
    """pa:2323-2340@14 as in 14: the own entry and an xid >= xmax are skipped before the flags.
    With K = 1 such entry: exactly 3 + ceil(16/64) = 4 shared lines."""
    h = build_harness(NAME, 5, active=(3, 4))
    other, me = h.running
    holder_backend = me if holder == "own" else other
    h.run(h.algorithm.assign_xid(holder_backend))
    delta = h.measure(lambda: h.algorithm.get_snapshot(me))
    assert len(delta.read - h.own_pgproc_lines(me)) == running_formula(1) == 4
    flags = {h.line(h.shmem.status_flags, holder_backend.index, None),
             h.line(h.shmem.subxid_states, holder_backend.index, None)}
    assert not flags & delta.read


# --------------------------------------------------------------------------- maintenance


def test_assignment_appends_under_xid_gen_lock_only() -> None:
    """``GetNewTransactionId`` with K = 0 then K = 7, by hand:

    * XidGenLock: 2 RMWs (exclusive acquire, release); ProcArrayLock untouched;
    * 14's stores: ``nextXid`` (VariableCache line), ``xids[pgxactoff]``, own ``PGPROC.xid``;
    * the append: R ``numRunning``, W ``runningXids[K]``, W ``numRunning``. Slot 0 shares the
      count line (2 stores there); slot 7 starts the next line (1 store on each).
    """
    h = build_harness(NAME, 12, active=range(12))
    first, *others, last = h.running
    xid_gen = h.line(h.shmem.xid_gen_lock, 0, h.shmem.lwlock_word)
    delta = h.measure(lambda: h.algorithm.assign_xid(first))
    assert delta.count(xid_gen, "rmws") == 2
    assert delta.rmw == {xid_gen}
    assert h.lock_line not in delta.table["line"].tolist()
    assert delta.count(count_line(h), "loads") == 1
    assert delta.count(count_line(h), "stores") == 2
    assert delta.written - h.own_pgproc_lines(first) == {
        h.vc_line, h.line(h.shmem.xids, first.index, None), count_line(h)}
    for backend in others[:6]:
        h.run(h.algorithm.assign_xid(backend))
    assert len(running(h)) == 7
    delta = h.measure(lambda: h.algorithm.assign_xid(last))
    assert entry_line(h, 7) == count_line(h) + 1
    assert delta.count(count_line(h), "stores") == 1
    assert delta.count(entry_line(h, 7), "stores") == 1
    assert running(h)[7] is last


def test_append_does_not_wait_for_snapshots_but_removal_waits_for_assigners() -> None:
    """Lock modes. A backend holding ProcArrayLock shared (a snapshot) does not delay an
    append (XidGenLock only). A committer holding ProcArrayLock exclusive waits for XidGenLock
    while an assigner holds it, and removes its entry only after the assigner's append."""
    h = build_harness(NAME, 5, active=(1, 2, 3, 4))
    reader, holder, assigner, committer = h.running
    alg = h.algorithm
    h.run(alg.assign_xid(committer))
    release_at = 50_000.0
    done: dict[str, float] = {}

    def hold(lock_backend: Backend, lock: str, mode: LockMode) -> ProcessGenerator:
        lwlock = alg.proc_array_lock if lock == "ProcArrayLock" else alg.xid_gen_lock
        yield from lwlock.acquire(lock_backend, mode, Category.OTHER)
        yield from lock_backend.sleep(h.env.timeout(release_at), Category.OTHER)
        yield from lwlock.release(lock_backend, mode, Category.OTHER)

    def step(name: str, process: ProcessGenerator, delay: float) -> ProcessGenerator:
        yield h.env.timeout(delay)
        yield from process
        done[name] = h.env.now

    h.run(hold(reader, "ProcArrayLock", LockMode.SHARED),
          step("assign", alg.assign_xid(assigner), 5_000.0))
    assert done["assign"] < release_at
    start = h.env.now
    h.run(hold(holder, "XidGenLock", LockMode.EXCLUSIVE),
          step("commit", alg.end_transaction_with_xid(committer), 5_000.0))
    assert done["commit"] >= start + release_at
    assert running(h) == [assigner]


def test_commit_removes_by_search_and_swap_with_last() -> None:
    """K = 9 (slots 0..8; slot 8 on the line after the count's). The holder of slot 0 commits:
    ProcArrayLock 2 RMWs (conditional exclusive acquire, release) and XidGenLock 2 (exclusive,
    nested); R ``numRunning``; the search stops at slot 0 (count line); R ``runningXids[8]``
    (next line), W ``runningXids[0]`` and W ``numRunning`` (count line: 2 stores); the former
    last holder now sits in slot 0. Then the holder of the last slot commits: no move, 1 store
    (the count)."""
    h = build_harness(NAME, 10, active=range(10))
    holders = h.running[:9]
    alg = h.algorithm
    xid_gen = h.line(h.shmem.xid_gen_lock, 0, h.shmem.lwlock_word)
    for backend in holders:
        h.run(alg.assign_xid(backend))
    assert running(h) == holders
    delta = h.measure(lambda: alg.end_transaction_with_xid(holders[0]))
    assert delta.count(h.lock_line, "rmws") == 2
    assert delta.count(xid_gen, "rmws") == 2
    assert delta.count(count_line(h) + 1, "loads") == 1
    assert delta.count(count_line(h) + 1, "stores") == 0
    assert delta.count(count_line(h), "stores") == 2
    assert running(h) == [holders[8], *holders[1:8]]
    assert holders[0].xid == 0
    delta = h.measure(lambda: alg.end_transaction_with_xid(holders[7]))
    assert delta.count(count_line(h), "stores") == 1
    assert running(h) == [holders[8], *holders[1:7]]


def test_group_clear_removes_every_member() -> None:
    """The 9.6+ group clear of 14 (pa:773@14) with the removal: the leader removes both
    members' entries (the shared test's checks), leaving the array empty."""
    check_group_clear(NAME)


def test_tpcb_transaction_counts() -> None:
    """pgbench's tpcb, one transaction of one backend among 5 connections: 10 snapshots, all
    full (no cache); ProcArrayLock 2 RMWs per snapshot + 2 at commit = 22 (as pgxact_split);
    XidGenLock 2 at assignment + 2 at the removal = 4 (pgxact_split: 2); one entry store (the
    append; the removal of the only entry moves nothing) and 2 count stores; 14's ``xids[]``
    slot still written twice."""
    h, delta = tpcb_transaction(NAME)
    record = h.running[0].record
    assert (record.full_snapshots, record.reused_snapshots) == (10, 0)
    assert delta.count(h.lock_line, "rmws") == 22
    assert delta.count(h.line(h.shmem.xid_gen_lock, 0, h.shmem.lwlock_word), "rmws") == 4
    assert count_stores(h, "runningXids") == 1
    assert count_stores(h, "RunningXids.numRunning") == 2
    assert count_stores(h, "xids") == 2
    assert running(h) == []


def test_select_only_transaction_counts() -> None:
    """pgbench -S: 2 full snapshots, 4 ProcArrayLock RMWs, nothing written to the array."""
    h, delta = select_only_transaction(NAME)
    record = h.running[0].record
    assert (record.full_snapshots, record.reused_snapshots) == (2, 0)
    assert delta.count(h.lock_line, "rmws") == 4
    assert count_stores(h, "runningXids") == count_stores(h, "RunningXids.numRunning") == 0


# ------------------------------------------------------------------------ mutations


class _KeepsXidAtCommit(RunningXids):
    """Mutation: 14's clear only; the entry stays in the array."""

    def _clear_xid(self, actor: Backend, member: Backend) -> ProcessGenerator:
        yield from SnapshotAlgorithm._clear_xid(self, actor, member)


class _ScansAllSlots(RunningXids):
    """Mutation: the snapshot scans every slot of the array (N entries), not K."""

    def get_snapshot(self, backend: Backend) -> ProcessGenerator:
        yield from self.proc_array_lock.acquire(backend, LockMode.SHARED, Category.GET_SNAPSHOT)
        yield from backend.ops(self.count_load, Category.GET_SNAPSHOT)
        yield from backend.scan(self._plan(len(self.procarray)), self.scan_costs.pre14,
                                Category.GET_SNAPSHOT)
        yield from self._after_scan(backend, [(b.index, b) for b in self.running])
        yield from self.proc_array_lock.release(backend, LockMode.SHARED, Category.GET_SNAPSHOT)


@pytest.mark.parametrize(("mutant", "check"), [
    (_KeepsXidAtCommit, test_commit_removes_by_search_and_swap_with_last),
    (_KeepsXidAtCommit, test_tpcb_transaction_counts),
    (_ScansAllSlots, lambda: test_snapshot_with_no_running_xid_reads_four_lines_whatever_n(1000)),
])
def test_mutations_fail_the_tests(monkeypatch: pytest.MonkeyPatch, mutant: type[RunningXids],
                                  check: Callable[[], None]) -> None:
    """Undoing the distinctive steps (the removal at commit; scanning K, not N) is caught."""
    monkeypatch.setitem(ALGORITHMS, NAME, mutant)
    with pytest.raises(AssertionError):
        check()


# ----------------------------------------------------------------------------- whole runs


def _point(algorithm: str = NAME, **overrides: object) -> PointResult:
    settings: dict[str, object] = {"duration_ns": 1e6, "warmup_ns": 2e5}
    settings.update(overrides)
    return simulate(GOLD, algorithm, **settings)


def _loads(result: PointResult, label_part: str) -> float:
    lines = result.lines
    return float(lines.loc[lines["label"].str.contains(label_part, regex=False), "loads"].sum())


@pytest.mark.parametrize(("workload", "snapshots"), [("select-only", 2.0), ("tpcb", 10.0)])
def test_run_snapshots_per_transaction(workload: str, snapshots: float) -> None:
    row = _point(workload=workload, clients=4).row
    assert float(row["transactions"]) > 0  # type: ignore[arg-type]
    assert float(row["full_snapshots"]) == snapshots  # type: ignore[arg-type]
    assert float(row["reused_snapshots"]) == 0.0  # type: ignore[arg-type]


def test_run_is_deterministic() -> None:
    a, b = (_point(workload="tpcb", clients=4, seed=3) for _ in range(2))
    drop = ["wall_s"]
    assert {k: v for k, v in a.row.items() if k not in drop} == {
        k: v for k, v in b.row.items() if k not in drop}
    pd.testing.assert_frame_equal(a.lines, b.lines)


def test_tpcb_run_assigns_and_removes_xids() -> None:
    """8 tpcb clients: the array's lines are written (appends, removals) and read (snapshots,
    searches); 14's ``xids[]`` lines are written but never scanned."""
    result = _point(workload="tpcb", clients=8)
    lines = result.lines
    array = lines.loc[lines["label"].str.contains("unningXids", regex=False)]
    assert float(array["stores"].sum()) > 0
    assert float(array["loads"].sum()) > 0
    xids = lines.loc[lines["label"].str.startswith("xids")]
    assert float(xids["stores"].sum()) > 0
    assert float(xids["loads"].sum()) == 0.0


def test_select_only_lines_per_snapshot_independent_of_idle_connections() -> None:
    """1 select-only client with 0 and 1000 idle connections: running_xids loads the count
    line once per snapshot either way and no ``xids[]`` line; pgxact_split's ``xids[]`` loads
    per snapshot grow with N (ceil(4N/64) lines: 4 at N = 3 + 1 (no idle; the launchers and the
    client), 63 at N = 1003), and so its TPS falls below running_xids'."""
    per_snapshot: dict[tuple[str, int], float] = {}
    tps: dict[tuple[str, int], float] = {}
    for algorithm in ("pgxact_split", NAME):
        for idle in (0, 1000):
            result = _point(algorithm, idle_clients=idle)
            row = result.row
            snapshots = float(row["transactions"]) * 2  # type: ignore[arg-type]
            label = "xids" if algorithm == "pgxact_split" else "RunningXids"
            loads = float(result.lines.loc[result.lines["label"].str.startswith(label),
                                           "loads"].sum())
            per_snapshot[algorithm, idle] = loads / snapshots
            tps[algorithm, idle] = float(row["tps"])  # type: ignore[arg-type]
            if algorithm == NAME:
                assert _loads(result, "xids[") == 0.0
    assert 0.9 <= per_snapshot[NAME, 0] == per_snapshot[NAME, 1000] <= 1.1
    assert per_snapshot["pgxact_split", 1000] > 10 * per_snapshot["pgxact_split", 0]
    assert tps[NAME, 1000] > tps["pgxact_split", 1000]


# ------------------------------------------------------------------ command line and API


def test_command_line_runs_it(tmp_path: Path) -> None:
    out = tmp_path / "out"
    code = main(["-q", "run", "tiny", "--algorithms", f"pgxact_split,{NAME}", "--clients", "1",
                 "--idle-clients", "0,500", "--duration-ms", "0.3", "--warmup-ms", "0.1",
                 "--out", str(out)])
    assert code == 0
    curve = pd.read_csv(out / "curve.csv")
    assert set(curve["algorithm"]) == {"pgxact_split", NAME}
    assert (curve["tps"] > 0).all()


def test_python_api_runs_it() -> None:
    result = simulator.run(simulator.Experiment(
        machine="gold5215-2s", algorithms=("pgxact_split", NAME), workload="tpcb",
        clients=(2,), idle_clients=(0,), duration_ms=2, warmup_ms=0.5))
    curve = result.curve.set_index("algorithm")
    assert set(curve.index) == {"pgxact_split", NAME}
    assert (curve["tps"] > 0).all()
    assert curve.loc[NAME, "full_snapshots"] == 10.0
