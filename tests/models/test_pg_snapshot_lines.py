"""Cache lines of single GetSnapshotData calls and single transactions, against PostgreSQL.

The access sequences are PostgreSQL's ``GetSnapshotData`` (pa = ``procarray.c``: pa:1225-1443@9.1,
pa:1504-1782@13, pa:2205-2555@14; the csn-v8 patch's for ``csn``) and a pgbench transaction's
path through postgres.c, pquery.c, snapmgr.c and ``ProcArrayEndTransaction``. The *formulas*
below count the shared lines these sequences touch: 3 (the ProcArrayLock line, the VariableCache
line, the ProcArray header line) plus the per-entry arrays the version scans.

The pieces are built directly, as :func:`snapsim_models.population.build_population` does
(``build_shared_memory``, ``Backend``, ``ProcArray``, ``TrackedMemory``, the algorithm, ``prepare``,
``build_machine``), so that one backend can run exactly one ``get_snapshot`` (or one transaction)
while the test compares ``Machine.line_table()`` before and after.

**N.** N counts procArray *entries*, launchers included (the autovacuum launcher; from 10 on also
the logical-replication launcher). Here a test parametrised by ``connections`` connects that many
clients (the snapshotting backend plus ``connections - 1`` idle ones, idle first as in
:mod:`snapsim_models.population`), so the procArray holds ``N = connections + launchers`` entries: 1
launcher for ``pg91``, 2 for every other version. The formulas are evaluated at that N.

**Counting.** A line is *read* when its loads or RMWs grew (an atomic reads its line), *RMW'd*
when its RMWs grew and *written* when its plain stores grew. The formulas count *shared* lines;
the snapshotting backend's own PGPROC lines are private in 14 and in the CSN model, and are
counted separately.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace

import pandas as pd
import pytest

from simulator.config.machine import LINE_BYTES, MachineConfig
from simulator.config.machine_file import load_machine
from simulator.hardware.codes import Op
from simulator.hardware.fields import describe_masks
from simulator.hardware.layout import Region
from simulator.hardware.layout_edits import LayoutEdit
from simulator.hardware.machine import Machine
from simulator.hardware.topology import Topology
from simulator.hardware.tracked import Ops, ScanPlan, TrackedMemory
from simulator.runtime.engine import ProcessGenerator, SimEnvironment
from simulator.runtime.scheduler import CpuScheduler, Task
from snapsim_models.backend import Backend, Category
from snapsim_models.costs import PgCosts, load_costs
from snapsim_models.lwlock import LockMode
from snapsim_models.procarray import ProcArray
from snapsim_models.shmem.build import build_shared_memory
from snapsim_models.shmem.memory import PgSharedMemory
from snapsim_models.snapshots import ALGORITHMS, SnapshotAlgorithm
from snapsim_models.workloads import Context, Statement, workload

GOLD: MachineConfig = replace(load_machine("gold5215-2s"), idle=None)
"""The Gold 5215 without idle states: these tests time their steps to the nanosecond."""
COSTS: PgCosts = load_costs()
CONNECTIONS = (1, 5, 100, 1000)
LOCKED = ("pg91", "pre14", "pgxact_split", "post14")
"""The algorithms that take ProcArrayLock in GetSnapshotData (all but ``csn``)."""


# ------------------------------------------------------------------------------------ harness


class RecordingBackend(Backend):
    """A backend that logs every memory operation it issues (ops and scans), then issues it.

    Log entries are ``(connection, line number, op, "region.field")``; line numbers are byte
    addresses // 64, as the layout's regions compute them (not the machine's line indices).
    """

    def __init__(self, log: list[tuple[int, int, Op, str]], *args: object) -> None:
        super().__init__(*args)  # type: ignore[arg-type]
        self.log = log

    def _number(self, index: int) -> int:
        assert self.machine is not None
        return int(self.machine.line_numbers[index])

    def ops(self, accesses: Ops, category: Category,
            lock_line: bool = False) -> ProcessGenerator:
        self.log.extend((self.connection, self._number(a.line), a.op, a.field)
                        for a in accesses)
        yield from super().ops(accesses, category, lock_line)

    def scan(self, plan: ScanPlan, cycles_per_entry: float,
             category: Category) -> ProcessGenerator:
        self.log.extend((self.connection, self._number(int(line)), Op.LOAD, "scan")
                        for line in plan.lines)
        yield from super().scan(plan, cycles_per_entry, category)


@dataclass(frozen=True)
class LineDelta:
    """What one measured step did, per tracked line (line *numbers*, not machine indices)."""

    table: pd.DataFrame
    """``line, label, loads, stores, rmws`` differences of the lines the step touched."""

    def lines(self, column: str) -> set[int]:
        return {int(x) for x in self.table.loc[self.table[column] > 0, "line"]}

    @property
    def read(self) -> set[int]:
        """Lines loaded or RMW'd (an atomic reads the line)."""
        t = self.table
        return {int(x) for x in t.loc[(t["loads"] > 0) | (t["rmws"] > 0), "line"]}

    @property
    def rmw(self) -> set[int]:
        return self.lines("rmws")

    @property
    def written(self) -> set[int]:
        return self.lines("stores")

    def count(self, line: int, column: str) -> int:
        rows = self.table.loc[self.table["line"] == line, column]
        return int(rows.iloc[0]) if len(rows) else 0


