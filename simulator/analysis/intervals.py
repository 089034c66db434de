"""Confidence intervals over seed replications: a mean's t-interval and a ratio's interval.

A point run with several root seeds gives independent replications of one configuration; their
spread is the model's own noise (where the scheduler placed tasks, which transactions fell in the
window). This module turns replications into a mean with a Student-t interval, and two such means
into a ratio with a delta-method interval, at :data:`CONFIDENCE`.

Left out: intervals that account for correlation between the two sides of a ratio (the seeds of
two configurations are treated as independent samples).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from statistics import NormalDist

import numpy as np

__all__ = ["CONFIDENCE", "NO_RATIO", "MeanInterval", "Ratio", "format_mean", "format_ratio",
           "mean_interval", "ratio_interval", "t_quantile"]

CONFIDENCE = 0.95
"""Coverage of every interval."""

Ratio = tuple[float, float, float]
"""A ratio and its interval: ``(ratio, low, high)``."""

NO_RATIO: Ratio = (math.nan, math.nan, math.nan)
"""The ratio of sides that have none (a side missing or not positive)."""


@dataclass(frozen=True)
class MeanInterval:
    """A mean over replications and the half-width of its interval (``nan`` when undefined)."""

    mean: float
    half: float
    n: int
    values: tuple[float, ...] = field(default=(), repr=False)

    @property
    def sd(self) -> float:
        """Sample standard deviation of the values (``nan`` below two)."""
        return float(np.std(self.values, ddof=1)) if self.n >= 2 else math.nan

    @property
    def low(self) -> float:
        """Lower bound of the interval."""
        return self.mean - self.half

    @property
    def high(self) -> float:
        """Upper bound of the interval."""
        return self.mean + self.half


@functools.lru_cache(maxsize=256)
def t_quantile(dof: float) -> float:
    """The two-sided :data:`CONFIDENCE` quantile of Student's t with ``dof`` degrees."""
    from scipy import stats  # imported when used: SciPy's import is slow (and argparse)

    return float(stats.t.ppf(0.5 + CONFIDENCE / 2, dof))


def mean_interval(values: Sequence[float]) -> MeanInterval:
    """Mean of ``values`` (``nan`` dropped) and the half-width of its t-interval.

    The half-width is ``t(n - 1) * s / sqrt(n)``; ``nan`` below two values.
    """
    data = np.asarray([v for v in values if not math.isnan(v)], dtype=float)
    n = len(data)
    if n == 0:
        return MeanInterval(math.nan, math.nan, 0)
    mean = float(data.mean())
    half = t_quantile(n - 1) * float(data.std(ddof=1)) / math.sqrt(n) if n >= 2 else math.nan
    return MeanInterval(mean, half, n, tuple(float(v) for v in data))


def point_interval(mean: float, relative_half: float) -> MeanInterval:
    """One point's value with its own 95 % interval (``n`` 1).

    A precise point's ``tps`` and ``tps_ci_rel`` (the half-width relative to the mean; ``inf``
    or ``nan``: no interval).
    """
    half = mean * relative_half if math.isfinite(relative_half) else math.nan
    return MeanInterval(mean, half, 1, (mean,))


def tps_interval(tps: Sequence[float], tps_ci_rel: Sequence[float] | None = None) -> MeanInterval:
    """A point's TPS over its seeds (:func:`mean_interval`), or one seed's with its own interval.

    ``tps_ci_rel``: the seeds' own relative half-widths (the curve's column); with one seed its
    interval is the point's own (:func:`point_interval`), with several the seeds' t-interval.
    """
    if len(tps) == 1 and tps_ci_rel is not None and len(tps_ci_rel) == 1:
        return point_interval(float(tps[0]), float(tps_ci_rel[0]))
    return mean_interval(tps)


def ratio_interval(top: MeanInterval, bottom: MeanInterval) -> Ratio:
    """``top.mean / bottom.mean`` and its interval: ``(ratio, low, high)``.

    The log ratio's standard error by the delta method, ``se = sqrt(s_a^2 / (n_a m_a^2) +
    s_b^2 / (n_b m_b^2))``, with Welch-Satterthwaite degrees of freedom; the interval is
    ``ratio * exp(-t se)`` to ``ratio * exp(t se)``. ``nan`` bounds when either side has fewer
    than two values; no ratio unless both means are positive.
    """
    if not (bottom.mean > 0 and top.mean > 0):
        return NO_RATIO
    ratio = top.mean / bottom.mean
    if top.n == 1 and bottom.n == 1:
        return _own_ratio_interval(top, bottom, ratio)
    if top.n < 2 or bottom.n < 2:
        return ratio, math.nan, math.nan
    sides = (top, bottom)
    parts = [float(np.var(side.values, ddof=1)) / (side.n * side.mean ** 2) for side in sides]
    se = math.sqrt(sum(parts))
    if se == 0:
        return ratio, ratio, ratio
    dof = se ** 4 / sum(p ** 2 / (side.n - 1) for p, side in zip(parts, sides, strict=True))
    t = t_quantile(dof)
    return ratio, ratio * math.exp(-t * se), ratio * math.exp(t * se)


def _own_ratio_interval(top: MeanInterval, bottom: MeanInterval, ratio: float) -> Ratio:
    """The ratio of two single points from their own intervals (:func:`point_interval`).

    The log ratio's standard error by the delta method from each side's normal 95 % half-width.
    """
    if not (math.isfinite(top.half) and math.isfinite(bottom.half)):
        return ratio, math.nan, math.nan
    z = NormalDist().inv_cdf(0.5 + CONFIDENCE / 2)
    se = math.hypot(top.half / (z * top.mean), bottom.half / (z * bottom.mean))
    return ratio, ratio * math.exp(-z * se), ratio * math.exp(z * se)


def format_mean(cell: MeanInterval, digits: int = 0) -> str:
    """``mean ± half`` with thousands separators (the mean alone without an interval, ``-``)."""
    if math.isnan(cell.mean):
        return "-"
    text = f"{cell.mean:,.{digits}f}"
    if not math.isnan(cell.half):
        text += f" ± {cell.half:,.{digits}f}"
    return text


def format_ratio(ratio: Ratio, digits: int = 3) -> str:
    """``ratio [low, high]`` (the ratio alone without an interval; ``-`` for no ratio)."""
    value, low, high = ratio
    if math.isnan(value):
        return "-"
    if math.isnan(low):
        return f"{value:.{digits}f}"
    return f"{value:.{digits}f} [{low:.{digits}f}, {high:.{digits}f}]"
