"""What waking a task on another, idle CPU costs on this host: a pipe ping-pong, measured.

Two processes pass one byte back and forth through two pipes, each blocking in ``read`` until
the other writes. Pinned to one CPU, a round trip is two context switches on that CPU and no
CPU goes idle; pinned to two CPUs, each CPU goes idle while its process waits, so a round trip
is two wake-ups of an idle CPU by the other one (an IPI; on a virtual machine whose idle vCPUs
halt, a VM exit on the sender and the hypervisor waking and re-entering the target vCPU). Half
the difference of the two round trips is the extra cost of one such wake-up over a context
switch on a busy CPU: what a machine file's ``scheduler.ipi_exit`` stands for on a guest.

Both variants run the same Python loop (its interpreter overhead, a microsecond or two per
system call, cancels in the difference) and are interleaved and repeated; the medians are
kept. Left out: the host's other load (run it on a quiet machine: a busy sibling vCPU never
halts, and the cross-CPU round trip then reads low), and frequency changes of bare-metal CPUs.
"""

from __future__ import annotations

import os
import signal
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

from simulator.errors import ConfigError
from simulator.host.probe_idle import MeasuredWakeup

__all__ = ["WakeupMeasurement", "measure_for_machine_file", "measure_wakeup",
           "pipe_round_trip_us"]

DEFAULT_ROUND_TRIPS = 20_000
"""Round trips timed per run (about 0.2-2 s per run on a guest)."""
DEFAULT_REPEATS = 5
"""Runs of each variant, interleaved; the medians are kept."""
WARMUP_ROUND_TRIPS = 1_000
"""Round trips before the clock starts (both processes running, the pipes' pages touched)."""


@dataclass(frozen=True, slots=True)
class WakeupMeasurement:
    """The two round trips (µs, medians of the runs) and the CPUs they ran on."""

    same_cpu_us: float
    """A round trip with both processes on ``cpus[0]``: two context switches."""
    cross_cpu_us: float
    """A round trip with one process on each CPU: two wake-ups of an idle CPU."""
    cpus: tuple[int, int]
    round_trips: int
    repeats: int

    @property
    def wakeup_us(self) -> float:
        """The extra cost of one wake-up of an idle CPU over a context switch (µs, >= 0)."""
        return max(0.0, (self.cross_cpu_us - self.same_cpu_us) / 2.0)

    def for_machine_file(self) -> MeasuredWakeup:
        """What a machine file's ``scheduler.ipi_exit`` is written from."""
        return MeasuredWakeup(wakeup_us=self.wakeup_us, same_cpu_us=self.same_cpu_us,
                              cross_cpu_us=self.cross_cpu_us)

    def line(self) -> str:
        """One log line: the two round trips and the wake-up."""
        return (f"round trip {self.same_cpu_us:.1f} us on one vCPU, {self.cross_cpu_us:.1f} us "
                f"across two: ipi_exit {self.wakeup_us:.1f} us")


def pipe_round_trip_us(cpu_a: int, cpu_b: int, round_trips: int = DEFAULT_ROUND_TRIPS) -> float:
    """The mean round trip (µs) of a pipe ping-pong: this process on ``cpu_a``, a child elsewhere.

    The child runs on ``cpu_b`` and is stopped by its PID on every way out.
    """
    if round_trips < 1:
        raise ConfigError("round_trips", f"must be at least 1, got {round_trips}")
    to_child_read, to_child_write = os.pipe()
    to_parent_read, to_parent_write = os.pipe()
    total = WARMUP_ROUND_TRIPS + round_trips
    pid = os.fork()
    if pid == 0:  # the child: echo every byte back, then leave without Python's clean-up
        code = 0
        try:
            os.sched_setaffinity(0, {cpu_b})
            for _ in range(total):
                os.write(to_parent_write, os.read(to_child_read, 1))
        except BaseException:
            code = 1
        os._exit(code)
    previous = os.sched_getaffinity(0)
    try:
        os.sched_setaffinity(0, {cpu_a})
        byte = b"x"
        for _ in range(WARMUP_ROUND_TRIPS):
            os.write(to_child_write, byte)
            os.read(to_parent_read, 1)
        start = time.perf_counter()
        for _ in range(round_trips):
            os.write(to_child_write, byte)
            os.read(to_parent_read, 1)
        elapsed = time.perf_counter() - start
        _, status = os.waitpid(pid, 0)
        pid = 0
        if status != 0:
            raise ConfigError("wake-up measurement", "the ping-pong's child process failed")
        return elapsed / round_trips * 1e6
    finally:
        if pid:
            try:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            except ProcessLookupError:
                pass
        os.sched_setaffinity(0, previous)
        for fd in (to_child_read, to_child_write, to_parent_read, to_parent_write):
            os.close(fd)


def measure_wakeup(round_trips: int = DEFAULT_ROUND_TRIPS,
                   repeats: int = DEFAULT_REPEATS) -> WakeupMeasurement:
    """The same-CPU and cross-CPU round trips on the first two CPUs this process may use.

    Raises:
        ConfigError: fewer than two CPUs are available, or a count is below 1.
    """
    if repeats < 1:
        raise ConfigError("repeats", f"must be at least 1, got {repeats}")
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        raise ConfigError("wake-up measurement",
                          f"needs two CPUs to wake one from the other; this process may use "
                          f"{len(cpus)}")
    first, second = cpus[0], cpus[1]
    same: list[float] = []
    cross: list[float] = []
    for _ in range(repeats):
        same.append(pipe_round_trip_us(first, first, round_trips))
        cross.append(pipe_round_trip_us(first, second, round_trips))
    return WakeupMeasurement(same_cpu_us=statistics.median(same),
                             cross_cpu_us=statistics.median(cross), cpus=(first, second),
                             round_trips=round_trips, repeats=repeats)


def measure_for_machine_file(round_trips: int, log: Callable[[str], None]) -> MeasuredWakeup:
    """:func:`measure_wakeup`, said in two log lines, as a machine file's ``ipi_exit`` figure."""
    log(f"measuring the wake-up of a halted vCPU (a pipe ping-pong, {DEFAULT_REPEATS} x 2 runs "
        f"of {round_trips:,} round trips)")
    measured = measure_wakeup(round_trips=round_trips)
    log(measured.line())
    return measured.for_machine_file()
