"""The ``post14_lockfree`` what-if: post14 with the reuse check made without the lock.

PostgreSQL has no such code; :class:`snapsim_models.snapshots.Post14Lockfree` documents the assumed
design (read ``xactCompletionCount``; on a match publish xmin, a full barrier, read the count
again). These tests pin that sequence down line by line with the harness
(:mod:`tests.models.harness`) and check its effect on a run: no ProcArrayLock atomic in a warm
select-only transaction, hence no queue on the lock word.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from simulator.config.machine_file import load_machine
from simulator.runtime.engine import Step
from snapsim_models.backend import Backend, Category
from snapsim_models.snapshots import BARRIER_CYCLES
from tests.models.harness import (
    CONNECTIONS,
    build_harness,
    count_stores,
    entries,
    pg14_full_formula,
    select_only_transaction,
    snapshot,
    tpcb_transaction,
)
from tests.models.points import simulate

NAME = "post14_lockfree"


@pytest.mark.parametrize("connections", CONNECTIONS)
def test_reuse_reads_the_counter_line_twice_and_takes_no_lock(connections: int) -> None:
    """A reuse with xmin unset: R ``xactCompletionCount``, W own xmin (private), R it again.

    One shared line (the VariableCache line, 2 loads), no RMW, the lock line untouched, and
    the only store is the backend's own PGPROC xmin line; independent of N.
    """
    h = build_harness(NAME, connections)
    me = h.running[0]
    delta = snapshot(h, me, warm_calls=1)
    assert delta.read == {h.vc_line}
    assert delta.count(h.vc_line, "loads") == 2
    assert delta.rmw == set()
    assert h.lock_line not in delta.table["line"].tolist()
    assert delta.written == {h.line(h.shmem.pgproc, me.pgprocno, "xmin")}
    assert (me.record.full_snapshots, me.record.reused_snapshots) == (1, 1)


def test_reuse_with_xmin_set_is_one_load() -> None:
    """xmin already published (a second snapshot in the transaction): one load, no store, no
    barrier, no re-check."""
    h = build_harness(NAME, 5)
    me = h.running[0]
    snapshot(h, me)  # full path, sets xmin
    delta = h.measure(lambda: h.algorithm.get_snapshot(me))
    assert delta.read == {h.vc_line}
    assert delta.count(h.vc_line, "loads") == 1
    assert delta.written == set()
    assert me.record.reused_snapshots == 1


@pytest.mark.parametrize("connections", CONNECTIONS)
def test_first_snapshot_takes_post14s_full_path(connections: int) -> None:
    """Nothing cached: the lock shared and post14's full path, 3 + ceil(4N/64) shared lines."""
    h = build_harness(NAME, connections)
    me = h.running[0]
    delta = snapshot(h, me)
    shared = delta.read - h.own_pgproc_lines(me)
    n = entries(h)
    assert shared == ({h.lock_line, h.vc_line, h.header_line}
                      | h.lines_of(h.shmem.xids, range(n), None))
    assert len(shared) == pg14_full_formula(n)
    assert delta.count(h.lock_line, "rmws") == 2
    assert me.record.full_snapshots == 1


def test_count_moved_before_the_recheck_falls_back_to_the_locked_full_path() -> None:
    """A transaction that ends between the first read and the re-check (here: during the
    barrier) makes the cached snapshot stale: the backend takes the lock and scans. Its xmin,
    published before the barrier, is not stored again (the full path sets it only if unset)."""
    h = build_harness(NAME, 100)
    me = h.running[0]
    snapshot(h, me, warm_calls=1)
    h.run(h.algorithm.clear_xmin(me))
    compute = Backend.compute

    def bump_during_barrier(backend: Backend, cycles: float, category: Category) -> Step:
        if cycles == BARRIER_CYCLES:
            h.procarray.completion_count += 1
        return compute(backend, cycles, category)

    me.compute = bump_during_barrier.__get__(me)  # type: ignore[method-assign]
    before = (me.record.full_snapshots, me.record.reused_snapshots)
    delta = h.measure(lambda: h.algorithm.get_snapshot(me))
    assert (me.record.full_snapshots, me.record.reused_snapshots) == (before[0] + 1, before[1])
    assert delta.count(h.lock_line, "rmws") == 2
    assert h.lines_of(h.shmem.xids, range(entries(h)), None) <= delta.read
    assert delta.count(h.vc_line, "loads") == 2 + 3  # check, re-check, the full path's reads
    assert delta.count(h.line(h.shmem.pgproc, me.pgprocno, "xmin"), "stores") == 1
    assert me.snapshot_completion_count == h.procarray.completion_count


def test_count_moved_before_the_first_read_takes_the_lock_without_publishing_xmin() -> None:
    """A stale cache seen at the first read: no xmin store before the lock, no barrier."""
    h = build_harness(NAME, 5)
    me = h.running[0]
    snapshot(h, me, warm_calls=1)
    h.run(h.algorithm.clear_xmin(me))
    h.procarray.completion_count += 1
    delta = h.measure(lambda: h.algorithm.get_snapshot(me))
    assert delta.count(h.lock_line, "rmws") == 2
    assert delta.count(h.vc_line, "loads") == 1 + 3
    assert me.record.full_snapshots == 2


