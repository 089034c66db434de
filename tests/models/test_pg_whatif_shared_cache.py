"""The ``post14_shared_cache`` what-if: one snapshot cache shared by all backends.

PostgreSQL has no such code; :class:`snapsim_models.snapshots.Post14SharedCache` documents the
assumed design (own cache as post14; else copy the shared snapshot if it was built at the current
``xactCompletionCount``; else build in full and publish, one publisher per count by a CAS on the
header's ``claim``). Tests on the harness (:mod:`tests.models.harness`) pin the three paths down
line by line; the runs check the effect: copies replace full builds under tpcb.

Hand-derived counts, all under ProcArrayLock shared (1 load + 2 RMWs on its line, as post14):

* own-cache reuse: post14's, 2 shared lines (the lock line, the VariableCache line: 1 load of
  ``xactCompletionCount``); the SharedSnapshot line is not touched.
* copy: 3 + ceil(4·xcnt/64) shared lines: the lock line, the VariableCache line (1 load), the
  SharedSnapshot header line (4 loads: count, xmin, xmax, xcnt) and the array lines holding the
  xcnt xids; independent of N; no RMW besides the lock's; the only store the own (private) xmin.
* full build and publish: post14's 3 + ceil(4N/64) shared lines plus the SharedSnapshot header
  line (2 loads: count, claim; 1 RMW: the CAS on claim; 4 stores: xmin, xmax, xcnt, count), plus
  ceil(4·xcnt/64) array lines stored; 3 atomics (2 on the lock line, 1 on the header); the
  VariableCache line is loaded 1 + 3 times (the reuse check, then the full path's reads).
"""

from __future__ import annotations

import math
from dataclasses import replace

import pytest

from simulator.config.machine_file import load_machine
from simulator.runtime.engine import ProcessGenerator
from snapsim_models.backend import Backend
from snapsim_models.snapshots import Post14SharedCache
from tests.models.harness import (
    CONNECTIONS,
    PgHarness,
    build_harness,
    entries,
    pg14_full_formula,
    snapshot,
)
from tests.models.points import simulate

NAME = "post14_shared_cache"


def header_line(h: PgHarness) -> int:
    return h.line(h.shmem.shared_snapshot, 0, "count")


def algorithm(h: PgHarness) -> Post14SharedCache:
    alg = h.algorithm
    assert isinstance(alg, Post14SharedCache)
    return alg


@pytest.mark.parametrize("connections", CONNECTIONS)
def test_own_cache_reuse_is_post14s_and_leaves_the_shared_snapshot_alone(connections: int) -> None:
    """Second call, count unchanged: the lock line and the VariableCache line (1 load), the own
    xmin store (private); 2 lock RMWs; the SharedSnapshot line untouched."""
    h = build_harness(NAME, connections)
    me = h.running[0]
    delta = snapshot(h, me, warm_calls=1)
    assert delta.read == {h.lock_line, h.vc_line}
    assert delta.rmw == {h.lock_line}
    assert delta.count(h.lock_line, "rmws") == 2
    assert delta.count(h.vc_line, "loads") == 1
    assert delta.written == {h.line(h.shmem.pgproc, me.pgprocno, "xmin")}
    assert header_line(h) not in delta.table["line"].tolist()
    record = me.record
    assert (record.full_snapshots, record.reused_snapshots, record.copied_snapshots) == (1, 1, 0)


@pytest.mark.parametrize("connections", CONNECTIONS)
def test_first_snapshot_builds_in_full_and_publishes(connections: int) -> None:
    """Nothing cached or shared: post14's 3 + ceil(4N/64) lines plus the header line; the
    header is loaded twice (count, claim), CAS'd once and stored 4 times; no xid is held, so
    xcnt = 0 and no array line is written."""
    h = build_harness(NAME, connections)
    me = h.running[0]
    delta = snapshot(h, me)
    n = entries(h)
    header = header_line(h)
    shared = delta.read - h.own_pgproc_lines(me)
    assert shared == ({h.lock_line, h.vc_line, h.header_line, header}
                      | h.lines_of(h.shmem.xids, range(n), None))
    assert len(shared) == pg14_full_formula(n) + 1
    assert delta.rmw == {h.lock_line, header}
    assert delta.count(h.lock_line, "rmws") == 2
    assert (delta.count(header, "loads"), delta.count(header, "rmws"),
            delta.count(header, "stores")) == (2, 1, 4)
    assert delta.count(h.vc_line, "loads") == 1 + 3
    assert delta.written == {header, h.line(h.shmem.pgproc, me.pgprocno, "xmin")}
    alg = algorithm(h)
    count = h.procarray.completion_count
    assert (alg.shared_count, alg.shared_claim, alg.shared_xcnt) == (count, count, 0)
    assert me.record.full_snapshots == 1


@pytest.mark.parametrize("connections", CONNECTIONS[1:])
def test_second_backend_copies_the_shared_snapshot(connections: int) -> None:
    """After one backend published at the current count, another's first snapshot copies it: 3
    shared lines (lock, VariableCache, header with 4 loads), xcnt = 0 array lines, independent
    of N; the lock's 2 RMWs are the only atomics; the only store its own xmin."""
    h = build_harness(NAME, connections, active=(connections - 2, connections - 1))
    publisher, me = h.running
    snapshot(h, publisher)
    delta = snapshot(h, me)
    header = header_line(h)
    assert delta.read == {h.lock_line, h.vc_line, header}
    assert delta.rmw == {h.lock_line}
    assert delta.count(h.lock_line, "rmws") == 2
    assert delta.count(h.vc_line, "loads") == 1
    assert delta.count(header, "loads") == 4
    assert delta.written == {h.line(h.shmem.pgproc, me.pgprocno, "xmin")}
    record = me.record
    assert (record.full_snapshots, record.reused_snapshots, record.copied_snapshots) == (0, 0, 1)
    assert me.snapshot_completion_count == h.procarray.completion_count
    again = snapshot(h, me)  # the copy became the own cache: post14's reuse
    assert again.read == {h.lock_line, h.vc_line}
    assert record.reused_snapshots == 1


