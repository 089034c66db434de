"""What a measurement runs, in which order, and what it will cost in time, memory and processes.

The points are installation x active clients x idle connections x idle kind, each repeated.
Per idle kind, a repetition walks the idle counts up (even repetitions) or down (odd ones), so a
drift of the machine in one direction biases no count; at each count every installation holds
its connections at once and the installations take turns, their order alternating from one
count to the next, so that a drift hits all of them alike.

The estimates use constants measured with this command on a 2-vCPU KVM guest (Debian 12,
PostgreSQL 13 and 15): an idle connection costs about 1.5 MB (server backend and pgbench client
together, from ``MemAvailable``), connections open at 45-150 per second, and loading pgbench's
tables takes about half a second per unit of scale.
"""

from __future__ import annotations

import math
import re
import resource
from dataclasses import dataclass
from pathlib import Path

from simulator.errors import ConfigError
from simulator.host import procfs
from simulator.measure.pgbench import HOLDER_THREADS, PINNED_SCRIPTS

BYTES_PER_CONNECTION = 1.5 * 2**20
CONNECTIONS_PER_S = 60.0
LOAD_S_PER_SCALE = 0.5
SERVER_SETUP_S = 10.0
POINT_OVERHEAD_S = 1.5
SERVER_BASE_BYTES = 64 * 2**20
MEMORY_RESERVE = 0.10
"""Of ``MemAvailable``, left free by a plan."""
EXTRA_CONNECTIONS = 10
"""Above the largest idle + active count, in ``max_connections``."""
FILES_PER_PROCESS_SPARE = 64
_SIZE = re.compile(r"^\s*(\d+)\s*(kB|MB|GB|TB)?\s*$")
_UNITS = {None: 8192, "kB": 2**10, "MB": 2**20, "GB": 2**30, "TB": 2**40}


@dataclass(frozen=True, slots=True)
class Step:
    """One count of held connections in one repetition, and the installations' turn order."""

    idle_kind: str
    repetition: int
    idle: int
    order: tuple[int, ...]
    """Indices of the installations, in the order they run at this count."""


@dataclass(frozen=True, slots=True)
class Plan:
    """The grid of a measurement."""

    installations: int
    clients: tuple[int, ...]
    idle: tuple[int, ...]
    idle_kinds: tuple[str, ...]
    repetitions: int
    duration_s: float
    scale: int
    settle_s: float
    pinned_repetitions: int = 0
    """Runs of each pinned script (:data:`~simulator.measure.pgbench.PINNED_SCRIPTS`) per
    installation, before any connection is held."""

    @property
    def pinned_points(self) -> int:
        """Pinned runs of pgbench: one client with its backend on one CPU."""
        return self.pinned_repetitions * len(PINNED_SCRIPTS) * self.installations

    def steps(self) -> list[Step]:
        """Every count of every repetition, in order."""
        steps = []
        turn = 0
        for kind in self.idle_kinds:
            for repetition in range(self.repetitions):
                counts = self.idle if repetition % 2 == 0 else tuple(reversed(self.idle))
                for idle in counts:
                    order = tuple(range(self.installations))
                    steps.append(Step(kind, repetition, idle,
                                      order if turn % 2 == 0 else tuple(reversed(order))))
                    turn += 1
        return steps

    @property
    def points(self) -> int:
        """Measured runs of pgbench."""
        return len(self.steps()) * len(self.clients) * self.installations

    @property
    def max_connections(self) -> int:
        """Each server's ``max_connections``."""
        return max(self.idle) + max(self.clients) + EXTRA_CONNECTIONS

    def connections_opened(self) -> int:
        """Idle connections opened over the measurement, per server."""
        opened, held, kind = 0, 0, ""
        for step in self.steps():
            if step.idle_kind != kind:
                held, kind = 0, step.idle_kind
            opened += max(0, step.idle - held)
            held = step.idle
        return opened

    def estimate_s(self) -> float:
        """Seconds the whole measurement should take (set-up, connecting, points)."""
        setup = self.installations * (SERVER_SETUP_S + LOAD_S_PER_SCALE * self.scale)
        connecting = self.installations * self.connections_opened() / CONNECTIONS_PER_S
        settling = len(self.steps()) * self.settle_s
        runs = self.points + self.pinned_points
        return setup + connecting + settling + runs * (self.duration_s + POINT_OVERHEAD_S)

    def memory_bytes(self, shared_buffers_bytes: int) -> float:
        """Memory the servers and their connections need at the largest count."""
        per_server = (SERVER_BASE_BYTES + shared_buffers_bytes
                      + (max(self.idle) + max(self.clients)) * BYTES_PER_CONNECTION)
        return self.installations * per_server

    def processes(self) -> int:
        """Processes at the largest count: backends, holders, servers' own and pgbench."""
        per_server = max(self.idle) + max(self.clients) + 10
        return self.installations * per_server + 2


