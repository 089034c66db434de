"""The host's DAMON thread, from a measurement: its period and its CPU against the connections.

A measurement records, per run, the CPU time of the kernel's ``kdamond`` threads
(``kdamond_cpu_s`` in ``repetitions.csv``, from ``/proc/PID/stat``). On physical addresses DAMON
walks the reverse map of every page it samples (``mm/damon/paddr.c``), so its CPU grows with the
processes mapping the server's shared pages: a least-squares line of its share of one CPU
against the server processes of a run (one per connection, active or idle) gives the machine
file's ``kernel_thread`` (``cpu_share``, ``cpu_share_per_process``). Its period is DAMON's
sample interval, read from its sysfs interface (``/sys/kernel/mm/damon/admin``), else DAMON's
default, 5 ms (``mm/damon/core.c``, ``damon_new_ctx``). This reads the kernel thread's own CPU
accounting, not a throughput: no PostgreSQL curve sets it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from simulator.host.procfs import kernel_text

__all__ = ["DAMON_DEFAULT_SAMPLE_US", "MIN_SHARE", "FittedKernelThread", "damon_sample_us",
           "fit_kernel_thread"]

DAMON_ADMIN = Path("/sys/kernel/mm/damon/admin")
DAMON_DEFAULT_SAMPLE_US = 5000
"""DAMON's default sample interval (``mm/damon/core.c``)."""
MIN_SHARE = 0.001
"""Below this share of one CPU in every run the thread is left out of the machine file."""


@dataclass(frozen=True, slots=True)
class FittedKernelThread:
    """The line fitted to the thread's share of one CPU, and where its figures came from."""

    name: str
    period_us: int
    period_read: bool
    """The period is DAMON's sample interval read on the host (else DAMON's default)."""
    cpu_share: float
    cpu_share_per_process: float
    runs: int
    largest_share: float
    largest_processes: int

    def machine_file_lines(self) -> list[str]:
        """The machine file's ``kernel_thread`` section, each figure saying where it is from."""
        period = ("DAMON's sample interval, read on this host (sysfs)" if self.period_read
                  else "DAMON's default sample interval (mm/damon/core.c): none readable here")
        return [
            "kernel_thread:",
            f"  # measured on this host (snapsim measure): the kernel's {self.name} threads'",
            "  # CPU in each run (repetitions.csv, kdamond_cpu_s), a least-squares line of its",
            f"  # share of one CPU against the server processes, one per connection; {self.runs}",
            f"  # runs, the largest {self.largest_share:.3f} beside {self.largest_processes:,}"
            " processes.",
            f"  name: {self.name}",
            f"  period: {self.period_us} us   # {period}",
            f"  cpu_share: {self.cpu_share:.4f}",
            f"  cpu_share_per_process: {self.cpu_share_per_process:.3e}",
        ]


def damon_sample_us(admin: Path = DAMON_ADMIN) -> int | None:
    """The sample interval of the first running DAMON context, µs (``None``: none readable).

    The kdamonds are taken in their number's order and each running one's contexts in theirs; a
    kdamond or context whose files cannot be read or parsed is passed over for the next.
    """
    for kdamond in _numbered(admin / "kdamonds"):
        if kernel_text(kdamond / "state") != "on":
            continue
        for context in _numbered(kdamond / "contexts"):
            text = kernel_text(context / "monitoring_attrs" / "intervals" / "sample_us")
            if text is not None and text.isdigit() and int(text) > 0:
                return int(text)
    return None


def _numbered(directory: Path) -> list[Path]:
    """The numbered entries of a DAMON sysfs directory (``0``, ``1``, ...), in number order."""
    try:
        entries = [entry for entry in directory.iterdir() if entry.name.isdigit()]
    except OSError:
        return []
    return sorted(entries, key=lambda entry: int(entry.name))


def fit_kernel_thread(rows: Sequence[Mapping[str, object]], sample_us: int | None,
                      name: str = "kdamond") -> FittedKernelThread | None:
    """The line through the runs' thread share against their server processes.

    ``rows``: the measurement's runs (``kdamond_cpu_s``, ``window_s``, ``idle_connections``,
    ``active_connections``). ``None`` when the thread took less than :data:`MIN_SHARE` in every
    run (no DAMON, or one that costs nothing) or the runs do not hold two connection counts.
    The intercept and the slope are kept non-negative.
    """
    points: list[tuple[float, float]] = []
    for row in rows:
        try:
            window = float(str(row["window_s"]))
            cpu = float(str(row["kdamond_cpu_s"]))
            processes = int(str(row["idle_connections"])) + int(str(row["active_connections"]))
        except (KeyError, ValueError):
            continue
        if window > 0.0 and cpu >= 0.0:
            points.append((float(processes), cpu / window))
    if not points or max(share for _, share in points) < MIN_SHARE:
        return None
    xs = [x for x, _ in points]
    if len(set(xs)) < 2:
        return None
    n = len(points)
    mean_x = sum(xs) / n
    mean_y = sum(y for _, y in points) / n
    sxx = sum((x - mean_x) ** 2 for x in xs)
    slope = max(0.0, sum((x - mean_x) * (y - mean_y) for x, y in points) / sxx)
    intercept = mean_y - slope * mean_x
    if intercept < 0.0:  # through the origin instead
        intercept = 0.0
        slope = max(0.0, sum(x * y for x, y in points) / sum(x * x for x in xs))
    largest_x, largest_y = max(points, key=lambda point: point[1])
    return FittedKernelThread(
        name=name, period_us=sample_us or DAMON_DEFAULT_SAMPLE_US,
        period_read=sample_us is not None, cpu_share=min(intercept, 1.0),
        cpu_share_per_process=slope, runs=n, largest_share=largest_y,
        largest_processes=int(largest_x))