def test_copy_reads_the_array_lines_of_the_running_xids() -> None:
    """20 backends hold xids 1000..1019, a 21st commits xid 1020 (xmax = 1021): the publisher's
    array holds the 20 running xids, 80 B = ceil(4*20/64) = 2 lines, which it stores; the reader
    copies them: 3 + 2 = 5 shared lines."""
    h = build_harness(NAME, 24, active=range(24))
    holders, committer, publisher, reader = (h.running[:20], h.running[20], h.running[21],
                                             h.running[22])
    alg = algorithm(h)

    def setup() -> ProcessGenerator:
        for backend in [*holders, committer]:
            yield from alg.assign_xid(backend)
        yield from alg.end_transaction_with_xid(committer)

    h.run(setup())
    assert h.procarray.latest_completed_xid == 1020
    xids = h.shmem.shared_snapshot_xids
    assert xids is not None
    array = {xids.line_of(0, None), xids.line_of(19, None)}
    assert len(array) == math.ceil(4 * 20 / 64) == 2
    published = snapshot(h, publisher)
    assert alg.shared_xcnt == 20
    assert array <= published.written
    assert all(published.count(line, "stores") == 1 for line in array)
    delta = snapshot(h, reader)
    assert delta.read == {h.lock_line, h.vc_line, header_line(h)} | array
    assert all(delta.count(line, "loads") == 1 for line in array)
    assert reader.record.copied_snapshots == 1


def test_the_publishers_own_xid_is_in_the_shared_array() -> None:
    """GetSnapshotData leaves the builder's own xid out of its snapshot (pa:2323-2340@14); the
    shared array must hold it for the others: a publisher holding the only running xid below
    xmax publishes xcnt = 1 (one array line stored)."""
    h = build_harness(NAME, 5, active=(3, 4))
    committer, publisher = h.running
    alg = algorithm(h)

    def setup() -> ProcessGenerator:
        yield from alg.assign_xid(publisher)  # xid 1000
        yield from alg.assign_xid(committer)  # xid 1001, committed: xmax = 1002
        yield from alg.end_transaction_with_xid(committer)

    h.run(setup())
    delta = snapshot(h, publisher)
    xids = h.shmem.shared_snapshot_xids
    assert xids is not None
    assert alg.shared_xcnt == 1
    assert delta.count(xids.line_of(0, None), "stores") == 1


def test_a_claimed_count_is_not_published_again() -> None:
    """A backend that reads ``claim`` equal to the current count (another is publishing it)
    builds in full and neither CASes nor stores on the header line."""
    h = build_harness(NAME, 5)
    me = h.running[0]
    alg = algorithm(h)
    alg.shared_claim = h.procarray.completion_count
    delta = snapshot(h, me)
    header = header_line(h)
    assert (delta.count(header, "loads"), delta.count(header, "rmws"),
            delta.count(header, "stores")) == (2, 0, 0)
    assert me.record.full_snapshots == 1
    assert alg.shared_count == 0


def test_a_failed_claim_cas_publishes_nothing() -> None:
    """Another backend claims the count during this one's full build: its CAS fails (1 RMW on
    the header) and it stores nothing there."""
    h = build_harness(NAME, 5)
    me = h.running[0]
    alg = algorithm(h)
    full = alg._full_snapshot

    def full_then_claimed(backend: Backend) -> ProcessGenerator:
        yield from full(backend)
        alg.shared_claim = h.procarray.completion_count

    alg._full_snapshot = full_then_claimed  # type: ignore[method-assign]
    delta = snapshot(h, me)
    header = header_line(h)
    assert (delta.count(header, "rmws"), delta.count(header, "stores")) == (1, 0)
    assert alg.shared_count == 0


# -------------------------------------------------------------------------------- whole runs


def test_tpcb_run_copies_instead_of_building_in_full() -> None:
    """48 tpcb clients on ``gold5215-2s``: others' commits make the own caches stale at most
    statements (post14: several full builds per transaction); with the shared cache the first
    backend to miss at a count builds and publishes, the others copy. Copies happen, full builds
    fall below half of post14's, and every one of the 10 snapshots is one of the three kinds.
    (Without the shared read, full builds would equal post14's and copies would be 0.)"""
    gold = replace(load_machine("gold5215-2s"), idle=None)
    rows = {}
    for name in ("post14", NAME):
        result = simulate(gold, name, workload="tpcb", clients=48,
                                       duration_ns=2e6, warmup_ns=5e5)
        rows[name] = {k: float(v) for k, v in result.row.items()  # type: ignore[arg-type]
                      if k.endswith("_snapshots") or k == "transactions"}
    post14, shared = rows["post14"], rows[NAME]
    assert post14["copied_snapshots"] == 0.0
    assert shared["copied_snapshots"] > 1.0
    assert shared["full_snapshots"] < 0.5 * post14["full_snapshots"]
    total = shared["full_snapshots"] + shared["reused_snapshots"] + shared["copied_snapshots"]
    assert total == pytest.approx(10)
