"""The interval arithmetic of seed replications (simulator/analysis/intervals.py)."""

from __future__ import annotations

import math

import pytest

from simulator.analysis.intervals import (
    NO_RATIO,
    MeanInterval,
    format_mean,
    format_ratio,
    mean_interval,
    ratio_interval,
)

T_2 = 4.302652729911275
"""Student's t, two-sided 95 %, 2 degrees of freedom."""


def test_mean_interval_is_the_t_interval_of_the_mean() -> None:
    cell = mean_interval([1.0, 2.0, 3.0])
    assert cell.mean == 2.0
    assert cell.n == 3
    assert cell.half == pytest.approx(T_2 * 1.0 / math.sqrt(3))
    assert mean_interval([5.0, 5.0, 5.0]).half == 0.0
    single = mean_interval([7.0, float("nan")])
    assert (single.mean, single.n) == (7.0, 1)
    assert math.isnan(single.half)


def test_ratio_interval_by_the_delta_method() -> None:
    top = mean_interval([110.0, 120.0, 130.0])  # mean 120, s 10
    bottom = mean_interval([100.0, 100.0, 100.0])  # no spread
    ratio, low, high = ratio_interval(top, bottom)
    # only the top varies: se = (10 / 120) / sqrt(3), 2 degrees of freedom
    se = 10.0 / 120.0 / math.sqrt(3)
    assert ratio == pytest.approx(1.2)
    assert low == pytest.approx(1.2 * math.exp(-T_2 * se))
    assert high == pytest.approx(1.2 * math.exp(T_2 * se))
    assert low < 1.0 < high  # three seeds this far apart do not resolve +20 %
    both = ratio_interval(top, top)
    assert both[0] == pytest.approx(1.0)
    # two equal halves of the variance: Welch-Satterthwaite gives 4 degrees of freedom
    se_both = math.sqrt(2) * se
    assert both[2] == pytest.approx(math.exp(2.7764451051977987 * se_both))
    assert ratio_interval(bottom, bottom) == (1.0, 1.0, 1.0)
    lone = ratio_interval(mean_interval([2.0]), bottom)
    assert lone[0] == pytest.approx(0.02)
    assert math.isnan(lone[1])
    assert all(math.isnan(v) for v in ratio_interval(top, mean_interval([])))


def test_mean_interval_bounds_and_spread() -> None:
    cell = mean_interval([1.0, 2.0, 3.0])
    assert cell.sd == pytest.approx(1.0)
    assert (cell.low, cell.high) == pytest.approx((2.0 - cell.half, 2.0 + cell.half))
    assert math.isnan(MeanInterval(1.0, math.nan, 1, (1.0,)).sd)
    assert mean_interval([]).n == 0


def test_format_mean_and_ratio_show_the_interval_only_when_there_is_one() -> None:
    assert format_mean(mean_interval([1000.0, 1200.0, 1100.0])) == "1,100 ± 248"
    assert format_mean(mean_interval([1234.4])) == "1,234"
    assert format_mean(mean_interval([])) == "-"
    assert format_mean(mean_interval([1.0, 1.5]), digits=2) == "1.25 ± 3.18"
    assert format_ratio((1.23456, 1.2, 1.3)) == "1.235 [1.200, 1.300]"
    assert format_ratio((1.23456, math.nan, math.nan), digits=2) == "1.23"
    assert format_ratio(NO_RATIO) == "-"


def test_one_precise_point_keeps_its_own_interval_and_a_ratio_combines_two() -> None:
    from simulator.analysis.intervals import point_interval, ratio_interval, tps_interval

    one = tps_interval([100.0], [0.02])
    assert one.mean == 100.0
    assert one.n == 1
    assert one.half == pytest.approx(2.0)
    assert math.isnan(tps_interval([100.0], [math.inf]).half)
    assert math.isnan(tps_interval([100.0]).half)  # no precision given: no interval
    assert tps_interval([1.0, 2.0, 3.0], [0.5, 0.5, 0.5]).n == 3  # seeds: their t-interval
    ratio, low, high = ratio_interval(point_interval(100.0, 0.02), point_interval(50.0, 0.02))
    se = math.hypot(0.02, 0.02) / 1.959963984540054
    assert ratio == 2.0
    assert low == pytest.approx(2.0 * math.exp(-1.959963984540054 * se))
    assert high == pytest.approx(2.0 * math.exp(1.959963984540054 * se))
