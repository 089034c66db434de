"""Estimates of a point's peak memory and wall time, made before anything is simulated.

These are **estimates** (a fitted formula, not a measurement): they exist so that a sweep that
cannot fit in memory is refused at once instead of dying after minutes (a point of 200 000
clients grows to gigabytes; one of 2 000 000 aborts the interpreter), and so that a long sweep
says how long before it starts. :func:`check_memory` refuses a point whose estimate times the
number of concurrent workers exceeds the available memory (``MemAvailable`` of
``/proc/meminfo``, else the free physical pages of ``os.sysconf``; with neither, no check).

The formula (a point run alone in a process, the Numba kernel already compiled; ``running``:
the active clients plus the idle connections of a kind other than ``idle``, which run a
transaction every 100 ms), with the workload model's coefficients
(:class:`~simulator.study.workload_model.ModelEstimate`, its
optional ``estimate_coefficients``; the PostgreSQL model's and their fit are in
``models/estimate.py``)::

    lines    = lines_fixed + lines_per_client * clients + lines_per_idle * idle_clients
    state    = coherence_state_bytes(machine, lines)              exact: the packed arrays
    tps      = tps_per_client * min(clients, busy_thread_share * hardware threads)
               + running_idle_tps * running idle connections
    txns     = tps * (warm-up + window)                           transactions simulated
    memory   = 250 MB + state + bytes_per_running * running + bytes_per_idle * other idle
               connections + bytes_per_transaction * txns
    wall_s   = 0.1 s + 0.7 ns * state byte + wall_s_per_running * running + wall_s_per_idle
               * other idle connections + wall_s_per_transaction * txns

``coherence_state_bytes`` counts the arrays of
:class:`~simulator.hardware.coherence.compiled.CompiledCoherence` from the topology and the
cache geometry (per line, per core and line, per domain and line, per cache way; the tests
check it against the allocation); the process (250 MB: Python, NumPy, pandas, SimPy, the
compiled kernel) and the wall time per byte of state are the machine's, the same for every
model. A model without coefficients gets :data:`FALLBACK`, a deliberately generous guess.

Left out: Numba's first compilation (about 0.5 GB and 20 s once per installation), the parent
process of a sweep and the memory of Dask workers (a cluster run is not checked). A refusal
names the estimate's largest part as the thing to lower: the machine's caches (its cores), the
transactions of a long warm-up and window, or the connections. :func:`check_windows` refuses a
point whose warm-up and window end before the first transactions can complete (a lower bound:
every client's first turn on the hardware threads at the TPS bound above).
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
from simulator.study.workload_model import DEFAULT_MODEL, ModelEstimate, workload_model

__all__ = [
    "FALLBACK",
    "ModelEstimate",
    "PointEstimate",
    "SweepEstimate",
    "available_memory",
    "check_machine_memory",
    "check_memory",
    "check_windows",
    "coefficients_of",
    "coherence_state_bytes",
    "estimate_point",
    "estimate_sweep",
    "first_transaction_ms",
]

GB = 1e9
BASE_BYTES = 250e6
"""The process: Python, NumPy, pandas, SimPy, the compiled kernel."""
WALL_BASE_S = 0.1
WALL_S_PER_STATE_BYTE = 0.7e-9


FALLBACK = ModelEstimate(
    lines_fixed=2000.0, lines_per_client=8.0, lines_per_idle=5.0, tps_per_client=50_000.0,
    busy_thread_share=1.0, running_idle_tps=20.0, bytes_per_running=25e3, bytes_per_idle=1e3,
    bytes_per_transaction=2e3, wall_s_per_running=400e-6, wall_s_per_idle=20e-6,
    wall_s_per_transaction=220e-6)
"""For a workload model that gives no ``estimate_coefficients``: a generous guess (about twice
the shipped PostgreSQL model's lines, bytes and times), so that its sweeps are still checked."""


def coefficients_of(model: str = DEFAULT_MODEL) -> ModelEstimate:
    """The estimate's coefficients of the workload model called ``model``."""
    found = workload_model(model).estimate_coefficients
    return FALLBACK if found is None else found

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
    machine_bytes: float = 0.0
    """The part of ``memory_bytes`` that is the machine's own caches (any point on it needs)."""
    window_bytes: float = 0.0
    """The part that grows with the simulated time (warm-up and window): the transactions."""
    window_ms: float = 0.0
    """The simulated time (warm-up plus window, ms)."""
    first_transaction_ms: float = 0.0
    """A lower bound of the time to the first completed transactions (ms): every client's first
    turn on the hardware threads, at most the model's ``tps_per_client`` each."""

    def cause(self) -> str:
        """What to lower to shrink the estimate: its largest part, as advice."""
        connections = self.memory_bytes - BASE_BYTES - self.machine_bytes - self.window_bytes
        largest = max(connections, self.machine_bytes, self.window_bytes)
        if largest == self.machine_bytes:
            return (f"the machine's caches alone take {_gb(self.machine_bytes)}; use a machine "
                    "with fewer cores (topology)")
        if largest == self.window_bytes:
            span = f"{self.window_ms:,.0f}" if self.window_ms >= 10 else f"{self.window_ms:g}"
            return (f"the {span} ms simulated (warm-up and window) take "
                    f"{_gb(self.window_bytes)} for their transactions; shorten warmup_ms or "
                    "duration_ms")
        return "lower clients or idle_clients"


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


def tracked_lines(clients: int, idle_clients: int, model: ModelEstimate) -> float:
    """An upper bound of the cache lines a point tracks (the most of any of its algorithms)."""
    return (model.lines_fixed + model.lines_per_client * clients
            + model.lines_per_idle * idle_clients)


def coherence_state_bytes(machine: MachineConfig, lines: float) -> float:
    """Bytes of the compiled coherence state of ``lines`` tracked lines on ``machine``.

    The arrays of :class:`~simulator.hardware.coherence.compiled.CompiledCoherence`: per line
    (owner, state, masks, counters, the hot-line calendar), per core and line (holder flags, L1
    and L2 ways), per domain and line (L3 way), per hardware thread and line under the ``home``
    line service rule (its tenure), per hardware thread (the delay it owes under socket-local
    batching), per cache way (tags, LRU stamps, L3 dirty bits, pointers) and one L2's worth of
    scratch. The latency tables and scalars (a few kB)
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
    debts = threads * 8  # each thread's owed delay (line_service.local_batch)
    return lines * per_line + caches + scratch + debts


def estimate_point(task: PointTask) -> PointEstimate:
    """The estimated peak memory and wall time of one point (see the module's formula)."""
    spec = task.spec
    machine = spec.machine
    model = coefficients_of(task.model)
    state = coherence_state_bytes(machine, tracked_lines(spec.clients, spec.idle_clients, model))
    running_idle = spec.idle_clients if spec.idle_kind != "idle" else 0
    running = spec.clients + running_idle
    other_idle = spec.idle_clients - running_idle
    tps = (model.tps_per_client * min(spec.clients,
                                      model.busy_thread_share * hardware_threads(machine))
           + model.running_idle_tps * running_idle)
    transactions = tps * (spec.duration_ns + spec.warmup_ns) * 1e-9
    memory = (BASE_BYTES + state + model.bytes_per_running * running
              + model.bytes_per_idle * other_idle + model.bytes_per_transaction * transactions)
    wall = (WALL_BASE_S + WALL_S_PER_STATE_BYTE * state + model.wall_s_per_running * running
            + model.wall_s_per_idle * other_idle + model.wall_s_per_transaction * transactions)
    label = f"{spec.algorithm} clients={spec.clients} idle_clients={spec.idle_clients}"
    return PointEstimate(label=label, memory_bytes=memory, wall_s=wall,
                         machine_bytes=coherence_state_bytes(machine, 0.0),
                         window_bytes=model.bytes_per_transaction * transactions,
                         window_ms=(spec.duration_ns + spec.warmup_ns) * 1e-6,
                         first_transaction_ms=first_transaction_ms(spec.clients, machine,
                                                                   model))


def first_transaction_ms(clients: int, machine: MachineConfig, model: ModelEstimate) -> float:
    """A lower bound of the simulated time before the first transactions complete (ms).

    The clients start together and share the hardware threads, each thread completing at most
    the model's ``tps_per_client`` transactions per second: the first completions come after
    about one turn of every client, ``clients / (tps_per_client x threads)`` (for the PostgreSQL
    model on gold5215-2s, 2,000 clients: 1.3 ms; points of 2,000 clients with 1 ms of warm-up
    and window completed none, with 2.5 ms about 1.5 per client).
    """
    threads = hardware_threads(machine)
    return 1e3 * max(clients, threads) / (model.tps_per_client * threads)


def check_windows(estimate: SweepEstimate) -> None:
    """Refuse a sweep with a point whose warm-up and window end before any transaction can.

    Raises:
        ConfigError: naming the point, its simulated time and the lower bound it is below.
    """
    short = [point for point in estimate.points if point.window_ms < point.first_transaction_ms]
    if not short:
        return
    point = max(short, key=lambda p: p.first_transaction_ms / max(p.window_ms, 1e-12))
    raise ConfigError("", f"point {point.label}: its {point.window_ms:g} ms of warm-up and "
                      f"window cannot hold one transaction, since the clients' first ones need "
                      f"at least about {_ms(point.first_transaction_ms)} ms (an estimate); "
                      "lengthen warmup_ms or duration_ms, or force the run (--force, "
                      "force=True)")


def check_machine_memory(machine: MachineConfig, available: tuple[float, str] | None,
                         model: ModelEstimate | None = None) -> None:
    """Refuse a machine whose caches alone, in one process, exceed ``available`` memory.

    The machine's share of :func:`coherence_state_bytes` (its tag, LRU and way arrays) plus the
    process, before any point: ``check-config`` of a machine file uses it.

    Raises:
        ConfigError: at ``topology``, naming the machine, its estimate and the available memory.
    """
    if available is None:
        return
    available_bytes, source = available
    lines = (model or coefficients_of()).lines_fixed
    needed = BASE_BYTES + coherence_state_bytes(machine, lines)
    if needed <= available_bytes or not math.isfinite(available_bytes):
        return
    topology = machine.topology
    cores = topology.sockets * topology.domains_per_socket * topology.cores_per_domain
    raise ConfigError("topology", f"machine {machine.name} ({cores:,} cores) needs about "
                      f"{_gb(needed)} for its caches alone (an estimate), more than the "
                      f"{_gb(available_bytes)} available ({source}); use fewer cores")


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
    fits_alone = workers > 1 and point.memory_bytes <= available_bytes
    jobs_advice = " (or lower --jobs)" if fits_alone else ""
    raise ConfigError("", f"point {point.label} needs about {_gb(point.memory_bytes)} "
                      f"(an estimate){times}, more than the {_gb(available_bytes)} available "
                      f"({source}): {point.cause()}"
                      f"{jobs_advice}, or force the run "
                      "(--force, force=True)")


def _ms(value: float) -> str:
    """Milliseconds to read: one decimal from 1 ms up, two significant digits below."""
    return f"{value:,.1f}" if value >= 1 else f"{value:.2g}"


def _gb(value: float) -> str:
    return f"{value / GB:.1f} GB" if value >= 0.1 * GB else f"{value / 1e6:.0f} MB"


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{max(seconds, 1):.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