def size_bytes(text: str, flag: str) -> int:
    """A PostgreSQL memory size (``256MB``, ``2GB``; a bare number is 8 kB pages).

    Raises:
        ConfigError: naming ``flag``: not a size.
    """
    match = _SIZE.match(text)
    if match is None:
        raise ConfigError(flag, f"expected a size such as 256MB or 2GB, got {text!r}")
    return int(match.group(1)) * _UNITS[match.group(2)]


def default_shared_buffers(scale: int) -> str:
    """Room for pgbench's tables at ``scale`` (about 16 MB per unit), at least 128 MB."""
    return f"{max(128, 16 * scale)}MB"


def check_memory(plan: Plan, shared_buffers_bytes: int,
                 buffers_flag: str = "--shared-buffers") -> tuple[float, int]:
    """The plan's memory and ``MemAvailable``.

    A plan that does not fit in 90 % of the available memory is blamed on what fills it first:
    the servers' shared buffers (``buffers_flag``: ``--shared-buffers``, or ``--scale`` when
    the buffers follow the scale), then the active clients, then the idle connections.

    Raises:
        ConfigError: naming that flag, the memory needed and how much of it would fit.
    """
    need = plan.memory_bytes(shared_buffers_bytes)
    available = procfs.meminfo_bytes("MemAvailable")
    usable = available * (1 - MEMORY_RESERVE)
    if not available or need <= usable:
        return need, available
    servers = plan.installations
    base = servers * (SERVER_BASE_BYTES + shared_buffers_bytes)
    have = f"{available / 2**30:.1f} GiB is available"
    each = f"{BYTES_PER_CONNECTION / 2**20:.1f} MB each"
    if base > usable:
        raise ConfigError(buffers_flag, f"shared_buffers of {shared_buffers_bytes / 2**30:.1f} "
                          f"GiB per server on {servers} servers need about {base / 2**30:.1f} "
                          f"GiB before any connection, and {have}")
    active = servers * max(plan.clients) * BYTES_PER_CONNECTION
    if base + active > usable:
        fit = int((usable - base) / (servers * BYTES_PER_CONNECTION))
        raise ConfigError("--clients", f"{max(plan.clients)} active clients per server on "
                          f"{servers} servers need about {(base + active) / 2**30:.1f} GiB "
                          f"({each}) and {have}: at most about {fit} per server fit")
    room = int((usable - base - active) / (servers * BYTES_PER_CONNECTION))
    raise ConfigError("--idle", f"{max(plan.idle)} idle connections per server on {servers} "
                      f"servers need about {need / 2**30:.1f} GiB ({each}) and {have}: at "
                      f"most about {room} per server fit beside {max(plan.clients)} active "
                      "clients")


def check_processes(plan: Plan) -> int:
    """``kernel.pid_max``, after checking the plan's processes fit under it.

    Raises:
        ConfigError: naming ``--idle``: too many processes for ``pid_max``.
    """
    pid_max = int(Path("/proc/sys/kernel/pid_max").read_text(encoding="utf-8").split()[0])
    room = pid_max - procfs.process_count() - 256
    if plan.processes() > room:
        raise ConfigError("--idle", f"{max(plan.idle)} idle connections per server on "
                          f"{plan.installations} servers need {plan.processes()} processes, "
                          f"and kernel.pid_max ({pid_max}) leaves room for {room} (raise it: "
                          "sysctl kernel.pid_max)")
    return pid_max


def raise_open_files(largest: int) -> tuple[int, str]:
    """Raise this process's open-file limit (its children inherit it); return it and a note.

    The soft limit goes up to the hard one; as root the hard one also rises to what one holder
    of ``largest`` connections needs, within ``fs.nr_open``. Holders are split so each stays
    under the limit, so a low limit costs processes, not failure.
    """
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = largest + FILES_PER_PROCESS_SPARE
    note = ""
    if hard != resource.RLIM_INFINITY and hard < wanted:
        try:
            nr_open = int(Path("/proc/sys/fs/nr_open").read_text(encoding="utf-8").split()[0])
            resource.setrlimit(resource.RLIMIT_NOFILE, (min(wanted, nr_open),
                                                        min(wanted, nr_open)))
            soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        except (OSError, ValueError) as exc:
            note = (f"the hard open-file limit is {hard} and cannot be raised ({exc}): holders "
                    f"of at most {hard - FILES_PER_PROCESS_SPARE} connections each")
    if soft != hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        soft = hard
    return (soft if soft != resource.RLIM_INFINITY else 1 << 20), note


def holder_chunk(open_files: int, largest: int) -> int:
    """Connections per holder process under the open-file limit."""
    return max(1, min(max(largest, 1), open_files - FILES_PER_PROCESS_SPARE))


def holder_threads(connections: int, chunk: int) -> int:
    """The pgbench threads that hold ``connections`` (each holder of at most ``chunk``).

    Each holder process runs ``HOLDER_THREADS`` of them.
    """
    return HOLDER_THREADS * max(1, math.ceil(connections / chunk))
