"""Idle and mostly idle connections held open on one server by pgbench holder processes.

A server's connections are a stack of holders, each a pgbench process holding a number of
connections (at most ``chunk`` each, so that one process stays within the open-file limit);
moving to another count starts holders for the difference or stops the newest ones by PID.
Readiness is counted from the server's side: its client backends in ``/proc``. While another
server is measured, a server's holders are paused (SIGSTOP): its connections stay open but its
mostly idle clients send nothing, so only the measured server's background runs. The
transactions the holders ran in a window are counted from their progress lines.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from simulator.errors import ConfigError
from simulator.measure.cluster import Cluster
from simulator.measure.pgbench import (
    PROGRESS_INTERVAL_S,
    holder_command,
    parse_progress,
    transactions_between,
)
from simulator.measure.processes import Tracked, log_tail, pause

HOLD_MARGIN_S = 3600.0
"""What a holder's ``-T`` adds to twice the measurement's estimate (:func:`holder_lifetime_s`)."""


def holder_lifetime_s(estimate_s: float) -> float:
    """A holder's ``-T``: longer than the measurement should take (it is stopped by PID).

    Twice the plan's estimate plus an hour, so that a slow measurement keeps its connections,
    while a holder that outlives a killed ``snapsim`` (without a parent-death signal) ends
    within hours, not the 30 days it was once given.
    """
    return 2.0 * estimate_s + HOLD_MARGIN_S
CONNECT_RATE_PER_S = 20.0
"""The slowest connection rate waited for before giving up (45-150 per second were seen)."""
PROGRESS_WAIT_S = 2.0 * PROGRESS_INTERVAL_S + 1.0
"""How long after a window its holders' progress lines are waited for."""


@dataclass(slots=True)
class Holders:
    """The holders of one server."""

    cluster: Cluster
    pgbench: Path
    log_dir: Path
    chunk: int
    hold_s: float = HOLD_MARGIN_S
    """Each holder's ``-T`` (:func:`holder_lifetime_s`)."""
    held: list[tuple[int, Tracked]] = field(default_factory=list)
    kind: str = ""
    log_starts: dict[int, int] = field(default_factory=dict)
    """Per holder PID, where its output starts in its log (a log name is reused)."""

    @property
    def count(self) -> int:
        """Connections held."""
        return sum(count for count, _ in self.held)

    def processes(self) -> list[int]:
        """PIDs of the holder processes."""
        return [tracked.process.pid for _, tracked in self.held]

    def hold(self, target: int, kind: str, script: Path,
             progress: Callable[[str], None] = lambda _: None) -> None:
        """Hold ``target`` connections of ``kind`` (changing kind drops every holder first).

        Raises:
            ConfigError: a holder exited (the server refused connections: its log's end), or
                the server did not reach the count in time.
        """
        registry = self.cluster.registry
        if kind != self.kind:
            self.release()
            self.kind = kind
        while self.held and self.count > target:
            self._stop_newest()
        started = time.monotonic()
        before = self.count
        while self.count < target:
            size = min(self.chunk, target - self.count)
            log_path = self.log_dir / f"holder-{self.cluster.installation.label}-" \
                                      f"{len(self.held)}.log"
            start = log_path.stat().st_size if log_path.exists() else 0
            tracked = registry.start(
                holder_command(self.pgbench, self.cluster.server, size, script, self.hold_s),
                f"{self.cluster.installation.label} holder of {size}", log_path=log_path)
            self.log_starts[tracked.process.pid] = start
            self.held.append((size, tracked))
        self._wait(target, target - before, started, progress)

    def _wait(self, target: int, opened: int, started: float,
              progress: Callable[[str], None]) -> None:
        deadline = started + 30.0 + max(opened, 0) / CONNECT_RATE_PER_S
        shown = time.monotonic()
        while True:
            connected = len(self.cluster.backends())
            if connected == target:
                return
            for size, tracked in self.held:
                if tracked.process.poll() is not None:
                    raise ConfigError("holders", f"a holder of {size} connections to the "
                                      f"{self.cluster.installation.label} server exited at "
                                      f"{connected} connections: {log_tail(tracked.log_path)}"
                                      f" / server: {log_tail(self.cluster.log_path, 2)}")
            if not self.cluster.alive():
                raise ConfigError("holders", f"the {self.cluster.installation.label} server "
                                  f"exited: {log_tail(self.cluster.log_path)}")
            now = time.monotonic()
            if now > deadline:
                raise ConfigError("holders", f"the {self.cluster.installation.label} server has "
                                  f"{connected} of {target} connections after "
                                  f"{now - started:.0f} s")
            if now - shown > 10:
                progress(f"  {self.cluster.installation.label}: {connected}/{target} "
                         "connections")
                shown = now
            time.sleep(0.2)

    def pause(self, paused: bool) -> None:
        """Silence (or wake) the holders: their connections stay open and send nothing."""
        for _, tracked in self.held:
            pause(tracked, paused)

    def transactions_between(self, start_s: float, end_s: float,
                             wait_s: float = PROGRESS_WAIT_S) -> float | None:
        """Transactions the holders ran between two Unix times, from their progress lines.

        Waits up to ``wait_s`` for every holder to report past ``end_s``; ``None`` if one has
        not (or if its log is unreadable).
        """
        deadline = time.monotonic() + wait_s
        while True:
            counts = [self._transactions(tracked, start_s, end_s) for _, tracked in self.held]
            if all(count is not None for count in counts):
                return sum(count for count in counts if count is not None)
            if time.monotonic() >= deadline:
                return None
            time.sleep(0.1)

    def _transactions(self, tracked: Tracked, start_s: float, end_s: float) -> float | None:
        if tracked.log_path is None:
            return None
        try:
            with open(tracked.log_path, "rb") as log:
                log.seek(self.log_starts.get(tracked.process.pid, 0))
                text = log.read().decode("utf-8", errors="replace")
        except OSError:
            return None
        return transactions_between(parse_progress(text), start_s, end_s)

    def release(self) -> None:
        """Stop every holder, newest first."""
        while self.held:
            self._stop_newest()

    def _stop_newest(self) -> None:
        _, tracked = self.held.pop()
        self.cluster.registry.stop(tracked)
        self.log_starts.pop(tracked.process.pid, None)
