"""The parts of ``snapsim measure``: pgbench reports, the plan's order and limits, the outputs."""

from __future__ import annotations

import os
import time

import pytest

from simulator.errors import ConfigError
from simulator.host import procfs
from simulator.measure import plan as plan_module
from simulator.measure.installations import label_for, major_of
from simulator.measure.outputs import wide_table
from simulator.measure.pgbench import parse_progress, parse_report, transactions_between
from simulator.measure.plan import Plan, check_memory, holder_chunk, holder_threads, size_bytes

PGBENCH_13 = """transaction type: <builtin: select only>
scaling factor: 100
query mode: prepared
number of clients: 1
number of threads: 1
duration: 10 s
number of transactions actually processed: 250000
latency average = 0.040 ms
tps = 24990.1 (including connections establishing)
tps = 25000.5 (excluding connections establishing)
"""
PGBENCH_15 = """pgbench (15.18 (Debian 15.18-0+deb12u1))
transaction type: <builtin: select only>
number of transactions actually processed: 180000
number of failed transactions: 0 (0.000%)
latency average = 0.055 ms
initial connection time = 2.384 ms
tps = 18000.25 (without initial connection time)
"""


def test_reports_of_pgbench_13_and_15_give_the_tps_without_connection_set_up() -> None:
    old, new = parse_report(PGBENCH_13), parse_report(PGBENCH_15)
    assert (old.transactions, old.tps, old.latency_ms, old.connection_ms) == \
        (250000, 25000.5, 0.040, None)
    assert (new.transactions, new.tps, new.latency_ms, new.connection_ms) == \
        (180000, 18000.25, 0.055, 2.384)


def test_a_report_without_its_figures_is_an_error_naming_them() -> None:
    with pytest.raises(ConfigError, match="no transactions, tps, latency"):
        parse_report("pgbench: error: connection to server failed\n")


PROGRESS_15 = """progress: 1795782150.949 s, 500.0 tps, lat 100.221 ms stddev 0.093, 0 failed
progress: 1795782151.949 s, 400.0 tps, lat 100.209 ms stddev 0.107, 0 failed
pgbench: warning: something else
progress: 1795782153.949 s, 300.5 tps, lat 100.301 ms stddev 0.101, 0 failed
"""
"""A holder's progress lines (pgbench 15, ``-P 1 --progress-timestamp``), the third two seconds
after the second (as after a pause)."""


def test_progress_lines_give_their_unix_time_and_rate() -> None:
    assert parse_progress(PROGRESS_15) == [(1795782150.949, 500.0), (1795782151.949, 400.0),
                                           (1795782153.949, 300.5)]
    assert parse_progress("progress: 5.0 s, 12.5 tps, lat 1.0 ms stddev 0.1\n") == [(5.0, 12.5)]


@pytest.mark.parametrize(("start", "end", "expected"), [
    (1795782150.449, 1795782150.949, 250.0),  # half the first line's interval (one second)
    (1795782150.949, 1795782151.949, 400.0),  # exactly the second line's
    (1795782150.449, 1795782152.949, 250.0 + 400.0 + 300.5),  # half, whole, half of two s
    (1795782149.949, 1795782153.949, 500.0 + 400.0 + 2 * 300.5),  # everything
])
def test_transactions_between_two_times_take_the_share_of_each_line_they_overlap(
        start: float, end: float, expected: float) -> None:
    progress = parse_progress(PROGRESS_15)
    assert transactions_between(progress, start, end) == pytest.approx(expected, rel=1e-9)


@pytest.mark.parametrize(("start", "end"), [
    (1795782151.0, 1795782154.0),  # past the last line: not reported yet
    (1795782149.0, 1795782151.0),  # before the first line's interval
])
def test_a_window_the_progress_lines_do_not_cover_has_no_count(start: float, end: float) -> None:
    assert transactions_between(parse_progress(PROGRESS_15), start, end) is None
    assert transactions_between([], start, end) is None


def test_context_switches_are_read_for_live_processes_only() -> None:
    before = procfs.switches_of([os.getpid(), 2**22 + 1])  # the second PID exceeds pid_max
    assert list(before) == [os.getpid()]
    time.sleep(0.01)  # gives the CPU up: a voluntary switch
    after = procfs.switches_of([os.getpid()])[os.getpid()]
    assert after.voluntary > before[os.getpid()].voluntary
    assert after.involuntary >= before[os.getpid()].involuntary


