"""Baselines: a stored experiment's curve, its tolerances, and what moved on a re-run.

A baseline is any output directory of ``snapsim run`` (or a committed copy of its
``experiment.yaml`` and ``curve.csv``), plus an optional ``tolerances.yaml``::

    tps: {rel: 0.02}              # |new / old - 1| <= 2 %
    latency_p50_us: {rel: 0.05}
    hot_line_wait_ns: {abs: 50}   # |new - old| <= 50

The compared columns are :data:`DEFAULT_TOLERANCES` (``tps`` 2 %, ``latency_mean_us`` and
``latency_p50_us`` 5 %) plus every column ``tolerances.yaml`` names: an entry of the file adds a
column or replaces the default tolerance of that column; the other defaults still apply. A key of
the file must be a column of the baseline's ``curve.csv`` or a default column (anything else is
bad input, most likely a misspelling), and it cannot be a column that identifies the point.

``snapsim regress`` re-runs the experiment as stored in ``experiment.yaml`` (the input, not the
resolved configuration), so a change of the code *or* of the global cost model shows up. Every
point of the baseline must be present again and every compared column within its tolerance;
:func:`compare` lists what moved. A compared column missing from the baseline or from the new run
is a failure too (it cannot be checked). A ``curve.csv`` that cannot be read as a baseline (not a
CSV, no points, a point's identity or a compared value that is not a number, a point twice) is bad
input (:func:`read_baseline`).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from simulator.config.values import check_keys, expect_mapping, expect_number
from simulator.config.yaml_io import read_yaml
from simulator.errors import ConfigError

DEFAULT_TOLERANCES: dict[str, dict[str, float]] = {
    "tps": {"rel": 0.02},
    "latency_mean_us": {"rel": 0.05},
    "latency_p50_us": {"rel": 0.05},
}
MATCH_KEYS = ["machine", "algorithm", "workload", "clients", "idle_clients", "idle_kind",
              "root_seed"]
_INTEGER_KEYS = ("clients", "idle_clients", "root_seed")
_NOT_COMPARABLE = (*MATCH_KEYS, "seed", "error")


@dataclass(frozen=True, slots=True)
class Tolerance:
    """Allowed change of one column: relative and/or absolute (either suffices)."""

    rel: float | None = None
    abs: float | None = None

    def allows(self, old: float, new: float) -> bool:
        """Whether ``new`` is within tolerance of ``old`` (NaN equals only NaN)."""
        if math.isnan(old) or math.isnan(new):
            return math.isnan(old) and math.isnan(new)
        if self.abs is not None and abs(new - old) <= self.abs:
            return True
        if self.rel is not None:
            return abs(new - old) <= self.rel * abs(old)
        return new == old

    def describe(self) -> str:
        """``2 %``, ``±50`` or both."""
        parts = []
        if self.rel is not None:
            parts.append(f"{self.rel:.1%}")
        if self.abs is not None:
            parts.append(f"±{self.abs:g}")
        return " or ".join(parts) or "exact"


def load_tolerances(directory: Path,
                    columns: Collection[str] | None = None) -> dict[str, Tolerance]:
    """:data:`DEFAULT_TOLERANCES` with ``tolerances.yaml`` of a baseline on top (if it exists).

    ``columns``: the baseline's columns; a key of the file must be one of them or a default.

    Raises:
        ConfigError: malformed file, a bad bound, or a key that names no comparable column.
    """
    path = directory / "tolerances.yaml"
    source = str(path)
    raw: dict[str, object] = dict(DEFAULT_TOLERANCES)
    try:
        if path.exists():
            given = expect_mapping("", read_yaml(path) or {})
            for column in given:
                _check_column(str(column), columns)
            raw.update({str(column): value for column, value in given.items()})
        return {column: _tolerance(column, value) for column, value in raw.items()}
    except ConfigError as exc:
        raise ConfigError(exc.key, exc.message, source) from None


def _check_column(column: str, columns: Collection[str] | None) -> None:
    if column in _NOT_COMPARABLE:
        raise ConfigError(column, "identifies a point and cannot have a tolerance")
    if columns is not None and column not in columns and column not in DEFAULT_TOLERANCES:
        numeric = [c for c in columns if c not in _NOT_COMPARABLE]
        raise ConfigError(column, "unknown column: not in the baseline's curve.csv "
                          f"(columns: {', '.join(numeric)})")


def _tolerance(column: str, value: object) -> Tolerance:
    entry = expect_mapping(column, value)
    check_keys(entry, column, ("rel", "abs"), optional=("rel", "abs"))
    if not entry:
        raise ConfigError(column, "give rel, abs or both")
    bounds = {k: expect_number(f"{column}.{k}", v) for k, v in entry.items()}
    for key, bound in bounds.items():
        if not (bound >= 0 and math.isfinite(bound)):
            raise ConfigError(f"{column}.{key}", f"must be a finite number >= 0, got {bound}")
    return Tolerance(**bounds)


def load_baseline(directory: Path) -> tuple[pd.DataFrame, dict[str, Tolerance]]:
    """A baseline's ``curve.csv`` and its tolerances, checked against each other.

    The compared columns of the curve are numbers (a blank cell, a failed point, is NaN).

    Raises:
        ConfigError: see :func:`read_baseline` and :func:`load_tolerances`, or a compared value
            that is not a number (naming the row and column).
    """
    path = directory / "curve.csv"
    curve = read_baseline(path)
    tolerances = load_tolerances(directory, list(curve.columns))
    for column in tolerances:
        if column in curve.columns:
            curve[column] = _numbers(curve, column, str(path), integers=False)
    return curve, tolerances


def read_baseline(path: Path) -> pd.DataFrame:
    """A baseline's ``curve.csv``, checked: every point identified, and only once.

    Raises:
        ConfigError: (naming ``path``) unreadable, not a CSV, no points, a missing or non-integer
            identifying column, or a point given twice.
    """
    source = str(path)
    try:
        curve = pd.read_csv(path)
    except FileNotFoundError:
        raise ConfigError("", "no such file", source) from None
    except pd.errors.EmptyDataError:
        raise ConfigError("", "is empty (a baseline is the curve.csv of a run)", source) from None
    except (OSError, ValueError, UnicodeDecodeError) as exc:
        raise ConfigError("", f"cannot read it as CSV: {_first_line(exc)}", source) from None
    if curve.empty:
        raise ConfigError("", "has no points", source)
    missing = [key for key in MATCH_KEYS if key not in curve.columns]
    if missing:
        raise ConfigError("", f"not a curve: no column {', '.join(missing)}", source)
    for column in _INTEGER_KEYS:
        curve[column] = _numbers(curve, column, source, integers=True).astype("int64")
    duplicated = curve.duplicated(MATCH_KEYS)
    if duplicated.any():
        row = int(duplicated.to_numpy().nonzero()[0][0])
        raise ConfigError("", f"row {row + 2}: the point of row "
                          f"{_first_equal(curve, row) + 2} is given twice", source)
    return curve


def _numbers(curve: pd.DataFrame, column: str, source: str, *, integers: bool) -> pd.Series:
    values = curve[column]
    numbers = pd.to_numeric(values, errors="coerce")
    bad = numbers.isna() if integers else numbers.isna() & values.notna()
    if integers:
        bad |= numbers != numbers.round()
    if bad.any():
        row = int(bad.to_numpy().nonzero()[0][0])
        kind = "an integer" if integers else "a number"
        raise ConfigError("", f"row {row + 2}, column {column}: expected {kind}, got "
                          f"{values.iloc[row]!r}", source)
    return numbers


def _first_equal(curve: pd.DataFrame, row: int) -> int:
    point = curve.iloc[row][MATCH_KEYS]
    same = (curve[MATCH_KEYS] == point).all(axis=1)
    return int(same.to_numpy().nonzero()[0][0])


def _first_line(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def compare(baseline: pd.DataFrame, new: pd.DataFrame,
            tolerances: Mapping[str, Tolerance]) -> pd.DataFrame:
    """Rows of what moved: point, column, baseline value, new value, change, tolerance.

    A compared column that one side lacks is one row (``missing in the baseline`` or ``missing
    in the new run``); a point that one side lacks is one row per point.
    """
    keys = [k for k in MATCH_KEYS if k in baseline.columns and k in new.columns]
    compared = {column: tolerance for column, tolerance in tolerances.items()
                if column in baseline.columns and column in new.columns}
    kept = keys + [column for column in compared if column not in keys]
    merged = baseline[kept].merge(new[kept], on=keys, how="outer", suffixes=("_old", "_new"),
                                  indicator=True)
    moved = []
    for column, tolerance in tolerances.items():
        absent = [where for where, table in (("baseline", baseline), ("new run", new))
                  if column not in table.columns]
        if absent:
            moved.append({"point": "(every point)", "column": column, "baseline": "", "new": "",
                          "change": f"missing in the {' and the '.join(absent)}",
                          "tolerance": tolerance.describe()})
    for _, row in merged.iterrows():
        point = " ".join(f"{k}={row[k]}" for k in ("algorithm", "clients", "idle_clients"))
        if row["_merge"] != "both":
            where = "baseline" if row["_merge"] == "left_only" else "new run"
            moved.append({"point": point, "column": "(point)", "baseline": "",
                          "new": "", "change": f"only in the {where}", "tolerance": ""})
            continue
        for column, tolerance in compared.items():
            old, value = float(row[f"{column}_old"]), float(row[f"{column}_new"])
            if not tolerance.allows(old, value):
                change = f"{value / old - 1:+.2%}" if old else f"{value - old:+g}"
                moved.append({"point": point, "column": column, "baseline": f"{old:,.6g}",
                              "new": f"{value:,.6g}", "change": change,
                              "tolerance": tolerance.describe()})
    return pd.DataFrame(moved, columns=["point", "column", "baseline", "new", "change",
                                        "tolerance"])
