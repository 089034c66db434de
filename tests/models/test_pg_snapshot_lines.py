"""Cache lines of single GetSnapshotData calls and single transactions, against PostgreSQL.

The access sequences are PostgreSQL's ``GetSnapshotData`` (pa = ``procarray.c``: pa:1225-1443@9.1,
pa:1504-1782@13, pa:2205-2555@14; the csn-v8 patch's for ``csn``) and a pgbench transaction's
path through postgres.c, pquery.c, snapmgr.c and ``ProcArrayEndTransaction``. The *formulas*
count the shared lines these sequences touch: 3 (the ProcArrayLock line, the VariableCache line,
the ProcArray header line) plus the per-entry arrays the version scans. The harness that builds
the pieces, the formulas, N and the counting of read, RMW'd and written lines are in
:mod:`tests.models.harness`.
"""

from __future__ import annotations

import math

import pytest

from simulator.hardware.codes import Op
from simulator.runtime.engine import ProcessGenerator
from tests.models.harness import (
    CONNECTIONS,
    HEADER_COUNTED_TWICE,
    build_harness,
    check_group_clear,
    count_stores,
    cross_socket_pair,
    entries,
    pg14_full_formula,
    pg91_formula,
    pre14_formula,
    run_pair,
    run_statements,
    select_only_transaction,
    snapshot,
    sockets,
    tpcb_transaction,
    transaction_statements,
)

LOCKED = ("pg91", "pre14", "pgxact_split", "post14")
"""The algorithms that take ProcArrayLock in GetSnapshotData (all but ``csn``)."""


# ---------------------------------------------------------------- test 1: lines per snapshot


@pytest.mark.parametrize("connections", CONNECTIONS)
def test_pg91_snapshot_lines_match_layout_and_formula(connections: int) -> None:
    """9.1 (pa:1225-1443@9.1): lock, VC, header + ``procs[]``, the H and S lines of every entry.

    Exact against the layout: the lock line, the VariableCache line, ceil((32+8N)/64) lines of
    header and pointer array, every entry's H line(s) (xid/xmin/vacuumFlags, 1.25 per entry at
    the default PGPROC phase) and every entry's subxid header line. The model also reads its own
    subxid header, which 9.1 skips (pa:1358 runs for procs other than MyProc): +1 line, allowed.
    Against the formula (h = 1.25 at phase 0): equal up to the double-counted header line and
    that +1, within ±1 for the fractional H term.
    """
    h = build_harness("pg91", connections)
    me = h.running[0]
    delta = snapshot(h, me)
    n = entries(h)
    pgproc, procs = h.shmem.pgproc, h.procarray.entries
    h_lines = h.lines_of(pgproc, procs, ("vacuumFlags", "xmin", "xid"))
    s_lines = h.lines_of(pgproc, procs, ("subxids.overflowed", "subxids.nxids"))
    pointer_lines = {h.header_line} | h.lines_of(h.shmem.pgprocnos, range(n), None)
    expected = {h.lock_line, h.vc_line} | pointer_lines | h_lines | s_lines
    assert delta.read == expected
    assert len(pointer_lines) == math.ceil((32 + 8 * n) / 64)
    own_s = h.lines_of(pgproc, [me.pgprocno], ("subxids.overflowed", "subxids.nxids"))
    assert own_s <= delta.read  # the allowed extra line
    formula = pg91_formula(n, 1.25) - HEADER_COUNTED_TWICE + len(own_s)
    assert abs(len(delta.read) - formula) <= 1
    if n >= 100:
        # ≈ 2.4-2.6·N for h = 1.25-1.5: the formula's own value at h = 1.25 is 2.375·N + O(1),
        # which rounds to 2.4; the model lands on the formula, not on the rounded bound.
        assert 2.35 * n <= len(delta.read) <= 2.6 * n


