"""Whether a measured run was disturbed by other work on the machine, from what it recorded.

Each run records, over its window, the CPU time of everything on the machine that is neither the
run's own backends and pgbench client, nor the held connections, nor the kernel's DAMON threads:
``rest_cpu_s`` (``/proc/stat``'s busy time minus those). A run is *disturbed* when that rest took
more than :data:`REST_SHARE_LIMIT` of the machine's CPUs on average over its window: other work
then competed with the measured clients for the CPUs, and the TPS is the machine's, not
PostgreSQL's.

Why this and not the load: the load average counts the measurement's own processes (the held
connections' pgbench and backends raised it to 58 on the project's quiet 2-vCPU guest, in
``configs/measurements/kvm-epyc-2vcpu/repetitions.csv``) and lags a minute behind. Why 25 %: the
rest is a difference of CPU counters, exact only to the accounting's rounding and the time
``snapsim`` itself spends reading ``/proc``: over the 96 runs of that quiet measurement it ranged
from -14 % to +15 % of the 2 CPUs (the 1-client runs about -12 %, an offset of the
accounting). A run that another process shared, as in a
newcomer's measurement beside a ``snapsim validate`` (1.3 CPU-s of other work in a 1-second
window on 2 CPUs: 65 %), stands far above. The pinned runs are judged alike.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path

import pandas as pd

REST_SHARE_LIMIT = 0.25
"""Above this share of the machine's CPUs taken by other work, a run is disturbed."""
DISTURBED = "disturbed"
"""The column of ``repetitions.csv`` and ``pinned.csv`` that says so."""


def rest_share(rest_cpu_s: float, window_s: float, cpus: int) -> float:
    """The share of the machine's ``cpus`` that other work took over a run's window."""
    if not window_s > 0 or cpus < 1:
        return math.nan
    return rest_cpu_s / (window_s * cpus)


def is_disturbed(rest_cpu_s: float, window_s: float, cpus: int) -> bool:
    """Whether other work took more than :data:`REST_SHARE_LIMIT` of the CPUs in the window."""
    return bool(rest_share(rest_cpu_s, window_s, cpus) > REST_SHARE_LIMIT)


def disturbed_column(runs: pd.DataFrame, cpus: int) -> pd.Series:
    """Each run's verdict: the recorded ``disturbed`` column, else judged from its CPU columns.

    A measurement written before the column existed is judged from ``rest_cpu_s`` and
    ``window_s`` on ``cpus`` CPUs (the machine file's hardware threads); a run without them is
    not disturbed.
    """
    if DISTURBED in runs.columns:
        return runs[DISTURBED].astype(str).str.strip().str.lower().eq("true")
    if not {"rest_cpu_s", "window_s"} <= set(runs.columns):
        return pd.Series(False, index=runs.index)
    rest = pd.to_numeric(runs["rest_cpu_s"], errors="coerce")
    window = pd.to_numeric(runs["window_s"], errors="coerce")
    return (rest / (window * max(cpus, 1)) > REST_SHARE_LIMIT).fillna(False)


def disturbed_counts(path: Path, idle_kind: str, cpus: int
                     ) -> Mapping[tuple[str, int, int], tuple[int, int]] | None:
    """Per ``(series, active clients, idle connections)`` of ``idle_kind``: disturbed and all runs.

    ``path`` is a measurement's ``repetitions.csv``; ``None`` if there is none (a published
    dataset) or it cannot be read.
    """
    try:
        runs = pd.read_csv(path, dtype=str, keep_default_na=False)
    except (OSError, ValueError, pd.errors.EmptyDataError):
        return None
    needed = {"series", "idle_kind", "active_connections", "idle_connections"}
    if not needed <= set(runs.columns):
        return None
    runs = runs[runs["idle_kind"] == idle_kind]
    flags = disturbed_column(runs, cpus)
    counts: dict[tuple[str, int, int], tuple[int, int]] = {}
    for series, clients, idle, flag in zip(runs["series"], runs["active_connections"],
                                           runs["idle_connections"], flags, strict=True):
        try:
            key = (str(series), int(clients), int(idle))
        except ValueError:
            continue
        disturbed, total = counts.get(key, (0, 0))
        counts[key] = (disturbed + int(bool(flag)), total + 1)
    return counts
