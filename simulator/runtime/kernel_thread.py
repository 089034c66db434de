"""A kernel thread's bursts beside the workload (the machine file's ``kernel_thread``).

Linux's DAMON thread ``kdamond`` checks a sample of pages and sleeps its sample interval, every
interval: a burst of CPU whose length grows with the processes mapping the sampled pages
(:class:`~simulator.config.machine.KernelThreadConfig`). Its bursts (37 ms every 500 ms beside
2,500 processes, traced on a 2-vCPU guest) are far longer than a transaction, so throughput is
the mix of two steady states, with and without the burst, weighted by the thread's share of the
time. A measured window is shorter than DAMON's interval, so the schedule is compressed: the
window holds an even number ``n`` of periods (``n = 2 ceil(window / 2 period)``, so each half of
the window holds the same burst time), each
``window / n`` long with a burst of ``share x window / n`` at a phase drawn from the simulation's
generator; bursts tile the window exactly, the one that wraps around a period's end included.

The thread is a task of the scheduler like any other (placement, run queues, preemption); a burst
that shares its CPU takes longer, and the next burst starts on schedule or, if the last one
overran, at once (each does its whole work). Left out: the thread's own cache footprint (the
page structures its walks read) and the locks it takes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from simulator.config.machine import KernelThreadConfig
from simulator.runtime.engine import ProcessGenerator, SimEnvironment
from simulator.runtime.scheduler import CpuScheduler

__all__ = ["BurstSchedule", "burst_schedule", "kernel_thread"]


@dataclass(frozen=True, slots=True)
class BurstSchedule:
    """When a kernel thread's bursts start and how long each is (ns)."""

    first_start_ns: float
    """Start of the first burst that ends after time 0 (it may start before 0: clipped)."""
    period_ns: float
    burst_ns: float


def burst_schedule(share: float, period_ns: float, window_start_ns: float, window_ns: float,
                   phase: float) -> BurstSchedule:
    """The compressed schedule of bursts for a measured window (the module docstring).

    ``share``: the thread's share of one CPU (0 to 1); ``phase``: where in a period a burst
    starts, as a fraction in [0, 1).

    Raises:
        ValueError: a share outside [0, 1], a phase outside [0, 1), a period or window that is
            not positive.
    """
    if not 0.0 <= share <= 1.0:
        raise ValueError(f"share must be between 0 and 1, got {share!r}")
    if not 0.0 <= phase < 1.0:
        raise ValueError(f"phase must be in [0, 1), got {phase!r}")
    if not (period_ns > 0.0 and window_ns > 0.0):
        raise ValueError(f"period and window must be positive, got {period_ns!r} and "
                         f"{window_ns!r}")
    periods = 2 * math.ceil(window_ns / (2.0 * period_ns))
    period = window_ns / periods
    burst = share * period
    start = window_start_ns + phase * period
    start -= math.floor((start + burst) / period) * period  # its end now in [0, period)
    if start + burst <= 0.0:
        start += period
    return BurstSchedule(start, period, burst)


def kernel_thread(env: SimEnvironment, scheduler: CpuScheduler, config: KernelThreadConfig,
                  processes: int, window_start_ns: float, window_ns: float) -> ProcessGenerator:
    """The thread's SimPy process: its bursts beside ``processes`` server processes.

    Spawn it with the other processes of the point; it runs until the simulation stops. It
    draws its phase from ``env.rng`` (once, when it starts); a thread with no share draws
    nothing and never runs, so the simulation is the one without it.
    """
    share = config.share(processes)
    if share <= 0.0:
        return
    schedule = burst_schedule(share, config.period_ns, window_start_ns, window_ns,
                              float(env.rng.random()))
    task = scheduler.new_task(config.name)
    start = schedule.first_start_ns
    work = start + schedule.burst_ns - max(start, 0.0)  # the first burst, clipped at time 0
    while True:
        if start > env.now:
            yield from task.sleep(start - env.now)
        yield from task.run(work)
        start += schedule.period_ns
        work = schedule.burst_ns  # a burst that overran delays the next, which does it all
