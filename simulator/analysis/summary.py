"""A curve's seed replications summarised per point: mean, spread and 95 % interval per column.

An experiment with several root seeds runs every point once per seed, one ``curve.csv`` row each.
:func:`curve_summary` gives one row per point (the :data:`~simulator.analysis.columns.SUMMARY_KEYS`
without the seed, in the curve's order) with ``n_seeds`` (successful seeds) and ``n_failed``
(seeds with an error, left out), and for every summarised column ``<column>_mean``,
``<column>_sd``, ``<column>_low`` and ``<column>_high``: the mean over the successful seeds that
have a value, their sample standard deviation and the Student-t interval of the mean
(:func:`~simulator.analysis.intervals.mean_interval`; ``nan`` below two values).

The summarised columns are every numeric, non-boolean column of the curve except the point keys
and :data:`~simulator.analysis.columns.NOT_SUMMARISED` (the root seed, the run's settings, the
measurement, the error and the trust flag): the results, rates, latencies and per-transaction
counts, a model's own numeric columns included. ``window_converged`` becomes whether every
successful seed's window converged, ``max_duration_reached`` whether any seed's window stopped at
its cap; ``measured_tps``, the same for every seed, is carried.
"""

from __future__ import annotations

import math

import pandas as pd

from simulator.analysis.columns import (
    MAX_DURATION_REACHED,
    NOT_SUMMARISED,
    POINT_KEYS,
    SUMMARY_KEYS,
    SUMMARY_STATISTICS,
    WINDOW_CONVERGED,
)
from simulator.analysis.intervals import mean_interval

__all__ = ["curve_summary", "summarised_columns"]


def _failed(curve: pd.DataFrame) -> pd.Series:
    """Which rows of a curve are failed points: an ``error`` neither missing nor empty."""
    if "error" not in curve.columns:
        return pd.Series(False, index=curve.index)
    errors = curve["error"]
    return errors.notna() & (errors.astype(str) != "")


def summarised_columns(curve: pd.DataFrame) -> list[str]:
    """The columns of ``curve`` that get statistics, in the curve's order."""
    return [str(column) for column in curve.columns
            if column not in POINT_KEYS and column not in NOT_SUMMARISED
            and pd.api.types.is_numeric_dtype(curve[column])
            and not pd.api.types.is_bool_dtype(curve[column])]


def curve_summary(curve: pd.DataFrame) -> pd.DataFrame:
    """One row per point of ``curve``: its keys, ``n_seeds``, ``n_failed`` and the statistics.

    Columns: the summary keys ``curve`` has, ``n_seeds``, ``n_failed``, ``window_converged``,
    ``max_duration_reached`` and ``measured_tps`` when ``curve`` has them, then per summarised
    column (in the curve's order) ``_mean``, ``_sd``, ``_low``, ``_high``. A point whose seeds
    all failed has ``n_seeds`` 0 and empty statistics.
    """
    keys = [key for key in SUMMARY_KEYS if key in curve.columns]
    columns = summarised_columns(curve)
    head = [*keys, "n_seeds", "n_failed",
            *(name for name in (WINDOW_CONVERGED, MAX_DURATION_REACHED, "measured_tps")
              if name in curve.columns)]
    names = [*head, *(f"{column}_{statistic}" for column in columns
                      for statistic in SUMMARY_STATISTICS)]
    if curve.empty:
        return pd.DataFrame(columns=names)
    curve = curve.reset_index(drop=True)
    failed = _failed(curve)
    groups = (curve.groupby(keys, sort=False, dropna=False) if keys
              else [((), curve)])
    rows = []
    for values, group in groups:
        ok = group[~failed.loc[group.index]]
        row: dict[str, object] = dict(zip(keys, values if isinstance(values, tuple)
                                          else (values,), strict=True))
        row["n_seeds"] = len(ok)
        row["n_failed"] = len(group) - len(ok)
        if WINDOW_CONVERGED in curve.columns:
            row[WINDOW_CONVERGED] = (bool((ok[WINDOW_CONVERGED].astype(str) == "True").all())
                                     if len(ok) else None)
        if MAX_DURATION_REACHED in curve.columns:
            row[MAX_DURATION_REACHED] = (bool((ok[MAX_DURATION_REACHED].astype(str)
                                               == "True").any()) if len(ok) else None)
        if "measured_tps" in curve.columns:
            measured = group["measured_tps"].dropna()
            row["measured_tps"] = float(measured.iloc[0]) if len(measured) else math.nan
        for column in columns:
            interval = mean_interval([float(v) for v in pd.to_numeric(ok[column])])
            row.update({f"{column}_mean": interval.mean, f"{column}_sd": interval.sd,
                        f"{column}_low": interval.low, f"{column}_high": interval.high})
        rows.append(row)
    return pd.DataFrame(rows, columns=names)