@pytest.mark.parametrize(("phase", "h_per_entry"), [(0, 1.25), (8, 1.5)])
def test_pg91_h_lines_per_entry_follow_pgproc_phase(phase: int, h_per_entry: float) -> None:
    """9.1's 656-B PGPROCs (proc.h:68-140@9.1) put the hot bytes 32..57 on 1.25 lines per proc at
    base phase 0 (1 slot in 4 straddles) and 1.5 at phase 8 (2 in 4): 100 consecutive slots,
    exactly."""
    h = build_harness("pg91", 97, pg91_pgproc_phase=phase)  # 97 clients + the launcher
    clients = [b.pgprocno for b in h.backends]
    assert max(clients) - min(clients) + 1 == 97
    slots = range(min(clients), min(clients) + 96)  # a whole number of 4-slot periods
    h_lines = h.lines_of(h.shmem.pgproc, slots, ("vacuumFlags", "xmin", "xid"))
    assert len(h_lines) == h_per_entry * 96
    delta = snapshot(h, h.running[0])
    assert h_lines <= delta.read


@pytest.mark.parametrize("connections", CONNECTIONS)
def test_pre14_snapshot_lines_match_layout_and_formula(connections: int) -> None:
    """9.2-13 (pa:1504-1782@13): lock, VC, header + ``pgprocnos[]``, the PGXACT lines.

    Exact against the layout: the lock line, the VariableCache line, ceil((40+4N)/64) lines of
    header and ``pgprocnos`` (the 40-B header shares the first line), and the PGXACT
    lines of every entry (the clients' contiguous range plus the launchers' far slots). Against
    The formula minus the double-counted header line, within its ±1 for alignment.
    """
    h = build_harness("pre14", connections)
    delta = snapshot(h, h.running[0])
    n = entries(h)
    pgprocnos_lines = h.lines_of(h.shmem.pgprocnos, range(n), None) | {h.header_line}
    pgxact_lines = h.lines_of(h.shmem.pgxact, h.procarray.entries, ("vacuumFlags", "xmin", "xid"))
    assert delta.read == {h.lock_line, h.vc_line} | pgprocnos_lines | pgxact_lines
    assert len(pgprocnos_lines) == math.ceil((40 + 4 * n) / 64)
    formula = pre14_formula(n, h.launchers()) - HEADER_COUNTED_TWICE
    assert abs(len(delta.read) - formula) <= 1
    if n >= 100:
        assert abs(len(delta.read) - (3 + n / 4)) <= 0.05 * n  # ≈ 3 + N/4


@pytest.mark.parametrize("algorithm", ["pgxact_split", "post14"])
@pytest.mark.parametrize("connections", CONNECTIONS)
def test_pg14_full_snapshot_lines_match_formula(algorithm: str, connections: int) -> None:
    """14 full path (pa:2269-2446@14): exactly 3 + ceil(4N/64) shared lines.

    Lock line, VariableCache line (latestCompletedXid, oldestXid, xactCompletionCount), the
    ProcArray header line (numProcs, replication-slot xmins) and the ``xids[]`` lines. No entry
    holds an xid, so no ``statusFlags``/``subxidStates`` line is read. Besides these the backend
    reads ``MyProc->pgxactoff`` on its own PGPROC, a private line the formula does not count.
    """
    h = build_harness(algorithm, connections)
    me = h.running[0]
    delta = snapshot(h, me)  # the first call of a backend always takes the full path
    n = entries(h)
    own = h.own_pgproc_lines(me)
    xids = h.lines_of(h.shmem.xids, range(n), None)
    shared = delta.read - own
    assert shared == {h.lock_line, h.vc_line, h.header_line} | xids
    assert len(shared) == pg14_full_formula(n)
    assert delta.read & own == {h.line(h.shmem.pgproc, me.pgprocno, "pgxactoff")}
    if algorithm == "pgxact_split":  # no cache: the next call scans again
        again = h.measure(lambda: h.algorithm.get_snapshot(me))
        assert again.read - own == shared


