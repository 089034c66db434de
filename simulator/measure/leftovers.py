"""What a killed measurement left behind, found from its ledger and stopped by PID.

A measurement keeps its clusters in a work directory (``snapsim-measure-*`` in the system's
temporary directory or ``--work-dir``) with a ledger (:data:`~simulator.measure.processes.LEDGER`)
of its owner and of every process it started. A ``snapsim measure`` stopped by ``kill -9`` runs
no cleanup: its servers, holders and pgbench stop through their parent-death signal where the
kernel has one, and its work directory stays. The next measurement over the same work root
finds such directories (the owner is gone: no process with its PID and start time), stops the
processes of the ledger that still run (the same PID *and* start time, so never a process that
reused the PID) and removes the directory.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from simulator.measure.processes import CLIENT_STOP, LEDGER, SERVER_STOP, start_time

WORK_PREFIX = "snapsim-measure-"
"""The name of a measurement's work directory starts so (``tempfile.mkdtemp``'s prefix)."""
STOP_GRACE_S = 30.0


@dataclass(frozen=True, slots=True)
class LeftProcess:
    """A process of a killed measurement that still runs."""

    pid: int
    started: str
    """Its start time as the ledger gives it (a check against a reused PID)."""
    server: bool
    what: str

    def label(self) -> str:
        """``post14 server (PID 123)``."""
        return f"{self.what} (PID {self.pid})"


@dataclass(frozen=True, slots=True)
class Leftover:
    """The work directory of a measurement whose owner is gone, and its processes still alive."""

    directory: Path
    owner: int
    processes: tuple[LeftProcess, ...]


@dataclass(frozen=True, slots=True)
class Found:
    """The work directories under a root: killed measurements', and the owners still running."""

    leftovers: tuple[Leftover, ...]
    running: tuple[int, ...]
    """PIDs of other measurements running now (their work directories are left alone)."""


def _alive(pid: int, started: str) -> bool:
    """Whether ``pid`` runs and is the process that started at ``started`` (ledger text)."""
    now = start_time(pid)
    return now is not None and str(now) == started and not _zombie(pid)


def _zombie(pid: int) -> bool:
    try:
        text = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return True
    fields = text.rpartition(")")[2].split()
    return not fields or fields[0] in ("Z", "X")


def find(root: Path) -> Found:
    """The work directories of measurements under ``root`` (unreadable ones are skipped)."""
    leftovers: list[Leftover] = []
    running: list[int] = []
    try:
        candidates = sorted(root.glob(f"{WORK_PREFIX}*"))
    except OSError:
        return Found((), ())
    for directory in candidates:
        try:
            lines = (directory / LEDGER).read_text(encoding="utf-8").splitlines()
        except OSError:
            continue
        head = lines[0].split() if lines else []
        if len(head) != 3 or head[0] != "owner" or not head[1].isdigit():
            continue
        owner = int(head[1])
        if owner == os.getpid():
            continue
        if _alive(owner, head[2]):
            running.append(owner)
            continue
        alive = []
        for line in lines[1:]:
            parts = line.split(maxsplit=3)
            if len(parts) == 4 and parts[0].isdigit() and _alive(int(parts[0]), parts[1]):
                alive.append(LeftProcess(int(parts[0]), parts[1], parts[2] == "server",
                                         parts[3]))
        leftovers.append(Leftover(directory, owner, tuple(alive)))
    return Found(tuple(leftovers), tuple(running))


def stop(leftover: Leftover, grace_s: float = STOP_GRACE_S) -> list[LeftProcess]:
    """Stop the leftover's processes (clients first, each signal in turn) and remove its directory.

    Returns the processes that could not be stopped (not permitted): the directory is then kept.
    """
    refused: list[LeftProcess] = []
    ordered = sorted(leftover.processes, key=lambda process: process.server)
    for process in ordered:
        signals = SERVER_STOP if process.server else CLIENT_STOP
        for sig in signals:
            if not _alive(process.pid, process.started):
                break
            try:
                os.kill(process.pid, sig)
                if sig != signal.SIGKILL:  # a paused holder acts on its signal once resumed
                    os.kill(process.pid, signal.SIGCONT)
            except ProcessLookupError:
                break
            except PermissionError:
                refused.append(process)
                break
            deadline = time.monotonic() + (grace_s if sig != signal.SIGKILL else 5.0)
            while time.monotonic() < deadline and _alive(process.pid, process.started):
                time.sleep(0.05)
    if not refused:
        with contextlib.suppress(OSError):
            shutil.rmtree(leftover.directory)
    return refused
