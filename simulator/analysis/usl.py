"""Universal Scalability Law (USL) summaries of simulated TPS curves.

N. J. Gunther's USL (*Guerrilla Capacity Planning*, Springer, 2007) models throughput at
concurrency N as::

    X(N) = lambda * N / (1 + alpha * (N - 1) + beta * N * (N - 1))

with ``lambda`` the throughput of one client, ``alpha`` the contention (serialised) fraction and
``beta`` the coherency cost (pairwise exchanges, O(N^2)). Throughput peaks at
N* = sqrt((1 - alpha) / beta).

What this module does:

- :func:`fit_usl` fits lambda, alpha and beta to ``(N, X)`` points by non-negative least squares
  (NNLS, ``scipy.optimize.nnls``) on the linear form N/X = a + b(N - 1) + cN(N - 1), with lambda =
  1/a, alpha = b/a and beta = c/a. lambda is always fitted, so a curve that does not start at N = 1
  needs no special case. Each row is weighted by X/N, so its residual approximates the *relative*
  error of X at that point; exact USL data is recovered exactly. alpha and beta are constrained to
  be non-negative: superlinear scaling (alpha < 0, which cache effects can produce) comes out as
  alpha = 0.
- :func:`usl_table` fits every curve of an experiment's ``curve`` table.
- :func:`usl_beta_by_line` breaks each curve's beta down by cache line: a line's share of beta
  is its share of the growth of coherence transfers per transaction.

What it leaves out: uncertainty of the parameters (no covariance or bootstrap), outlier
rejection, and the cases USL cannot express: costs that depend on *total* connections rather
than concurrency (PostgreSQL before 14 with many idle connections, A. Freund, "Analyzing the
Limits of Connection Scalability in Postgres", 2020), throughput capped by CPU scheduling beyond
the hardware-thread count (the dip his "Improving Postgres Connection Scalability: Snapshots",
2020, attributes to OS task scheduling), and piecewise curves at socket boundaries. USL's
parameters summarise a curve; they do not predict the effect of a change to the program.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pandas as pd

from simulator.analysis.columns import POINT_KEYS
from simulator.hardware.codes import TRANSFER_CLASSES, AccessClass
from simulator.types import FloatArray

__all__ = [
    "CURVE_AXES",
    "LINE_TRANSFER_COLUMNS",
    "UslFit",
    "fit_usl",
    "line_transfers",
    "usl_beta_by_line",
    "usl_table",
    "usl_throughput",
]


CURVE_AXES = ("clients", "idle_clients")
"""Point keys a curve can vary along, in order of preference."""

LINE_TRANSFER_COLUMNS: tuple[str, ...] = (
    *(c.name.lower() for c in sorted(TRANSFER_CLASSES) if c is not AccessClass.CROSS_DOMAIN_HITM),
    "invalidations",
)
"""Columns of a per-line table summed into a line's coherence transfers.