@pytest.mark.parametrize("connections", CONNECTIONS)
def test_post14_reuse_path_reads_two_lines(connections: int) -> None:
    """14 reuse path (``GetSnapshotDataReuse``, pa:2122-2169@14): 2 lines, the lock line and the
    VariableCache line (``xactCompletionCount``), independent of N; the xmin store goes to the
    private PGPROC."""
    h = build_harness("post14", connections)
    me = h.running[0]
    delta = snapshot(h, me, warm_calls=1)
    assert delta.read == {h.lock_line, h.vc_line}
    assert delta.rmw == {h.lock_line}
    assert delta.written == {h.line(h.shmem.pgproc, me.pgprocno, "xmin")}
    assert me.record.reused_snapshots == 1
    assert me.record.full_snapshots == 1  # the warm-up call


@pytest.mark.parametrize("connections", CONNECTIONS)
def test_csn_snapshot_reads_one_counter_line_without_lock(connections: int) -> None:
    """CSN (csn-v8's ``GetSnapshotData``): 1 shared line read, the VariableCache line
    holding ``nextCommitSeqNo``, ``oldestActiveXid`` and ``latestCompletedXid``; no
    ProcArrayLock, no RMW, no O(N) term. Writes are own-PGPROC lines only (xmin, snapshotcsn)."""
    h = build_harness("csn", connections)
    me = h.running[0]
    delta = snapshot(h, me)
    counter = h.line(h.shmem.csn_counter, 0, "nextCommitSeqNo")
    assert counter == h.vc_line == h.line(h.shmem.variable_cache, 0, "oldestActiveXid")
    assert delta.read == {counter}
    assert delta.rmw == set()
    assert h.lock_line not in delta.table["line"].tolist()
    own = h.own_pgproc_lines(me)
    assert delta.written <= own
    assert h.line(h.shmem.pgproc, me.pgprocno, "xmin") in delta.written
    assert delta.count(counter, "loads") == 4  # oldestActiveXid x2, nextCommitSeqNo, xmax


@pytest.mark.parametrize("algorithm", LOCKED)
def test_snapshot_rmws_are_two_atomics_on_the_lock_line(algorithm: str) -> None:
    """A shared acquire and release of ProcArrayLock (lwlock.c) are 2 RMWs
    on its line (9.5+: read + CAS, then ``sub_fetch``; 9.1: two TAS of the spinlock), and no
    other line is RMW'd. In 9.5+ the acquire also reads the word first (1 load)."""
    h = build_harness(algorithm, 5)
    delta = snapshot(h, h.running[0])
    assert delta.rmw == {h.lock_line}
    assert delta.count(h.lock_line, "rmws") == 2
    if algorithm == "pg91":
        assert delta.count(h.lock_line, "loads") == 0
    else:
        assert delta.count(h.lock_line, "loads") == 1
        assert delta.count(h.lock_line, "stores") == 0


def test_pg91_spinlock_stores_on_the_lock_line() -> None:
    """9.1's LWLock: ``LWLockAcquire`` (lwlock.c:388-439@9.1) = TAS, ``shared++``, unlock store;
    ``LWLockRelease`` (:593-641@9.1) the same with ``shared--``. Per snapshot that is 2 TAS + 4
    plain stores on the lock line (counting one store per acquire and release would give
    "2 TAS + 2 W")."""
    h = build_harness("pg91", 5)
    delta = snapshot(h, h.running[0])
    assert delta.count(h.lock_line, "rmws") == 2
    assert delta.count(h.lock_line, "stores") == 4


