"""``snapsim measure`` with stand-in programs: outputs, bad input, and cleanup on every way out."""

from __future__ import annotations

import dataclasses
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml

from simulator.cli import main
from simulator.cli import measure as measure_cli
from simulator.config.machine_file import load_machine
from simulator.host import clock, probe, wakeup
from simulator.host.clock import MeasuredClock
from simulator.host.facts import host_facts
from simulator.host.probe_idle import GuestIdle
from simulator.host.wakeup import WakeupMeasurement
from simulator.measure.kernel_thread_fit import fit_kernel_thread
from simulator.measure.manifest import MOSTLY_IDLE_RUN, load_manifest
from simulator.measure.outputs import REPETITION_COLUMNS
from simulator.tools.validate import check_datasets
from tests.paths import REPO_ROOT
from tests.simulator.measure.fakes import (
    alive,
    fake_bindir,
    fake_pgbench,
    processes_mentioning,
)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def arguments(shared: Path, out: Path, *extra: str, pre14: str = "13.4",
              post14: str = "15.4", wakeup_round_trips: int = 0,
              clock_repeats: int = 0, pinned_repetitions: int = 0) -> list[str]:
    return ["measure", "--install", f"pre14={fake_bindir(shared, pre14)}",
            "--install", f"post14={fake_bindir(shared, post14)}",
            "--pgbench", str(fake_pgbench(shared)), "--idle", "0,3", "--duration-s", "1",
            "--repetitions", "2", "--warmup-s", "0", "--settle-s", "0", "--scale", "1",
            "--port", str(free_port()), "--work-dir", str(shared / "work"), "--out", str(out),
            "--wakeup-round-trips", str(wakeup_round_trips), "--clock-repeats",
            str(clock_repeats), "--pinned-repetitions", str(pinned_repetitions), *extra]


def no_process_left(shared: Path, pids_file: Path) -> None:
    """No server, holder, pgbench or backend the measurement started is alive."""
    assert processes_mentioning(str(shared)) == []
    recorded = [int(line) for line in pids_file.read_text().split()]
    assert recorded, "the fake servers recorded no PID"
    assert [pid for pid in recorded if alive(pid)] == []


