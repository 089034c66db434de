"""``snapsim run`` results a user can trust: one run per directory, verified resumes, signals."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from simulator.cli.run import Interrupted
from simulator.runtime.engine import ProcessGenerator, SimEnvironment
from simulator.study.store import LOCK_NAME
from tests.simulator.cli.test_run import SMALL, digest, snapsim

SLOW_POINTS = ["--machine", "gold5215-2s", "--algorithms", "pre14", "--clients", "48",
               "--duration-ms", "2", "--warmup-ms", "0.2", "--no-progress"]
"""48-client points of about a second each: long enough to interrupt a sweep of them."""


@pytest.fixture
def small(tmp_path: Path) -> Path:
    path = tmp_path / "small.yaml"
    path.write_text(SMALL, encoding="utf-8")
    return path


def start(*argv: str) -> subprocess.Popen[str]:
    """``python -m simulator run ARGV`` in its own session, stderr captured."""
    return subprocess.Popen([sys.executable, "-m", "simulator", "run", *argv],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            start_new_session=True,
                            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})


def wait_for(condition: object, process: subprocess.Popen[str], what: str,
             timeout_s: float = 90) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():  # type: ignore[operator]
        assert process.poll() is None, f"the run ended before {what}"
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def stored(out: Path) -> int:
    return len(list((out / "points").glob("*.json")))


def children(pid: int) -> set[int]:
    """The pids of a process's children (every thread's), from /proc."""
    pids: set[int] = set()
    for path in Path(f"/proc/{pid}/task").glob("*/children"):
        try:
            pids.update(int(word) for word in path.read_text().split())
        except OSError:
            continue
    return pids


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie waiting to be reaped has stopped running)."""
    try:
        os.kill(pid, 0)
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (ProcessLookupError, FileNotFoundError):
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def cleanup(process: subprocess.Popen[str], pids: set[int]) -> None:
    for pid in pids:
        if alive(pid):
            os.kill(pid, signal.SIGKILL)
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


# --------------------------------------------------------------------------------------------
# One run per directory
# --------------------------------------------------------------------------------------------