@pytest.mark.parametrize("algorithm", [*LOCKED, "csn"])
def test_snapshot_writes_own_xmin_line_only_when_xmin_unset(algorithm: str) -> None:
    """pa:1408@9.1, pa:1708-1709@13, pa:2155-2156/2443-2444@14, csn-v8: the only data line written
    by a snapshot is the backend's own xmin line, and only if its xmin was unset. In pre14 that line
    is the shared PGXACT line every other snapshot scans; in 14 (and csn) the private PGPROC."""
    h = build_harness(algorithm, 5)
    me = h.running[0]
    own_xmin = (h.line(h.shmem.pgxact, me.pgprocno, "xmin") if algorithm == "pre14"
                else h.line(h.shmem.pgproc, me.pgprocno, "xmin"))
    unset = snapshot(h, me)
    data_written = unset.written - {h.lock_line}
    if algorithm == "csn":  # also the snapshot's CSN (own PGPROC)
        assert own_xmin in data_written
        assert data_written <= h.own_pgproc_lines(me)
    else:
        assert data_written == {own_xmin}
    scanned = unset.read - {h.lock_line, h.vc_line, h.header_line}
    if algorithm in ("pre14", "pg91"):
        assert own_xmin in scanned  # every snapshot's scan reads it, everyone else's too
    else:
        assert own_xmin not in scanned - h.own_pgproc_lines(me)  # only its owner touches it
    again = h.measure(lambda: h.algorithm.get_snapshot(me))  # xmin still set
    assert again.written - {h.lock_line} == set()


# ------------------------------------------------------------ test 2: lines per transaction


@pytest.mark.parametrize("algorithm", LOCKED)
def test_select_only_transaction_takes_four_proc_array_lock_atomics(algorithm: str) -> None:
    """pgbench -S per transaction: 2 GetSnapshotData calls = 2 shared acquire/release
    pairs = 4 RMWs on the ProcArrayLock line; no exclusive acquisition, and the end of a
    read-only transaction takes no ProcArrayLock (pa:433-437@13, pa:690-705@14)."""
    h, delta = select_only_transaction(algorithm)
    me = h.running[0]
    assert delta.count(h.lock_line, "rmws") == 4
    assert me.record.full_snapshots + me.record.reused_snapshots == 2


def test_csn_select_only_transaction_lock_atomics() -> None:
    """CSN (csn-v8): no lock in GetSnapshotData; ``ProcArrayEndTransaction`` takes
    ProcArrayLock *shared* even for read-only transactions: 2 RMWs per transaction."""
    h, delta = select_only_transaction("csn")
    me = h.running[0]
    assert delta.count(h.lock_line, "rmws") == 2
    assert me.record.full_snapshots == 2


def test_pre14_select_only_xmin_stores() -> None:
    """10-13 (snapmgr.c ``SnapshotResetXmin``, pa:433-437@13): 5 W xmin + 1 W vacuumFlags per
    transaction, all on the backend's PGXACT line, which is shared with other entries and read by
    every snapshot; lxid goes to the own PGPROC."""
    h, delta = select_only_transaction("pre14")
    me = h.running[0]
    assert count_stores(h, "PGXACT.xmin") == 5
    assert count_stores(h, "PGXACT.vacuumFlags") == 1
    line = h.line(h.shmem.pgxact, me.pgprocno, "xmin")
    assert delta.count(line, "stores") == 6
    neighbours = [b for b in h.backends if b is not me
                  and line in h.lines_of(h.shmem.pgxact, [b.pgprocno], None)]
    assert neighbours, "the own PGXACT line holds other backends' entries"
    assert count_stores(h, "PGPROC.lxid") == 2  # StartTransaction and ProcArrayEndTransaction
    assert h.line(h.shmem.pgproc, me.pgprocno, "lxid") != line


def test_pg91_select_only_xmin_and_lxid_stores_on_the_h_line() -> None:
    """9.1 (as 9.2-9.6, plus lxid on the same line): 6 W xmin (set, clear, set, clear,
    ProcArrayEndTransaction, AtEOXact_Snapshot) and 2 W lxid (StartTransaction,
    ProcArrayEndTransaction), all on the H line that every snapshot reads;
    ``ProcArrayEndTransaction`` also writes vacuumFlags there."""
    h, delta = select_only_transaction("pg91")
    me = h.running[0]
    assert count_stores(h, "PGPROC.xmin") == 6
    assert count_stores(h, "PGPROC.lxid") == 2
    assert count_stores(h, "PGPROC.vacuumFlags") == 1
    h_lines = h.lines_of(h.shmem.pgproc, [me.pgprocno], ("xid", "xmin", "vacuumFlags"))
    assert h.lines_of(h.shmem.pgproc, [me.pgprocno], ("lxid", "xmin")) <= h_lines
    written = delta.written - {h.lock_line}
    assert written == h_lines


