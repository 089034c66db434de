"""``snapsim measure`` when a measurement goes wrong (issue 52, newcomer-4 §2.3): a second run into
the same ``--out``, refusals that name their flag, a failed start, SIGTERM, ``kill -9``."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from simulator.cli import main
from simulator.cli import measure as measure_cli
from simulator.measure import holders as holders_module
from simulator.measure import leftovers, pgbench, session
from simulator.measure.leftovers import WORK_PREFIX
from simulator.measure.processes import LEDGER, RunAs, start_time
from simulator.study.store import DirectoryLock
from tests.paths import REPO_ROOT
from tests.simulator.measure.fakes import (
    alive,
    fake_bindir,
    processes_mentioning,
)
from tests.simulator.measure.test_measure_cli import arguments, no_process_left


def one_line(capsys: pytest.CaptureFixture[str]) -> str:
    """The one error line (after the plan's lines, if the refusal came after them)."""
    err = capsys.readouterr().err.strip().splitlines()
    errors = [line for line in err if line.startswith("snapsim: error: ")]
    assert len(errors) == 1, err
    assert err[-1] == errors[0]
    return errors[0]


def test_a_second_measurement_into_a_directory_in_use_is_refused_even_with_overwrite(
        shared: Path, pids_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """newcomer-4 N45: the second run, with --overwrite, started while the first wrote; it left
    a corrupt directory and reported success."""
    out = tmp_path / "m"
    second: list[tuple[int, str]] = []
    real_measure = session.measure

    def measure_and_meanwhile_a_second(*args: object, **kwargs: object) -> None:
        capsys.readouterr()
        code = main([*arguments(shared, out, "--idle", "0"), "--overwrite"])
        second.append((code, capsys.readouterr().err))
        real_measure(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(measure_cli, "measure", measure_and_meanwhile_a_second)
    assert main(arguments(shared, out)) == 0
    [(code, err)] = second
    assert code == 2
    lines = err.strip().splitlines()
    assert lines[-1] == (f"snapsim: error: --out: {out} is in use by another snapsim measure "
                         f"(pid {os.getpid()}); let it finish, or choose another --out")
    no_process_left(shared, pids_file)
    assert main(["check-config", str(out / "manifest.yaml")]) == 0
    assert not (out / ".snapsim.lock").exists()


def test_a_directory_locked_by_another_run_is_refused_and_left_as_it_was(
        shared: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "m"
    out.mkdir()
    (out / "repetitions.csv").write_text("series\n", encoding="utf-8")
    lock = DirectoryLock(out)
    lock.acquire()
    try:
        assert main([*arguments(shared, out), "--overwrite"]) == 2
        assert "is in use by another snapsim measure" in one_line(capsys)
        assert (out / "repetitions.csv").read_text(encoding="utf-8") == "series\n"
        assert processes_mentioning(str(shared)) == []
    finally:
        lock.release()


@pytest.mark.parametrize(("change", "message"), [
    (["--clients", "100000", "--idle", "0"], "--clients: 100000 active clients per server"),
    (["--shared-buffers", "1TB"], "--shared-buffers: shared_buffers of 1024.0 GiB per server"),
    (["--scale", "10000"], "--scale: shared_buffers of 156.2 GiB per server"),
])
def test_a_memory_refusal_names_the_flag_that_fills_the_memory(
        shared: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch, change: list[str], message: str) -> None:
    """newcomer-4 M29, M38: both were blamed on --idle with "at most about 0 per server fit"."""
    from simulator.host import procfs

    monkeypatch.setattr(procfs, "meminfo_bytes", lambda key: 22 * 2**30)
    args = arguments(shared, tmp_path / "m")
    for flag in ("--clients", "--idle", "--scale"):
        if flag in change and flag in args:
            position = args.index(flag)
            del args[position:position + 2]
    assert main([*args, *change, "--dry-run"]) == 2
    line = one_line(capsys)
    assert line.startswith(f"snapsim: error: {message}"), line
    assert "at most about 0 per server" not in line


def test_a_postgres_binary_is_not_accepted_as_pgbench(
        shared: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """newcomer-4 M34: its version line (postgres (PostgreSQL) 15.4) passed as pgbench 15."""
    args = arguments(shared, tmp_path / "m")
    server = fake_bindir(shared, "15.4") / "postgres"
    args[args.index("--pgbench") + 1] = str(server)
    assert main(args) == 2
    assert one_line(capsys) == (f"snapsim: error: --pgbench: {server} is not pgbench: its "
                                "--version says 'postgres (PostgreSQL) 15.4'")
    assert not (tmp_path / "m").exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="the servers run as another user only as root")
def test_a_work_directory_the_servers_user_cannot_reach_is_blamed_on_work_dir(
        shared: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """newcomer-4 M19: a --work-dir under root's 0700 home was blamed on --install (initdb)."""
    private = shared / "private"
    private.mkdir(mode=0o700)
    private.chmod(0o700)
    args = arguments(shared, tmp_path / "m")
    args[args.index("--work-dir") + 1] = str(private / "work")
    assert main([*args, "--dry-run"]) == 2
    line = one_line(capsys)
    assert line.startswith(f"snapsim: error: --work-dir: the servers' user postgres cannot "
                           f"reach {private / 'work'} ({private} is mode 0700, owned by root)")
    measure_cli._check_reachable(shared / "work", RunAs(101, 104, "postgres"))  # 0777: fine


def test_a_failed_start_does_not_make_the_rerun_need_overwrite(
        shared: Path, pids_file: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    """newcomer-4 N42: after a failed start (0 runs) the corrected command was refused."""
    out = tmp_path / "m"
    args = arguments(shared, out, "--idle", "0")
    failing = list(args)
    failing[failing.index("--install", 2) + 1] = f"post14={fake_bindir(shared, '15.4', 'fail')}"
    assert main(failing) == 2
    assert (out / "metadata.yaml").exists()
    capsys.readouterr()
    assert main(args) == 0
    assert f"replacing the measurement in {out}/: it recorded no run" in capsys.readouterr().err
    assert yaml.safe_load((out / "metadata.yaml").read_text())["status"] == "complete"
    no_process_left(shared, pids_file)
    # one with runs still needs --overwrite, and --overwrite removes what it wrote
    (out / "logs").mkdir(exist_ok=True)
    (out / "logs" / "old.log").write_text("x", encoding="utf-8")
    (out / "mine.txt").write_text("not snapsim's", encoding="utf-8")
    assert main(args) == 2
    assert "holds a measurement (pass --overwrite to replace it)" in one_line(capsys)
    assert main([*args, "--overwrite"]) == 0
    assert not (out / "logs" / "old.log").exists()
    assert (out / "mine.txt").exists()


def test_memory_per_connection_is_not_recorded_negative() -> None:
    """newcomer-4 N43: MemAvailable rose while 100 connections opened (other work freed some)."""
    assert session._per_connection({0: 10 * 2**30, 100: 10 * 2**30 + 2**20}, 1) is None
    assert session._per_connection({0: 10 * 2**30, 100: 10 * 2**30 - 150 * 2**20}, 1) == \
        pytest.approx(1.5 * 2**20)


def test_holders_live_as_long_as_the_plan_not_30_days(
        shared: Path, pids_file: Path, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    durations: list[float] = []
    real = pgbench.holder_command

    def recorded(*args: object) -> list[str]:
        durations.append(float(args[-1]))  # type: ignore[arg-type]
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(holders_module, "holder_command", recorded)
    assert main(arguments(shared, tmp_path / "m")) == 0
    no_process_left(shared, pids_file)
    assert durations
    assert all(3600 < duration < 2 * 3600 for duration in durations), durations


def _spawn_sleeper() -> subprocess.Popen[bytes]:
    return subprocess.Popen(["sleep", "300"], start_new_session=True)


def _dead_pid() -> int:
    done = subprocess.Popen(["true"])
    done.wait()
    return done.pid


def test_leftovers_of_a_killed_measurement_are_stopped_by_pid_and_start_time(
        tmp_path: Path) -> None:
    """What the ledger names and still runs with its start time is stopped; a reused PID (another
    start time) and another measurement's live owner are left alone."""
    sleeper, stranger = _spawn_sleeper(), _spawn_sleeper()
    try:
        work = tmp_path / f"{WORK_PREFIX}abc"
        work.mkdir()
        (work / LEDGER).write_text(
            f"owner {_dead_pid()} 1\n"
            f"{sleeper.pid} {start_time(sleeper.pid)} client post14 holder of 100\n"
            f"{stranger.pid} 12345 client post14 holder of 200\n", encoding="utf-8")
        running = tmp_path / f"{WORK_PREFIX}live"
        running.mkdir()
        (running / LEDGER).write_text(f"owner {sleeper.pid} {start_time(sleeper.pid)}\n",
                                      encoding="utf-8")
        found = leftovers.find(tmp_path)
        assert found.running == (sleeper.pid,)
        [leftover] = found.leftovers
        assert [process.pid for process in leftover.processes] == [sleeper.pid]
        assert leftovers.stop(leftover) == []
        sleeper.wait(timeout=10)
        assert not work.exists()
        assert stranger.poll() is None
        assert running.exists()
    finally:
        for process in (sleeper, stranger):
            if process.poll() is None:
                process.kill()
                process.wait()


def test_measure_stops_what_a_killed_measurement_left_and_says_so(
        shared: Path, pids_file: Path, tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    sleeper = _spawn_sleeper()
    try:
        root = shared / "work"
        work = root / f"{WORK_PREFIX}old"
        work.mkdir(parents=True)
        owner = _dead_pid()
        (work / LEDGER).write_text(
            f"owner {owner} 1\n{sleeper.pid} {start_time(sleeper.pid)} client "
            "pgbench of post14\n", encoding="utf-8")
        args = arguments(shared, tmp_path / "m", "--idle", "0")
        assert main([*args, "--dry-run"]) == 0
        assert (f"a measurement killed earlier (PID {owner}) left pgbench of post14 (PID "
                f"{sleeper.pid}) running (work directory {work}); a measurement stops and "
                "removes them first") in capsys.readouterr().err
        assert sleeper.poll() is None
        assert main(args) == 0
        assert f"pgbench of post14 (PID {sleeper.pid}) running (work directory {work}): " \
               "stopped and removed" in capsys.readouterr().err
        sleeper.wait(timeout=10)
        assert not work.exists()
        no_process_left(shared, pids_file)
    finally:
        if sleeper.poll() is None:
            sleeper.kill()
            sleeper.wait()


def test_kill_9_of_measure_stops_its_servers_and_clients_with_it(
        shared: Path, pids_file: Path, tmp_path: Path) -> None:
    """newcomer-4 M49: after kill -9, 304 processes stayed (holders set to run 30 days). Each
    process now has a parent-death signal; the next measurement removes the work directory."""
    out = tmp_path / "m"
    args = arguments(shared, out)
    args[args.index("--duration-s") + 1] = "60"
    args[args.index("--idle") + 1] = "3"
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT / ".dev")}
    command = subprocess.Popen([sys.executable, "-m", "simulator", *args], cwd=REPO_ROOT,
                               env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               start_new_session=True)
    started: list[int] = []
    try:
        deadline = time.monotonic() + 60
        while not any(" -S " in Path(f"/proc/{pid}/cmdline").read_bytes()
                      .replace(b"\0", b" ").decode(errors="replace")
                      for pid in processes_mentioning(str(shared))):
            assert command.poll() is None
            assert time.monotonic() < deadline, "no pgbench run started"
            time.sleep(0.1)
        started = processes_mentioning(str(shared))
        assert len(started) >= 5
        os.kill(command.pid, signal.SIGKILL)
        command.wait()
        deadline = time.monotonic() + 30
        while [pid for pid in started if alive(pid)] and time.monotonic() < deadline:
            time.sleep(0.1)
        assert [pid for pid in started if alive(pid)] == []
    finally:
        if command.poll() is None:
            command.kill()
            command.wait()
        for pid in started:  # only if the test failed
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
    left = list((shared / "work").glob(f"{WORK_PREFIX}*"))
    assert len(left) == 1
    [leftover] = leftovers.find(shared / "work").leftovers
    assert leftover.processes == ()
    assert main(arguments(shared, tmp_path / "again", "--idle", "0")) == 0
    assert not left[0].exists()


def test_the_noise_rule_leaves_the_projects_quiet_measurement_alone() -> None:
    """The threshold's basis: the project's 2-vCPU guest, measured quietly, has no run above it
    (its rest ranged -14 % to +15 % of the CPUs); a run beside another job's full CPU is."""
    import pandas as pd

    from simulator.config import configs_dir
    from simulator.measure import noise

    runs = pd.read_csv(configs_dir() / "measurements" / "kvm-epyc-2vcpu" / "repetitions.csv")
    assert "disturbed" not in runs.columns  # judged from rest_cpu_s and window_s
    assert not noise.disturbed_column(runs, 2).any()
    assert noise.is_disturbed(1.3, 1.0, 2)  # newcomer-4: 1.3 CPU-s of other work in 1 s
    assert not noise.is_disturbed(0.3, 1.0, 2)
    assert not noise.is_disturbed(1.0, 0.0, 2)


def test_disturbed_runs_are_flagged_by_measure_and_named_by_validate(
        shared: Path, pids_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Every run of post14 at 3 idle connections was disturbed (a stand-in verdict: the real one
    depends on what else this machine runs): repetitions.csv says so, measure warns, validate's
    table counts them per point and its summary names the point."""
    import pandas as pd

    from simulator.cli.validate import _print_disturbed
    from simulator.measure.manifest import load_manifest
    from simulator.tools import validate as validate_tools

    real_point = session._point

    def point(*args: object, **kwargs: object) -> dict[str, object]:
        row = real_point(*args, **kwargs)  # type: ignore[arg-type]
        row["disturbed"] = (row["series"], row["idle_connections"]) == ("tps_post14", 3)
        return row

    monkeypatch.setattr(session, "_point", point)
    out = tmp_path / "m"
    assert main(arguments(shared, out)) == 0
    no_process_left(shared, pids_file)
    runs = pd.read_csv(out / "repetitions.csv")
    flagged = runs[runs["disturbed"]]
    assert len(flagged) == 2
    assert set(zip(flagged["series"], flagged["idle_connections"], strict=True)) == {
        ("tps_post14", 3)}
    err = capsys.readouterr().err
    assert "disturbed: 2 of 8 runs (other work took more than 25% of the machine's CPUs" in err
    assert "; DISTURBED: other work took" in err
    manifest = load_manifest(out)
    table = validate_tools._measured(manifest, None)
    table["work_scale_point"] = False
    table["disturbed_runs"] = validate_tools._disturbed_runs(manifest, table)
    by_point = {(s, i): int(n) for s, i, n in zip(table["series"], table["idle_clients"],
                                                  table["disturbed_runs"], strict=True)}
    assert by_point == {("tps_pre14", 0): 0, ("tps_pre14", 3): 0, ("tps_post14", 0): 0,
                        ("tps_post14", 3): 2}
    _print_disturbed(table)
    printed = capsys.readouterr().out
    assert printed.startswith("1 points were judged on disturbed runs (disturbed_runs in "
                              "validation.csv")
    assert printed.strip().endswith("host_idle tps_post14 1 clients 3 idle (2 runs)")
