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
  lag-1 correlation between the batch means at level ``alpha`` (two-sided here, where LBATCH
  tests for positive correlation only: see :func:`von_neumann_rejects`), with at least
  ``min_batches`` batches left; the interval is then the batch means' Student-t interval.

:func:`assess` applies both; :class:`Assessment` says the truncation, the mean per bin and the
interval's half-width relative to the mean (``inf`` when no batch size passes the test with
enough batches). Left out: correlation beyond lag 1 that lag 1 does not show, and the bias of a
truncation MSER-5 misses; the run's caller floors the warm-up where a mechanism's start is known.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from simulator.runtime.engine import ProcessGenerator, SimEnvironment

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


def von_neumann_z(means: np.ndarray) -> float:
    """Von Neumann's ratio of ``means``, standardised (about normal if they are independent).

    ``C = 1 - sum(diff**2) / (2 * sum((x - mean)**2))`` has mean 0 and variance
    ``(k - 2) / (k**2 - 1)`` for ``k`` independent normal observations; positive values mean
    positive lag-1 correlation. A constant series, or fewer than 3 values: 0.
    """
    k = means.size
    deviations = means - means.mean()
    denominator = float(np.dot(deviations, deviations))
    if k < 3 or denominator <= 0.0:
        return 0.0
    ratio = 1.0 - float(np.sum(np.diff(means) ** 2)) / (2.0 * denominator)
    return ratio / math.sqrt((k - 2) / (k * k - 1))


def von_neumann_rejects(means: np.ndarray, alpha: float = INDEPENDENCE_ALPHA) -> bool:
    """Whether von Neumann's test finds positive lag-1 correlation in ``means``.

    One-sided, as LBATCH's: positive correlation is what makes a batch-means interval too narrow.
    """
    return von_neumann_z(means) > _normal_quantile(1.0 - alpha)


def batch_means(values: Sequence[float] | np.ndarray, alpha: float = INDEPENDENCE_ALPHA,
                min_batches: int = MIN_BATCHES) -> BatchMeans | None:
    """The batch-means interval of the mean of ``values``, or None if no batch size qualifies.

    Batch sizes 1, 2, 4, ... bins; for each, the latest ``k * m`` observations form ``k``
    batches (the earliest partial batch is dropped, next to the truncation). A size whose batch
    means show positive lag-1 correlation (:func:`von_neumann_rejects`) is too small: its
    interval would be too narrow. The first size whose means show no lag-1 correlation at all
    (two-sided, at ``alpha``) with at least ``min_batches`` batches gives the interval. Negative
    correlation, as the bins of a nearly periodic closed loop show (3, 4, 3, 4 completions),
    makes an interval too wide, not too narrow: such a size's interval is kept and a larger size
    tried, and if none shows no correlation the largest such size gives it (conservatively). The
    half-width is at least one observation's share of the total (the resolution of a count).
    """
    array = np.asarray(values, dtype=float)
    two_sided = _normal_quantile(1.0 - alpha / 2.0)
    fallback: BatchMeans | None = None
    size = 1
    while array.size // size >= min_batches:
        k = array.size // size
        kept = array[array.size - k * size:]
        means = kept.reshape(k, size).mean(axis=1)
        z = von_neumann_z(means)
        if z <= _normal_quantile(1.0 - alpha):  # not positively correlated: a usable interval
            mean = float(means.mean())
            sd = float(means.std(ddof=1))
            half = _t_quantile(0.5 + CONFIDENCE / 2, k - 1) * sd / math.sqrt(k)
            total = float(kept.sum())
            if total > 0.0:
                half = max(half, mean / total)
            interval = BatchMeans(mean=mean, half_width=half, batches=k, batch_size=size)
            if z >= -two_sided:
                return interval
            fallback = interval
        size *= 2
    return fallback


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


BINS_PER_WINDOW = 100
"""Bins of a point's first window (:func:`run_window`): its rate series' resolution."""
DEFAULT_TARGET = 0.02
"""The relative half-width a fixed window is judged against (its ``converged``)."""
MAX_GROWTH = 4.0
"""A window grows at most this many times per step (an estimate from a short window can be far
off)."""


@dataclass(frozen=True, slots=True)
class Window:
    """The measured window of a run, and how precise the mean rate it holds is."""

    start_ns: float
    """Where the measurement starts: the warm-up's floor plus what MSER-5 truncated."""
    end_ns: float
    relative_half_width: float
    """Half-width of the 95 % interval of the rate, relative to it (``inf``: no interval)."""
    target: float
    """The relative half-width the window was asked for (:data:`DEFAULT_TARGET` if fixed)."""
    max_duration_reached: bool
    """The window stopped at its cap before reaching ``target``."""
    truncation_at_limit: bool
    """MSER-5's truncation fell at the end of the half it searches (a warm-up not over)."""
    mark: int
    """Index of the mark (counters taken every :data:`MSER_BATCH` bins from the floor) at
    ``start_ns``."""

    @property
    def converged(self) -> bool:
        """The interval met its target and the warm-up ended in the first half of the window."""
        return self.relative_half_width <= self.target and not self.truncation_at_limit

    @property
    def duration_ns(self) -> float:
        """Length of the measured window."""
        return self.end_ns - self.start_ns