@pytest.mark.parametrize("algorithm", ["post14", "pgxact_split"])
def test_pg14_select_only_xmin_stores_are_private(algorithm: str) -> None:
    """14 (pa:690-705@14): 5 W to ``PGPROC.xmin``, a line no other backend reads; no shared store.

    Three backends run transactions concurrently; the recorded operations of the other two (and
    every snapshot scan) never touch a backend's xmin line.
    """
    h = build_harness(algorithm, 6, active=(3, 4, 5))
    statements = transaction_statements("select-only")
    for _ in range(2):  # the first transaction's snapshots scan; in post14 the second reuses
        h.run(*(run_statements(h, b, statements) for b in h.running))
    for backend in h.running:
        mine = [(c, name) for c, _, op, name in h.log if op is Op.STORE and name == "PGPROC.xmin"
                and c == backend.connection]
        assert len(mine) == 2 * 5
        xmin_line = h.line(h.shmem.pgproc, backend.pgprocno, "xmin")
        others = {c for c, line, _, _ in h.log if line == xmin_line} - {backend.connection}
        assert others == set()
    stored = {line for _, line, op, _ in h.log if op is Op.STORE}
    scanned = {line for _, line, _, name in h.log if name == "scan"}
    assert scanned == h.lines_of(h.shmem.xids, range(len(h.procarray)), None)
    assert not stored & scanned


@pytest.mark.parametrize("algorithm", [*LOCKED, "csn"])
def test_select_only_takes_two_snapshots(algorithm: str) -> None:
    """pgbench -S: GetSnapshotData is called twice per read-only transaction (Bind and
    PortalStart) in every version; in 14 both are reuses once the cache is warm."""
    h, _ = select_only_transaction(algorithm)
    record = h.running[0].record
    assert record.full_snapshots + record.reused_snapshots == 2
    if algorithm == "post14":
        assert record.reused_snapshots == 2


# ---------------------------------------------------------- test 5: false sharing of PGXACT


def test_pre14_pgxact_false_sharing_across_sockets() -> None:
    """12-B PGXACT entries (proc.h:222-237@13), 5.33 per line: an idle entry's line is invalidated
    whenever an active neighbour on that line writes xmin. Two active pre14 backends on different
    sockets whose PGXACT entries share a line. Each writes its own xmin 5 times per transaction
    while the other's snapshots read the whole line (xid, xmin, vacuumFlags): the line shows remote
    HITM, some of it false sharing (a store to one entry's xmin finding the line dirty with the
    other entry's bytes), ``xmin`` among the fields written and ``xid`` among the fields read."""
    h = cross_socket_pair("pre14")
    a, b = h.running
    line = h.line(h.shmem.pgxact, a.pgprocno, "xmin")
    assert h.lines_of(h.shmem.pgxact, [a.pgprocno, b.pgprocno], None) == {line}
    assert len(set(sockets(h))) == 2
    table = run_pair(h, 20)
    assert len(set(sockets(h))) == 2  # nobody migrated
    row = table.loc[table["line"] == line].iloc[0]
    assert row["remote_hitm"] > 0
    assert row["false_sharing_hitm"] > 0
    assert "xmin" in row["fields_written"].split(", ")
    assert "xid" in row["fields_read"].split(", ")
    assert "xid" not in row["fields_written"].split(", ")


@pytest.mark.parametrize("algorithm", ["post14", "pgxact_split"])
def test_pg14_xids_lines_never_hitm_across_sockets(algorithm: str) -> None:
    """14 (proc.h:315-360@14: an entry is 4 read-only bytes in xids[]): the same cross-socket pair
    shows no HITM on the ``xids[]`` lines (written only at xid assignment and commit) and no HITM
    at all on the backends' xmin lines (private PGPROC)."""
    h = cross_socket_pair(algorithm)
    assert len(set(sockets(h))) == 2
    table = run_pair(h, 20)
    assert len(set(sockets(h))) == 2
    xids = h.lines_of(h.shmem.xids, range(len(h.procarray)), None)
    rows = table.loc[table["line"].isin(xids)]
    assert len(rows) == len(xids)
    assert rows["loads"].sum() > 0
    hitm = ["local_hitm", "remote_hitm", "false_sharing_hitm"]
    assert (rows[hitm] == 0).all().all()
    assert rows["stores"].sum() == 0
    xmin_lines = {h.line(h.shmem.pgproc, b.pgprocno, "xmin") for b in h.running}
    own = table.loc[table["line"].isin(xmin_lines)]
    assert (own[hitm] == 0).all().all()