@pytest.mark.parametrize(("line", "major", "label"), [
    ("postgres (PostgreSQL) 13.23", 13.0, "pre14"),
    ("postgres (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)", 15.0, "post14"),
    ("postgres (PostgreSQL) 9.6.24", 9.6, "pre14"),
    ("postgres (PostgreSQL) 14beta1", 14.0, "post14"),
])
def test_versions_and_the_labels_they_stand_for(line: str, major: float, label: str) -> None:
    assert major_of(line) == major
    assert label_for(major) == label


def grid(**changes: object) -> Plan:
    values: dict[str, object] = {
        "installations": 2, "clients": (1, 2), "idle": (0, 100, 1000), "idle_kinds": ("idle",),
        "repetitions": 3, "duration_s": 10.0, "scale": 100, "settle_s": 5.0}
    values.update(changes)
    return Plan(**values)  # type: ignore[arg-type]


def test_repetitions_walk_up_then_down_and_the_installations_take_turns() -> None:
    steps = grid().steps()
    assert [step.idle for step in steps] == [0, 100, 1000, 1000, 100, 0, 0, 100, 1000]
    assert [step.order for step in steps[:3]] == [(0, 1), (1, 0), (0, 1)]
    assert grid().points == 9 * 2 * 2
    # up to 1000 (1000 opened), down, up again from 0 (1000 more)
    assert grid().connections_opened() == 2000
    assert grid().max_connections == 1000 + 2 + plan_module.EXTRA_CONNECTIONS


def test_the_estimate_counts_loading_connecting_settling_and_running() -> None:
    small, large = grid(idle=(0, 100)), grid(idle=(0, 5000))
    assert large.estimate_s() - small.estimate_s() == pytest.approx(
        2 * 2 * (5000 - 100) / plan_module.CONNECTIONS_PER_S)


def test_a_plan_that_does_not_fit_in_memory_is_refused_with_what_fits(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(procfs, "meminfo_bytes", lambda key: 4 * 2**30)
    check_memory(grid(idle=(0, 1000)), 128 * 2**20)
    with pytest.raises(ConfigError, match=r"--idle: .*at most about 1\d{3} per server fit"):
        check_memory(grid(idle=(0, 5000)), 128 * 2**20)


def test_sizes_and_holder_chunks() -> None:
    assert size_bytes("256MB", "--shared-buffers") == 256 * 2**20
    assert size_bytes("2GB", "--shared-buffers") == 2 * 2**30
    assert size_bytes("1000", "--shared-buffers") == 1000 * 8192
    assert holder_chunk(1024, 5000) == 1024 - plan_module.FILES_PER_PROCESS_SPARE
    assert holder_chunk(20000, 5000) == 5000
    # one pgbench thread per holder: the threads the model's background gets
    assert [holder_threads(n, 5000) for n in (0, 1, 5000, 5001, 12000)] == [1, 1, 1, 2, 3]


def test_the_measurement_file_holds_medians_of_points_every_series_measured() -> None:
    rows = [{"series": series, "idle_kind": "idle", "idle_connections": idle,
             "active_connections": 1, "tps": tps, "backend_cpu_us_per_txn": 10.0,
             "client_cpu_us_per_txn": 5.0}
            for series, idle, tps in [("tps_pre14", 0, 100.0), ("tps_pre14", 0, 300.0),
                                      ("tps_pre14", 0, 200.0), ("tps_post14", 0, 50.0),
                                      ("tps_pre14", 10, 80.0)]]
    table = wide_table(rows, "idle", ["tps_pre14", "tps_post14"])
    assert list(table["idle_connections"]) == [0]  # 10 idle lacks post14 (an interrupted run)
    assert table.loc[0, "tps_pre14"] == 200.0
    assert table.loc[0, "repetitions_pre14"] == 3
    assert list(table.columns[:4]) == ["idle_connections", "active_connections", "tps_pre14",
                                       "tps_post14"]
    assert wide_table(rows, "mostly-idle", ["tps_pre14"]).empty
