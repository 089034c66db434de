"""Connections that come and go (``options.churn``): the PGPROC free list and a backend's life.

A connection's life in PostgreSQL 9.1-14 (``BackendStartup`` in postmaster.c, ``InitProcess``,
``InitProcessPhase2``, ``ProcKill`` and ``RemoveProcFromArray`` in proc.c, ``InitPostgres`` in
postinit.c):

1. the postmaster accepts the connection and forks the backend (serial in the one postmaster;
   cost entry ``connection.postmaster``, which also covers reaping the child later);
2. the child's ``InitProcess`` pops a PGPROC from the LIFO ``freeProcs`` list under
   ``ProcStructLock`` and initialises its own fields;
3. ``InitPostgres`` adds it to the procArray (``InitProcessPhase2`` → ``ProcArrayAdd``), builds
   its caches, runs a start-up transaction that takes one snapshot (``GetTransactionSnapshot``)
   and authenticates the client (``connection.backend_startup``), then the backend sends
   ReadyForQuery;
4. the client's transactions;
5. at exit, ``proc_exit``'s callbacks (``connection.backend_exit``), ``RemoveProcFromArray`` →
   ``ProcArrayRemove``, and ``ProcKill``, which pushes the PGPROC back on top of the free list:
   the next connection pops the same slot.

Steps 2, 3's ``ProcArrayAdd`` and snapshot and 5's ``ProcArrayRemove`` and ``ProcKill`` are the
snapshot algorithm's memory operations
(:class:`~snapsim_models.snapshots.base.SnapshotAlgorithm`); the rest is private CPU work from the
cost model (:class:`~snapsim_models.costs.ConnectionCosts`).
:func:`start_backend` and :func:`exit_backend` are steps 2-3 and 5 for one backend;
:mod:`snapsim_models.clients` runs the postmaster and the clients.

Two ways to churn, combinable:

* ``rate_per_s``: a population of connections arriving evenly spaced at that rate (a random
  phase), each running one transaction of the workload and disconnecting, as an application
  without a pooler does per request. Their clients are off the machine (ASSUMPTION: no client
  CPU and no network time; their transactions are not in ``tps``).
* ``per_transaction``: every active client reconnects for every transaction (``pgbench -C``); its
  connect and disconnect work is part of its transaction time, as pgbench -C measures it.

The PGPROC slots a connection can pop are a pool of :func:`churn_slots` slots, registered before
the machine is built. A connection that finds every slot taken waits for one (PostgreSQL
refuses it: "sorry, too many clients already"); the pool is sized so that this does not happen
below the postmaster's ceiling.

Left out: the postmaster's other work, the other shared structures a connect touches (the
sinval and ProcSignal slots, the backend-status array, the statistics collector: their cycles
are in ``backend_startup`` and ``backend_exit``), ``GetSnapshotData``'s read of
``ProcGlobal``'s array pointers on the line whose ``freeProcs`` the free list writes (the
model reads no ``PROC_HDR`` field in a snapshot), Poisson arrivals (pgbench ``-R``), and failed
connections.

The LWLocks' queue discipline decides who pays for a connect's exclusive ProcArrayLock
(``options.lwlock_queue``, :mod:`snapsim_models.lwlock`). With ``fifo`` (the ablation) the
snapshots arriving while a connecting backend waits for the lock queue behind it, and a
waiter granted the lock holds it while it wakes up: readers pay. With ``overtake``
(PostgreSQL's ``LWLockAttemptLock``: a shared acquirer looks only at the exclusive bit) they go
past it, and the connecting backend waits until the shared holders drain: under long, dense
snapshots (13 with thousands of connections) it can starve. ``overtake`` is the default.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any

import simpy

from simulator.runtime.engine import ProcessGenerator, SimEnvironment

from .backend import Backend, Category, TxnRecord
from .costs import ConnectionCosts
from .snapshots.base import SnapshotAlgorithm

Completed = tuple[float, float, TxnRecord]
"""A completed transaction: its start and end time (ns) and the backend's accounting of it."""

SLOTS_PER_BLOCK = 64
"""Slots are added to the pool in blocks of 64: 64 PGPROCs (and PGXACTs) are a whole number of
lines in every version (64 x 12, x 656, x 856, x 880 B), so a pool moves the connected clients'
PGPROC and PGXACT entries by whole lines and no line's sharing changes."""

