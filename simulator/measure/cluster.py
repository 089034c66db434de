"""One PostgreSQL server's life: a fresh cluster, started, loaded, stopped and removed.

The cluster lives in a fresh directory (mode 0700, owned by the user the server runs as) with its
own port and socket directory; it listens on that Unix socket only (no TCP), with trust
authentication for the socket's owner. The postmaster runs as a direct child of ``snapsim``
(no ``pg_ctl``), so its PID is known and its reaped children's CPU time (``cutime``, ``cstime``)
is the CPU time of the backends that ended: the active clients' backends, once pgbench has
disconnected them. Settings (:func:`server_settings`) are written into ``postgresql.conf`` and
recorded in the metadata.
"""

from __future__ import annotations

import os
import shutil
import socket
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from simulator.errors import ConfigError
from simulator.host import procfs
from simulator.measure.installations import Installation
from simulator.measure.pgbench import DB_USER, Server
from simulator.measure.processes import Registry, RunAs, Tracked, log_tail

READY_TIMEOUT_S = 120.0
BACKEND_MARK = "[local]"
"""In the process title of every backend of a Unix-socket client (``postgres: USER DB [local]
idle``), and of no auxiliary process."""


def server_settings(port: int, socket_dir: Path, max_connections: int,
                    shared_buffers: str) -> dict[str, str]:
    """The settings a measured server runs with (as written into ``postgresql.conf``)."""
    return {
        "listen_addresses": "", "port": str(port), "unix_socket_directories": str(socket_dir),
        "unix_socket_permissions": "0700", "max_connections": str(max_connections),
        "shared_buffers": shared_buffers, "fsync": "off", "synchronous_commit": "off",
        "full_page_writes": "off", "autovacuum": "off", "max_wal_size": "4GB",
        "logging_collector": "off",
    }


def check_port_free(port: int) -> None:
    """Refuse a port another server uses (a TCP listener on this host).

    Raises:
        ConfigError: naming ``--port``: the port is in use or not a valid port.
    """
    if not 1024 <= port <= 65535:
        raise ConfigError("--port", f"must be between 1024 and 65535, got {port}")
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            raise ConfigError("--port", f"port {port} is in use on this host (choose another "
                              "first port with --port)") from None


def chown_to(path: Path, run_as: RunAs) -> None:
    """Give ``path`` to the user the servers run as (when that is another user)."""
    if run_as.uid is not None:
        os.chown(path, run_as.uid, run_as.gid if run_as.gid is not None else -1)


@dataclass(slots=True)
class Cluster:
    """One server of one installation."""

    installation: Installation
    directory: Path
    port: int
    registry: Registry
    settings: Mapping[str, str] = field(default_factory=dict)
    postmaster: Tracked | None = None

    @property
    def data_dir(self) -> Path:
        """The cluster's data directory."""
        return self.directory / "data"

    @property
    def socket_dir(self) -> Path:
        """The directory of the server's Unix socket."""
        return self.directory / "socket"

    @property
    def log_path(self) -> Path:
        """The server's log."""
        return self.directory / "server.log"

    @property
    def server(self) -> Server:
        """Where clients connect."""
        return Server(self.socket_dir, self.port)

    def initialise(self, max_connections: int, shared_buffers: str) -> None:
        """Create the directories and the cluster (``initdb``) and write the settings.

        Raises:
            ConfigError: initdb failed (with the end of its output).
        """
        run_as = self.registry.run_as
        for path in (self.directory, self.socket_dir):
            path.mkdir(mode=0o700, parents=True, exist_ok=False)
            chown_to(path, run_as)
        init_log = self.directory / "initdb.log"
        init_log.touch()
        chown_to(init_log, run_as)
        tracked = self.registry.start(
            [str(self.installation.program("initdb")), "-D", str(self.data_dir), "-U", DB_USER,
             "--auth=trust", "-E", "UTF8", "--no-locale"], f"initdb {self.installation.label}",
            log_path=init_log, as_user=True)
        code = tracked.process.wait()
        self.registry.forget(tracked)
        if code != 0:
            raise ConfigError("--install", f"{self.installation.label}: initdb failed (exit "
                              f"{code}): {log_tail(init_log)}")
        self.settings = server_settings(self.port, self.socket_dir, max_connections,
                                        shared_buffers)
        lines = "".join(f"{key} = '{value}'\n" for key, value in self.settings.items())
        with open(self.data_dir / "postgresql.conf", "a", encoding="utf-8") as conf:
            conf.write("\n# snapsim measure\n" + lines)

    def start(self) -> None:
        """Start the postmaster and wait until it accepts connections.

        Raises:
            ConfigError: it exited or did not get ready (with the end of its log).
        """
        self.log_path.touch()
        chown_to(self.log_path, self.registry.run_as)
        self.postmaster = self.registry.start(
            [str(self.installation.program("postgres")), "-D", str(self.data_dir)],
            f"{self.installation.label} server", log_path=self.log_path, as_user=True,
            server=True)
        deadline = time.monotonic() + READY_TIMEOUT_S
        while not self._ready():
            if self.postmaster.process.poll() is not None:
                raise ConfigError("--install", f"the {self.installation.label} server "
                                  f"({self.installation.version}) did not start (exit "
                                  f"{self.postmaster.process.returncode}): "
                                  f"{log_tail(self.log_path)}")
            if time.monotonic() > deadline:
                raise ConfigError("--install", f"the {self.installation.label} server was not "
                                  f"ready after {READY_TIMEOUT_S:.0f} s: {log_tail(self.log_path)}")
            time.sleep(0.1)

    def _ready(self) -> bool:
        """``postmaster.pid`` says ``ready`` (PostgreSQL 10+) or, before 10, the socket exists."""
        try:
            lines = (self.data_dir / "postmaster.pid").read_text(encoding="utf-8").splitlines()
        except OSError:
            return False
        if len(lines) >= 8:
            return lines[7].strip() == "ready"
        return (self.socket_dir / f".s.PGSQL.{self.port}").exists() and len(lines) >= 6

    @property
    def pid(self) -> int:
        """The postmaster's PID."""
        assert self.postmaster is not None, "the server is not started"
        return self.postmaster.process.pid

    def alive(self) -> bool:
        """Whether the postmaster is running."""
        return self.postmaster is not None and self.postmaster.process.poll() is None

    def backends(self) -> list[int]:
        """PIDs of the client backends now connected."""
        return [pid for pid in procfs.children_of(self.pid)
                if BACKEND_MARK in procfs.cmdline(pid)]

    def reaped_ticks(self) -> int:
        """CPU ticks of the postmaster's children that have ended and been reaped."""
        stat = procfs.read_stat(self.pid)
        return stat.reaped_ticks if stat is not None else 0

    def stop(self) -> None:
        """Stop the postmaster by its PID (fast shutdown, then harder)."""
        if self.postmaster is not None:
            self.registry.stop(self.postmaster)
            self.postmaster = None

    def remove(self) -> None:
        """Stop the server and delete its directory."""
        self.stop()
        shutil.rmtree(self.directory, ignore_errors=True)