@dataclass
class PgHarness:
    """One version's shared memory, procArray and machine with some running backends."""

    name: str
    env: SimEnvironment
    scheduler: CpuScheduler
    shmem: PgSharedMemory
    backends: list[RecordingBackend]
    procarray: ProcArray
    algorithm: SnapshotAlgorithm
    machine: Machine
    log: list[tuple[int, int, Op, str]] = field(default_factory=list)

    @property
    def running(self) -> list[RecordingBackend]:
        return [b for b in self.backends if b.task is not None]

    def context(self) -> Context:
        return Context(self.algorithm, COSTS.statements, COSTS.footprint_private_bytes,
                       COSTS.footprint_l3_bytes)

    def run(self, *processes: ProcessGenerator) -> None:
        """Run processes concurrently to completion."""
        for process in processes:
            self.env.process(process)
        self.env.run()

    def measure(self, body: Callable[[], ProcessGenerator]) -> LineDelta:
        """Run ``body`` alone and return the per-line difference of the line table."""
        tables: list[pd.DataFrame] = []

        def process() -> ProcessGenerator:
            tables.append(self.machine.line_table())
            yield from body()
            tables.append(self.machine.line_table())

        self.run(process())
        before, after = tables
        columns = ["loads", "stores", "rmws"]
        diff = after[columns] - before[columns]
        diff.insert(0, "label", after["label"])
        diff.insert(0, "line", after["address"] // LINE_BYTES)
        touched = (diff[columns] > 0).any(axis=1)
        return LineDelta(diff[touched].reset_index(drop=True))

    # -------------------------------------------------------------- layout facts (the oracle)

    def line(self, region: Region | None, index: int, field_name: str | None) -> int:
        assert region is not None
        return region.line_of(index, field_name)

    def lines_of(self, region: Region | None, indices: Iterable[int],
                 fields: Iterable[str] | None) -> set[int]:
        assert region is not None
        names = None if fields is None else list(fields)
        result: set[int] = set()
        for index in indices:
            parts = (region.field_span(index, None) if names is None
                     else region.fields_span(index, names))
            result.update(part.line for part in parts)
        return result

    def own_pgproc_lines(self, backend: Backend) -> set[int]:
        return self.lines_of(self.shmem.pgproc, [backend.pgprocno], None)

    @property
    def lock_line(self) -> int:
        return self.line(self.shmem.proc_array_lock, 0, self.shmem.lwlock_word)

    @property
    def vc_line(self) -> int:
        return self.line(self.shmem.variable_cache, 0, "latestCompletedXid")

    @property
    def header_line(self) -> int:
        return self.line(self.shmem.procarray, 0, "numProcs")

    def launchers(self) -> int:
        return len(self.procarray) - len(self.backends)


def build_harness(algorithm: str, connections: int, active: Sequence[int] | None = None,
                  machine: MachineConfig = GOLD, pg91_pgproc_phase: int = 0,
                  layout_edits: Sequence[LayoutEdit] = ()) -> PgHarness:
    """``connections`` clients connected in order; ``active`` (default: the last) can run.

    The layout follows :mod:`snapsim_models.population`: ``max_connections = connections + 3``,
    connection k gets pgprocno ``max_connections - 1 - k`` and the launchers are added after the
    clients. ``layout_edits`` are layout what-ifs (``options.layout``).
    """
    active = (connections - 1,) if active is None else tuple(active)
    env = SimEnvironment(seed=0)
    scheduler = CpuScheduler.from_machine(env, machine)
    shmem = build_shared_memory(algorithm, max_connections=connections + 3,
                                pg91_pgproc_phase=pg91_pgproc_phase, layout_edits=layout_edits)
    log: list[tuple[int, int, Op, str]] = []
    backends: list[RecordingBackend] = []
    for k in range(connections):
        task: Task | None = scheduler.new_task(f"backend{k}") if k in active else None
        backends.append(RecordingBackend(log, env, None, machine.clock_ghz, k,
                                         shmem.pgprocno_for_connection(k), task))
    procs = shmem.procs
    launchers = [procs.autovacuum_launcher_pgprocno]
    if procs.logical_launcher_pgprocno is not None:
        launchers.append(procs.logical_launcher_pgprocno)
    procarray = ProcArray(shmem, backends, launchers)
    tracked = TrackedMemory(shmem.memory)
    alg = ALGORITHMS[algorithm](shmem, tracked, procarray, COSTS.scan, 256)
    alg.prepare([b for b in backends if b.task is not None])
    machine_model = tracked.build_machine(machine)
    for backend in backends:
        backend.machine = machine_model
    return PgHarness(algorithm, env, scheduler, shmem, backends, procarray, alg, machine_model,
                     log)


def snapshot(h: PgHarness, backend: Backend, warm_calls: int = 0) -> LineDelta:
    """Measure one GetSnapshotData by ``backend`` (its xmin unset).

    ``warm_calls`` earlier calls, each followed by an xmin clear, run first, unmeasured (post14
    then reuses its cached snapshot).
    """
    alg = h.algorithm

    def warm() -> ProcessGenerator:
        for _ in range(warm_calls):
            yield from alg.get_snapshot(backend)
            yield from alg.clear_xmin(backend)

    h.run(warm())
    return h.measure(lambda: alg.get_snapshot(backend))


def run_statements(h: PgHarness, backend: Backend, statements: Sequence[Statement]
                   ) -> ProcessGenerator:
    """One transaction of ``statements`` (a workload's round trips flattened), as a process."""
    ctx = h.context()
    backend.begin_transaction()
    for statement in statements:
        yield from statement(ctx, backend)
    backend.end_transaction()


def transaction_statements(name: str) -> list[Statement]:
    return [s for trip in workload(name).round_trips for s in trip]


# ----------------------------------------------------------------------- the formulas


def entries(h: PgHarness) -> int:
    return len(h.procarray)


def pg91_formula(n: int, h_lines_per_entry: float) -> float:
    """9.1: 3 + ceil((32+8N)/64) [procs[]] + h·N [H: xid, xmin, flags] + (N-1) [S: subxids]."""
    return 3 + math.ceil((32 + 8 * n) / 64) + h_lines_per_entry * n + (n - 1)


def pre14_formula(n: int, launchers: int) -> int:
    """9.2-13: 3 + ceil((40+4N)/64) [pgprocnos] + ceil(12N/64)+1 [PGXACT] (+1 per launcher)."""
    return 3 + math.ceil((40 + 4 * n) / 64) + math.ceil(12 * n / 64) + 1 + launchers


def pg14_full_formula(n: int) -> int:
    """14 full path without xid holders: 3 + ceil(4N/64) [xids]."""
    return 3 + math.ceil(4 * n / 64)


HEADER_COUNTED_TWICE = 1
"""The formulas' "3" includes the ProcArray header line, and so does the pgprocnos term: the
header (32 B in 9.1, 40 B in 9.4+) and the first array entries share its first line, so
ceil((40+4N)/64) already counts it. The formulas over-count by exactly this one line."""


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


def _select_only_transaction(algorithm: str, warm: int = 1) -> tuple[PgHarness, LineDelta]:
    """One warm-up transaction, then one measured select-only transaction (pgbench -S)."""
    h = build_harness(algorithm, 5)
    me = h.running[0]
    statements = transaction_statements("select-only")

    def warmup() -> ProcessGenerator:
        for _ in range(warm):
            yield from run_statements(h, me, statements)

    h.run(warmup())
    h.log.clear()
    delta = h.measure(lambda: run_statements(h, me, statements))
    return h, delta


def _stores(h: PgHarness, label: str) -> int:
    return sum(1 for _, _, op, name in h.log if op is Op.STORE and name == label)


@pytest.mark.parametrize("algorithm", LOCKED)
def test_select_only_transaction_takes_four_proc_array_lock_atomics(algorithm: str) -> None:
    """pgbench -S per transaction: 2 GetSnapshotData calls = 2 shared acquire/release
    pairs = 4 RMWs on the ProcArrayLock line; no exclusive acquisition, and the end of a
    read-only transaction takes no ProcArrayLock (pa:433-437@13, pa:690-705@14)."""
    h, delta = _select_only_transaction(algorithm)
    me = h.running[0]
    assert delta.count(h.lock_line, "rmws") == 4
    assert me.record.full_snapshots + me.record.reused_snapshots == 2


def test_csn_select_only_transaction_lock_atomics() -> None:
    """CSN (csn-v8): no lock in GetSnapshotData; ``ProcArrayEndTransaction`` takes
    ProcArrayLock *shared* even for read-only transactions: 2 RMWs per transaction."""
    h, delta = _select_only_transaction("csn")
    me = h.running[0]
    assert delta.count(h.lock_line, "rmws") == 2
    assert me.record.full_snapshots == 2


def test_pre14_select_only_xmin_stores() -> None:
    """10-13 (snapmgr.c ``SnapshotResetXmin``, pa:433-437@13): 5 W xmin + 1 W vacuumFlags per
    transaction, all on the backend's PGXACT line, which is shared with other entries and read by
    every snapshot; lxid goes to the own PGPROC."""
    h, delta = _select_only_transaction("pre14")
    me = h.running[0]
    assert _stores(h, "PGXACT.xmin") == 5
    assert _stores(h, "PGXACT.vacuumFlags") == 1
    line = h.line(h.shmem.pgxact, me.pgprocno, "xmin")
    assert delta.count(line, "stores") == 6
    neighbours = [b for b in h.backends if b is not me
                  and line in h.lines_of(h.shmem.pgxact, [b.pgprocno], None)]
    assert neighbours, "the own PGXACT line holds other backends' entries"
    assert _stores(h, "PGPROC.lxid") == 2  # StartTransaction and ProcArrayEndTransaction
    assert h.line(h.shmem.pgproc, me.pgprocno, "lxid") != line


def test_pg91_select_only_xmin_and_lxid_stores_on_the_h_line() -> None:
    """9.1 (as 9.2-9.6, plus lxid on the same line): 6 W xmin (set, clear, set, clear,
    ProcArrayEndTransaction, AtEOXact_Snapshot) and 2 W lxid (StartTransaction,
    ProcArrayEndTransaction), all on the H line that every snapshot reads;
    ``ProcArrayEndTransaction`` also writes vacuumFlags there."""
    h, delta = _select_only_transaction("pg91")
    me = h.running[0]
    assert _stores(h, "PGPROC.xmin") == 6
    assert _stores(h, "PGPROC.lxid") == 2
    assert _stores(h, "PGPROC.vacuumFlags") == 1
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
    h, _ = _select_only_transaction(algorithm)
    record = h.running[0].record
    assert record.full_snapshots + record.reused_snapshots == 2
    if algorithm == "post14":
        assert record.reused_snapshots == 2


# ---------------------------------------------------------- test 5: false sharing of PGXACT


def cross_socket_pair(algorithm: str, layout_edits: Sequence[LayoutEdit] = ()) -> PgHarness:
    """Two active backends with adjacent pgprocnos, placed on different sockets.

    The scheduler places deterministically (previous thread, else the lowest fully idle core, see
    :mod:`simulator.runtime.scheduler`) and a backend that never blocks keeps its thread. Backend A
    is
    placed first (core 0, socket 0); then nine filler tasks that spin for the whole run take the
    other cores of socket 0, so backend B lands on the lowest fully idle core, on socket 1.
    """
    h = build_harness(algorithm, 2, active=(0, 1), layout_edits=layout_edits)
    a, b = h.running
    fillers = [h.scheduler.new_task(f"filler{i}")
               for i in range(GOLD.topology.cores_per_domain - 1)]

    def spin(task: Task) -> ProcessGenerator:
        yield from task.run(1e9)

    def place(backend: Backend) -> ProcessGenerator:
        yield from backend.compute(1.0, Category.OTHER)
        yield from backend.flush()  # spend it now: the backend takes a thread

    h.env.process(place(a))
    h.env.run(until=10_000)
    for task in fillers:
        h.env.process(spin(task))
    h.env.run(until=20_000)
    h.env.process(place(b))
    h.env.run(until=30_000)
    return h


def run_pair(h: PgHarness, transactions: int) -> pd.DataFrame:
    statements = transaction_statements("select-only")

    def loop(backend: Backend) -> ProcessGenerator:
        for _ in range(transactions):
            yield from run_statements(h, backend, statements)

    for backend in h.running:
        h.env.process(loop(backend))
    h.env.run(until=h.env.now + 5e8)
    table = h.machine.line_table()
    read, written = describe_masks(h.shmem.memory, h.machine)
    table["fields_read"] = read
    table["fields_written"] = written
    table["line"] = table["address"] // LINE_BYTES
    return table


def sockets(h: PgHarness) -> list[int]:
    topology = Topology.from_config(GOLD)
    return [topology.socket_of(b.task.location()[0]) for b in h.running]  # type: ignore[union-attr]


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


def _tpcb_transaction(algorithm: str) -> tuple[PgHarness, LineDelta]:
    """One warm-up tpcb transaction, then one measured, by a single backend."""
    h = build_harness(algorithm, 5)
    me = h.running[0]
    statements = transaction_statements("tpcb")
    h.run(run_statements(h, me, statements))
    h.log.clear()
    delta = h.measure(lambda: run_statements(h, me, statements))
    return h, delta


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
    h, delta = _tpcb_transaction(algorithm)
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
    assert _stores(h, f"VariableCache.{next_xid}") == 1
    if algorithm == "csn":
        rmws = [name for _, line, op, name in h.log if op is Op.RMW and line == h.vc_line]
        assert sorted(rmws) == ["VariableCache.latestCompletedXid",
                                "VariableCache.nextCommitSeqNo"]
        # csn-v8 TransactionIdAsyncCommitTree: COMMITTING then the CSN, each CSNLogSetCommitSeqNo
        # under CSNLogControlLock shared (2 acquisitions = 4 RMWs), the whole commit under
        # CommitSeqNoLock shared.
        assert _stores(h, "CSNLog") == 2
        csn_lock = h.line(h.shmem.csn_log_control_lock, 0, h.shmem.lwlock_word)
        seq_lock = h.line(h.shmem.commit_seq_no_lock, 0, h.shmem.lwlock_word)
        assert delta.count(csn_lock, "rmws") == 4
        assert delta.count(seq_lock, "rmws") == 2
    else:
        assert _stores(h, "VariableCache.latestCompletedXid") == 1
    if algorithm in ("post14", "pgxact_split"):
        assert _stores(h, "VariableCache.xactCompletionCount") == 1
        assert _stores(h, "xids") == 2  # assignment and commit, the line every scan reads
    xmin = "PGXACT.xmin" if algorithm == "pre14" else "PGPROC.xmin"
    assert _stores(h, xmin) == 21
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
    """9.6-13 and 14 (pa:416, 485-590@13): ``LWLockConditionalAcquire(ProcArrayLock, LW_EXCLUSIVE)``
    fails while A holds the lock shared, so B and C push themselves on ``procArrayGroupFirst`` (a
    CAS each on the PROC_HDR line). B, first, leads: it waits for the lock exclusively, detaches the
    list (one more RMW), clears *both* entries (C's xid slot is written by B), releases and wakes C,
    which slept meanwhile and never took ProcArrayLock beyond its one failed attempt."""
    h = build_harness(algorithm, 5, active=(2, 3, 4))
    a, b, c = h.running
    alg = h.algorithm
    lock = alg.proc_array_lock
    h.run(alg.assign_xid(b), alg.assign_xid(c))
    assert {b.xid, c.xid} == {1000, 1001}
    completions = h.procarray.completion_count
    h.log.clear()
    release_at = 50_000.0
    finished: dict[int, float] = {}

    def holder() -> ProcessGenerator:
        yield from lock.acquire(a, LockMode.SHARED, Category.OTHER)
        yield from a.sleep(h.env.timeout(release_at), Category.OTHER)
        yield from lock.release(a, LockMode.SHARED, Category.OTHER)

    def committer(backend: Backend, delay: float) -> ProcessGenerator:
        yield h.env.timeout(delay)
        yield from alg.end_transaction_with_xid(backend)
        finished[backend.connection] = h.env.now

    h.run(holder(), committer(b, 5_000.0), committer(c, 10_000.0))
    assert b.xid == c.xid == 0
    assert h.procarray.latest_completed_xid == 1001
    assert h.procarray.completion_count == completions + 2
    assert not lock.held
    assert min(finished.values()) >= release_at  # nobody committed while A held the lock
    assert c.record.times_ns[Category.LOCK_WAIT] > 0  # C slept on its semaphore

    group_line = h.line(h.shmem.proc_hdr, 0, "procArrayGroupFirst")
    rmws = [conn for conn, line, op, _ in h.log if line == group_line and op is Op.RMW]
    assert sorted(rmws) == sorted([b.connection, c.connection, b.connection])
    lock_rmws = [conn for conn, line, op, _ in h.log if line == h.lock_line and op is Op.RMW]
    assert lock_rmws.count(c.connection) == 1  # the failed conditional attempt only
    if algorithm == "pre14":
        c_xid_line = h.line(h.shmem.pgxact, c.pgprocno, "xid")
        xid_field = "PGXACT.xid"
    else:
        c_xid_line = h.line(h.shmem.xids, c.index, None)
        xid_field = "xids"
    xid_clears = [(conn, line) for conn, line, op, name in h.log
                  if op is Op.STORE and name == xid_field]
    assert (b.connection, c_xid_line) in xid_clears  # the leader clears the member's entry
    assert all(conn == b.connection for conn, _ in xid_clears)


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
