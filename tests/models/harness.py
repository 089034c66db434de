"""The line-exact harness of the PostgreSQL model's tests: one version's pieces, built by hand.

The pieces are built directly, as :func:`snapsim_models.population.build_population` does
(``build_shared_memory``, ``Backend``, ``ProcArray``, ``TrackedMemory``, the algorithm, ``prepare``,
``build_machine``), so that one backend can run exactly one ``get_snapshot`` (or one transaction)
while a test compares ``Machine.line_table()`` before and after (:meth:`PgHarness.measure`).

**N.** N counts procArray *entries*, launchers included (the autovacuum launcher; from 10 on also
the logical-replication launcher). :func:`build_harness` connects ``connections`` clients (the
snapshotting backend plus ``connections - 1`` idle ones, idle first as in
:mod:`snapsim_models.population`), so the procArray holds ``N = connections + launchers`` entries: 1
launcher for ``pg91``, 2 for every other version. The formulas are evaluated at that N.

**Counting.** A line is *read* when its loads or RMWs grew (an atomic reads its line), *RMW'd*
when its RMWs grew and *written* when its plain stores grew. The formulas count *shared* lines;
the snapshotting backend's own PGPROC lines are private in 14 and in the CSN model, and are
counted separately.

Besides the harness: the line formulas of the versions' snapshots, measured transactions
(:func:`select_only_transaction`, :func:`tpcb_transaction`), a pair of backends on two sockets
(:func:`cross_socket_pair`) and the group-clear check (:func:`check_group_clear`) that the
versions with the 9.6+ group clear share.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace

import pandas as pd

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
from simulator.runtime.scheduler import CpuScheduler
from simulator.runtime.task import Task
from snapsim_models.backend import Backend, Category
from snapsim_models.costs import PgCosts, load_costs
from snapsim_models.lwlock import LockMode
from snapsim_models.procarray import ProcArray
from snapsim_models.shmem.build import build_shared_memory
from snapsim_models.shmem.memory import PgSharedMemory
from snapsim_models.snapshots import ALGORITHMS, SnapshotAlgorithm
from snapsim_models.workloads import Context, Statement, workload
from tests.models.points import default_options

GOLD: MachineConfig = replace(load_machine("gold5215-2s"), idle=None)
"""The Gold 5215 without idle states: these tests time their steps to the nanosecond."""
COSTS: PgCosts = load_costs()
CONNECTIONS = (1, 5, 100, 1000)
"""The client counts the line formulas are checked at."""


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
    shmem = build_shared_memory(ALGORITHMS[algorithm], max_connections=connections + 3,
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
    options = replace(default_options(), costs=COSTS, entries_per_chunk=256)
    alg = ALGORITHMS[algorithm](shmem, tracked, procarray, options)
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



# ------------------------------------------------------------------- measured transactions


def select_only_transaction(algorithm: str, warm: int = 1) -> tuple[PgHarness, LineDelta]:
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


def count_stores(h: PgHarness, label: str) -> int:
    return sum(1 for _, _, op, name in h.log if op is Op.STORE and name == label)



def tpcb_transaction(algorithm: str) -> tuple[PgHarness, LineDelta]:
    """One warm-up tpcb transaction, then one measured, by a single backend."""
    h = build_harness(algorithm, 5)
    me = h.running[0]
    statements = transaction_statements("tpcb")
    h.run(run_statements(h, me, statements))
    h.log.clear()
    delta = h.measure(lambda: run_statements(h, me, statements))
    return h, delta



# ------------------------------------------------------------------- two sockets


def cross_socket_pair(algorithm: str, layout_edits: Sequence[LayoutEdit] = ()) -> PgHarness:
    """Two active backends with adjacent pgprocnos, placed on different sockets.

    The scheduler places deterministically (previous thread, else, for a task not declared busy,
    the lowest fully idle core, see ``docs/scheduler.md``) and a backend that never blocks keeps
    its thread. Backend A is placed
    first (core 0, socket 0); then nine filler tasks that spin for the whole run take the
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



# ------------------------------------------------------- 9.6+ group clear of xids at commit


def check_group_clear(algorithm: str) -> None:
    """Check the 9.6+ group clear of ``algorithm`` (pa:416, 485-590@13).

    ``LWLockConditionalAcquire(ProcArrayLock, LW_EXCLUSIVE)`` fails while A holds the lock
    shared, so B and C push themselves on ``procArrayGroupFirst`` (a CAS each on the PROC_HDR
    line). B, first, leads: it waits for the lock exclusively, detaches the list (one more RMW),
    clears *both* entries (C's xid slot is written by B), releases and wakes C, which slept
    meanwhile and never took ProcArrayLock beyond its one failed attempt.
    """
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

