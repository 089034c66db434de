"""Output analysis of one simulation run: where its warm-up ends and how precise its mean is.

A run's throughput is read from a series of equal time bins (completions per bin). Two standard
methods of discrete-event output analysis judge it:

* **Truncation, MSER-5** (K. P. White Jr., "An effective truncation heuristic for bias
  reduction in simulation output", *Simulation* 69(6), 1997; K. P. White Jr., M. J. Cobb and
  S. C. Spratt, "A comparison of five steady-state truncation heuristics for simulation",
  Winter Simulation Conference 2000): the series is averaged in batches of 5 bins and truncated
  at the batch ``d`` that minimises the marginal standard error
  ``sum((z_i - mean(z[d:]))**2 for i >= d) / (n - d)**2``, ``d`` searched over the first half
  only; a minimum at the end of that half means the run is too short to find the warm-up's end.
* **Batch means with a test of independence** (G. S. Fishman and L. S. Yarberry, "An
  implementation of the batch means method", *INFORMS Journal on Computing* 9(3), 1997, the
  LBATCH rule; A. M. Law and W. D. Kelton, *Simulation Modeling and Analysis*, batch means):
  the truncated series is cut into ``k`` batches of ``m`` bins, ``m`` doubled until von
  Neumann's ratio test (J. von Neumann, "Distribution of the ratio of the mean square successive
  difference to the variance", *Annals of Mathematical Statistics* 12(4), 1941) no longer finds
  positive lag-1 correlation between the batch means at level ``alpha``, with at least
  ``min_batches`` batches left; the interval is then the batch means' Student-t interval.

:func:`assess` applies both; :class:`Assessment` says the truncation, the mean per bin and the
interval's half-width relative to the mean (``inf`` when no batch size passes the test with
enough batches). Left out: correlation beyond lag 1 that lag 1 does not show, and the bias of a
truncation MSER-5 misses; the run's caller floors the warm-up where a mechanism's start is known.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

MSER_BATCH = 5
"""Bins per batch of MSER-5."""
INDEPENDENCE_ALPHA = 0.10
"""Level of the von Neumann test of lag-1 correlation between batch means (Fishman and
Yarberry's LBATCH uses 0.10)."""
MIN_BATCHES = 10
"""Fewest batches an interval is made from (fewer leave the test and the t quantile weak)."""
CONFIDENCE = 0.95
"""Confidence of the interval."""


@dataclass(frozen=True, slots=True)
class BatchMeans:
    """The batch-means interval of a series' mean."""

    mean: float
    half_width: float
    """Half-width of the :data:`CONFIDENCE` interval of the mean, in the series' unit."""
    batches: int
    batch_size: int
    """Bins per batch."""

    @property
    def relative_half_width(self) -> float:
        """Half-width over the mean (``inf`` for a mean of 0)."""
        return self.half_width / self.mean if self.mean > 0 else math.inf


@dataclass(frozen=True, slots=True)
class Assessment:
    """What :func:`assess` found in a run's bins."""

    truncated_bins: int
    """Bins MSER-5 drops from the start (a multiple of :data:`MSER_BATCH`)."""
    truncation_at_limit: bool
    """MSER-5's minimum fell on the last batch it may drop: the warm-up may not have ended."""
    interval: BatchMeans | None
    """The batch-means interval of the kept bins; None when no batch size passed the test."""

    @property
    def relative_half_width(self) -> float:
        """The interval's half-width relative to its mean (``inf`` when there is no interval)."""
        return self.interval.relative_half_width if self.interval is not None else math.inf


def mser5(values: Sequence[float] | np.ndarray, batch: int = MSER_BATCH) -> tuple[int, bool]:
    """MSER-5's truncation of ``values``: (observations to drop, minimum at the search's end).

    The series is averaged in batches of ``batch`` observations (a partial last batch is left
    out); the truncation minimises the marginal standard error over the first half of the
    batches. Fewer than two batches: nothing to drop.
    """
    array = np.asarray(values, dtype=float)
    n = array.size // batch
    if n < 2:
        return 0, False
    z = array[:n * batch].reshape(n, batch).mean(axis=1)
    # Suffix sums give every candidate's sum of squared deviations in one pass.
    suffix = np.cumsum(z[::-1])[::-1]
    suffix_sq = np.cumsum((z * z)[::-1])[::-1]
    limit = n // 2  # the largest d searched
    d = np.arange(limit + 1)
    remaining = n - d
    ssd = suffix_sq[d] - suffix[d] ** 2 / remaining
    statistic = np.maximum(ssd, 0.0) / remaining.astype(float) ** 2
    best = int(np.argmin(statistic))  # the first minimum: the least truncation among equals
    return best * batch, best == limit and limit > 0


def von_neumann_rejects(means: np.ndarray, alpha: float = INDEPENDENCE_ALPHA) -> bool:
    """Whether von Neumann's ratio test finds positive lag-1 correlation in ``means``.

    ``C = 1 - sum(diff**2) / (2 * sum((x - mean)**2))`` is about normal with mean 0 and variance
    ``(k - 2) / (k**2 - 1)`` for ``k`` independent normal observations; the test is one-sided
    (positive correlation is what short batches of a simulation show). A constant series is
    independent.
    """
    k = means.size
    deviations = means - means.mean()
    denominator = float(np.dot(deviations, deviations))
    if k < 3 or denominator <= 0.0:
        return False
    ratio = 1.0 - float(np.sum(np.diff(means) ** 2)) / (2.0 * denominator)
    z = ratio / math.sqrt((k - 2) / (k * k - 1))
    return z > _normal_quantile(1.0 - alpha)


def batch_means(values: Sequence[float] | np.ndarray, alpha: float = INDEPENDENCE_ALPHA,
                min_batches: int = MIN_BATCHES) -> BatchMeans | None:
    """The batch-means interval of the mean of ``values``, or None if no batch size qualifies.

    Batch sizes 1, 2, 4, ... bins; for each, the latest ``k * m`` observations form ``k``
    batches (the earliest partial batch is dropped, next to the truncation), and the first size
    whose batch means pass :func:`von_neumann_rejects` with at least ``min_batches`` batches
    gives the interval.
    """
    array = np.asarray(values, dtype=float)
    size = 1
    while array.size // size >= min_batches:
        k = array.size // size
        kept = array[array.size - k * size:]
        means = kept.reshape(k, size).mean(axis=1)
        if not von_neumann_rejects(means, alpha):
            mean = float(means.mean())
            sd = float(means.std(ddof=1))
            half = _t_quantile(0.5 + CONFIDENCE / 2, k - 1) * sd / math.sqrt(k)
            return BatchMeans(mean=mean, half_width=half, batches=k, batch_size=size)
        size *= 2
    return None


def assess(bins: Sequence[float] | np.ndarray, alpha: float = INDEPENDENCE_ALPHA,
           min_batches: int = MIN_BATCHES) -> Assessment:
    """MSER-5's truncation of ``bins`` and the batch-means interval of what it keeps."""
    array = np.asarray(bins, dtype=float)
    truncated, at_limit = mser5(array)
    interval = batch_means(array[truncated:], alpha, min_batches)
    return Assessment(truncated_bins=truncated, truncation_at_limit=at_limit, interval=interval)


def _normal_quantile(p: float) -> float:
    from scipy import stats  # imported when used: SciPy's import is slow

    return float(stats.norm.ppf(p))


def _t_quantile(p: float, dof: int) -> float:
    from scipy import stats

    return float(stats.t.ppf(p, dof))