def test_a_measurement_writes_what_validate_reads_and_leaves_nothing_running(
        shared: Path, pids_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "m"
    assert main(arguments(shared, out, "--idle-kind", "idle", "--idle-kind", "mostly-idle")) == 0
    no_process_left(shared, pids_file)
    long = pd.read_csv(out / "repetitions.csv")
    # 2 servers x 1 client x 2 idle counts x 2 kinds x 2 repetitions
    assert len(long) == 16
    assert set(long["series"]) == {"tps_pre14", "tps_post14"}
    assert (long["tps"] > 0).all()
    # the background's rate from the holders' progress lines: the fake's 10 a second per mostly
    # idle connection, none without holders, none counted for idle ones
    mostly = long[long["idle_kind"] == "mostly-idle"]
    assert (mostly.loc[mostly["idle_connections"] == 0, "holders_tps"] == 0).all()
    assert mostly.loc[mostly["idle_connections"] == 3, "holders_tps"].tolist() == \
        pytest.approx([30.0] * 4, rel=0.02)
    assert long.loc[(long["idle_kind"] == "idle") & (long["idle_connections"] == 3),
                    "holders_tps"].isna().all()
    # context switches per transaction: the backends' over the run's middle, the client's whole
    switches = long.filter(like="switches_per_txn")
    assert list(switches) == ["backend_voluntary_switches_per_txn",
                              "backend_involuntary_switches_per_txn",
                              "client_voluntary_switches_per_txn",
                              "client_involuntary_switches_per_txn"]
    assert (switches.notna() & (switches >= 0)).all().all()
    # the first repetition goes up, the second down; installations take turns
    idle_kind = long[long["idle_kind"] == "idle"]
    assert list(idle_kind["idle_connections"]) == [0, 0, 3, 3, 3, 3, 0, 0]
    assert list(idle_kind["series"])[:4] == ["tps_pre14", "tps_post14", "tps_post14",
                                             "tps_pre14"]
    wide = pd.read_csv(out / "host_idle.csv")
    assert list(wide["idle_connections"]) == [0, 3]
    assert (wide["repetitions_pre14"] == 2).all()
    manifest = load_manifest(out)  # the directory stands for its manifest.yaml
    assert set(manifest.datasets) == {"host_idle", "host_mostly_idle"}
    check_datasets(manifest)  # the machine file host.yaml, relative to the manifest, loads
    assert manifest.work_scale_points["host"].series == "tps_pre14"
    assert manifest.dataset("host_mostly_idle").run == MOSTLY_IDLE_RUN  # every point
    # its mostly idle connections were driven by one pgbench thread (a holder of at most 5,000)
    assert manifest.dataset("host_mostly_idle").sets == (("options.background_threads", 1),)
    assert "one thread and at most" in manifest.dataset("host_mostly_idle").description
    metadata = yaml.safe_load((out / "metadata.yaml").read_text())
    assert metadata["status"] == "complete"
    assert metadata["runs_recorded"] == metadata["runs_planned"] == 16
    assert metadata["server_settings"]["pre14"]["fsync"] == "off"
    assert not (shared / "work").exists() or not any((shared / "work").iterdir())


@pytest.mark.parametrize(("change", "message"), [
    (["--install", "pre14=/nonexistent/bin"], "--install: pre14: no such directory"),
    (["--install", "pre15=/usr/bin"], "unknown label 'pre15'"),
    (["--install", "pre14"], "expected LABEL=BINDIR"),
    (["--idle", "0,-5"], "--idle: every count must be at least 0"),
    (["--clients", "one"], "--clients: expected comma-separated integers"),
    (["--duration-s", "0"], "--duration-s: must be at least 1"),
    (["--shared-buffers", "lots"], "--shared-buffers: expected a size"),
    (["--name", "a b"], "--name: expected letters"),
    (["--idle", "0,100000000"], "--idle: 100000000 idle connections per server"),
    (["--duration-s", "inf"], "--duration-s: must be at most 86400 (a day), got inf"),
    (["--warmup-s", "inf"], "--warmup-s: must be at most 86400 (a day), got inf"),
    (["--settle-s", "inf"], "--settle-s: must be at most 86400 (a day), got inf"),
    (["--settle-s", "nan"], "--settle-s: must be at least 0, got nan"),
])
def test_bad_input_is_one_line_and_exit_2(
        shared: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], change: list[str],
        message: str) -> None:
    args = arguments(shared, tmp_path / "m")
    flag = change[0]
    if flag == "--install":
        args = [*args[:1], *change, *args[5:]]
    else:
        position = args.index(flag) if flag in args else len(args)
        args = [*args[:position], *change, *args[position + 2:]] if flag in args \
            else [*args, *change]
    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert message in err[0]
    assert not (tmp_path / "m").exists()


@pytest.mark.parametrize(("pre14", "post14", "message"), [
    ("15.4", "15.4", "holds postgres (PostgreSQL) 15.4, which is post14, not pre14"),
    ("13.4", "13.4", "holds postgres (PostgreSQL) 13.4, which is pre14, not post14"),
    ("9.6.24", "14.1", None),
    ("9.1.2", "14.1", "older than 9.2"),
])
def test_the_label_must_match_the_servers_version(
        shared: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], pre14: str,
        post14: str, message: str | None) -> None:
    code = main([*arguments(shared, tmp_path / "m", pre14=pre14, post14=post14), "--dry-run"])
    err = capsys.readouterr().err
    if message is None:
        assert code == 0
        assert "pre14: postgres (PostgreSQL) 9.6.24" in err
    else:
        assert code == 2
        assert message in err


