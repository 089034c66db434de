"""A point's window: its TPS's interval, whether it converged, and windows grown for precision."""

from __future__ import annotations

import math

import pytest

from simulator.config.machine_file import load_machine
from tests.models.points import simulate


def test_a_fixed_window_reports_its_interval_and_is_judged_against_two_percent() -> None:
    """The README's threadripper example (post14, 64 clients, 500 idle connections)."""
    short = simulate(load_machine("threadripper-3990x"), "post14", clients=64, idle_clients=500,
                     duration_ns=0.3e6, warmup_ns=0.5e6).row
    longer = simulate(load_machine("threadripper-3990x"), "post14", clients=64,
                      idle_clients=500, duration_ns=3e6, warmup_ns=1e6).row
    for row in (short, longer):
        assert row["transactions_per_client"] == pytest.approx(row["transactions"] / 64)  # type: ignore[operator]
        assert row["max_duration_reached"] is False
        assert not row["window_converged"] or row["tps_ci_rel"] <= 0.02  # type: ignore[operator]
        assert row["duration_ms"] in (0.3, 3.0)
    assert short["tps_ci_rel"] > longer["tps_ci_rel"]  # type: ignore[operator]
    assert short["window_converged"] is False
    assert longer["window_converged"] is True


def test_a_window_grows_until_its_tps_is_precise() -> None:
    gold = load_machine("gold5215-2s")
    fixed = simulate(gold, "post14", clients=1, duration_ns=2e6, warmup_ns=2e6).row
    grown = simulate(gold, "post14", clients=1, duration_ns=2e6, warmup_ns=2e6,
                     precision=0.01, max_duration_ns=100e6).row
    assert fixed["tps_ci_rel"] > 0.01  # type: ignore[operator]
    assert grown["tps_ci_rel"] <= 0.01  # type: ignore[operator]
    assert grown["window_converged"] is True
    assert grown["max_duration_reached"] is False
    duration = grown["duration_ms"]
    warmup = grown["warmup_ms"]
    assert isinstance(duration, float)
    assert isinstance(warmup, float)
    assert 2.0 < duration + warmup - 2.0 <= 100.0
    assert warmup >= 2.0  # the point's warm-up is a floor
    # the window grows by whole first windows (of 2 ms), less what MSER-5 truncates
    assert math.isclose(round(duration + warmup - 2.0, 6) % 2.0, 0.0, abs_tol=1e-6)
    assert grown["tps"] == pytest.approx(fixed["tps"], rel=0.03)
    again = simulate(gold, "post14", clients=1, duration_ns=2e6, warmup_ns=2e6,
                     precision=0.01, max_duration_ns=100e6).row
    assert {k: v for k, v in again.items() if k != "wall_s"} == {
        k: v for k, v in grown.items() if k != "wall_s"}  # deterministic for a seed


def test_a_window_that_reaches_its_cap_says_so() -> None:
    row = simulate(load_machine("gold5215-2s"), "pre14", clients=1, idle_clients=1000,
                   duration_ns=1e6, warmup_ns=2e6, precision=0.001, max_duration_ns=3e6).row
    assert row["max_duration_reached"] is True
    assert row["window_converged"] is False
    assert row["tps_ci_rel"] > 0.001  # type: ignore[operator]
    assert row["duration_ms"] + row["warmup_ms"] == pytest.approx(5.0)  # type: ignore[operator]
