r"""The pgbench commands a measurement runs and the report it prints.

Active clients run the publications' form, ``pgbench -n -M prepared -S -c N -j N -T SECONDS``
(read-only, prepared statements, one thread per client). A pinned run is one such client, or one
running ``SELECT 1;`` (the mostly idle connections' query), whose pgbench and backend the
measurement then pins to one CPU. Idle connections are pgbench clients
whose script is ``\sleep 1s`` (established, never sending a query); mostly idle ones run
``\sleep 100ms`` then ``SELECT 1;`` in a loop; a holder reports its progress every second
with Unix timestamps (``-P 1 --progress-timestamp``: each line the mean rate since the previous
one), from which the transactions it ran in a measured window are counted. The report's TPS is
the one that excludes connection set-up (pgbench 13: ``excluding connections establishing``; 14
and later: ``without initial connection time``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from simulator.config.files import write_text_atomic
from simulator.errors import ConfigError

DATABASE = "postgres"
DB_USER = "postgres"
IDLE_KINDS = ("idle", "mostly-idle")
SCRIPTS = {"idle": "\\sleep 1s\n", "mostly-idle": "\\sleep 100ms\nSELECT 1;\n"}
"""The holders' scripts by idle kind (as the publications)."""
PINNED_SCRIPTS = ("select-only", "select1")
"""What a pinned run executes: ``-M prepared -S`` (the active clients' transaction) or
``SELECT 1;`` (the mostly idle connections' query, simple protocol)."""
SELECT1_SCRIPT = "SELECT 1;\n"
_TPS = re.compile(r"^tps = ([0-9.]+) \((?:excluding connections establishing|without initial "
                  r"connection time)\)", re.MULTILINE)
_TRANSACTIONS = re.compile(r"^number of transactions actually processed: (\d+)", re.MULTILINE)
_LATENCY = re.compile(r"^latency average = ([0-9.]+) ms", re.MULTILINE)
_CONNECTION = re.compile(r"^initial connection time = ([0-9.]+) ms", re.MULTILINE)
_PROGRESS = re.compile(r"^progress: ([0-9]+(?:\.[0-9]*)?) s, ([0-9]+(?:\.[0-9]*)?) tps",
                       re.MULTILINE)
PROGRESS_INTERVAL_S = 1
"""A holder's ``-P``: seconds between its progress lines."""
HOLDER_THREADS = 1
"""A holder's ``-j``: the pgbench threads that drive its connections."""


@dataclass(frozen=True, slots=True)
class Server:
    """Where a server listens: its socket directory and port."""

    socket_dir: Path
    port: int

    def connection(self) -> list[str]:
        """The connection options of pgbench (Unix socket, trust authentication)."""
        return ["-h", str(self.socket_dir), "-p", str(self.port), "-U", DB_USER]


@dataclass(frozen=True, slots=True)
class Report:
    """What a pgbench run reported."""

    transactions: int
    tps: float
    """Excluding connection set-up."""
    latency_ms: float
    connection_ms: float | None
    """pgbench 14+'s ``initial connection time``; ``None`` before."""


def init_command(pgbench: Path, server: Server, scale: int) -> list[str]:
    """Create and load pgbench's tables at ``scale`` (quiet progress)."""
    return [str(pgbench), "-i", "-q", "-s", str(scale), *server.connection(), DATABASE]


def active_command(pgbench: Path, server: Server, clients: int, duration_s: float) -> list[str]:
    """The measured run: ``clients`` active read-only clients for ``duration_s``."""
    return [str(pgbench), "-n", "-M", "prepared", "-S", "-c", str(clients), "-j", str(clients),
            "-T", str(max(1, round(duration_s))), *server.connection(), DATABASE]


def pinned_command(pgbench: Path, server: Server, script: str, select1: Path,
                   duration_s: float) -> list[str]:
    """One client for ``duration_s`` running ``script`` (``select1``'s file for ``select1``)."""
    what = ["-M", "prepared", "-S"] if script == "select-only" else ["-f", str(select1)]
    return [str(pgbench), "-n", *what, "-c", "1", "-j", "1", "-T",
            str(max(1, round(duration_s))), *server.connection(), DATABASE]


def write_select1(directory: Path) -> Path:
    """The pinned runs' ``SELECT 1;`` script, written into ``directory``."""
    path = directory / "select1.sql"
    return write_text_atomic(path, SELECT1_SCRIPT)


def holder_command(pgbench: Path, server: Server, connections: int, script: Path,
                   duration_s: float) -> list[str]:
    """A holder: ``connections`` idle or mostly idle clients in one thread for ``duration_s``.

    It reports its progress every ``PROGRESS_INTERVAL_S`` with Unix timestamps.
    """
    return [str(pgbench), "-n", "-c", str(connections), "-j", str(HOLDER_THREADS),
            "-T", str(max(1, round(duration_s))), "-P", str(PROGRESS_INTERVAL_S),
            "--progress-timestamp", "-f", str(script), *server.connection(), DATABASE]


def write_script(directory: Path, idle_kind: str) -> Path:
    """The holders' script of an idle kind, written into ``directory``."""
    path = directory / f"{idle_kind}.sql"
    return write_text_atomic(path, SCRIPTS[idle_kind])


def parse_report(text: str) -> Report:
    """The figures of a pgbench report.

    Raises:
        ConfigError: the report lacks the processed transactions, the TPS or the latency.
    """
    found = {name: pattern.search(text) for name, pattern in
             (("transactions", _TRANSACTIONS), ("tps", _TPS), ("latency", _LATENCY))}
    missing = [name for name, match in found.items() if match is None]
    if missing:
        tail = " | ".join(text.strip().splitlines()[-3:]) or "no output"
        raise ConfigError("pgbench", f"its report has no {', '.join(missing)} ({tail})")
    connection = _CONNECTION.search(text)
    return Report(transactions=int(found["transactions"].group(1)),  # type: ignore[union-attr]
                  tps=float(found["tps"].group(1)),  # type: ignore[union-attr]
                  latency_ms=float(found["latency"].group(1)),  # type: ignore[union-attr]
                  connection_ms=float(connection.group(1)) if connection else None)


def parse_progress(text: str) -> list[tuple[float, float]]:
    """The progress lines of a pgbench run with ``--progress-timestamp``, in order.

    Each is ``(Unix time, TPS since the previous line)``.
    """
    return [(float(at), float(tps)) for at, tps in _PROGRESS.findall(text)]


def transactions_between(progress: list[tuple[float, float]], start_s: float, end_s: float,
                         interval_s: float = PROGRESS_INTERVAL_S) -> float | None:
    """Transactions a pgbench run reported between two Unix times.

    Each progress line gives the mean rate since the previous line (the first: over one
    interval); a window that cuts a line's interval takes the share it overlaps, as if the
    rate were even within it. ``None`` if the lines do not reach ``end_s`` (or start after
    ``start_s``): the window is not covered.
    """
    if not progress or progress[-1][0] < end_s or progress[0][0] - interval_s > start_s:
        return None
    total = 0.0
    previous = progress[0][0] - interval_s
    for at, tps in progress:
        overlap = min(at, end_s) - max(previous, start_s)
        if overlap > 0.0:
            total += tps * overlap
        previous = at
    return total
