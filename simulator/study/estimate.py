"""Estimates of a point's peak memory and wall time, made before anything is simulated.

These are **estimates** (a fitted formula, not a measurement): they exist so that a sweep that
cannot fit in memory is refused at once instead of dying after minutes (a point of 200 000
clients grows to gigabytes; one of 2 000 000 aborts the interpreter), and so that a long sweep
says how long before it starts. :func:`check_memory` refuses a point whose estimate times the
number of concurrent workers exceeds the available memory (``MemAvailable`` of
``/proc/meminfo``, else the free physical pages of ``os.sysconf``; with neither, no check).

The formula (a point run alone in a process, the Numba kernel already compiled; ``running``:
the active clients plus the idle connections of a kind other than ``idle``, which run a
transaction every 100 ms)::

    lines    = 1100 + 4 * clients + 2.4 * idle_clients            tracked cache lines
    state    = coherence_state_bytes(machine, lines)              exact: the packed arrays
    tps      = 38 000 * min(clients, 0.8 * hardware threads) + 10 * running idle connections
    txns     = tps * (warm-up + window)                           transactions simulated
    memory   = 215 MB + state + 12 kB * running + 0.5 kB * other idle connections
               + 1 kB * txns
    wall_s   = 0.1 s + 0.7 ns * state byte + 200 us * running + 10 us * other idle connections
               + 110 us * txns

``coherence_state_bytes`` counts the arrays of
:class:`~simulator.hardware.coherence.compiled.CompiledCoherence` from the topology and the
cache geometry (per line, per core and line, per domain and line, per cache way; the tests
check it against the allocation). The lines are the most any shipped algorithm tracks
(``pg91``: 2.4 per idle connection; about 4 per active client; 1100 fixed, ``csn``'s log). The
TPS is an upper bound of the shipped select-only model (38 000 per client, at most 0.8 client
per hardware thread). The other coefficients were fitted by least squares (then rounded, memory
upwards) to the peak RSS (``ru_maxrss``) and wall time of 21 points, each in a fresh process on
a 2-vCPU EPYC VM (Python 3.11, NumPy 2.4, load 1-2): gold5215-2s, westmere-ex-8s,
threadripper-3990x, epyc-9654-2s and sapphire-rapids-2s; pg91, pre14 and post14; 1 to 15 000
clients, 0 to 20 000 idle or mostly-idle connections, 0.2 to 40 ms simulated. Error on those
points: memory -7 % to +14 % of the measured peak (median +4 %); wall time 0.5x to 2.2x the
measured (median 1.05x); the points and figures are in ``tests/simulator/study/test_estimate.py``.
Held out (not fitted): 40 000 clients on gold5215-2s, set-up only: 864 MB and 8.3 s estimated,
765 MB and 8.3 s measured; 48 clients and 50 000 idle connections, 3 ms: 374 MB and 1.1 s
estimated, 322 MB and 1.3 s measured. Far outside the fitted range it extrapolates: 200 000
clients on gold5215-2s, 6 ms, 3.4 GB and 41 s (a run of that point was seen at 3.7 GB after
38 s); 2 000 000 clients, 32 GB.

Left out: Numba's first compilation (about 0.5 GB and 20 s once per installation), the parent
process of a sweep, other workload models' footprints (the coefficients are the shipped
PostgreSQL model's) and the memory of Dask workers (a cluster run is not checked).
"""

from __future__ import annotations

import heapq
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from simulator.config.machine import MachineConfig
from simulator.errors import ConfigError
from simulator.hardware.codes import CALENDAR_SLOTS, N_CLASSES
from simulator.study.sweep import PointTask

__all__ = ["PointEstimate", "SweepEstimate", "available_memory", "check_memory",
           "coherence_state_bytes", "estimate_point", "estimate_sweep"]