RATE_SLOTS = 64
"""Slots for the connections arriving at a rate: enough for 64 at once, which at the
postmaster's default ceiling (10,000 connections/s) is 6 ms of lifetime each, 15 times a
connection's ~0.4 ms."""


def churn_slots(rate_per_s: float, per_transaction: bool, clients: int) -> int:
    """PGPROC slots to provide for connections that come and go (0 without churn).

    :data:`RATE_SLOTS` for a rate, two per reconnecting client (its next connection may start
    while the last one exits), in whole blocks of :data:`SLOTS_PER_BLOCK`.
    """
    needed = (RATE_SLOTS if rate_per_s > 0 else 0) + (2 * clients if per_transaction else 0)
    return SLOTS_PER_BLOCK * math.ceil(needed / SLOTS_PER_BLOCK)


class FreeList:
    """The ``freeProcs`` list of the pool's slots: a stack of pgprocnos, the top last.

    ``InitProcess`` pops the top, ``ProcKill`` pushes on top (proc.c@9.1/@13/@14), so the slot
    freed last is taken first. A pop finding the list empty waits for a push.
    """

    def __init__(self, env: SimEnvironment, pgprocnos: list[int]) -> None:
        self.env = env
        self.stack = list(pgprocnos)
        self.waiters: deque[simpy.Event] = deque()

    def pop(self) -> Generator[simpy.Event, Any, int]:
        """Take the top slot, waiting for one if every slot is taken."""
        while not self.stack:
            event = self.env.event()
            self.waiters.append(event)
            yield event
        return self.stack.pop()

    def push(self, pgprocno: int) -> None:
        """Put a slot back on top, and let a waiting connection take it."""
        self.stack.append(pgprocno)
        if self.waiters:
            self.waiters.popleft().succeed()


@dataclass(slots=True)
class ChurnClient:
    """A client that reconnects for every transaction (``pgbench -C``)."""

    completed: list[Completed] = field(default_factory=list)


@dataclass(slots=True)
class ChurnLog:
    """When connections joined and left the procArray (``ProcArrayAdd``/``ProcArrayRemove``)."""

    connects_ns: list[float] = field(default_factory=list)
    disconnects_ns: list[float] = field(default_factory=list)

    def rates_per_s(self, start_ns: float, end_ns: float) -> tuple[float, float]:
        """Connects and disconnects per second completed in ``[start_ns, end_ns)``."""
        window_s = (end_ns - start_ns) * 1e-9

        def count(times: list[float]) -> int:
            return sum(1 for t in times if start_ns <= t < end_ns)

        return count(self.connects_ns) / window_s, count(self.disconnects_ns) / window_s


def start_backend(algorithm: SnapshotAlgorithm, backend: Backend, costs: ConnectionCosts,
                  log: ChurnLog) -> ProcessGenerator:
    """A new backend's start, its PGPROC popped: ``InitProcess``, ``ProcArrayAdd``, start-up.

    The start-up work (``backend_startup``) is followed by the start-up transaction's snapshot
    (``InitPostgres``'s ``GetTransactionSnapshot``): a full one in every version, a new backend
    having no cached snapshot.
    """
    yield from algorithm.init_process(backend)
    yield from algorithm.proc_array_add(backend)
    log.connects_ns.append(backend.env.now)
    yield from backend.compute(costs.backend_startup, Category.CONNECTION)
    yield from algorithm.start_transaction(backend)
    yield from algorithm.get_snapshot(backend)
    yield from algorithm.clear_xmin(backend)
    yield from algorithm.end_transaction(backend)


def exit_backend(algorithm: SnapshotAlgorithm, backend: Backend, costs: ConnectionCosts,
                 log: ChurnLog) -> ProcessGenerator:
    """A backend's exit: ``proc_exit``'s work, ``ProcArrayRemove``, then ``ProcKill``.

    The caller pushes the PGPROC back once this returns (and the process gives up its CPU).
    """
    yield from backend.compute(costs.backend_exit, Category.CONNECTION)
    yield from algorithm.proc_array_remove(backend)
    log.disconnects_ns.append(backend.env.now)
    yield from algorithm.proc_kill(backend)
    yield from backend.flush()