``local_hit``, ``local_hitm``, ``cross_domain_hit``, ``remote_hit``, ``remote_hitm`` (every
access served by another core's cache, clean or modified) and ``invalidations`` (copies removed
from other cores by a store or read-modify-write). ``cross_domain_hitm`` is *not* added: in the
per-line table ``local_hitm`` already counts every same-socket HITM, cross-domain ones included,
as perf c2c's "Lcl HITM" does. Hits in the requester's own caches (L1, L2, L3, SMT sibling),
DRAM fills and upgrades (whose cost is their invalidations) are not transfers between cores.
"""


@dataclass(frozen=True, slots=True)
class UslFit:
    """A USL fit of one curve.

    Attributes:
        lambda_: throughput of a single client, X(1) of the fitted curve (same unit as X).
        alpha: contention coefficient, ≥ 0.
        beta: coherency coefficient, ≥ 0.
        peak_n: the N ≥ 1 where the fitted curve peaks: max(1, sqrt((1-alpha)/beta)); ``inf`` when
            beta = 0 and alpha < 1 (the curve rises for ever), 1 when alpha ≥ 1 (it never rises).
        peak_x: the fitted throughput at ``peak_n`` (its limit when ``peak_n`` is ``inf``).
        r2: coefficient of determination of the fitted X against the data.
        n_points: number of points fitted.
    """

    lambda_: float
    alpha: float
    beta: float
    peak_n: float
    peak_x: float
    r2: float
    n_points: int

    def predict(self, n: npt.ArrayLike) -> FloatArray:
        """Throughput of the fitted curve at concurrency ``n``."""
        return usl_throughput(n, self.lambda_, self.alpha, self.beta)


def usl_throughput(n: npt.ArrayLike, lambda_: float, alpha: float, beta: float) -> FloatArray:
    """X(N) = lambda * N / (1 + alpha * (N - 1) + beta * N * (N - 1))."""
    values = np.asarray(n, dtype=np.float64)
    return np.asarray(lambda_ * values / (1 + alpha * (values - 1) + beta * values * (values - 1)),
                      dtype=np.float64)


def fit_usl(n: npt.ArrayLike, x: npt.ArrayLike) -> UslFit:
    """Fit the USL to throughput ``x`` measured at concurrency ``n``.

    Repeated values of N (replicates) are allowed; all points are fitted.

    Raises:
        ValueError: the inputs differ in length, are not finite, N < 1 or X ≤ 0 somewhere, fewer
            than 3 distinct values of N are given, or no USL curve with lambda > 0 fits.
    """
    n_values = np.asarray(n, dtype=np.float64).ravel()
    x_values = np.asarray(x, dtype=np.float64).ravel()
    if n_values.shape != x_values.shape:
        raise ValueError(f"n and x differ in length ({n_values.size} and {x_values.size})")
    if not (np.all(np.isfinite(n_values)) and np.all(np.isfinite(x_values))):
        raise ValueError("n and x must be finite")
    if np.any(n_values < 1):
        raise ValueError(f"N must be >= 1, got {n_values.min():g}")
    if np.any(x_values <= 0):
        raise ValueError(f"throughput must be positive, got {x_values.min():g}")
    distinct = np.unique(n_values).size
    if distinct < 3:
        raise ValueError(f"a USL fit needs at least 3 distinct values of N, got {distinct}")
    weight = x_values / n_values
    design = np.column_stack([np.ones_like(n_values), n_values - 1,
                              n_values * (n_values - 1)]) * weight[:, None]
    from scipy.optimize import nnls  # imported when used: SciPy's import is slow (and argparse)

    a, b, c = nnls(design, (n_values / x_values) * weight)[0]
    if not a > 0:
        raise ValueError("no USL curve with a positive single-client throughput fits the data")
    lambda_, alpha, beta = float(1 / a), float(b / a), float(c / a)
    peak_n, peak_x = _peak(lambda_, alpha, beta)
    fitted = usl_throughput(n_values, lambda_, alpha, beta)
    return UslFit(lambda_=lambda_, alpha=alpha, beta=beta, peak_n=peak_n, peak_x=peak_x,
                  r2=_r2(x_values, fitted), n_points=int(n_values.size))


def _peak(lambda_: float, alpha: float, beta: float) -> tuple[float, float]:
    if alpha >= 1:
        return 1.0, lambda_
    if beta == 0:
        return math.inf, (lambda_ / alpha if alpha > 0 else math.inf)
    peak_n = max(1.0, math.sqrt((1 - alpha) / beta))
    return peak_n, float(usl_throughput(peak_n, lambda_, alpha, beta))


def _r2(observed: FloatArray, fitted: FloatArray) -> float:
    residual = float(np.sum((observed - fitted) ** 2))
    total = float(np.sum((observed - observed.mean()) ** 2))
    if total > 0:
        return 1 - residual / total
    scale = float(np.sum(observed**2))
    return 1.0 if residual <= 1e-24 * scale else math.nan


# --------------------------------------------------------------------------------------------
# Curves of an experiment
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Curve:
    axis: str
    fixed: dict[str, object]
    points: pd.DataFrame
    n: pd.Series  # USL's N of every point


def _curve_keys(curve: pd.DataFrame, keys: Sequence[str] | None) -> list[str]:
    chosen = [k for k in POINT_KEYS if k != "seed"] if keys is None else list(keys)
    if "clients" not in curve.columns:
        raise ValueError("the curve has no 'clients' column")
    return [k for k in chosen if k in curve.columns]


def _curves(curve: pd.DataFrame, keys: Sequence[str] | None) -> Iterator[_Curve]:
    """Every curve of a table: points equal on every key but one axis, which varies.

    A table varying along both axes has curves along each. Points on no curve (their axes never
    vary) come out grouped by every key, as degenerate curves along ``clients``.
    """
    columns = _curve_keys(curve, keys)
    covered = pd.Series(False, index=curve.index)
    for axis in CURVE_AXES:
        if axis not in columns:
            continue
        fixed_keys = [k for k in columns if k != axis]
        for values, group in _groups(curve, fixed_keys):
            if group[axis].nunique() < 2:
                continue
            covered[group.index] = True
            yield _Curve(axis, dict(zip(fixed_keys, values, strict=True)), group,
                         _usl_n(group, axis))
    rest = curve[~covered]
    if not rest.empty:
        for values, group in _groups(rest, columns):
            yield _Curve("clients", dict(zip(columns, values, strict=True)), group,
                         _usl_n(group, "clients"))


def _groups(frame: pd.DataFrame,
            keys: list[str]) -> Iterator[tuple[tuple[object, ...], pd.DataFrame]]:
    if not keys:
        yield (), frame
        return
    yield from frame.groupby(keys, sort=True, dropna=False)


def _usl_n(points: pd.DataFrame, axis: str) -> pd.Series:
    if axis == "idle_clients":
        return (points["clients"] + points["idle_clients"]).astype(float)
    return points["clients"].astype(float)


def usl_table(curve: pd.DataFrame, *, keys: Sequence[str] | None = None) -> pd.DataFrame:
    """A USL fit of every TPS curve in an experiment's ``curve`` table.

    A curve is a group of points that agree on every point key (``keys``, default the point
    keys without ``seed``; only those present are used) except one axis that varies: ``clients``
    when the active clients vary, else ``idle_clients``. A table that varies along both has
    curves along both. Replicates (points equal on every key, e.g. different root seeds) are all
    fitted. Points on no curve (neither axis varies among their peers) make one-point rows with
    a note.

    USL's N is concurrency. On a ``clients`` curve N is the active clients; on an
    ``idle_clients`` curve N is the total connection count, ``clients + idle_clients``. Idle
    connections are not concurrency, so the fit of an idle curve is a summary metric only (one
    of the cases USL cannot express, see the module docstring): its alpha and beta say how fast
    TPS falls with connections, not why.

    Returns:
        One row per curve: the fixed point keys (the axis column is ``<NA>``), ``axis``,
        ``n_points``, ``lambda_tps``, ``alpha``, ``beta``, ``peak_n``, ``peak_tps``, ``r2`` and
        ``note`` (empty, or why the fit is NaN: fewer than 3 distinct N, non-positive TPS, ...).
    """
    rows = [{**found.fixed, "axis": found.axis, **_fit_row(found)}
            for found in _curves(curve, keys)]
    columns = [*_curve_keys(curve, keys), "axis", "n_points", *_FIT_COLUMNS, "note"]
    return _with_int_axes(pd.DataFrame(rows, columns=columns))


_FIT_COLUMNS = ("lambda_tps", "alpha", "beta", "peak_n", "peak_tps", "r2")


def _fit(found: _Curve) -> tuple[int, UslFit | None, str]:
    """Number of points with a TPS, the fit (``None`` if impossible) and why not."""
    valid = found.points["tps"].notna()
    try:
        return int(valid.sum()), fit_usl(found.n[valid], found.points.loc[valid, "tps"]), ""
    except ValueError as exc:
        return int(valid.sum()), None, str(exc)


def _fit_row(found: _Curve) -> dict[str, object]:
    n_points, fit, note = _fit(found)
    row: dict[str, object] = {"n_points": n_points, **dict.fromkeys(_FIT_COLUMNS, math.nan)}
    if fit is not None:
        row.update(lambda_tps=fit.lambda_, alpha=fit.alpha, beta=fit.beta, peak_n=fit.peak_n,
                   peak_tps=fit.peak_x, r2=fit.r2)
    row["note"] = note
    return row


def _with_int_axes(table: pd.DataFrame) -> pd.DataFrame:
    for axis in CURVE_AXES:
        if axis in table.columns:
            table[axis] = table[axis].astype("Int64")
    return table


# --------------------------------------------------------------------------------------------
# Beta by cache line
# --------------------------------------------------------------------------------------------


def line_transfers(lines: pd.DataFrame) -> pd.Series:
    """Coherence transfers of each row of a per-line table (see :data:`LINE_TRANSFER_COLUMNS`).

    Missing columns count as zero.
    """
    total = pd.Series(0.0, index=lines.index)
    for column in LINE_TRANSFER_COLUMNS:
        if column in lines.columns:
            total = total + lines[column].fillna(0).astype(float)
    return total


def usl_beta_by_line(curve: pd.DataFrame, lines: pd.DataFrame, *,
                     keys: Sequence[str] | None = None) -> pd.DataFrame:
    """The beta of every curve (as in :func:`usl_table`) broken down by cache line.

    For each point, a line's transfers per transaction are its coherence transfers
    (:data:`LINE_TRANSFER_COLUMNS`) divided by the point's ``transactions``. A line missing from
    a point's table had no accesses there (0). ``slope_per_txn`` is the least-squares slope of
    that quantity against the curve's N (per transaction, per unit of N). A line's
    ``beta_share`` is its slope over the sum of the curve's positive slopes (0 when its slope is
    not positive; NaN for every line when no slope is), and its ``beta`` is the share times the
    curve's fitted beta (NaN when the curve has no USL fit), so the lines' ``beta`` sum to the
    curve's.

    Caveats: the per-line counts of a simulated point cover the measured window (the warm-up
    is excluded) and include the accesses of mostly-idle clients, while ``transactions`` counts
    the active clients' transactions completed in that window. The machine records
    which fields a line's accesses touched but not counts per field, so ``fields_read`` and
    ``fields_written`` (the union over the curve's points) name the fields behind a line's share
    without splitting it further.

    Args:
        curve: one row per point, with the point keys, ``tps`` and ``transactions``.
        lines: one row per line and point, with the point keys, ``label`` and the transfer
            columns; rows join to points on the point keys both tables have (``seed`` too).
        keys: the keys that define curves (see :func:`usl_table`).

    Returns:
        One row per curve and line label: the curve's fixed keys, ``axis``, ``label``,
        ``fields_read``, ``fields_written``, ``slope_per_txn``, ``beta_share``, ``beta``; within
        a curve, largest share first.
    """
    if "transactions" not in curve.columns:
        raise ValueError("the curve has no 'transactions' column")
    if "label" not in lines.columns:
        raise ValueError("the lines table has no 'label' column")
    join = [k for k in POINT_KEYS if k in curve.columns and k in lines.columns]
    per_line = lines[[*join, "label"]].assign(
        transfers=line_transfers(lines),
        fields_read=_field_column(lines, "fields_read"),
        fields_written=_field_column(lines, "fields_written"))
    rows: list[dict[str, object]] = []
    for found in _curves(curve, keys):
        fit = _fit(found)[1]
        beta = fit.beta if fit is not None else math.nan
        rows.extend({**found.fixed, "axis": found.axis, **line}
                    for line in _line_slopes(found, per_line, join, beta))
    columns = [*_curve_keys(curve, keys), "axis", "label", "fields_read", "fields_written",
               "slope_per_txn", "beta_share", "beta"]
    return _with_int_axes(pd.DataFrame(rows, columns=columns))


def _field_column(lines: pd.DataFrame, column: str) -> pd.Series:
    if column not in lines.columns:
        return pd.Series("", index=lines.index)
    return lines[column].fillna("").astype(str)


def _line_slopes(found: _Curve, per_line: pd.DataFrame, join: list[str],
                 beta: float) -> list[dict[str, object]]:
    """One row per line label of a curve: its slope, share of beta and part of beta."""
    points = found.points[[*join, "transactions"]].assign(n=found.n)
    points = points[points["transactions"] > 0].reset_index(drop=True)
    if points["n"].nunique() < 2:
        return []
    points["point"] = points.index
    merged = points.merge(per_line, on=join, how="inner")
    if merged.empty:
        return []
    merged["rate"] = merged["transfers"] / merged["transactions"]
    rates = merged.pivot_table(index="label", columns="point", values="rate", aggfunc="sum",
                               fill_value=0.0, sort=True)
    rates = rates.reindex(columns=points["point"], fill_value=0.0)
    slopes = _slopes(points["n"].to_numpy(dtype=float), rates.to_numpy(dtype=float))
    positive = np.where(slopes > 0, slopes, 0.0)
    total = float(positive.sum())
    shares = positive / total if total > 0 else np.full_like(slopes, math.nan)
    fields = merged.groupby("label").agg(fields_read=("fields_read", _union),
                                         fields_written=("fields_written", _union))
    order = sorted(range(len(slopes)),
                   key=lambda i: (-np.nan_to_num(shares[i], nan=-1.0), -slopes[i]))
    return [
        {"label": rates.index[i], "fields_read": fields.at[rates.index[i], "fields_read"],
         "fields_written": fields.at[rates.index[i], "fields_written"],
         "slope_per_txn": float(slopes[i]), "beta_share": float(shares[i]),
         "beta": float(shares[i] * beta)}
        for i in order
    ]


def _slopes(n: FloatArray, rates: FloatArray) -> FloatArray:
    """Least-squares slope of every row of ``rates`` against ``n``."""
    centred = n - n.mean()
    deviations = rates - rates.mean(axis=1, keepdims=True)  # a constant row gets exactly 0
    return np.asarray(deviations @ centred / float(centred @ centred), dtype=np.float64)


def _union(values: pd.Series) -> str:
    seen: dict[str, None] = {}
    for text in values:
        for name in str(text).split(","):
            if name.strip():
                seen[name.strip()] = None
    return ", ".join(seen)
