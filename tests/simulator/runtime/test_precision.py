import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simulator.runtime.precision import (
    MSER_BATCH,
    assess,
    batch_means,
    mser5,
    von_neumann_rejects,
    von_neumann_z,
)


def mser5_reference(values: list[float], batch: int = MSER_BATCH) -> tuple[int, bool]:
    """MSER-5 as its papers write it: a loop over every candidate truncation."""
    n = len(values) // batch
    if n < 2:
        return 0, False
    z = [sum(values[i * batch:(i + 1) * batch]) / batch for i in range(n)]
    best_d, best = 0, math.inf
    for d in range(n // 2 + 1):
        kept = z[d:]
        mean = sum(kept) / len(kept)
        statistic = sum((x - mean) ** 2 for x in kept) / len(kept) ** 2
        if statistic < best - 1e-12 * max(1.0, best if math.isfinite(best) else 1.0):
            best_d, best = d, statistic
    return best_d * batch, best_d == n // 2 and n // 2 > 0


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=50), min_size=0, max_size=200))
def test_mser5_matches_the_reference(counts: list[int]) -> None:
    values = [float(c) for c in counts]
    assert mser5(values) == mser5_reference(values)


def test_mser5_drops_a_transient_and_keeps_a_stationary_series() -> None:
    rng = np.random.default_rng(1)
    steady = rng.normal(10.0, 1.0, 400)
    transient = np.concatenate([np.linspace(0.0, 10.0, 60), steady])
    dropped, at_limit = mser5(transient)
    assert 40 <= dropped <= 90
    assert not at_limit
    assert mser5(steady)[0] <= 40


def test_mser5_says_when_the_warm_up_outlasts_half_the_run() -> None:
    ramp = np.linspace(0.0, 100.0, 200)  # never settles
    dropped, at_limit = mser5(ramp)
    assert at_limit
    assert dropped == 100


def test_von_neumann_finds_correlation_and_accepts_independence() -> None:
    rng = np.random.default_rng(2)
    iid_rejections = sum(von_neumann_rejects(rng.normal(size=40)) for _ in range(2000))
    assert 0.06 <= iid_rejections / 2000 <= 0.14  # the test's level, 0.10
    ar = np.zeros(40)
    for i in range(1, 40):
        ar[i] = 0.9 * ar[i - 1] + rng.normal()
    assert von_neumann_rejects(ar)
    assert not von_neumann_rejects(np.full(20, 3.0))  # constant: independent


def test_batch_means_interval_of_hand_computed_batches() -> None:
    values = [3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0, 5.0, 3.0, 5.0, 8.0, 9.0, 7.0, 9.0, 3.0,
              2.0, 3.0, 8.0, 4.0]
    assert abs(von_neumann_z(np.array(values))) < 1.0  # no lag-1 correlation: batches of one
    interval = batch_means(values)
    assert interval is not None
    assert (interval.batch_size, interval.batches) == (1, 20)
    assert interval.mean == pytest.approx(sum(values) / 20)
    from scipy import stats
    sd = np.std(values, ddof=1)
    assert interval.half_width == pytest.approx(stats.t.ppf(0.975, 19) * sd / math.sqrt(20))


def test_negative_correlation_grows_the_batches_and_a_count_has_its_resolution() -> None:
    # 0, 2, 0, 2: batches of one are negatively correlated (an interval too wide); batches of
    # two are constant, and the interval's half-width is one count's share of the 20 counted.
    values = [0.0, 2.0] * 10
    assert von_neumann_z(np.array(values)) < -3.0
    interval = batch_means(values)
    assert interval is not None
    assert (interval.batch_size, interval.batches) == (2, 10)
    assert interval.mean == pytest.approx(1.0)
    assert interval.half_width == pytest.approx(1.0 / 20.0)


def test_batch_means_grows_the_batches_of_a_correlated_series() -> None:
    rng = np.random.default_rng(3)
    n = 4096
    ar = np.zeros(n)
    for i in range(1, n):
        ar[i] = 0.8 * ar[i - 1] + rng.normal()
    interval = batch_means(ar + 100.0)
    assert interval is not None
    assert interval.batch_size >= 4


def test_batch_means_covers_the_true_mean_about_95_percent_of_the_time() -> None:
    rng = np.random.default_rng(4)
    covered = total = 0
    for _ in range(400):
        ar = np.zeros(2000)
        for i in range(1, 2000):
            ar[i] = 0.5 * ar[i - 1] + rng.normal()
        interval = batch_means(ar + 50.0)
        if interval is None:
            continue
        total += 1
        covered += abs(interval.mean - 50.0) <= interval.half_width
    assert total >= 390
    assert 0.88 <= covered / total <= 0.99


def test_too_few_bins_give_no_interval() -> None:
    assert batch_means([1.0] * 9) is None
    assessed = assess([1.0] * 9)
    assert assessed.interval is None
    assert math.isinf(assessed.relative_half_width)


def test_assess_truncates_then_measures_the_rest() -> None:
    rng = np.random.default_rng(5)
    bins = np.concatenate([np.zeros(50), rng.poisson(100.0, 500)])
    assessed = assess(bins)
    assert assessed.truncated_bins >= 50
    assert assessed.interval is not None
    assert assessed.interval.mean == pytest.approx(100.0, rel=0.02)
    assert assessed.relative_half_width < 0.02
