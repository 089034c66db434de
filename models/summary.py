"""The summary of one simulated point: its curve row, per-line table and transactions.

Transactions are measured in ``[warmup, warmup + duration)`` by their completion time; ``tps``
counts the active clients' transactions, ``mostly_idle_tps`` the others'. The per-line table
counts the accesses of the same window (of every client, mostly-idle ones included). A window
in which no active client completes a transaction (with thousands of clients a transaction can
take longer than a short window) is an error, :class:`NoTransactionError`, never a TPS of 0.

``transactions_per_client`` is the window's transactions per active client; ``tps_ci_rel`` the
half-width of the 95 % interval of ``tps`` relative to it, from batch means of the window's
completions (:mod:`simulator.runtime.precision`); ``window_converged`` whether that interval met
its target (the point's ``precision``, or 2 % for a fixed window) with the warm-up over in the
window's first half (MSER-5); ``max_duration_reached`` whether a window grown for its precision
stopped at its cap first. ``warmup_ms`` and ``duration_ms`` are the window as measured: a
precision run starts it where MSER-5 ends the warm-up, after the point's own warm-up (a floor).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from simulator.hardware.codes import CLASS_NAMES, Out
from simulator.hardware.fields import describe_masks
from simulator.runtime.precision import Window
from simulator.runtime.scheduler_stats import SchedulerStats
from simulator.study.workload_model import PointSpec

from .backend import CATEGORIES
from .churn import ChurnClient, ChurnLog
from .options import PgOptions
from .population import Completed, Population
from .workloads import MIX


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


def summarise(spec: PointSpec, options: PgOptions, population: Population, window: Window,
              utilisation: float, stats: SchedulerStats, wall_s: float, churn: Churned,
              lines: pd.DataFrame) -> PointResult:
    """The curve row, the per-line table and the active clients' transactions of the window.

    ``utilisation``, ``stats``, ``churn``'s exclusive grants and ``lines`` cover the window.
    """
    start, end = window.start_ns, window.end_ns
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
            f"({window.duration_ns / 1e6:g} ms after {start / 1e6:g} ms of "
            f"warm-up): with {spec.clients} clients a transaction takes longer; increase "
            + ("max_duration_ms" if spec.precision is not None else "duration_ms and warmup_ms"))
    window_s = window.duration_ns * 1e-9
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
    row["duration_ms"] = window.duration_ns / 1e6
    row["warmup_ms"] = start / 1e6
    row["transactions_per_client"] = len(active) / spec.clients
    row["tps_ci_rel"] = window.relative_half_width
    row["max_duration_reached"] = window.max_duration_reached
    row["window_converged"] = window.converged
    row["wall_s"] = wall_s
    machine = population.machine
    read, written = describe_masks(population.shmem.memory, machine, lines)
    lines["fields_read"] = read
    lines["fields_written"] = written
    transactions = pd.DataFrame(
        {"start_us": [t0 / 1e3 for t0, _, _ in active],
         "end_us": [t1 / 1e3 for _, t1, _ in active]})
    return PointResult(row=row, lines=lines, transactions=transactions)


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