GB = 1e9
LINES_FIXED = 1100.0
LINES_PER_CLIENT = 4.0
LINES_PER_IDLE = 2.4
TPS_PER_CLIENT = 38_000.0
"""Upper bound of one closed-loop client's TPS (one select-only client does 33-38 k)."""
BUSY_THREAD_SHARE = 0.8
"""At most this many clients per hardware thread run at once (each also needs a pgbench)."""
RUNNING_IDLE_TPS = 10.0
"""Transactions per second of a connection of an idle kind other than ``idle``."""
BASE_BYTES = 215e6
"""The process: Python, NumPy, pandas, SimPy, the compiled kernel."""
BYTES_PER_RUNNING = 12e3
"""Per connection that runs (an active client, a mostly-idle connection): tasks, processes."""
BYTES_PER_IDLE = 0.5e3
BYTES_PER_TRANSACTION = 1e3
WALL_BASE_S = 0.1
WALL_S_PER_STATE_BYTE = 0.7e-9
WALL_S_PER_RUNNING = 200e-6
WALL_S_PER_IDLE = 10e-6
WALL_S_PER_TRANSACTION = 110e-6

REPORT_POINT_BYTES = 1e9
"""A sweep with a point estimated above this says its estimate before it starts."""
REPORT_SWEEP_S = 300.0
"""So does a sweep estimated to take longer than this (wall seconds on its workers)."""


@dataclass(frozen=True, slots=True)
class PointEstimate:
    """The estimated peak memory and wall time of one point run alone in a process."""

    label: str
    """The point, e.g. ``post14 clients=200000 idle_clients=0``."""
    memory_bytes: float
    wall_s: float


@dataclass(frozen=True, slots=True)
class SweepEstimate:
    """The estimates of every point of a sweep and how many run at once."""

    points: tuple[PointEstimate, ...]
    workers: int

    @property
    def largest(self) -> PointEstimate:
        """The point with the largest memory estimate."""
        return max(self.points, key=lambda point: point.memory_bytes)

    @property
    def max_wall_s(self) -> float:
        """The longest point's estimated wall time."""
        return max(point.wall_s for point in self.points)

    @property
    def total_wall_s(self) -> float:
        """The sweep's estimated wall time: the longest first, each on the first free worker."""
        finish = [0.0] * max(min(self.workers, len(self.points)), 1)
        for wall in sorted((point.wall_s for point in self.points), reverse=True):
            heapq.heappush(finish, heapq.heappop(finish) + wall)
        return max(finish)

    def worth_reporting(self) -> bool:
        """Whether the sweep is large enough to say its estimate before it starts."""
        return bool(self.points) and (self.largest.memory_bytes > REPORT_POINT_BYTES
                                      or self.total_wall_s > REPORT_SWEEP_S)

    def line(self) -> str:
        """The estimate in one line.

        For example ``estimate: 24 points, up to 0.6 GB and about 3 min per point, about 40 min
        on 2 workers``.
        """
        count = len(self.points)
        workers = min(self.workers, count)
        return (f"estimate: {count} point{'s' if count != 1 else ''}, up to "
                f"{_gb(self.largest.memory_bytes)} and about {_duration(self.max_wall_s)} per "
                f"point, about {_duration(self.total_wall_s)} on {workers} "
                f"worker{'s' if workers != 1 else ''}")


def hardware_threads(machine: MachineConfig) -> int:
    """The machine's hardware threads."""
    topology = machine.topology
    return (topology.sockets * topology.domains_per_socket * topology.cores_per_domain
            * topology.threads_per_core)


def tracked_lines(clients: int, idle_clients: int) -> float:
    """An upper bound of the cache lines a point tracks (the most of any shipped algorithm)."""
    return LINES_FIXED + LINES_PER_CLIENT * clients + LINES_PER_IDLE * idle_clients


def coherence_state_bytes(machine: MachineConfig, lines: float) -> float:
    """Bytes of the compiled coherence state of ``lines`` tracked lines on ``machine``.

    The arrays of :class:`~simulator.hardware.coherence.compiled.CompiledCoherence`: per line
    (owner, state, masks, counters, the hot-line calendar), per core and line (holder flags, L1
    and L2 ways), per domain and line (L3 way), per hardware thread and line under the ``home``
    line service rule (its tenure) and per cache way (tags, LRU stamps, L3 dirty
    bits, pointers) and one L2's worth of scratch. The latency tables and scalars (a few kB)
    are left out.
    """
    topology = machine.topology
    domains = topology.sockets * topology.domains_per_socket
    cores = domains * topology.cores_per_domain
    threads = cores * topology.threads_per_core
    home = machine.line_service.home  # per line: who holds each reservation, per thread tenures
    extra = CALENDAR_SLOTS * 4 + threads * (8 + 8 + 4) if home else 0
    per_line = (9 * 4 + (9 + N_CLASSES) * 8 + (2 * CALENDAR_SLOTS + 1) * 8
                + cores * 3 * 4 + domains * 4 + extra)
    private_ways = machine.l1d.sets * machine.l1d.ways + machine.l2.sets * machine.l2.ways
    caches = (cores * (private_ways * (4 + 8) + 8 + 8)
              + domains * (machine.l3.sets * machine.l3.ways * 16 + 4))
    scratch = machine.l2.sets * machine.l2.ways * 4  # one L2's worth, for whole-L2 footprints
    return lines * per_line + caches + scratch


