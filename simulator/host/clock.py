"""The clock a CPU of this host really runs at: a chain of dependent integer operations, timed.

Each step of the chain is a shift, an exclusive or and an add, each needing the previous one's
result; on every x86-64 core of the last two decades each has a latency of one cycle (Intel's
and AMD's optimization manuals, A. Fog's instruction tables), so a step takes three cycles
however wide the core is, and steps per second times three is the clock. The chain is compiled
by Numba (already the coherence kernel's compiler), runs pinned to one CPU, and the fastest of
a few runs is kept (a run another task interrupted reads low).

Why it is needed: a machine file's clock converts the cost file's cycles into time. Linux gives
bare metal's maximum in ``cpufreq/cpuinfo_max_freq``; a virtual machine has no cpufreq and its
``/proc/cpuinfo`` "cpu MHz" is the nominal frequency, which can be far below the turbo the vCPU
runs at (2.6 against 4.4 GHz on the project's own guest). Left out: other instruction sets
(their latencies differ; the measurement refuses them), and frequency changes under load (the
chain runs one CPU alone, at its single-core turbo).
"""

from __future__ import annotations

import os
import platform
import time
from collections.abc import Callable
from dataclasses import dataclass

from simulator.errors import ConfigError

__all__ = ["MeasuredClock", "chain_reference", "measure_clock", "measure_for_machine_file"]

CYCLES_PER_STEP = 3
"""A shift, an exclusive or and an add, dependent, one cycle each on x86-64."""
DEFAULT_STEPS = 100_000_000
"""Steps per run: about 0.07 s at 4 GHz."""
DEFAULT_REPEATS = 5
X86_64 = ("x86_64", "amd64")


@dataclass(frozen=True, slots=True)
class MeasuredClock:
    """The clock (GHz, the fastest run) and each run's."""

    ghz: float
    runs_ghz: tuple[float, ...]
    cpu: int

    def line(self) -> str:
        """One log line."""
        low = min(self.runs_ghz)
        return (f"clock {self.ghz:.2f} GHz on CPU {self.cpu} (a dependent-operation chain; "
                f"runs {low:.2f}-{self.ghz:.2f} GHz)")


def chain_reference(steps: int, value: int) -> int:
    """The chain in plain Python, modulo 2**64: what the compiled one must return."""
    mask = (1 << 64) - 1
    for _ in range(steps):
        value = ((value ^ (value >> 1)) + 1) & mask
    return value


def _compiled_chain() -> Callable[[int, int], int]:
    import numba
    import numpy as np

    @numba.njit(cache=False, nogil=True)
    def chain(steps: int, value: int) -> int:  # pragma: no cover - compiled
        x = np.uint64(value)
        one = np.uint64(1)
        for _ in range(steps):
            x = (x ^ (x >> one)) + one
        return int(x)

    return chain


def measure_clock(steps: int = DEFAULT_STEPS, repeats: int = DEFAULT_REPEATS) -> MeasuredClock:
    """Time the chain on the first CPU this process may use; the fastest run's clock.

    Raises:
        ConfigError: the host is not x86-64, or a count is below 1.
    """
    if steps < 1 or repeats < 1:
        raise ConfigError("clock measurement", f"steps and repeats must be at least 1, got "
                          f"{steps} and {repeats}")
    machine = platform.machine().lower()
    if machine not in X86_64:
        raise ConfigError("clock measurement", f"the dependent-operation chain's cycles are "
                          f"known for x86-64 only, this host is {machine}: set the machine "
                          f"file's clock by hand")
    chain = _compiled_chain()
    chain(1000, 1)  # compile before timing
    allowed = os.sched_getaffinity(0)
    cpu = min(allowed)
    runs: list[float] = []
    try:
        os.sched_setaffinity(0, {cpu})
        for _ in range(repeats):
            start = time.perf_counter()
            chain(steps, 1)
            elapsed = time.perf_counter() - start
            runs.append(CYCLES_PER_STEP * steps / elapsed / 1e9)
    finally:
        os.sched_setaffinity(0, allowed)
    return MeasuredClock(ghz=max(runs), runs_ghz=tuple(runs), cpu=cpu)


def measure_for_machine_file(log: Callable[[str], None],
                             repeats: int = DEFAULT_REPEATS) -> float:
    """:func:`measure_clock`, said in two log lines, as a machine file's clock (GHz).

    Raises:
        ConfigError: as :func:`measure_clock`.
    """
    log("measuring the clock (a chain of dependent integer operations on one CPU)")
    measured = measure_clock(repeats=repeats)
    log(measured.line())
    return measured.ghz
