"""Every process a measurement starts, and stopping them by PID on every way out.

Each process runs in its own session (``start_new_session``), so a Ctrl-C on the terminal reaches
``snapsim`` alone and the servers and clients are stopped in order, by their own PIDs: first the
clients, then the servers (a PostgreSQL server with the fast-shutdown signal SIGINT, then SIGQUIT,
then SIGKILL). Processes are started as another user when ``snapsim`` runs as root (``initdb``
and ``postgres`` refuse root).

A way out that runs no cleanup (``kill -9`` of ``snapsim``) is covered twice. On Linux every
process is started with a parent-death signal (``prctl(PR_SET_PDEATHSIG)``): the kernel sends a
server SIGINT (fast shutdown) and a client SIGKILL when ``snapsim`` dies. And the registry writes
a ledger (:data:`LEDGER` in the work directory: the owner's PID, then each process's PID, start
time and role), from which :mod:`simulator.measure.leftovers` finds and stops what a killed
measurement left running.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

CLIENT_STOP = (signal.SIGTERM, signal.SIGKILL)
SERVER_STOP = (signal.SIGINT, signal.SIGQUIT, signal.SIGKILL)
LEDGER = "snapsim-processes.txt"
"""The ledger of a measurement's work directory: ``owner PID START`` then ``PID START ROLE WHAT``
per process started (``ROLE`` is ``server`` or ``client``; ``START`` the start time in clock
ticks since boot, ``/proc/PID/stat``'s 22nd field, so that a reused PID is not taken for it)."""
_PR_SET_PDEATHSIG = 1


def _prctl() -> Callable[..., int] | None:
    """The C library's ``prctl`` (``None`` off Linux)."""
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


_PRCTL = _prctl()


def die_with_parent(sig: signal.Signals) -> Callable[[], None] | None:
    """A ``preexec_fn`` that has the kernel send ``sig`` to the child when this process dies.

    Runs in the child after the switch of user (which would clear the setting). If this
    process died between the fork and the setting, the child signals itself at once.
    """
    prctl, parent = _PRCTL, os.getpid()
    if prctl is None:
        return None

    def preexec() -> None:
        prctl(_PR_SET_PDEATHSIG, int(sig))
        if os.getppid() != parent:
            os.kill(os.getpid(), sig)

    return preexec


def start_time(pid: int) -> int | None:
    """The process's start time in clock ticks since boot (``None``: gone or unreadable)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    fields = text.rpartition(")")[2].split()
    try:
        return int(fields[19])
    except (IndexError, ValueError):
        return None


@dataclass(frozen=True, slots=True)
class RunAs:
    """The user processes run as (``None``: this process's own)."""

    uid: int | None = None
    gid: int | None = None
    name: str = ""


@dataclass(slots=True)
class Tracked:
    """A started process and how to stop it."""

    process: subprocess.Popen[bytes]
    what: str
    stop_signals: tuple[signal.Signals, ...]
    log_path: Path | None = None


@dataclass(slots=True)
class Registry:
    """The processes started and not yet stopped, in start order."""

    run_as: RunAs = field(default_factory=RunAs)
    live: list[Tracked] = field(default_factory=list)
    ledger: Path | None = None
    """Where every start is recorded (:data:`LEDGER`); ``None``: nowhere."""

    def keep_ledger(self, path: Path) -> None:
        """Record this process as the owner in ``path``, then every process started."""
        self.ledger = path
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(f"owner {os.getpid()} {start_time(os.getpid())}\n")

    def start(self, argv: Sequence[str], what: str, *, log_path: Path | None = None,
              as_user: bool = False, server: bool = False,
              env: dict[str, str] | None = None) -> Tracked:
        """Start ``argv`` (output into ``log_path``) and track it.

        Raises:
            OSError: the program cannot be started.
        """
        stdout = open(log_path, "ab") if log_path is not None else subprocess.DEVNULL  # noqa: SIM115
        user = self.run_as if as_user else RunAs()
        try:
            process = subprocess.Popen(
                list(argv), stdin=subprocess.DEVNULL, stdout=stdout, stderr=subprocess.STDOUT,
                start_new_session=True, env=env, user=user.uid, group=user.gid,
                extra_groups=[] if user.uid is not None else None,
                preexec_fn=die_with_parent(signal.SIGINT if server else signal.SIGKILL))
        finally:
            if log_path is not None:
                stdout.close()  # type: ignore[union-attr]
        tracked = Tracked(process, what, SERVER_STOP if server else CLIENT_STOP, log_path)
        self.live.append(tracked)
        if self.ledger is not None:
            with open(self.ledger, "a", encoding="utf-8") as handle:
                handle.write(f"{process.pid} {start_time(process.pid)} "
                             f"{'server' if server else 'client'} {what}\n")
        return tracked

    def stop(self, tracked: Tracked, grace_s: float = 30.0) -> None:
        """Stop one process by its PID (each signal in turn, ``grace_s`` apart) and reap it."""
        for sig in tracked.stop_signals:
            if tracked.process.poll() is not None:
                break
            with contextlib.suppress(ProcessLookupError):
                os.kill(tracked.process.pid, sig)
                if sig != signal.SIGKILL:  # a paused holder acts on its signal once resumed
                    os.kill(tracked.process.pid, signal.SIGCONT)
            with contextlib.suppress(subprocess.TimeoutExpired):
                tracked.process.wait(timeout=grace_s if sig != signal.SIGKILL else None)
        if tracked in self.live:
            self.live.remove(tracked)

    def forget(self, tracked: Tracked) -> None:
        """Stop tracking a process that has exited and been reaped."""
        if tracked in self.live:
            self.live.remove(tracked)

    def stop_all(self, grace_s: float = 30.0) -> list[str]:
        """Stop every live process, clients before servers, newest first; return what stopped."""
        stopped = []
        clients = [t for t in self.live if t.stop_signals == CLIENT_STOP]
        servers = [t for t in self.live if t.stop_signals != CLIENT_STOP]
        for tracked in [*reversed(clients), *reversed(servers)]:
            if tracked.process.poll() is None:
                stopped.append(f"{tracked.what} (PID {tracked.process.pid})")
            self.stop(tracked, grace_s)
        return stopped


def pause(tracked: Tracked, paused: bool) -> None:
    """Stop (SIGSTOP) or resume (SIGCONT) a process by its PID; its connections stay open."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(tracked.process.pid, signal.SIGSTOP if paused else signal.SIGCONT)


@dataclass(frozen=True, slots=True)
class Usage:
    """What an ended process used (its ``rusage``)."""

    cpu_s: float
    """User and system CPU time."""
    voluntary_switches: int
    """Times it gave up its CPU (blocked or slept)."""
    involuntary_switches: int
    """Times it was preempted while runnable."""


NO_USAGE = Usage(0.0, 0, 0)
"""The usage of a process reaped elsewhere, or not ended."""


def wait_with_usage(tracked: Tracked, timeout_s: float) -> tuple[int | None, Usage]:
    """Wait for a process to end; return its exit code and what it used (``rusage``).

    The exit code is ``None`` if it did not end within ``timeout_s`` (it is then still running).
    """
    process = tracked.process
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            pid, status, usage = os.wait4(process.pid, os.WNOHANG)
        except ChildProcessError:  # reaped already
            return process.returncode, NO_USAGE
        if pid == process.pid:
            process.returncode = os.waitstatus_to_exitcode(status)
            return process.returncode, Usage(usage.ru_utime + usage.ru_stime, usage.ru_nvcsw,
                                             usage.ru_nivcsw)
        if time.monotonic() >= deadline:
            return None, NO_USAGE
        time.sleep(0.01)


def log_tail(path: Path | None, lines: int = 3) -> str:
    """The last lines of a log, joined (``""`` if there is none)."""
    if path is None or not path.exists():
        return ""
    text = path.read_text(encoding="utf-8", errors="replace").strip().splitlines()
    return " | ".join(line.strip() for line in text[-lines:] if line.strip())
