"""The summary of one simulated point: its curve row, per-line table and transactions.

Transactions are measured in ``[warmup, warmup + duration)`` by their completion time; ``tps``
counts the active clients' transactions, ``mostly_idle_tps`` the others'. The per-line table
counts the accesses of the same window (of every client, mostly-idle ones included). A window
in which no active client completes a transaction (with thousands of clients a transaction can
take longer than a short window) is an error, :class:`NoTransactionError`, never a TPS of 0.

``transactions_per_client`` is the window's transactions per active client and
``window_converged`` whether the point is long enough to be trusted (:func:`window_converged`):
with N clients in a closed loop a transaction period is N / TPS, every client's first
transaction ends about one period after the start, and the order in which clients reach the
contended lines can persist for dozens of periods.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from simulator.hardware.codes import CLASS_NAMES, Out
from simulator.hardware.fields import describe_masks
from simulator.runtime.scheduler_stats import SchedulerStats
from simulator.study.workload_model import PointSpec

from .backend import CATEGORIES
from .churn import ChurnClient, ChurnLog
from .options import PgOptions
from .population import Completed, Population
from .workloads import MIX

WARMUP_PERIODS = 3.0
"""A converged point's warm-up covers at least this many transaction periods (clients / TPS)."""
MIN_TRANSACTIONS_PER_CLIENT = 40.0
"""A converged point's window holds at least this many transactions per active client.

A client's count is of whole transactions (the one in flight when the window ends is not
counted), so ``n`` per client bounds the counting error by about ``1 / n``: 2.5 % at 40."""
MAX_HALVES_DIFFERENCE = 0.025
"""The two halves of a converged window complete transactions at rates this close (or within
two standard errors of a count, ``2 / sqrt(transactions)``, whichever is larger)."""


class NoTransactionError(RuntimeError):
    """The measured window holds no completed transaction of an active client: no TPS to report."""



@dataclass(slots=True)
class PointResult:
    """The outcome of one point: one curve row, the per-line table, the transactions.

    ``traces``: with ``PointSpec.trace``, the scheduler's tables by name (``scheduler``,
    ``idle``: :mod:`simulator.runtime.scheduler_stats`), else empty.
    """

    row: dict[str, object]
    lines: pd.DataFrame
    transactions: pd.DataFrame
    traces: dict[str, pd.DataFrame] = field(default_factory=dict)



@dataclass(frozen=True, slots=True)
class Churned:
    """What a run of connections that come and go adds to the summary."""

    clients: list[ChurnClient]
    """The reconnecting clients (their transactions are active clients' transactions)."""
    log: ChurnLog
    procarray_exclusive: int
    """Exclusive ProcArrayLock acquisitions granted in the window (churn or not)."""


def summarise(spec: PointSpec, options: PgOptions, population: Population, utilisation: float,
              stats: SchedulerStats, wall_s: float, churn: Churned) -> PointResult:
    """The curve row, the per-line table and the active clients' transactions of the window."""
    start, end = spec.warmup_ns, spec.warmup_ns + spec.duration_ns
    active: list[Completed] = []
    idle_count = 0
    for connection in population.connections:
        for t0, t1, record in connection.completed:
            if start <= t1 < end:
                if connection.active:
                    active.append((t0, t1, record))
                else:
                    idle_count += 1
    for client in churn.clients:
        active.extend(done for done in client.completed if start <= done[1] < end)
    if not active:
        raise NoTransactionError(
            f"no active client completed a transaction in the measured window "
            f"({spec.duration_ns / 1e6:g} ms after {spec.warmup_ns / 1e6:g} ms of "
            f"warm-up): with {spec.clients} clients a transaction takes longer; increase "
            f"duration_ms and warmup_ms")
    window_s = spec.duration_ns * 1e-9
    row: dict[str, object] = {  # results only: the sweep puts the point's identity before them
        "tps": len(active) / window_s,
        "mostly_idle_tps": idle_count / window_s,
        "transactions": len(active),
    }
    row.update(_latencies(active))
    if spec.workload == MIX:
        row.update(_per_script(active, [name for name, _ in options.mix], window_s))
    row["cpu_utilisation"] = utilisation
    n = len(active)
    row["idle_exits_per_txn"] = stats.idle_exits / n
    row["idle_exit_us_per_txn"] = stats.idle_exit_ns / 1e3 / n
    row["ipis_per_txn"] = stats.ipis / n
    row["migrations_per_txn"] = stats.migrations / n
    row["private_flushes_per_txn"] = stats.private_flushes / n
    row["refill_us_per_txn"] = stats.refill_ns / 1e3 / n
    row.update(_per_transaction(active))
    connects, disconnects = churn.log.rates_per_s(start, end)
    row["connects_per_s"] = connects
    row["disconnects_per_s"] = disconnects
    row["procarray_exclusive_per_txn"] = churn.procarray_exclusive / n
    row["duration_ms"] = spec.duration_ns / 1e6
    row["warmup_ms"] = spec.warmup_ns / 1e6
    per_client = len(active) / spec.clients
    row["transactions_per_client"] = per_client
    middle_ns = spec.warmup_ns + spec.duration_ns / 2
    first_half = sum(1 for _, t1, _ in active if t1 < middle_ns)
    row["window_converged"] = window_converged(spec.clients, len(active) / window_s,
                                               spec.warmup_ns, per_client,
                                               (first_half, len(active) - first_half))
    row["wall_s"] = wall_s
    machine = population.machine
    lines = machine.line_table()
    read, written = describe_masks(population.shmem.memory, machine, lines)
    lines["fields_read"] = read
    lines["fields_written"] = written
    transactions = pd.DataFrame(
        {"start_us": [t0 / 1e3 for t0, _, _ in active],
         "end_us": [t1 / 1e3 for _, t1, _ in active]})
    return PointResult(row=row, lines=lines, transactions=transactions)


