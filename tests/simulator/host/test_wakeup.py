"""The host's wake-up micro-benchmark: a pipe ping-pong on one CPU and across two."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from simulator.cli import main
from simulator.config.machine_file import load_machine
from simulator.errors import ConfigError
from simulator.host import wakeup
from simulator.host.wakeup import WakeupMeasurement, measure_wakeup, pipe_round_trip_us
from tests.simulator.host.test_probe import make_guest, make_host


def no_child_left() -> bool:
    """Whether this process has no child left to reap (the ping-pong's child was waited for)."""
    try:
        return os.waitpid(-1, os.WNOHANG) == (0, 0)
    except ChildProcessError:
        return True


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs")
def test_the_ping_pong_times_round_trips_and_reaps_its_child() -> None:
    cpus = sorted(os.sched_getaffinity(0))
    before = os.sched_getaffinity(0)
    for cpu_b in (cpus[0], cpus[1]):
        round_trip = pipe_round_trip_us(cpus[0], cpu_b, round_trips=200)
        # two pipe writes and two reads at least, each a system call of a microsecond or less
        assert 0.5 < round_trip < 50_000.0
        assert no_child_left()
    assert os.sched_getaffinity(0) == before  # this process's CPUs are given back


def test_one_wake_up_is_half_the_difference_and_never_negative() -> None:
    measured = WakeupMeasurement(same_cpu_us=8.0, cross_cpu_us=40.0, cpus=(0, 1),
                                 round_trips=10, repeats=1)
    assert measured.wakeup_us == 16.0
    busy = WakeupMeasurement(same_cpu_us=8.0, cross_cpu_us=6.0, cpus=(0, 1), round_trips=10,
                             repeats=1)
    assert busy.wakeup_us == 0.0


def test_bad_counts_and_a_single_cpu_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigError, match="round_trips"):
        pipe_round_trip_us(0, 0, round_trips=0)
    with pytest.raises(ConfigError, match="repeats"):
        measure_wakeup(repeats=0)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {3})
    with pytest.raises(ConfigError, match="needs two CPUs"):
        measure_wakeup(round_trips=10, repeats=1)


def fake_measurement(round_trips: int = 0, repeats: int = 0) -> WakeupMeasurement:
    return WakeupMeasurement(same_cpu_us=9.0, cross_cpu_us=34.0, cpus=(0, 1),
                             round_trips=round_trips, repeats=5)


def test_probe_of_a_guest_writes_the_measured_wake_up_as_its_ipi_exit(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(wakeup, "measure_wakeup", fake_measurement)
    root = make_guest(tmp_path / "host", driver="haltpoll", poll_ns=0)
    out = tmp_path / "guest.yaml"
    assert main(["machine", "probe", "--measure-wakeup", "--out", str(out),
                 "--root", str(root)]) == 0
    assert "ipi_exit 12.5 us" in capsys.readouterr().err
    config = load_machine(out)
    assert config.scheduler.ipi_exit_ns == pytest.approx(12_500.0)
    text = out.read_text()
    assert "9.0 us per round trip on one vCPU" in text
    assert "34.0 us on two" in text
    assert "ASSUMPTION, range 1.5-15 us" not in text


def test_bare_metal_has_no_wake_up_to_measure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    def must_not_run(round_trips: int = 0, repeats: int = 0) -> WakeupMeasurement:
        raise AssertionError("measured on bare metal")

    monkeypatch.setattr(wakeup, "measure_wakeup", must_not_run)
    out = tmp_path / "metal.yaml"
    assert main(["machine", "probe", "--measure-wakeup", "--out", str(out),
                 "--root", str(make_host(tmp_path / "host"))]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert "--measure-wakeup" in err[0]
    assert "not a virtual machine" in err[0]
    assert not out.exists()
