"""Connections that come and go (``options.churn``): each version's connect and disconnect.

Whole runs, options and the command line are in ``test_pg_churn``.

The hand-derived counts below follow PostgreSQL's ``ProcArrayAdd`` and ``ProcArrayRemove``
(procarray.c@13, @14; pa:274/323@9.1) and ``InitProcess``/``ProcKill`` (proc.c) for a small
procArray, built as :func:`snapsim_models.population.build_population` builds a point's:

* 5 clients connect (4 idle, then 1 active) with ``max_connections = 5 + 3 + 64`` (the 64 slots of
  the pool), so they hold pgprocnos 71..67 and the launchers 75 (autovacuum) and 83 (logical
  replication; not in 9.1): N = 7 entries (6 in 9.1), sorted ``[67, 68, 69, 70, 71, 75, 83]``.
* The free list's top is 66 (below every client's): a connecting backend takes it and, the array
  being sorted, inserts at index 0, in front of all N entries.

Lines are line numbers (byte address // 64), the layout being the oracle.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace

import pandas as pd
import pytest

from simulator.config.machine import LINE_BYTES
from simulator.config.machine_file import load_machine
from simulator.hardware.layout import Region
from simulator.runtime.engine import ProcessGenerator, SimEnvironment
from simulator.runtime.scheduler import CpuScheduler
from snapsim_models.backend import Backend
from snapsim_models.churn import churn_slots
from snapsim_models.costs import load_costs
from snapsim_models.lwlock import LockMode
from snapsim_models.population import Population, build_population
from snapsim_models.snapshots import ALGORITHMS, PgxactSplit, Post14
from tests.models.points import point

GOLD = replace(load_machine("gold5215-2s"), idle=None)
"""The Gold 5215 without idle states (the steps are timed to the nanosecond)."""
COSTS = load_costs()
IDLE, ACTIVE = 4, 1
SLOTS = 64


# ------------------------------------------------------------------------------------ harness


@dataclass
class Delta:
    """Per-line differences of one measured step."""

    table: pd.DataFrame

    def lines(self, *columns: str) -> set[int]:
        t = self.table
        touched = (t[list(columns)] > 0).any(axis=1)
        return {int(x) for x in t.loc[touched, "line"]}

    @property
    def read(self) -> set[int]:
        return self.lines("loads", "rmws")

    @property
    def written(self) -> set[int]:
        return self.lines("stores")

    @property
    def rmw(self) -> set[int]:
        return self.lines("rmws")


@dataclass
class Churn:
    """A population with the pool's slots, and the algorithm's locks' grants."""

    algorithm: str
    env: SimEnvironment
    scheduler: CpuScheduler
    population: Population

    def measure(self, body: Callable[[], ProcessGenerator]) -> Delta:
        machine = self.population.machine
        tables: list[pd.DataFrame] = []

        def process() -> ProcessGenerator:
            tables.append(machine.line_table())
            yield from body()
            tables.append(machine.line_table())

        self.env.process(process())
        self.env.run()
        before, after = tables
        columns = ["loads", "stores", "rmws"]
        diff = after[columns] - before[columns]
        diff.insert(0, "line", after["address"] // LINE_BYTES)
        return Delta(diff[(diff[columns] > 0).any(axis=1)].reset_index(drop=True))

    def grants(self) -> tuple[int, int]:
        """Exclusive acquisitions granted so far of ProcArrayLock and XidGenLock."""
        alg = self.population.algorithm
        return (alg.proc_array_lock.grants[LockMode.EXCLUSIVE],
                alg.xid_gen_lock.grants[LockMode.EXCLUSIVE])

    def new_process(self) -> Backend:
        """Pop the top slot of the free list and start a process in it (as the postmaster's
        child does before ``InitProcess``)."""
        free = self.population.free
        assert free is not None
        pgprocno = free.stack.pop()
        backend = self.population.pool[pgprocno]
        backend.start_process(self.scheduler.new_task(f"churn{pgprocno}"))
        return backend

    def connect(self, backend: Backend) -> Delta:
        alg = self.population.algorithm
        return self.measure(lambda: _chain(alg.init_process(backend),
                                           alg.proc_array_add(backend)))

    def disconnect(self, backend: Backend) -> Delta:
        alg = self.population.algorithm

        def body() -> ProcessGenerator:
            yield from alg.proc_array_remove(backend)
            yield from alg.proc_kill(backend)
            yield from backend.flush()

        delta = self.measure(body)
        assert self.population.free is not None
        self.population.free.push(backend.pgprocno)
        return delta

    # ------------------------------------------------------------ layout facts (the oracle)

    def lines_of(self, region: Region | None, indices: range | list[int],
                 field: str | None = None) -> set[int]:
        assert region is not None
        return {part.line for index in indices for part in region.field_span(index, field)}

    def pgproc_lines(self, pgprocno: int) -> set[int]:
        return self.lines_of(self.population.shmem.pgproc, [pgprocno])

    @property
    def others(self) -> list[int]:
        """The pgprocnos in the array besides a connecting one (clients and launchers)."""
        return [p for p in self.population.procarray.entries if p not in self.population.pool]


def _chain(*steps: ProcessGenerator) -> ProcessGenerator:
    for step in steps:
        yield from step


def build(algorithm: str, idle: int = IDLE, active: int = ACTIVE) -> Churn:
    env = SimEnvironment(seed=0)
    scheduler = CpuScheduler.from_machine(env, GOLD)
    # Any rate of connections provides the pool of SLOTS slots (churn_slots).
    spec, options = point(GOLD, algorithm, clients=active, idle_clients=idle, costs=COSTS,
                          entries_per_chunk=256, run_ahead_ns=0.0, churn_rate_per_s=1.0)
    population = build_population(env, scheduler, spec, options)
    assert len(population.pool) == SLOTS
    return Churn(algorithm, env, scheduler, population)


# --------------------------------------------------------------------- the layout of the tests


@pytest.mark.parametrize(("algorithm", "entries"), [
    ("pre14", [67, 68, 69, 70, 71, 75, 83]), ("post14", [67, 68, 69, 70, 71, 75, 83]),
    ("pg91", [71, 70, 69, 68, 67, 75])])
def test_the_small_procarray_and_the_free_lists_top(algorithm: str, entries: list[int]) -> None:
    c = build(algorithm)
    procarray = c.population.procarray
    assert procarray.entries == entries
    assert c.population.shmem.procs.max_connections == 5 + 3 + SLOTS
    free = c.population.free
    assert free is not None
    assert free.stack[-1] == 66
    assert sorted(c.population.pool) == list(range(3, 67))
    assert procarray.capacity == len(entries) + SLOTS


def test_slots_come_in_blocks_of_64() -> None:
    assert churn_slots(0, False, 48) == 0
    assert churn_slots(1000, False, 48) == 64
    assert churn_slots(0, True, 48) == 128
    assert churn_slots(1000, True, 48) == 192


# ---------------------------------------------------------------- connect: 13 against 14


def test_pre14_connect_moves_pgprocnos_and_touches_no_other_backend() -> None:
    """13, N = 7, insert at 0: ProcArrayLock exclusive once (no XidGenLock); the search reads
    ``pgprocnos[0]``; the memmove reads ``pgprocnos[0..6]`` and writes ``[0..7]``: bytes 40..71
    of the 128-aligned ProcArrayStruct, its header line (which holds ``numProcs``, 0..39, and
    entries 0..5) and the next line: ceil((40 + 4·8)/64) = 2 lines, both read and written. No
    PGPROC or PGXACT of another backend is written; the connecting backend writes its own
    PGXACT entry (slot 66: bytes 792..803, the line of slots 64..69, which it shares with the
    clients 67-69) and its own PGPROC lines; ``ProcStructLock`` and ``freeProcs`` (PROC_HDR
    line 0) for the pop."""
    c = build("pre14")
    shm = c.population.shmem
    me = c.new_process()
    before = c.grants()
    delta = c.connect(me)
    assert (c.grants()[0] - before[0], c.grants()[1] - before[1]) == (1, 0)
    assert c.population.procarray.entries[0] == me.pgprocno == 66
    assert me.index == 0
    array = c.lines_of(shm.pgprocnos, range(8))
    assert len(array) == math.ceil((40 + 4 * 8) / 64) == 2
    header = c.lines_of(shm.procarray, [0], "numProcs")
    assert header <= array
    lock = c.lines_of(shm.proc_array_lock, [0], shm.lwlock_word)
    assert delta.rmw == lock | c.lines_of(shm.proc_struct_lock, [0], "value")
    others = set().union(*(c.pgproc_lines(p) for p in range(67, 72)))
    assert not delta.read & others
    assert not delta.written & others
    own_pgxact = c.lines_of(shm.pgxact, [66], "xid")
    assert own_pgxact == c.lines_of(shm.pgxact, [64, 69], "xid")  # shared with slots 64..69
    free_procs = c.lines_of(shm.proc_hdr, [0], "freeProcs")
    expected_written = (array | own_pgxact | free_procs
                        | c.lines_of(shm.proc_struct_lock, [0], "value")
                        | c.pgproc_lines(66))
    assert array | own_pgxact | free_procs <= delta.written <= expected_written


def test_post14_connect_moves_four_arrays_and_writes_every_later_pgproc() -> None:
    """14, N = 7, insert at 0: ProcArrayLock and XidGenLock exclusive once each; the four
    arrays' elements 0..7 are read and written (``pgprocnos``: 2 lines as in 13; ``xids`` 4 B,
    ``subxidStates`` 2 B and ``statusFlags`` 1 B, each 128-aligned: 1 line each), and the
    ``pgxactoff`` of all N = 7 later entries is written, one line of each of their PGPROCs:
    N + 2 + 3 = 12 shared lines written besides the connecting backend's own, the pop's and
    the locks'."""
    c = build("post14")
    shm = c.population.shmem
    me = c.new_process()
    later = list(c.population.procarray.entries)
    before = c.grants()
    delta = c.connect(me)
    assert (c.grants()[0] - before[0], c.grants()[1] - before[1]) == (1, 1)
    assert me.index == 0
    assert [c.population.pool.get(p) is None for p in later] == [True] * 7
    arrays = (c.lines_of(shm.pgprocnos, range(8)) | c.lines_of(shm.xids, range(8))
              | c.lines_of(shm.subxid_states, range(8)) | c.lines_of(shm.status_flags, range(8)))
    assert len(arrays) == 2 + 1 + 1 + 1
    offsets = {line for p in later for line in c.lines_of(shm.pgproc, [p], "pgxactoff")}
    assert len(offsets) == 7
    assert arrays <= delta.read
    assert arrays | offsets <= delta.written
    others = set().union(*(c.pgproc_lines(p) for p in later))
    assert delta.written & others == offsets  # only pgxactoff in the other PGPROCs
    assert not delta.read & others - offsets
    own = (c.pgproc_lines(66) | c.lines_of(shm.proc_hdr, [0], "freeProcs")
           | c.lines_of(shm.proc_struct_lock, [0], "value"))
    shared_written = delta.written - own
    assert shared_written == arrays | offsets
    assert len(shared_written) == 7 + 5
    locks = (c.lines_of(shm.proc_array_lock, [0], shm.lwlock_word)
             | c.lines_of(shm.xid_gen_lock, [0], shm.lwlock_word))
    assert delta.rmw == locks | c.lines_of(shm.proc_struct_lock, [0], "value")


@pytest.mark.parametrize("idle", [4, 60])
def test_post14_connect_formula(idle: int) -> None:
    """14's connect at index 0 of N entries writes N PGPROC lines and
    ceil((40 + 4(N+1))/64) + ceil(4(N+1)/64) + ceil(2(N+1)/64) + ceil((N+1)/64) array lines;
    13's the pgprocnos lines only."""
    for algorithm in ("pre14", "post14"):
        c = build(algorithm, idle=idle)
        shm = c.population.shmem
        n = len(c.population.procarray)
        me = c.new_process()
        delta = c.connect(me)
        own = (c.pgproc_lines(me.pgprocno) | c.lines_of(shm.proc_hdr, [0], "freeProcs")
               | c.lines_of(shm.proc_struct_lock, [0], "value"))
        if algorithm == "pre14":
            own |= c.lines_of(shm.pgxact, [me.pgprocno], "xid")
        arrays = math.ceil((40 + 4 * (n + 1)) / 64)
        if algorithm == "post14":
            arrays += (math.ceil(4 * (n + 1) / 64) + math.ceil(2 * (n + 1) / 64)
                       + math.ceil((n + 1) / 64))
        pgprocs = n if algorithm == "post14" else 0
        assert len(delta.written - own) == arrays + pgprocs


# ---------------------------------------------------------------------------- disconnect


def test_disconnects_undo_the_connect_and_the_next_connect_reuses_the_slot() -> None:
    """ProcArrayRemove of the entry at 0: 13 memmoves ``pgprocnos`` down (2 lines), 14 the four
    arrays and the ``pgxactoff`` of the 7 later entries; ``ProcKill`` pushes 66 back, so the
    next ``InitProcess`` pops 66 again and inserts at 0 again."""
    for algorithm, (exclusive, xid_gen, pgprocs) in {"pre14": (1, 0, 0),
                                                      "post14": (1, 1, 7)}.items():
        c = build(algorithm)
        shm = c.population.shmem
        me = c.new_process()
        later = list(c.population.procarray.entries)
        c.connect(me)
        before = c.grants()
        delta = c.disconnect(me)
        assert (c.grants()[0] - before[0], c.grants()[1] - before[1]) == (exclusive, xid_gen)
        assert c.population.procarray.entries == later
        assert me.index == -1
        assert sorted(b.index for b in c.population.procarray._backends.values()) == list(range(5))
        others = set().union(*(c.pgproc_lines(p) for p in later))
        assert len(delta.written & others) == pgprocs
        assert c.lines_of(shm.pgprocnos, range(8)) <= delta.written
        free = c.population.free
        assert free is not None
        assert free.stack[-1] == 66
        again = c.new_process()
        assert again is me
        c.connect(again)
        assert again.index == 0


def test_pg91_appends_and_swaps_the_last_entry_in() -> None:
    """9.1: the connect appends (``procs[6]``, one store, no move), the disconnect of an entry
    in the middle moves the last one into its slot; ProcArrayLock exclusive each time."""
    c = build("pg91")
    shm = c.population.shmem
    first = c.new_process()
    delta = c.connect(first)
    assert first.index == 6
    assert c.lines_of(shm.pgprocnos, [6]) <= delta.written
    header = c.lines_of(shm.procarray, [0], "numProcs")  # with procs[0..3] (32 + 4 x 8 B)
    procs = c.lines_of(shm.pgprocnos, range(8))
    assert delta.written & procs == c.lines_of(shm.pgprocnos, [6]) | header
    assert len(delta.written & procs) == 2
    second = c.new_process()
    c.connect(second)
    assert c.population.procarray.entries == [71, 70, 69, 68, 67, 75, 66, 65]
    before = c.grants()
    c.disconnect(first)
    assert c.grants()[0] - before[0] == 1
    assert c.population.procarray.entries == [71, 70, 69, 68, 67, 75, 65]
    assert second.index == 6


def test_the_snapshot_scan_follows_the_entries() -> None:
    """After a connect, 13's snapshot scans the new entry's PGXACT and 14's the N+1 ``xids``;
    a client's own slot accesses follow its moved index (14: ``xids[pgxactoff]``)."""
    c = build("pre14")
    me = c.new_process()
    c.connect(me)
    alg = c.population.algorithm
    shm = c.population.shmem
    client = c.population.connections[-1].backend
    delta = c.measure(lambda: alg.get_snapshot(client))
    assert c.lines_of(shm.pgxact, [66], "xid") <= delta.read
    c14 = build("post14")
    me14 = c14.new_process()
    client14 = c14.population.connections[-1].backend
    index = client14.index
    c14.connect(me14)
    assert client14.index == index + 1
    xids = c14.population.shmem.xids
    assert xids is not None
    slot = c14.population.algorithm.own(client14, "my_slot")
    assert {c14.population.machine.line_numbers[a.line] for a in slot} >= c14.lines_of(
        xids, [index + 1])


# --------------------------------------------------------------------------- mutations


class _NoOffsets(Post14):
    """Mutation: 14's moves without rewriting the later backends' ``pgxactoff``."""

    def _offsets(self, pgprocnos: tuple[int, ...]) -> None:
        return None


class _NoXidGenLock(Post14):
    """Mutation: 14's moves under ProcArrayLock alone."""

    churn_takes_xid_gen_lock = False


@pytest.mark.parametrize(("mutant", "check"), [
    (_NoOffsets, test_post14_connect_moves_four_arrays_and_writes_every_later_pgproc),
    (_NoOffsets, lambda: test_post14_connect_formula(4)),
    (_NoXidGenLock, test_post14_connect_moves_four_arrays_and_writes_every_later_pgproc),
    (_NoXidGenLock, test_disconnects_undo_the_connect_and_the_next_connect_reuses_the_slot),
])
def test_mutations_fail_the_tests(monkeypatch: pytest.MonkeyPatch, mutant: type[PgxactSplit],
                                  check: Callable[[], None]) -> None:
    """Dropping 14's ``pgxactoff`` rewrites or its XidGenLock acquisition is caught."""
    monkeypatch.setitem(ALGORITHMS, "post14", mutant)
    with pytest.raises(AssertionError):
        check()