def window_converged(clients: int, tps: float, warmup_ns: float,
                     transactions_per_client: float,
                     halves: tuple[int, int] | None = None) -> bool:
    """Whether a point's warm-up and window are long enough for its TPS to be trusted.

    Three conditions, each against a way a short point goes wrong:

    * the warm-up covers :data:`WARMUP_PERIODS` transaction periods (``clients / tps``): the
      first transactions of all clients end together about one period after the start;
    * the window holds :data:`MIN_TRANSACTIONS_PER_CLIENT` transactions per client (the error of
      counting whole transactions);
    * the window is stationary: its two halves (``halves``: transactions completed in each)
      agree within :data:`MAX_HALVES_DIFFERENCE`. The order in which the clients reach a
      contended line, set by their start phases, can persist for dozens of periods and change
      the rate; a window that straddles the end of such a phase shows it as unequal halves.

    Left out: a phase that lasts through the whole window (equal halves, a wrong rate), which
    only longer windows or other seeds reveal, and the variance between seeds.
    """
    if tps <= 0:
        return False
    period_ns = clients / tps * 1e9
    if warmup_ns < WARMUP_PERIODS * period_ns:
        return False
    if transactions_per_client < MIN_TRANSACTIONS_PER_CLIENT:
        return False
    if halves is None:
        return True
    total = halves[0] + halves[1]
    if total <= 0:
        return False
    tolerance = max(MAX_HALVES_DIFFERENCE, 2.0 / math.sqrt(total))
    return abs(halves[0] - halves[1]) / (total / 2) <= tolerance


def _latencies(active: list[Completed]) -> dict[str, float]:
    """Mean, median and 99th percentile of the transactions' latency (``active`` not empty)."""
    latencies = np.array([(t1 - t0) / 1e3 for t0, t1, _ in active])
    return {"latency_mean_us": float(latencies.mean()),
            "latency_p50_us": float(np.percentile(latencies, 50)),
            "latency_p99_us": float(np.percentile(latencies, 99))}


def _per_script(active: list[Completed], scripts: list[str],
                window_s: float) -> dict[str, float]:
    """TPS and mean latency of each script of a mix.

    Columns ``tps_<script>`` and ``latency_mean_us_<script>`` (``-`` in a name becomes ``_``).
    """
    result: dict[str, float] = {}
    for script in scripts:
        mine = [(t1 - t0) / 1e3 for t0, t1, record in active if record.script == script]
        key = script.replace("-", "_")
        result[f"tps_{key}"] = len(mine) / window_s
        result[f"latency_mean_us_{key}"] = float(np.mean(mine)) if mine else float("nan")
    return result


def _per_transaction(active: list[Completed]) -> dict[str, float]:
    """Transfers per transaction by class and the time breakdown (``active`` not empty).

    A batched pass records one accounting for its several transactions: each record counts once
    in the sums, which are divided by the number of transactions.
    """
    result: dict[str, float] = {}
    unique = list({id(r): r for _, _, r in active}.values())
    n = len(active)
    counters = sum((r.counters for r in unique), start=np.zeros_like(unique[0].counters))
    for index, name in enumerate(CLASS_NAMES):
        result[name] = float(counters[index]) / n
    for slot, name in ((Out.INVALIDATIONS, "invalidations"),
                       (Out.FALSE_SHARING_HITM, "false_sharing_hitm"),
                       (Out.WAIT_NS, "hot_line_wait_ns"),
                       (Out.CAS_ATTEMPTS, "cas_attempts"),
                       (Out.CAS_FAILURES, "cas_failures")):
        result[name] = float(counters[slot]) / n
    totals = dict.fromkeys(CATEGORIES, 0.0)
    for record in unique:
        for category, value in record.times_ns.items():
            totals[category] += value
    backend_ns = sum(totals.values())
    for category in CATEGORIES:
        result[f"share_{category.value}"] = totals[category] / backend_ns if backend_ns else 0.0
        result[f"{category.value}_us"] = totals[category] / 1e3 / n
    result["full_snapshots"] = sum(r.full_snapshots for r in unique) / n
    result["reused_snapshots"] = sum(r.reused_snapshots for r in unique) / n
    result["copied_snapshots"] = sum(r.copied_snapshots for r in unique) / n
    return result