def completion_bins(times_ns: np.ndarray, start_ns: float, end_ns: float,
                    bin_ns: float) -> np.ndarray:
    """Completions per bin of ``bin_ns`` in ``[start_ns, end_ns)``; times outside are left out."""
    n = max(1, round((end_ns - start_ns) / bin_ns))
    times = np.asarray(times_ns, dtype=float)
    inside = times[(times >= start_ns) & (times < end_ns)]
    index = np.minimum(((inside - start_ns) // bin_ns).astype(np.int64), n - 1)
    return np.bincount(index, minlength=n).astype(float)


def grown_window_ns(measured_ns: float, relative_half_width: float, target: float,
                    step_ns: float, cap_ns: float) -> float:
    """The next length of a window measured ``measured_ns`` that missed ``target``.

    The interval narrows as the square root of the length, so the length the target asks for
    is ``measured x (rel / target)**2``, times 1.2 for the estimate's own error, at most
    :data:`MAX_GROWTH` times the current length (twice when there is no interval yet), and
    rounded up to whole ``step_ns`` (the first window: a run's periodic parts stay whole),
    between one step more and ``cap_ns``.
    """
    if math.isfinite(relative_half_width):
        factor = min(MAX_GROWTH, max(1.0, 1.2 * (relative_half_width / target) ** 2))
    else:
        factor = 2.0
    wanted = math.ceil(measured_ns * factor / step_ns - 1e-9) * step_ns
    return min(cap_ns, max(measured_ns + step_ns, wanted))


class MeasuredWindow:
    """The measured window of one run: fixed, or grown until its mean rate is precise.

    ``completions()`` gives the completion times (ns) of what is counted so far, ``mark()`` is
    called at the warm-up's floor and, when growing, every :data:`MSER_BATCH` bins after it (the
    caller keeps its counters there, so that a window starting at any mark can be summed).
    Spawn :meth:`marker` with the run's other processes, then :meth:`run`.

    Fixed (``precision`` None): the window is ``[floor, floor + window)``, as asked; its
    interval is judged against :data:`DEFAULT_TARGET`. Growing: after each window the bins from
    the floor are assessed (:func:`assess`: MSER-5, then batch means); the run stops when the
    interval's relative half-width is at most ``precision`` and MSER-5's truncation is not at
    its limit, or at ``max_window_ns`` (which it then says), and grows by
    :func:`grown_window_ns` otherwise. Deterministic: every decision is a function of the
    simulated run.
    """

    def __init__(self, env: SimEnvironment, floor_ns: float, window_ns: float,
                 completions: Callable[[], np.ndarray], mark: Callable[[], None],
                 precision: float | None = None, max_window_ns: float | None = None) -> None:
        if not window_ns > 0.0:
            raise ValueError(f"window_ns must be positive, got {window_ns!r}")
        if precision is not None and not 0.0 < precision < 1.0:
            raise ValueError(f"precision must be in (0, 1), got {precision!r}")
        self.env = env
        self.floor_ns = floor_ns
        self.window_ns = window_ns
        self.completions = completions
        self.mark = mark
        self.precision = precision
        self.max_window_ns = max(window_ns, max_window_ns or window_ns)
        self.bin_ns = window_ns / BINS_PER_WINDOW

    def marker(self) -> ProcessGenerator:
        """The process that calls ``mark`` at the floor (and, when growing, every batch)."""
        env = self.env
        yield env.timeout(self.floor_ns)
        self.mark()
        if self.precision is None:
            return
        step = self.bin_ns * MSER_BATCH
        while True:
            yield env.timeout(step)
            self.mark()

    def run(self) -> Window:
        """Simulate through the warm-up and the window; return what was measured."""
        env, floor = self.env, self.floor_ns
        end = floor + self.window_ns
        if self.precision is None:
            env.run(until=end)
            bins = completion_bins(self.completions(), floor, end, self.bin_ns)
            interval = batch_means(bins)
            relative = interval.relative_half_width if interval is not None else math.inf
            return Window(start_ns=floor, end_ns=end, relative_half_width=relative,
                          target=DEFAULT_TARGET, max_duration_reached=False,
                          truncation_at_limit=mser5(bins)[1], mark=0)
        while True:
            env.run(until=end)
            bins = completion_bins(self.completions(), floor, end, self.bin_ns)
            assessed = assess(bins)
            precise = (assessed.relative_half_width <= self.precision
                       and not assessed.truncation_at_limit)
            measured = end - floor
            if precise or measured >= self.max_window_ns * (1.0 - 1e-12):
                return Window(start_ns=floor + assessed.truncated_bins * self.bin_ns,
                              end_ns=end, relative_half_width=assessed.relative_half_width,
                              target=self.precision, max_duration_reached=not precise,
                              truncation_at_limit=assessed.truncation_at_limit,
                              mark=assessed.truncated_bins // MSER_BATCH)
            end = floor + grown_window_ns(measured, assessed.relative_half_width,
                                          self.precision, self.window_ns, self.max_window_ns)