# --------------------------------------------------------- test 6: one tpcb transaction, exactly


@pytest.mark.parametrize("algorithm", [*LOCKED, "csn"])
def test_tpcb_transaction_counts(algorithm: str) -> None:
    """pgbench's tpcb-like script, one transaction of one backend:

    * 10 GetSnapshotData calls (5 DML x 2); in 14 the first misses the cache (the backend's own
      previous commit bumped ``xactCompletionCount``) and the other 9 reuse it;
    * XidGenLock exclusive once: 2 RMWs on its line (acquire, release);
    * W nextXid once on the VariableCache line; at commit W latestCompletedXid (14: also
      ``xactCompletionCount++``; csn: CAS latestCompletedXid and fetch-add ``nextCommitSeqNo``);
    * ProcArrayLock: 2 RMWs per snapshot plus the exclusive (conditional) acquire and release at
      commit = 22 (csn: only the shared pair of ``ProcArrayEndTransaction``);
    * xmin stores: 10 sets + 11 clears = 21.
    """
    h, delta = tpcb_transaction(algorithm)
    me = h.running[0]
    record = me.record
    assert record.full_snapshots + record.reused_snapshots == 10
    if algorithm == "post14":
        assert (record.full_snapshots, record.reused_snapshots) == (1, 9)
    xid_gen = h.line(h.shmem.xid_gen_lock, 0, h.shmem.lwlock_word)
    assert delta.count(xid_gen, "rmws") == 2
    assert delta.count(h.lock_line, "rmws") == (2 if algorithm == "csn" else 22)
    next_xid = "nextFullXid" if algorithm == "pre14" else "nextXid"
    assert h.line(h.shmem.variable_cache, 0, next_xid) == h.vc_line
    assert count_stores(h, f"VariableCache.{next_xid}") == 1
    if algorithm == "csn":
        rmws = [name for _, line, op, name in h.log if op is Op.RMW and line == h.vc_line]
        assert sorted(rmws) == ["VariableCache.latestCompletedXid",
                                "VariableCache.nextCommitSeqNo"]
        # csn-v8 TransactionIdAsyncCommitTree: COMMITTING then the CSN, each CSNLogSetCommitSeqNo
        # under CSNLogControlLock shared (2 acquisitions = 4 RMWs), the whole commit under
        # CommitSeqNoLock shared.
        assert count_stores(h, "CSNLog") == 2
        csn_lock = h.line(h.shmem.csn_log_control_lock, 0, h.shmem.lwlock_word)
        seq_lock = h.line(h.shmem.commit_seq_no_lock, 0, h.shmem.lwlock_word)
        assert delta.count(csn_lock, "rmws") == 4
        assert delta.count(seq_lock, "rmws") == 2
    else:
        assert count_stores(h, "VariableCache.latestCompletedXid") == 1
    if algorithm in ("post14", "pgxact_split"):
        assert count_stores(h, "VariableCache.xactCompletionCount") == 1
        assert count_stores(h, "xids") == 2  # assignment and commit, the line every scan reads
    xmin = "PGXACT.xmin" if algorithm == "pre14" else "PGPROC.xmin"
    assert count_stores(h, xmin) == 21
    assert me.xid == 0  # committed


# ---------------------------------------------- 14 full path with xid holders (the A term)


