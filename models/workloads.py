"""Transaction scripts: what a backend does per client round trip.

A workload is a list of *round trips*; each round trip is a list of statements the backend
executes before answering the client. A transaction is counted when the last round trip of the
list completes (for ``batched`` every statement is its own transaction).

* ``select-only``: ``pgbench -S -M prepared``: Bind, Execute, Sync per transaction
  (``exec_bind_message`` takes snapshot 1 and pops it, ``PortalStart`` takes snapshot 2,
  ``PortalDrop`` and ``ProcArrayEndTransaction`` at commit clear xmin; postgres.c, pquery.c,
  snapmgr.c ``SnapshotResetXmin``): 2 snapshots, the xmin stores of the version, 2 hot B-tree
  pages pinned.
* ``select1``: ``SELECT 1`` in the simple protocol, the mostly-idle clients' query.
* ``tpcb``: pgbench's default read-write script, one round trip per statement: 10 snapshots (2
  per DML: Bind, and ``PortalRunMulti`` or ``PortalStart``), xid assignment at the first UPDATE
  (``AssignTransactionId`` → ``GetNewTransactionId``, varsup.c), commit with an xid.
* ``batched``: ``batch`` select-only statements per round trip (pipelined).
* ``mix``: several of the above with weights (``options.mix``, e.g. ``{select-only: 9, tpcb:
  1}``), as pgbench runs several ``-b`` scripts: each transaction draws its script
  (:class:`Mix`); the curve then has a TPS and a mean latency per script.

The non-snapshot work is split over the statement's phases in fixed proportions (ASSUMPTION:
bind 35 %, plan revalidation 10 %, execution 40 %, commit and result 15 %); only its total is
calibrated. Left out: heavyweight locks (fast path since 9.2; 9.1's shared lock table is not
modelled), row locks and WAL insertion contention in tpcb (fixed costs only), the extra
ProcArrayLock acquire and scan of ``TransactionIdIsInProgress`` on hot rows in tpcb (procarray.c),
catalog snapshots of the first executions.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from simulator.runtime.engine import ProcessGenerator

from .backend import Backend, Category
from .costs import StatementCosts
from .snapshots.base import SnapshotAlgorithm

Statement = Callable[["Context", Backend], ProcessGenerator]

BIND, PLAN, EXECUTE, FINISH = 0.35, 0.10, 0.40, 0.15


@dataclass(slots=True)
class Context:
    """What statements need: the algorithm, the costs and the footprint."""

    algorithm: SnapshotAlgorithm
    costs: StatementCosts
    footprint_private: int
    footprint_l3: int


def _read_only_statement(ctx: Context, backend: Backend, cycles: float,
                         pages: bool) -> ProcessGenerator:
    alg = ctx.algorithm
    yield from backend.compute(BIND * cycles, Category.OTHER)
    yield from alg.start_transaction(backend)
    yield from alg.get_snapshot(backend)  # Bind: analyze/parameters (#1), sets xmin
    yield from backend.compute(PLAN * cycles, Category.OTHER)
    yield from alg.clear_xmin(backend)  # Bind pops its snapshot
    yield from alg.get_snapshot(backend)  # PortalStart (#2), sets xmin
    if pages:
        yield from alg.pin_hot_pages(backend)
    yield from backend.compute(EXECUTE * cycles, Category.OTHER)
    yield from alg.clear_xmin(backend)  # PortalDrop at commit
    yield from alg.end_transaction(backend)  # ProcArrayEndTransaction without xid
    if alg.name == "pg91":
        yield from alg.clear_xmin(backend)  # AtEOXact_Snapshot (9.1-9.6)
    yield from backend.compute(FINISH * cycles, Category.OTHER)
    backend.pollute(ctx.footprint_private, ctx.footprint_l3)


def select_only(ctx: Context, backend: Backend) -> ProcessGenerator:
    """``pgbench -S -M prepared``: one SELECT by primary key, its own transaction."""
    yield from _read_only_statement(ctx, backend, ctx.costs.select_only, pages=True)


def select1(ctx: Context, backend: Backend) -> ProcessGenerator:
    """``SELECT 1``: two snapshots, no table."""
    yield from _read_only_statement(ctx, backend, ctx.costs.select1, pages=False)


def batched_select(ctx: Context, backend: Backend) -> ProcessGenerator:
    """One more select-only statement of a pipelined batch (no client round trip)."""
    yield from _read_only_statement(ctx, backend, ctx.costs.statement_in_batch, pages=True)


# ---------------------------------------------------------------------------------- tpcb

TPCB_STATEMENTS = 7
"""BEGIN, UPDATE accounts, SELECT accounts, UPDATE tellers, UPDATE branches, INSERT, END."""


def _tpcb_share(ctx: Context) -> float:
    return ctx.costs.tpcb / TPCB_STATEMENTS


def tpcb_begin(ctx: Context, backend: Backend) -> ProcessGenerator:
    """BEGIN: StartTransaction, no snapshot."""
    yield from backend.compute(_tpcb_share(ctx), Category.OTHER)
    yield from ctx.algorithm.start_transaction(backend)


def tpcb_dml(ctx: Context, backend: Backend) -> ProcessGenerator:
    """UPDATE/INSERT (``PORTAL_MULTI_QUERY``).

    Two snapshots, two sets and two clears of xmin; the first DML assigns the transaction's xid.
    """
    alg = ctx.algorithm
    cycles = _tpcb_share(ctx)
    yield from backend.compute(BIND * cycles, Category.OTHER)
    yield from alg.get_snapshot(backend)
    yield from alg.clear_xmin(backend)
    yield from alg.get_snapshot(backend)  # PortalRunMulti
    if not backend.xid:
        yield from alg.assign_xid(backend)
    yield from alg.pin_hot_pages(backend)
    yield from backend.compute((1 - BIND) * cycles, Category.OTHER)
    yield from alg.clear_xmin(backend)


def tpcb_select(ctx: Context, backend: Backend) -> ProcessGenerator:
    """SELECT abalance: 2 snapshots; its registered snapshot is dropped at the next bind."""
    alg = ctx.algorithm
    cycles = _tpcb_share(ctx)
    yield from backend.compute(BIND * cycles, Category.OTHER)
    yield from alg.get_snapshot(backend)
    yield from alg.clear_xmin(backend)
    yield from alg.get_snapshot(backend)
    yield from alg.pin_hot_pages(backend)
    yield from backend.compute((1 - BIND) * cycles, Category.OTHER)
    yield from alg.clear_xmin(backend)


def tpcb_end(ctx: Context, backend: Backend) -> ProcessGenerator:
    """END: commit with an xid (ProcArrayLock exclusive or the group clear)."""
    alg = ctx.algorithm
    yield from backend.compute(_tpcb_share(ctx), Category.OTHER)
    if backend.xid:
        yield from alg.end_transaction_with_xid(backend)
    else:
        yield from alg.end_transaction(backend)
    backend.pollute(ctx.footprint_private, ctx.footprint_l3)


@dataclass(frozen=True, slots=True)
class Workload:
    """A named list of round trips; ``statements_per_transaction`` for batched counting."""

    name: str
    round_trips: tuple[tuple[Statement, ...], ...]
    transactions_per_pass: int = 1


@dataclass(frozen=True, slots=True)
class Mix:
    """Several scripts with weights, as ``pgbench -b select-only@9 -b tpcb-like@1``.

    Each transaction runs one script, drawn with probability weight / total (pgbench's
    ``chooseScript``).
    """

    scripts: tuple[Workload, ...]
    weights: tuple[float, ...]

    def __post_init__(self) -> None:
        if not self.scripts or len(self.scripts) != len(self.weights):
            raise ValueError("a mix needs one weight per script, and at least one script")
        if any(not weight > 0 for weight in self.weights):
            raise ValueError(f"mix weights must be positive, got {list(self.weights)}")

    def pick(self, uniform: float) -> Workload:
        """The script for a uniform draw in [0, 1)."""
        threshold = uniform * sum(self.weights)
        for script, weight in zip(self.scripts, self.weights, strict=True):
            threshold -= weight
            if threshold < 0:
                return script
        return self.scripts[-1]


MIX = "mix"
"""The workload name of a weighted mix of scripts (``options.mix`` gives the weights)."""

BATCHED = "batched"
"""The workload name of pipelined ``pgbench -S`` statements, ``options.batch`` per round trip."""


def mix_of(weights: dict[str, float] | tuple[tuple[str, float], ...], batch: int = 1) -> Mix:
    """The mix of the named scripts with their weights.

    Raises:
        ValueError: an unknown or nested script name, or a weight that is not positive.
    """
    pairs = tuple(weights.items()) if isinstance(weights, dict) else tuple(weights)
    for name, _ in pairs:
        if name == MIX or name not in WORKLOADS:
            raise ValueError(f"unknown script {name!r} in the mix (choose from "
                             f"{', '.join(w for w in WORKLOADS if w != MIX)})")
    return Mix(tuple(workload(name, batch) for name, _ in pairs),
               tuple(float(weight) for _, weight in pairs))


def workload(name: str, batch: int = 1) -> Workload:
    """The workload called ``name`` (``batch`` statements per round trip for ``batched``)."""
    if name == "select-only":
        return Workload(name, ((select_only,),))
    if name == "select1":
        return Workload(name, ((select1,),))
    if name == "tpcb":
        return Workload(name, ((tpcb_begin,), (tpcb_dml,), (tpcb_select,), (tpcb_dml,),
                               (tpcb_dml,), (tpcb_dml,), (tpcb_end,)))
    if name == BATCHED:
        if batch < 1:
            raise ValueError(f"batch must be at least 1, got {batch}")
        return Workload(name, ((select_only,) + (batched_select,) * (batch - 1),),
                        transactions_per_pass=batch)
    if name == MIX:
        raise ValueError("the mix workload is built by mix_of from its weights (options.mix)")
    raise ValueError(f"unknown workload {name!r} (choose one of {', '.join(WORKLOADS)})")


WORKLOADS = ("select-only", "select1", "tpcb", BATCHED, MIX)