def test_warm_select_only_transaction_takes_no_proc_array_lock_atomic() -> None:
    """pgbench -S with the what-if: both snapshots reuse without the lock, and a read-only
    transaction end takes no ProcArrayLock (procarray.c:690-705@14): 0 RMWs on the lock line
    (post14: 4).
    Both snapshots still publish xmin on the private PGPROC line (5 xmin stores, as post14)."""
    h, delta = select_only_transaction(NAME)
    record = h.running[0].record
    assert (record.full_snapshots, record.reused_snapshots) == (0, 2)
    assert delta.count(h.lock_line, "rmws") == 0
    assert count_stores(h, "PGPROC.xmin") == 5


def test_tpcb_transaction_takes_the_lock_for_its_one_full_snapshot_and_commit() -> None:
    """tpcb with the what-if: the first of the 10 snapshots misses the cache (the backend's
    own commit moved the count) and takes the lock shared (2 RMWs); the other 9 reuse without
    it; the commit's exclusive acquire and release add 2: 4 RMWs (post14: 22)."""
    h, delta = tpcb_transaction(NAME)
    record = h.running[0].record
    assert (record.full_snapshots, record.reused_snapshots) == (1, 9)
    assert delta.count(h.lock_line, "rmws") == 4
    assert count_stores(h, "PGPROC.xmin") == 21


def test_run_on_eight_sockets_loses_the_lock_word_queue() -> None:
    """48 clients on ``westmere-ex-8s``, where post14's ProcArrayLock word queues: the what-if
    has no ProcArrayLock atomics and no queue on that word, and does not run slower. It does not
    run much faster either: the hot B-tree pages' buffer descriptors, whose load + CAS loops
    every transaction also runs, set nearly the same ceiling. Three seeds of 2 ms summed (one
    seed's 2 ms window varies too much: the descriptors' wait is 0.68-1.04 of the lock's per
    seed); measured: 1.299M -> 1.379M TPS (mean), the descriptors wait 15.2 ms in the what-if
    against the lock's 17.7 ms in post14. Without idle states: their start-up exits would blur
    a short window."""
    machine = replace(load_machine("westmere-ex-8s"), idle=None)
    tps = {"post14": 0.0, NAME: 0.0}
    lock_wait_ns = descriptor_wait_ns = 0.0
    for seed in range(3):
        rows = {algorithm: simulate(machine, algorithm, clients=48, duration_ns=2e6,
                                    warmup_ns=1e6, seed=seed)
                for algorithm in ("post14", NAME)}
        lockfree = rows[NAME].row
        assert lockfree["reused_snapshots"] == 2.0
        for algorithm, result in rows.items():
            tps[algorithm] += float(result.row["tps"])  # type: ignore[arg-type]
        post14_lock = rows["post14"].lines.loc[rows["post14"].lines["label"] == "ProcArrayLock"]
        assert float(post14_lock["wait_ns"].iloc[0]) > 0.0
        lock_wait_ns += float(post14_lock["wait_ns"].iloc[0])
        lock = rows[NAME].lines.loc[rows[NAME].lines["label"] == "ProcArrayLock"]
        assert len(lock) == 0 or (int(lock["rmws"].iloc[0]) == 0
                                  and float(lock["wait_ns"].iloc[0]) == 0.0)
        descriptors = rows[NAME].lines.loc[rows[NAME].lines["label"].str.startswith("Btree")]
        descriptor_wait_ns += float(descriptors["wait_ns"].sum())
    assert tps[NAME] > 0.98 * tps["post14"]
    assert descriptor_wait_ns > 0.75 * lock_wait_ns
    assert tps[NAME] < 1.15 * tps["post14"]


def test_tpcb_run_takes_the_lock_far_less_often_than_post14() -> None:
    """16 tpcb clients on ``gold5215-2s``: others' commits still invalidate the cache, so some
    snapshots are full (under the lock) while the reuses take none. post14 makes at least 2
    ProcArrayLock RMWs per snapshot (10 per transaction) plus the commit's; the what-if far
    fewer. (Exact counts per call: the harness tests above; here the totals also include lock
    queueing and up to 16 unfinished transactions.)"""
    gold = load_machine("gold5215-2s")
    per_transaction = {}
    for algorithm in ("post14", NAME):
        result = simulate(gold, algorithm, workload="tpcb",
                                       clients=16, duration_ns=2e6, warmup_ns=0.0)
        row = result.row
        transactions = float(row["transactions"])  # type: ignore[arg-type]
        lock = result.lines.loc[result.lines["label"] == "ProcArrayLock"].iloc[0]
        per_transaction[algorithm] = float(lock["rmws"]) / transactions
        if algorithm == NAME:
            full = float(row["full_snapshots"])  # type: ignore[arg-type]
            assert 1.0 <= full < 10.0
            assert float(row["reused_snapshots"]) > 0.0  # type: ignore[arg-type]
    assert per_transaction["post14"] >= 20.0
    assert per_transaction[NAME] < 0.7 * per_transaction["post14"]
