"""Stand-in PostgreSQL programs for the tests of ``snapsim measure`` (no real server needed).

``postgres`` listens on the Unix socket its ``postgresql.conf`` names, writes ``postmaster.pid``
with ``ready`` and starts one child per connection whose title holds ``[local]`` (a ``cat`` of
the connection: it ends when the client disconnects, and the fake postmaster reaps it); it writes
every child's PID into ``$FAKE_PG_PIDS`` so a test can check they are gone. ``initdb`` makes the
data directory; ``pgbench`` loads nothing, holds connections (``-f``; under ``-P`` it prints
progress lines of 10 transactions a second per mostly idle connection, 1 per idle one) until
stopped, or spins for ``-T`` seconds and prints a pgbench 15 report of 20,000 TPS per client.
Every program says its version with ``--version``.
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

POSTGRES = r'''#!/usr/bin/env python3
import os, signal, socket, subprocess, sys, time
if sys.argv[1:] == ["--version"]:
    print("postgres (PostgreSQL) @VERSION@")
    sys.exit(0)
MODE = "@MODE@"
data = sys.argv[sys.argv.index("-D") + 1]
conf = {}
for line in open(os.path.join(data, "postgresql.conf")):
    if "=" in line and not line.startswith("#"):
        key, _, value = line.partition("=")
        conf[key.strip()] = value.strip().strip("'")
if MODE == "fail":
    print("FATAL:  could not create shared memory segment: Cannot allocate memory", flush=True)
    sys.exit(1)
port, sockdir = conf["port"], conf["unix_socket_directories"]
path = os.path.join(sockdir, ".s.PGSQL." + port)
server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
server.bind(path)
server.listen(1024)
server.settimeout(0.05)
children = []
pids = os.environ.get("FAKE_PG_PIDS")
def record(pid):
    if pids:
        with open(pids, "a") as handle:
            handle.write(f"{pid}\n")
record(os.getpid())
def stop(signum, frame):
    for child in children:
        if child.poll() is None:
            child.terminate()
    os.unlink(path)
    os.unlink(os.path.join(data, "postmaster.pid"))
    sys.exit(0)
for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGQUIT):
    signal.signal(sig, stop)
with open(os.path.join(data, "postmaster.pid"), "w") as handle:
    handle.write(f"{os.getpid()}\n{data}\n{int(time.time())}\n{port}\n{sockdir}\n\n0 0\nready\n")
while True:
    try:
        conn, _ = server.accept()
    except socket.timeout:
        conn = None
    if conn is not None:
        child = subprocess.Popen(
            ["bash", "-c", 'exec -a "postgres: postgres postgres [local] idle" cat'],
            stdin=conn.fileno(), stdout=subprocess.DEVNULL)
        record(child.pid)
        conn.close()
        children.append(child)
    children = [child for child in children if child.poll() is None]
'''

INITDB = '''#!/bin/sh
while [ $# -gt 0 ]; do [ "$1" = -D ] && data="$2"; shift; done
mkdir -p "$data" && : > "$data/postgresql.conf" && echo "Success."
'''

PGBENCH = r'''#!/usr/bin/env python3
import os, signal, socket, sys, time
args = sys.argv[1:]
if args == ["--version"]:
    print("pgbench (PostgreSQL) @VERSION@")
    sys.exit(0)
if "-i" in args:
    print("done in 0.01 s")
    sys.exit(0)
def value(flag, default=None):
    return args[args.index(flag) + 1] if flag in args else default
clients, seconds = int(value("-c", "1")), float(value("-T", "1"))
path = os.path.join(value("-h"), ".s.PGSQL." + value("-p"))
conns = []
for _ in range(clients):
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(path)
    conns.append(conn)
if "-f" in args and not value("-f").endswith("select1.sql"):  # a holder: until -T or a signal
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    # progress lines as pgbench's -P N --progress-timestamp: each connection of a mostly idle
    # holder runs 10 transactions a second, of an idle one 1
    interval = float(value("-P", "0"))
    rate = clients * (10.0 if value("-f").endswith("mostly-idle.sql") else 1.0)
    end = time.time() + seconds
    while interval > 0 and time.time() + interval < end:
        time.sleep(interval)
        print(f"progress: {time.time():.3f} s, {rate:.1f} tps, lat 100.000 ms stddev 0.000, "
              "0 failed", file=sys.stderr, flush=True)
    time.sleep(max(end - time.time(), 0.0))
    sys.exit(0)
end = time.monotonic() + seconds
while time.monotonic() < end:  # busy, as a client is
    pass
if os.environ.get("FAKE_PGBENCH_AFFINITY"):  # where a measured run ran, for the tests
    with open(os.environ["FAKE_PGBENCH_AFFINITY"], "a") as record:
        cpus = " ".join(map(str, sorted(os.sched_getaffinity(0))))
        record.write(("select1" if "-f" in args else "select-only") + " " + cpus + "\n")
count = int(20000 * clients * seconds)  # a plausible rate, for the model to be calibrated to
for conn in conns:
    conn.close()
print("transaction type: <builtin: select only>")
print(f"number of clients: {clients}")
print(f"number of transactions actually processed: {count}")
print("latency average = 0.050 ms")
print("initial connection time = 1.000 ms")
print(f"tps = {count / seconds:.6f} (without initial connection time)")
'''


def _write(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH
               | stat.S_IRGRP | stat.S_IROTH)


def shared_directory() -> Path:
    """A fresh directory that the servers' user (``postgres`` when the tests run as root) can
    read and write; the caller removes it."""
    directory = Path(tempfile.mkdtemp(prefix="snapsim-fake-pg-"))
    directory.chmod(0o777)
    return directory


def fake_bindir(root: Path, version: str, mode: str = "ok") -> Path:
    """A bin directory with ``postgres`` and ``initdb`` of ``version`` (``mode="fail"``: the
    server exits at start)."""
    bindir = root / f"pg-{version}-{mode}"
    bindir.mkdir(parents=True, exist_ok=True)
    bindir.chmod(0o755)
    _write(bindir / "postgres", POSTGRES.replace("@VERSION@", version).replace("@MODE@", mode))
    _write(bindir / "initdb", INITDB)
    return bindir


def fake_pgbench(root: Path, version: str = "15.4") -> Path:
    """A stand-in pgbench of ``version``."""
    path = root / f"pgbench-{version}"
    _write(path, PGBENCH.replace("@VERSION@", version))
    return path


def alive(pid: int) -> bool:
    """Whether a process exists and is not a zombie."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def processes_mentioning(text: str) -> list[int]:
    """Live processes whose command line holds ``text`` (for checking only, never signalling)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            command = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if text in command and alive(int(entry.name)):
            found.append(int(entry.name))
    return found