def test_pg14_full_snapshot_reads_flags_of_other_xid_holders() -> None:
    """pa:2303-2387@14 (14 full path): an *other* entry whose xid is normal and < xmax
    costs its ``statusFlags`` line and its ``subxidStates`` line: with A = 1 such entry the
    snapshot reads 3 + ceil(4N/64) + 1 + 1 shared lines. Backend B holds xid 1000; C takes 1001
    and commits (latestCompletedXid = 1001, so xmax = 1002 > 1000); then A snapshots."""
    h = build_harness("pgxact_split", 6, active=(3, 4, 5))
    b, c, a = h.running
    alg = h.algorithm

    def setup() -> ProcessGenerator:
        yield from alg.assign_xid(b)
        yield from alg.assign_xid(c)
        yield from alg.end_transaction_with_xid(c)

    h.run(setup())
    assert b.xid == 1000
    assert h.procarray.latest_completed_xid == 1001
    delta = h.measure(lambda: alg.get_snapshot(a))
    n = entries(h)
    extras = {h.line(h.shmem.status_flags, b.index, None),
              h.line(h.shmem.subxid_states, b.index, None)}
    assert extras <= delta.read
    assert len(delta.read - h.own_pgproc_lines(a)) == pg14_full_formula(n) + 2


@pytest.mark.parametrize("holder", ["own", "newer"])
@pytest.mark.parametrize("algorithm", ["pgxact_split", "post14"])
def test_pg14_full_snapshot_skips_own_and_newer_xids(algorithm: str, holder: str) -> None:
    """pa:2323-2340@14: "If the entry is mine, or xid >= xmax, continue" comes before the
    ``statusFlags`` read. ``own``: the snapshotting backend holds an xid (tpcb after its first
    UPDATE), alone in holding one. ``newer``: another backend holds xid 1000 while
    latestCompletedXid is 999, so xmax = 1000 and that xid is skipped. Either way no
    ``statusFlags``/``subxidStates`` line is read: exactly 3 + ceil(4N/64) shared lines."""
    h = build_harness(algorithm, 5, active=(3, 4))
    other, me = h.running
    holder_backend = me if holder == "own" else other
    h.run(h.algorithm.assign_xid(holder_backend))
    assert holder_backend.xid == 1000
    assert h.procarray.latest_completed_xid == 999
    delta = h.measure(lambda: h.algorithm.get_snapshot(me))
    flags = {h.line(h.shmem.status_flags, holder_backend.index, None),
             h.line(h.shmem.subxid_states, holder_backend.index, None)}
    assert not flags & delta.read
    assert len(delta.read - h.own_pgproc_lines(me)) == pg14_full_formula(entries(h))


# ------------------------------------------------------- 9.6+ group clear of xids at commit


@pytest.mark.parametrize("algorithm", ["pre14", "pgxact_split", "post14"])
def test_commit_with_xid_joins_the_group_clear_when_the_lock_is_busy(algorithm: str) -> None:
    """9.6-13 and 14: a commit with an xid that finds ProcArrayLock busy joins the group clear,
    whose leader clears both entries (:func:`tests.models.harness.check_group_clear`)."""
    check_group_clear(algorithm)


@pytest.mark.parametrize(("algorithm", "private", "shared"), [
    ("pre14", ("lxid", "group_member"), ("xmin", "end", "assign_xid", "end_xid")),
    ("post14", ("xmin", "lxid", "end", "group_member"), ("my_slot", "assign_xid", "end_xid")),
    ("csn", ("lxid",), ()),
    ("pg91", (), ("xmin", "end")),  # 9.1's scan reads the xid/xmin line of every PGPROC
])
def test_own_pgproc_stores_are_private(algorithm: str, private: tuple[str, ...],
                                       shared: tuple[str, ...]) -> None:
    """Stores to a backend's own PGPROC lines nobody else reads need no synchronisation."""
    h = build_harness(algorithm, connections=6, active=(2, 5))
    for backend in h.backends:
        if backend.task is None:
            continue
        for name in private:
            assert h.algorithm.own(backend, name).private, (backend.connection, name)
        for name in shared:
            assert not h.algorithm.own(backend, name).private, (backend.connection, name)