def test_an_old_pgbench_is_refused(shared: Path, tmp_path: Path,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    args = arguments(shared, tmp_path / "m")
    args[args.index("--pgbench") + 1] = str(fake_pgbench(shared, "12.9"))
    assert main(args) == 2
    assert "pgbench 13 or later is needed" in capsys.readouterr().err


def test_a_port_in_use_is_refused_before_anything_starts(
        shared: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = arguments(shared, tmp_path / "m")
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = int(busy.getsockname()[1])
        args[args.index("--port") + 1] = str(port)
        assert main(args) == 2
    assert f"port {port} is in use" in capsys.readouterr().err
    assert processes_mentioning(str(shared)) == []


def test_a_server_that_will_not_start_stops_everything_and_keeps_partial_results(
        shared: Path, pids_file: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "m"
    args = arguments(shared, out)
    args[args.index("--install", 2) + 1] = f"post14={fake_bindir(shared, '15.4', 'fail')}"
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "the post14 server (postgres (PostgreSQL) 15.4) did not start" in err
    assert "could not create shared memory segment" in err
    no_process_left(shared, pids_file)
    metadata = yaml.safe_load((out / "metadata.yaml").read_text())
    assert metadata["status"] == "partial"
    assert "did not start" in metadata["cause"]
    assert (out / "logs" / "server-post14.log").exists()
    assert "pre14 server" in " ".join(metadata["stopped_on_exit"])


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_mid_point_stops_every_server_and_client(
        shared: Path, pids_file: Path, tmp_path: Path, sig: signal.Signals) -> None:
    out = tmp_path / "m"
    args = arguments(shared, out)
    args[args.index("--duration-s") + 1] = "60"
    args[args.index("--idle") + 1] = "3"  # holders on both servers from the first run
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT / ".dev")}
    command = subprocess.Popen([sys.executable, "-m", "simulator", *args], cwd=REPO_ROOT,
                               env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while not any("-S" in _command(pid) for pid in processes_mentioning(str(shared))):
            assert command.poll() is None, command.communicate()
            assert time.monotonic() < deadline, "no pgbench run started"
            time.sleep(0.1)
        started = processes_mentioning(str(shared))
        assert len(started) >= 5  # two servers, two holders and the active pgbench
        # the other server's holder is paused while one server is measured
        commands = {pid: _command(pid) for pid in started}
        active = next(line for line in commands.values() if " -S " in line)
        measured = "/pre14/" if "/pre14/" in active else "/post14/"
        holders = {pid: line for pid, line in commands.items() if " -f " in line}
        assert len(holders) == 2
        for pid, line in holders.items():
            assert (_state(pid) == "T") is (measured not in line), line
        os.kill(command.pid, sig)
        _, err = command.communicate(timeout=60)
    finally:
        if command.poll() is None:
            command.kill()
            command.wait()
    assert command.returncode == 128 + sig, err.decode()  # 143 for SIGTERM, as `run`
    assert f"snapsim: interrupted by {sig.name}" in err.decode()
    no_process_left(shared, pids_file)
    assert [pid for pid in started if alive(pid)] == []
    metadata = yaml.safe_load((out / "metadata.yaml").read_text())
    assert metadata["status"] == "partial"
    assert "interrupted" in metadata["cause"]
    assert (out / "repetitions.csv").exists()


def _command(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


@pytest.mark.slow
def test_the_measurement_round_trips_through_snapsim_validate(
        shared: Path, pids_file: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "m"
    assert main(arguments(shared, out)) == 0
    capsys.readouterr()
    checked = tmp_path / "validation"
    code = main(["validate", "--manifest", str(out), "--out", str(checked), "--duration-ms",
                 "0.5", "--warmup-ms", "0.2", "--jobs", "1", "--no-progress"])
    assert code in (0, 1)  # judged against the thresholds, whatever the verdict
    printed = capsys.readouterr().out
    assert "host_idle" in printed
    table = pd.read_csv(checked / "validation.csv")
    wide = pd.read_csv(out / "host_idle.csv")
    assert len(table) == 2 * len(wide)
    assert set(table["series"]) == {"tps_pre14", "tps_post14"}
    assert sorted(table["measured_tps"]) == sorted([*wide["tps_pre14"], *wide["tps_post14"]])
    assert table["predicted_tps"].notna().all()
    # the single-client point calibrates the host, and is left out of the errors
    assert table.loc[table["work_scale_point"], ["series", "clients", "idle_clients"]] \
        .values.tolist() == [["tps_pre14", 1, 0]]


def _state(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]


def test_the_shipped_dataset_of_the_projects_machine_loads_and_checks() -> None:
    """The shipped kvm-epyc-2vcpu dataset: two datasets, its machine file, a work-scale point."""
    from simulator.config import configs_dir

    manifest = load_manifest(configs_dir() / "measurements" / "kvm-epyc-2vcpu")
    assert set(manifest.datasets) == {"kvm-epyc-2vcpu_idle", "kvm-epyc-2vcpu_mostly_idle"}
    check_datasets(manifest)
    figure = manifest.single_client("kvm-epyc-2vcpu")
    assert figure is not None
    assert (figure.algorithm, figure.workload) == ("pre14", "select-only")
    assert 10_000 < figure.tps < 30_000
    # measured with one pgbench thread holding the mostly idle connections, as the model runs it
    assert manifest.dataset("kvm-epyc-2vcpu_mostly_idle").sets == (
        ("options.background_threads", 1),)
    # every mostly idle point, two clients too, runs one whole sleep period, as measure writes it
    assert manifest.dataset("kvm-epyc-2vcpu_mostly_idle").run == MOSTLY_IDLE_RUN
    # every run as snapsim measure records it now, the background's real rate among them
    runs = pd.read_csv(configs_dir() / "measurements" / "kvm-epyc-2vcpu" / "repetitions.csv")
    # (measured before measure recorded its verdict on noise: validate judges it from these)
    assert (*runs.columns, "disturbed") == REPETITION_COLUMNS
    mostly = runs[(runs["idle_kind"] == "mostly-idle") & (runs["idle_connections"] > 0)]
    assert (mostly["holders_tps"] <= 10.5 * mostly["idle_connections"]).all()
    # its kdamond is the line snapsim measure fits to those runs (DAMON's 500 ms interval)
    fitted = fit_kernel_thread([{str(key): value for key, value in row.items()}
                                for row in runs.to_dict("records")], 500_000)
    thread = load_machine(configs_dir() / "measurements" / "kvm-epyc-2vcpu" / "host.yaml"
                          ).kernel_thread
    assert fitted is not None
    assert thread is not None
    assert (thread.name, thread.period_ns) == (fitted.name, 500e6)
    assert thread.cpu_share == pytest.approx(fitted.cpu_share, abs=5e-5)
    assert thread.cpu_share_per_process == pytest.approx(fitted.cpu_share_per_process, rel=1e-3)


def pretend_guest(monkeypatch: pytest.MonkeyPatch) -> None:
    """This host's facts, as a KVM guest whose idle vCPUs halt."""
    facts = host_facts()
    guest = GuestIdle(driver="haltpoll", halt_poll_ns=0, halt_latency_us=1.0)
    facts = dataclasses.replace(facts, virtualized=True, layout_read=dataclasses.replace(
        facts.layout(), guest_idle=guest))
    monkeypatch.setattr(probe, "host_facts", lambda root=Path("/"): facts)
    monkeypatch.setattr(measure_cli, "host_facts", lambda root=Path("/"): facts)


def test_on_a_guest_the_wake_up_is_measured_first_and_becomes_host_yaml_s_ipi_exit(
        shared: Path, pids_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Before any server starts the ping-pong runs (here a stand-in result); host.yaml and
    metadata.yaml carry what it measured."""
    pretend_guest(monkeypatch)
    calls: list[int] = []

    def fake_wakeup(round_trips: int = 0, repeats: int = 0) -> WakeupMeasurement:
        calls.append(round_trips)
        assert processes_mentioning(str(shared)) == []  # no server started yet
        return WakeupMeasurement(same_cpu_us=6.0, cross_cpu_us=30.0, cpus=(0, 1),
                                 round_trips=round_trips, repeats=5)

    monkeypatch.setattr(wakeup, "measure_wakeup", fake_wakeup)
    out = tmp_path / "m"
    assert main(arguments(shared, out, "--idle", "0", wakeup_round_trips=500)) == 0
    no_process_left(shared, pids_file)
    assert calls == [500]
    assert load_machine(out / "host.yaml").scheduler.ipi_exit_ns == pytest.approx(12_000.0)
    metadata = yaml.safe_load((out / "metadata.yaml").read_text())
    assert metadata["wakeup_us"] == {"same_cpu": 6.0, "cross_cpu": 30.0, "ipi_exit": 12.0}
    assert "ipi_exit measured" in metadata["machine_file"]


def test_on_a_guest_the_clock_is_measured_first_and_becomes_host_yaml_s_clock(
        shared: Path, pids_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A guest's Linux clock is its nominal one: the measured one (a stand-in) is written."""
    pretend_guest(monkeypatch)
    calls: list[int] = []

    def fake_clock(repeats: int = 0) -> MeasuredClock:
        calls.append(repeats)
        assert processes_mentioning(str(shared)) == []  # no server started yet
        return MeasuredClock(ghz=4.4, runs_ghz=(4.3, 4.4), cpu=0)

    monkeypatch.setattr(clock, "measure_clock", fake_clock)
    out = tmp_path / "m"
    assert main(arguments(shared, out, "--idle", "0", clock_repeats=2)) == 0
    no_process_left(shared, pids_file)
    assert calls == [2]
    assert load_machine(out / "host.yaml").clock_ghz == pytest.approx(4.4)
    metadata = yaml.safe_load((out / "metadata.yaml").read_text())
    assert metadata["clock_ghz"] == 4.4
    assert "clock measured" in metadata["machine_file"]


def test_pinned_runs_put_pgbench_on_one_cpu_first_and_are_summarised(
        shared: Path, pids_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Before any connection is held: -S and SELECT 1 per server, each pgbench (and its
    backend) pinned to the first CPU; pinned.csv has every run, metadata.yaml the medians and
    their cycles at the clock."""
    affinity = shared / "affinity"
    affinity.touch()
    affinity.chmod(0o666)
    monkeypatch.setenv("FAKE_PGBENCH_AFFINITY", str(affinity))
    out = tmp_path / "m"
    assert main(arguments(shared, out, "--idle", "0", pinned_repetitions=1)) == 0
    no_process_left(shared, pids_file)
    cpu = min(os.sched_getaffinity(0))
    recorded = affinity.read_text().splitlines()
    # the 2 x 2 pinned runs come first, on one CPU; then the 2 x 2 measured points, unpinned
    assert recorded[:4] == [f"{script} {cpu}" for script in ("select-only", "select1") * 2]
    assert len(recorded) == 8
    pinned = pd.read_csv(out / "pinned.csv")
    assert list(pinned["script"]) == ["select-only", "select1"] * 2
    assert set(pinned["algorithm"]) == {"pre14", "post14"}
    assert (pinned["cpu"] == cpu).all()
    assert (pinned["tps"] > 0).all()
    assert (pinned["client_cpu_us_per_txn"] > 0).all()
    metadata = yaml.safe_load((out / "metadata.yaml").read_text())
    summary = {(entry["algorithm"], entry["script"]): entry for entry in metadata["pinned"]}
    assert set(summary) == {(label, script) for label in ("pre14", "post14")
                            for script in ("select-only", "select1")}
    entry = summary[("post14", "select-only")]
    assert entry["runs"] == 1
    assert entry["client_cycles_per_txn"] == pytest.approx(
        entry["client_cpu_us_per_txn"] * entry["clock_ghz"] * 1000, rel=5e-3)  # rounded clock
    # the datasets hold the measured points only
    long = pd.read_csv(out / "repetitions.csv")
    assert set(long["idle_kind"]) == {"idle"}


def test_a_negative_clock_count_is_refused_before_anything_starts(
        shared: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*arguments(shared, tmp_path / "m"), "--clock-repeats", "-1"]) == 2
    assert "--clock-repeats: must not be negative" in capsys.readouterr().err
    assert not (tmp_path / "m").exists()


def test_a_negative_wake_up_count_is_refused_before_anything_starts(
        shared: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*arguments(shared, tmp_path / "m"), "--wakeup-round-trips", "-1"]) == 2
    assert "--wakeup-round-trips: must not be negative" in capsys.readouterr().err
    assert not (tmp_path / "m").exists()
