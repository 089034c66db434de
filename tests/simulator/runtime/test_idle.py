"""The menu governor's rules, each on a hand-computed history (drivers/cpuidle/governors/menu.c)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from simulator.config.machine import IdleStateConfig
from simulator.runtime.idle import (
    INTERVALS,
    POLL,
    MenuGovernor,
    bucket_of,
    typical_interval_ns,
    wake_state,
)

US = 1_000.0
MS = 1_000_000.0
# skx_cstates of intel_idle.c, polling first: the Gold 5215's table.
SKX = (POLL,
       IdleStateConfig("C1", 2 * US, 2 * US, 2 * US),
       IdleStateConfig("C1E", 10 * US, 20 * US, 4 * US),
       IdleStateConfig("C6", 133 * US, 600 * US, 92 * US, core_scope=True))
HORIZON = 100 * MS


def governor_with(intervals_ns: list[float]) -> MenuGovernor:
    """A governor whose last idle intervals are ``intervals_ns`` (oldest first)."""
    governor = MenuGovernor(HORIZON)
    for value in intervals_ns:
        governor.select(SKX, HORIZON)
        governor.reflect(value)
    return governor


def test_buckets_are_the_orders_of_magnitude_of_the_next_timer() -> None:
    assert [bucket_of(t) for t in (0, 9.9 * US, 10 * US, 99 * US, 100 * US, 999 * US, 1 * MS,
                                   9.9 * MS, 10 * MS, 99 * MS, 100 * MS, 10_000 * MS)] == [
        0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5]


def test_typical_interval_of_regular_intervals_is_their_mean() -> None:
    assert typical_interval_ns([30 * US] * 8, HORIZON) == pytest.approx(30 * US)
    # Spread 10 us around 1 ms: the mean is more than six standard deviations.
    values = [990 * US, 1010 * US] * 4
    assert typical_interval_ns(values, HORIZON) == pytest.approx(1000 * US)


def test_typical_interval_drops_outliers_down_to_three_quarters_of_the_samples() -> None:
    # Two long sleeps among six regular gaps: dropped one by one, the rest is regular.
    values = [20 * US] * 6 + [50 * MS, 80 * MS]
    assert typical_interval_ns(values, HORIZON) == pytest.approx(20 * US)
    # Three outliers are too many: no typical interval.
    values = [20 * US] * 5 + [30 * MS, 50 * MS, 80 * MS]
    assert typical_interval_ns(values, HORIZON) == math.inf


def test_typical_interval_is_ignored_when_every_interval_exceeds_the_prediction() -> None:
    assert typical_interval_ns([30 * US] * 8, 20 * US) == math.inf


def test_a_long_idle_history_chooses_the_deepest_state() -> None:
    assert MenuGovernor(HORIZON).select(SKX, HORIZON) == 3  # C6


@pytest.mark.parametrize(("gap_us", "state"), [(1.0, 0), (3.0, 1), (19.0, 1), (25.0, 2),
                                               (599.0, 2), (700.0, 3)])
def test_regular_gaps_choose_the_deepest_state_whose_residency_fits(gap_us: float,
                                                                    state: int) -> None:
    governor = governor_with([gap_us * US] * INTERVALS)
    assert governor.select(SKX, HORIZON) == state


def test_a_next_timer_below_the_first_residency_polls() -> None:
    assert MenuGovernor(HORIZON).select(SKX, 1.5 * US) == 0


def test_a_prediction_below_c1_takes_c1_when_the_next_timer_allows_it() -> None:
    # Typical interval 1.5 us < C1's 2 us residency: polling would be chosen, but menu.c uses
    # a physical state when its exit latency fits the limit... which 2 us does not here.
    assert governor_with([1.5 * US] * INTERVALS).select(SKX, HORIZON) == 0
    # With a 2 us interval C1 fits both its residency and its exit latency.
    assert governor_with([2.0 * US] * INTERVALS).select(SKX, HORIZON) == 1


def test_the_correction_factor_is_a_decaying_average_of_measured_over_next_timer() -> None:
    governor = MenuGovernor(HORIZON)
    governor.select(SKX, HORIZON)
    governor.reflect(1 * MS)
    assert governor.correction_factor(HORIZON) == pytest.approx(7 / 8 + (1 / 100) / 8)
    # A sleep of 50 ms or more counts as a perfect prediction.
    governor.select(SKX, HORIZON)
    governor.reflect(60 * MS)
    expected = (7 / 8 + (1 / 100) / 8) * 7 / 8 + 1 / 8
    assert governor.correction_factor(HORIZON) == pytest.approx(expected)
    # Other buckets are untouched.
    assert governor.correction_factor(50 * US) == 1.0


def test_the_measured_interval_is_capped_at_the_next_timer() -> None:
    governor = MenuGovernor(HORIZON)
    governor.select(SKX, 5 * MS)
    governor.reflect(8 * MS)
    assert governor.intervals_ns[0] == 5 * MS
    assert governor.correction_factor(5 * MS) == pytest.approx(1.0)


def test_a_learnt_short_correction_picks_a_shallow_state_despite_a_far_timer() -> None:
    # Irregular gaps (no typical interval) of 10-90 us under a 100 ms horizon: the factor
    # falls until the prediction is tens of microseconds.
    governor = MenuGovernor(HORIZON)
    for k in range(200):
        governor.select(SKX, HORIZON)
        governor.reflect((10 + 80 * (k % 2) + 37 * (k % 3)) * US)
    assert governor.select(SKX, HORIZON) == 2  # C1E: the prediction is ~70 us


def test_a_core_level_state_counts_only_if_the_whole_core_entered_it() -> None:
    assert wake_state(SKX, 3, core_entered=True) == 3
    assert wake_state(SKX, 3, core_entered=False) == 2  # the deepest thread-level state
    assert wake_state(SKX, 2, core_entered=False) == 2
    assert wake_state(SKX, 0, core_entered=True) == 0


@given(st.lists(st.floats(min_value=0.0, max_value=500 * MS), min_size=1, max_size=40),
       st.floats(min_value=0.0, max_value=1_000 * MS))
def test_choice_is_a_state_whose_residency_fits_the_next_timer(intervals: list[float],
                                                               next_timer: float) -> None:
    governor = MenuGovernor(HORIZON)
    for value in intervals:
        governor.select(SKX, HORIZON)
        governor.reflect(value)
    choice = governor.select(SKX, next_timer)
    assert 0 <= choice < len(SKX)
    assert SKX[choice].target_residency_ns <= max(next_timer, 0.0)
    assert all(0.0 <= governor.correction_factor(t) <= 1.0 for t in (1 * US, 1 * MS, HORIZON))