def estimate_point(task: PointTask) -> PointEstimate:
    """The estimated peak memory and wall time of one point (see the module's formula)."""
    spec = task.spec
    machine = spec.machine
    state = coherence_state_bytes(machine, tracked_lines(spec.clients, spec.idle_clients))
    running_idle = spec.idle_clients if spec.idle_kind != "idle" else 0
    running = spec.clients + running_idle
    other_idle = spec.idle_clients - running_idle
    tps = (TPS_PER_CLIENT * min(spec.clients, BUSY_THREAD_SHARE * hardware_threads(machine))
           + RUNNING_IDLE_TPS * running_idle)
    transactions = tps * (spec.duration_ns + spec.warmup_ns) * 1e-9
    memory = (BASE_BYTES + state + BYTES_PER_RUNNING * running + BYTES_PER_IDLE * other_idle
              + BYTES_PER_TRANSACTION * transactions)
    wall = (WALL_BASE_S + WALL_S_PER_STATE_BYTE * state + WALL_S_PER_RUNNING * running
            + WALL_S_PER_IDLE * other_idle + WALL_S_PER_TRANSACTION * transactions)
    label = f"{spec.algorithm} clients={spec.clients} idle_clients={spec.idle_clients}"
    return PointEstimate(label=label, memory_bytes=memory, wall_s=wall)


def estimate_sweep(tasks: Sequence[PointTask], workers: int) -> SweepEstimate:
    """The estimates of ``tasks`` run on ``workers`` concurrent workers."""
    return SweepEstimate(points=tuple(estimate_point(task) for task in tasks),
                         workers=max(workers, 1))


def available_memory(meminfo: Path = Path("/proc/meminfo")) -> tuple[float, str] | None:
    """The memory available to new work, in bytes, and where the figure came from.

    ``MemAvailable`` of ``/proc/meminfo`` (Linux), else the free physical pages of
    ``os.sysconf`` (other Unixes that have them); ``None`` when neither is known.
    """
    try:
        for text in meminfo.read_text(encoding="ascii").splitlines():
            if text.startswith("MemAvailable:"):
                return float(text.split()[1]) * 1024, "MemAvailable"
    except (OSError, ValueError, IndexError):
        pass
    try:
        pages = os.sysconf("SC_AVPHYS_PAGES")
        page_bytes = os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):
        return None
    if pages <= 0 or page_bytes <= 0:
        return None
    return float(pages * page_bytes), "free physical memory"


def check_memory(estimate: SweepEstimate, available: tuple[float, str] | None) -> None:
    """Refuse a sweep whose largest point, times the concurrent workers, exceeds ``available``.

    Raises:
        ConfigError: naming the point, its estimate, the workers and the available memory.
    """
    if available is None or not estimate.points:
        return
    available_bytes, source = available
    point = estimate.largest
    workers = min(estimate.workers, len(estimate.points))
    needed = point.memory_bytes * workers
    if needed <= available_bytes or not math.isfinite(available_bytes):
        return
    times = f" x {workers} workers = {_gb(needed)}" if workers > 1 else ""
    raise ConfigError("", f"point {point.label} needs about {_gb(point.memory_bytes)} "
                      f"(an estimate){times}, more than the {_gb(available_bytes)} available "
                      f"({source}); lower clients or idle_clients"
                      f"{' or --jobs' if workers > 1 else ''}, or force the run "
                      "(--force, force=True)")


def _gb(value: float) -> str:
    return f"{value / GB:.1f} GB" if value >= 0.1 * GB else f"{value / 1e6:.0f} MB"


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{max(seconds, 1):.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