def test_a_second_run_into_a_directory_in_use_exits_2_and_wait_resumes_after_it(
        small: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    first = start(*SLOW_POINTS, "--idle-clients", "0,100,200", "--jobs", "1", "--out", str(out))
    try:
        wait_for(lambda: (out / "config.resolved.yaml").exists(), first, "its first write")
        capsys.readouterr()
        for extra in ([], ["--overwrite"]):  # the same experiment, or another one replacing it
            argv = (*SLOW_POINTS, "--idle-clients", "0,100,200") if not extra else (str(small),)
            assert snapsim(*argv, "--jobs", "1", "--out", str(out), *extra) == 2
            err = capsys.readouterr().err.strip().splitlines()
            assert len(err) == 1, err
            assert err[0] == (f"snapsim: error: --out: {out} is in use by another snapsim run "
                              f"(pid {first.pid}); wait for it (--wait) or choose another --out")
        assert first.poll() is None, "the first run must still be running"
        assert snapsim(*SLOW_POINTS, "--idle-clients", "0,100,200", "--jobs", "1", "--wait",
                       "--out", str(out)) == 0
        waited = capsys.readouterr().err
        assert f"waiting for {out}: in use by another snapsim run (pid {first.pid})" in waited
        assert "resuming: 3 of 3 points already done" in waited
        assert first.wait(timeout=60) == 0
    finally:
        cleanup(first, set())
    assert not (out / LOCK_NAME).exists()


def test_a_lock_file_left_by_a_killed_run_neither_blocks_nor_makes_the_directory_foreign(
        small: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    process = start(*SLOW_POINTS, "--idle-clients", "0", "--jobs", "1", "--out", str(out))
    try:
        wait_for(lambda: (out / LOCK_NAME).exists(), process, "the lock")
    finally:
        cleanup(process, set())  # SIGKILL: no cleanup, the lock file stays
    assert (out / LOCK_NAME).exists()
    assert snapsim(str(small), "--jobs", "1", "--algorithms", "pre14", "--clients", "1",
                   "--idle-clients", "0", "--out", str(out), "--overwrite") == 0
    assert not (out / LOCK_NAME).exists()


# --------------------------------------------------------------------------------------------
# Resume keeps only points that verify
# --------------------------------------------------------------------------------------------


def test_resume_recomputes_points_that_do_not_verify_and_says_why(
        small: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    grid = ["--clients", "1", "--idle-clients", "0,300", "--jobs", "1"]
    out, other = tmp_path / "out", tmp_path / "other"
    assert snapsim(str(small), *grid, "--out", str(out)) == 0
    assert snapsim(str(small), *grid, "--duration-ms", "0.3", "--out", str(other)) == 0
    clean = {name: digest(out / name) for name in ("curve.csv", "lines.csv")}
    points = out / "points"

    def edit_row(key: str, change: dict[str, object], drop: str = "") -> None:
        path = points / f"{key}.json"
        document = json.loads(path.read_text(encoding="utf-8"))
        document["row"].update(change)
        document["row"].pop(drop, None)
        path.write_text(json.dumps(document), encoding="utf-8")

    edit_row("pre14-c1-i0-r0", {"tps": 1.0})  # another TPS
    edit_row("pre14-c1-i300-r0", {}, drop="latency_p99_us")  # a missing column
    parquet = points / "post14-c1-i0-r0.lines.parquet"
    parquet.write_bytes(parquet.read_bytes()[:-200])  # a corrupt line table
    for suffix in (".json", ".lines.parquet"):  # a point of another experiment
        shutil.copy(other / "points" / f"post14-c1-i300-r0{suffix}", points)
    capsys.readouterr()
    assert snapsim(str(small), *grid, "--out", str(out)) == 0
    err = capsys.readouterr().err.splitlines()
    resume = [line for line in err if line.startswith("resume:")]
    assert resume == ["resume: 4 points stored, 4 recomputed "
                      "(3 checksum mismatch, 1 from another experiment)"]
    assert {name: digest(out / name) for name in clean} == clean
    capsys.readouterr()
    assert snapsim(str(small), *grid, "--out", str(out)) == 0  # every point verifies now
    again = capsys.readouterr().err
    assert "resume:" not in again
    assert "resuming: 4 of 4 points already done" in again


# --------------------------------------------------------------------------------------------
# Interrupts
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("signum", "code", "jobs"), [(signal.SIGTERM, 143, "2"),
                                                      (signal.SIGINT, 130, "1")],
                         ids=["SIGTERM-2-jobs", "SIGINT-1-job"])
def test_a_signal_stops_the_workers_keeps_the_points_and_exits_128_plus_its_number(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], signum: int, code: int,
        jobs: str) -> None:
    out = tmp_path / "out"
    argv = [*SLOW_POINTS, "--idle-clients", "0,100,200,300", "--jobs", jobs, "--out", str(out)]
    process = start(*argv)
    workers: set[int] = set()
    try:
        wait_for(lambda: stored(out) >= 1, process, "its first point")
        workers = children(process.pid)
        if jobs == "2":
            assert len(workers) >= 2
        os.kill(process.pid, signum)
        _, err = process.communicate(timeout=30)
        assert process.returncode == code, err
        deadline = time.monotonic() + 10
        while any(alive(pid) for pid in workers) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not [pid for pid in workers if alive(pid)], "workers outlived the run"
    finally:
        cleanup(process, workers)
    kept = stored(out)
    assert 1 <= kept < 4
    name = signal.Signals(signum).name
    assert err.strip().splitlines()[-1] == (
        f"snapsim: interrupted by {name}: {kept} of this run's 4 point(s) stored in "
        f"{out / 'points'}; run the same command again to resume")
    assert not (out / "curve.csv").exists()
    assert not (out / LOCK_NAME).exists()
    if signum == signal.SIGTERM:  # the rerun resumes from every stored point
        capsys.readouterr()
        assert snapsim(*argv) == 0
        err = capsys.readouterr().err
        assert f"resuming: {kept} of 4 points already done" in err
        assert "resume:" not in err


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupt_inside_a_simulated_process_stays_an_interrupt(signum: int) -> None:
    """SimPy re-raises what escapes a process as ``type(exc)(*exc.args)``: with one job the
    signal arrives inside a point, and it must not turn into a failed point."""
    env = SimEnvironment(seed=0)

    def interrupted() -> ProcessGenerator:
        yield env.timeout(1.0)
        raise Interrupted(signum)

    env.process(interrupted())
    with pytest.raises(Interrupted) as caught:
        env.run()
    assert caught.value.signum == int(signum)
    assert str(caught.value) == signal.Signals(signum).name
