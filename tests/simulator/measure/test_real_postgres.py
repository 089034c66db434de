"""One small real measurement: the host's PostgreSQL (14 or later, and a 13 if one is given).

Plumbing end to end, not figures: real servers start as an unprivileged user, hold idle
connections, run pgbench, are stopped, leave nothing running or listening, and the output reads
back as ``snapsim validate`` reads it. Skipped when no PostgreSQL server is installed (Debian and
Ubuntu: ``apt-get install postgresql-15``; ``.ci/run`` installs it). ``SNAPSIM_POST14_BINDIR`` and
``SNAPSIM_PRE14_BINDIR`` name bin directories to use (``.ci/run`` sets the second when it could
fetch PostgreSQL 13).
"""

from __future__ import annotations

import os
import platform
import pwd
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
import yaml

from simulator.cli import main
from simulator.measure.manifest import load_manifest
from simulator.tools.validate import check_datasets
from tests.simulator.measure.fakes import alive, processes_mentioning, shared_directory
from tests.simulator.measure.test_measure_cli import free_port


def post14_bindir() -> Path | None:
    """``SNAPSIM_POST14_BINDIR``, else ``pg_config --bindir``, else Debian's newest."""
    given = os.environ.get("SNAPSIM_POST14_BINDIR")
    if given:
        return Path(given)
    candidates = []
    if shutil.which("pg_config"):
        done = subprocess.run(["pg_config", "--bindir"], capture_output=True, text=True,
                              check=False)
        candidates.append(Path(done.stdout.strip()))
    candidates += sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True)
    for bindir in candidates:
        if (bindir / "postgres").is_file() and (bindir / "initdb").is_file():
            return bindir
    return None


def pgbench_for(bindir: Path) -> str | None:
    beside = bindir / "pgbench"
    return str(beside) if beside.is_file() else shutil.which("pgbench")


@pytest.fixture
def shared() -> Iterator[Path]:
    directory = shared_directory()
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


@pytest.mark.slow
def test_a_small_real_measurement_runs_cleans_up_and_validates(
        shared: Path, tmp_path: Path) -> None:
    bindir = post14_bindir()
    if bindir is None:
        pytest.skip("no PostgreSQL server installed (apt-get install postgresql-15, or set "
                    "SNAPSIM_POST14_BINDIR)")
    pgbench = pgbench_for(bindir)
    if pgbench is None:
        pytest.skip(f"no pgbench on PATH nor in {bindir}")
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            pytest.skip("running as root and there is no user 'postgres' to run the servers")
    installs = ["--install", f"post14={bindir}"]
    pre14 = os.environ.get("SNAPSIM_PRE14_BINDIR")
    if pre14 and Path(pre14, "postgres").is_file():
        installs += ["--install", f"pre14={pre14}"]
    out = tmp_path / "m"
    code = main(["measure", *installs, "--pgbench", pgbench, "--idle", "0,30",
                 "--idle-kind", "idle", "--idle-kind", "mostly-idle", "--duration-s", "2",
                 "--repetitions", "1", "--scale", "1", "--warmup-s", "0", "--settle-s", "0",
                 "--port", str(free_port()), "--work-dir", str(shared / "work"), "--out",
                 str(out), "--wakeup-round-trips", "2000", "--pinned-repetitions", "1"])
    assert code == 0
    metadata = yaml.safe_load((out / "metadata.yaml").read_text())
    if metadata["host"].get("virtualized"):  # a guest: its wake-up was measured, host.yaml has it
        assert metadata["wakeup_us"]["cross_cpu"] > 0
        assert "ipi_exit measured" in metadata["machine_file"]
        if platform.machine().lower() in ("x86_64", "amd64"):  # and its clock
            assert metadata["clock_ghz"] > 0
            assert "clock measured" in metadata["machine_file"]
    assert metadata["status"] == "complete"
    # nothing left running or listening: the servers and clients are gone, their sockets too
    stopped = [int(text.rpartition("PID ")[2].rstrip(")")) for text in
               metadata["stopped_on_exit"]]
    assert len(stopped) == len(installs) // 2
    assert [pid for pid in stopped if alive(pid)] == []
    assert processes_mentioning(str(shared)) == []
    assert list((shared / "work").glob("**/.s.PGSQL.*")) == []
    long = pd.read_csv(out / "repetitions.csv")
    assert len(long) == metadata["runs_planned"] == 2 * 2 * len(installs) // 2
    # the plumbing of the CPU accounting: every run's backends and client took some CPU
    assert (long["backend_cpu_us_per_txn"] > 0).all()
    assert (long["client_cpu_us_per_txn"] > 0).all()
    assert (long["transactions"] > 0).all()
    # one client's backend blocks once per transaction for its next query (more if it waits
    # for anything else); pgbench's client as often. On an idle host that is 0.5-3.0 a
    # transaction; a host busy with other CPU-bound work preempts the pair, so the next query is
    # often there before the backend asks for it (0.01-0.32 measured beside two CPU-bound
    # jobs on 2 vCPUs): the counts must be read and attributed (> 0), never above 3
    for column in ("backend_voluntary_switches_per_txn", "client_voluntary_switches_per_txn"):
        assert ((long[column] > 0.0) & (long[column] <= 3.0)).all(), long[column].tolist()
    # 30 mostly idle connections each run SELECT 1 every 100 ms and a little more (a window
    # that cuts a one-second progress line counts its share of the line's mean rate: +-5 %)
    mostly = long[(long["idle_kind"] == "mostly-idle") & (long["idle_connections"] == 30)]
    assert mostly["holders_tps"].between(0.8 * 300, 1.05 * 300).all()
    # the pinned runs: -S and SELECT 1 per server, the real backend's and pgbench's CPU
    pinned = pd.read_csv(out / "pinned.csv")
    assert len(pinned) == 2 * len(installs) // 2
    assert (pinned["backend_cpu_us_per_txn"] > 0).all()
    assert (pinned["client_cpu_us_per_txn"] > 0).all()
    assert (pinned["tps"] > 0).all()
    assert len(metadata["pinned"]) == len(pinned)
    manifest = load_manifest(out)
    check_datasets(manifest)
    assert set(manifest.dataset("host_idle").table()["idle_clients"]) == {0, 30}
    assert set(manifest.dataset("host_mostly_idle").table()["idle_clients"]) == {0, 30}
