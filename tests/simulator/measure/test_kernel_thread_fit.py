"""The host's DAMON thread from a measurement: the fitted line, its period, its machine file."""

from __future__ import annotations

from pathlib import Path

import pytest

from simulator.config.machine_file import load_machine
from simulator.host.probe import probe_host
from simulator.measure.kernel_thread_fit import (
    DAMON_DEFAULT_SAMPLE_US,
    damon_sample_us,
    fit_kernel_thread,
)
from tests.simulator.host.test_probe import make_host


def _row(idle: int, active: int, cpu_s: float, window_s: float = 10.0) -> dict[str, object]:
    return {"idle_connections": idle, "active_connections": active, "kdamond_cpu_s": cpu_s,
            "window_s": window_s}


def test_the_line_through_the_runs_share_against_their_processes() -> None:
    rows = [_row(idle, active, 10.0 * (0.005 + 1e-4 * (idle + active)))
            for idle in (0, 100, 1000, 2500) for active in (1, 2)]
    fitted = fit_kernel_thread(rows, 500_000)
    assert fitted is not None
    assert fitted.cpu_share == pytest.approx(0.005)
    assert fitted.cpu_share_per_process == pytest.approx(1e-4)
    assert (fitted.runs, fitted.largest_processes) == (8, 2502)
    assert fitted.largest_share == pytest.approx(0.2552)
    assert fitted.period_read
    assert fitted.period_us == 500_000


def test_a_negative_intercept_fits_through_the_origin() -> None:
    rows = [_row(1000, 0, 10.0 * 0.05), _row(2000, 0, 10.0 * 0.2)]
    fitted = fit_kernel_thread(rows, None)
    assert fitted is not None
    assert fitted.cpu_share == 0.0
    assert fitted.cpu_share_per_process == pytest.approx((1000 * 0.05 + 2000 * 0.2) / 5e6)
    assert (fitted.period_us, fitted.period_read) == (DAMON_DEFAULT_SAMPLE_US, False)


@pytest.mark.parametrize("rows", [
    [],
    [_row(0, 1, 0.0), _row(2500, 1, 0.005)],  # never 0.1 % of a CPU: no DAMON worth a thread
    [_row(1000, 1, 1.0), _row(1000, 1, 1.2)],  # one connection count: no line
    [{"idle_connections": "?", "active_connections": 1, "kdamond_cpu_s": 1, "window_s": 10}],
])
def test_no_thread_without_a_line_to_fit(rows: list[dict[str, object]]) -> None:
    assert fit_kernel_thread(rows, 500_000) is None


def _damon(root: Path, state: str, sample_us: str) -> Path:
    context = root / "kdamonds" / "0" / "contexts" / "0" / "monitoring_attrs" / "intervals"
    context.mkdir(parents=True)
    (root / "kdamonds" / "0" / "state").write_text(state + "\n")
    (context / "sample_us").write_text(sample_us + "\n")
    return root


def test_damon_s_sample_interval_from_sysfs(tmp_path: Path) -> None:
    assert damon_sample_us(_damon(tmp_path / "on", "on", "500000")) == 500_000
    assert damon_sample_us(_damon(tmp_path / "off", "off", "500000")) is None
    assert damon_sample_us(_damon(tmp_path / "bad", "on", "often")) is None
    assert damon_sample_us(tmp_path / "absent") is None


def test_an_unreadable_damon_context_passes_to_the_next(tmp_path: Path) -> None:
    root = _damon(tmp_path / "two", "off", "500000")
    (root / "kdamonds" / "nr_kdamonds").write_text("11\n")
    second = root / "kdamonds" / "10"
    (second / "contexts" / "0").mkdir(parents=True)  # a context without its intervals
    intervals = second / "contexts" / "1" / "monitoring_attrs" / "intervals"
    intervals.mkdir(parents=True)
    (intervals / "sample_us").write_text("200000\n")
    (second / "state").write_text("on\n")
    assert damon_sample_us(root) == 200_000
    (intervals / "sample_us").write_text("-5\n")
    assert damon_sample_us(root) is None


def test_the_fitted_thread_ends_a_machine_file_that_loads(tmp_path: Path) -> None:
    rows = [_row(idle, 1, 10.0 * (0.004 + 9e-5 * (idle + 1))) for idle in (0, 1000, 2500)]
    fitted = fit_kernel_thread(rows, 500_000)
    assert fitted is not None
    out = tmp_path / "host.yaml"
    probe_host(out, root=make_host(tmp_path / "host"), extra_lines=fitted.machine_file_lines())
    thread = load_machine(out).kernel_thread
    assert thread is not None
    assert thread.name == "kdamond"
    assert thread.period_ns == 500e6
    assert thread.cpu_share == pytest.approx(0.004, abs=1e-4)
    assert thread.cpu_share_per_process == pytest.approx(9e-5, rel=1e-3)
    assert "sample interval, read on this host" in out.read_text()
