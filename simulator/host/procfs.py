"""CPU and memory accounting of processes and of the machine, read from Linux's ``/proc``.

A process's ``/proc/PID/stat`` gives its own CPU time (``utime``, ``stime``) and that of its
children it has reaped (``cutime``, ``cstime``), in clock ticks (``SC_CLK_TCK``, usually 100 per
second); its ``/proc/PID/status`` the context switches it made (``voluntary_ctxt_switches``: it
blocked; ``nonvoluntary_ctxt_switches``: it was preempted); ``/proc/stat``'s first line the
machine's time by kind since boot. Nothing here starts or
stops a process: names are read only to find processes to account for (the kernel's ``kdamond``
threads), never to signal them.

:func:`kernel_text` is the one reader of a kernel file's text, under ``/proc`` or ``/sys``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, overload

from simulator.errors import ConfigError

PROC = Path("/proc")
TICKS_PER_S = float(os.sysconf("SC_CLK_TCK"))
_BUSY_FIELDS = (0, 1, 2, 5, 6, 7)
"""Of ``/proc/stat``'s cpu line: user, nice, system, irq, softirq, steal (not idle, iowait;
guest time is already inside user)."""


@overload
def kernel_text(path: Path, *, required: Literal[False] = False) -> str | None: ...


@overload
def kernel_text(path: Path, *, required: Literal[True]) -> str: ...


def kernel_text(path: Path, *, required: bool = False) -> str | None:
    """A kernel file's stripped text (sysfs, procfs); ``None`` when it cannot be read.

    Raises:
        ConfigError: naming the file and why, when it cannot be read and is ``required``.
    """
    try:
        return path.read_text(encoding="utf-8").strip()
    except OSError as exc:
        if required:
            raise ConfigError(str(path), f"cannot read: {exc.strerror or exc}") from None
        return None


@dataclass(frozen=True, slots=True)
class ProcStat:
    """The fields of ``/proc/PID/stat`` used here (times in clock ticks)."""

    pid: int
    comm: str
    ppid: int
    utime: int
    stime: int
    cutime: int
    cstime: int

    @property
    def own_ticks(self) -> int:
        """The process's own CPU time."""
        return self.utime + self.stime

    @property
    def reaped_ticks(self) -> int:
        """The CPU time of the children it has waited for."""
        return self.cutime + self.cstime


def read_stat(pid: int) -> ProcStat | None:
    """The process's stat line, or ``None`` if it is gone (or unreadable)."""
    try:
        text = (PROC / str(pid) / "stat").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    head, _, tail = text.rpartition(")")  # comm may hold spaces and parentheses
    fields = tail.split()
    if len(fields) < 15:
        return None
    return ProcStat(pid=pid, comm=head.partition("(")[2], ppid=int(fields[1]),
                    utime=int(fields[11]), stime=int(fields[12]), cutime=int(fields[13]),
                    cstime=int(fields[14]))


def all_pids() -> list[int]:
    """Every process ID now in ``/proc``."""
    return [int(entry.name) for entry in PROC.iterdir() if entry.name.isdigit()]


def children_of(ppid: int) -> list[int]:
    """The children of ``ppid`` not yet reaped (zombies included).

    Read from ``/proc/PID/task/PID/children`` (the children of its main thread: a postmaster
    forks from there) where the kernel has it, else found by a scan of ``/proc``.
    """
    try:
        listed = (PROC / str(ppid) / "task" / str(ppid) / "children").read_text(encoding="utf-8")
    except FileNotFoundError:
        pass
    except OSError:
        return []
    else:
        return [int(pid) for pid in listed.split()]
    found = []
    for pid in all_pids():
        stat = read_stat(pid)
        if stat is not None and stat.ppid == ppid:
            found.append(pid)
    return found


def cmdline(pid: int) -> str:
    """The process's command line (its title, for a PostgreSQL backend), or ``""``."""
    try:
        raw = (PROC / str(pid) / "cmdline").read_bytes()
    except OSError:
        return ""
    return raw.replace(b"\0", b" ").decode("utf-8", errors="replace").strip()


def exists(pid: int) -> bool:
    """Whether ``pid`` names a process, a zombie included (one not yet reaped)."""
    return (PROC / str(pid)).exists()


def ticks_of(pids: list[int]) -> int:
    """Own CPU ticks of the processes still alive among ``pids``."""
    total = 0
    for pid in pids:
        stat = read_stat(pid)
        if stat is not None:
            total += stat.own_ticks
    return total


@dataclass(frozen=True, slots=True)
class Switches:
    """Context switches of a process since it started (``/proc/PID/status``)."""

    voluntary: int
    """It gave up its CPU: it blocked or slept."""
    involuntary: int
    """It was preempted while runnable."""


def switches_of(pids: list[int]) -> dict[int, Switches]:
    """Context switches of each process still alive among ``pids``."""
    found = {}
    for pid in pids:
        try:
            text = (PROC / str(pid) / "status").read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
        try:
            found[pid] = Switches(int(fields["voluntary_ctxt_switches"]),
                                  int(fields["nonvoluntary_ctxt_switches"]))
        except (KeyError, ValueError):
            continue
    return found


def kernel_threads_named(prefix: str) -> list[int]:
    """PIDs of kernel threads whose name starts with ``prefix`` (for reading their CPU only)."""
    found = []
    for pid in all_pids():
        stat = read_stat(pid)
        if stat is not None and stat.comm.startswith(prefix) and stat.ppid == 2:
            found.append(pid)
    return found


@dataclass(frozen=True, slots=True)
class MachineTicks:
    """``/proc/stat``'s totals over all CPUs, in clock ticks."""

    busy: int
    total: int


def machine_ticks() -> MachineTicks:
    """The machine's busy and total CPU time since boot."""
    line = (PROC / "stat").read_text(encoding="utf-8").splitlines()[0].split()
    values = [int(value) for value in line[1:9]]
    return MachineTicks(busy=sum(values[i] for i in _BUSY_FIELDS), total=sum(values))


def load_average() -> tuple[float, float, float]:
    """The 1, 5 and 15 minute load averages."""
    parts = (PROC / "loadavg").read_text(encoding="utf-8").split()
    return float(parts[0]), float(parts[1]), float(parts[2])


def meminfo_bytes(key: str, proc: Path = PROC) -> int:
    """A field of ``/proc/meminfo`` (``MemAvailable``, ``MemTotal``) in bytes, 0 if absent.

    ``proc``: where ``/proc`` is (a copied tree in tests).
    """
    for line in (proc / "meminfo").read_text(encoding="utf-8").splitlines():
        name, _, rest = line.partition(":")
        if name == key:
            return int(rest.split()[0]) * 1024
    return 0


def process_count() -> int:
    """Processes now running (each takes a PID, bounded by ``kernel.pid_max``)."""
    return len(all_pids())
