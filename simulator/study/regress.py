"""Baselines: a stored experiment's curve, its tolerances, and what moved on a re-run.

A baseline is any output directory of ``snapsim run`` (or a committed copy of its
``experiment.yaml`` and ``curve.csv``), plus an optional ``tolerances.yaml``::

    tps: {rel: 0.02}              # |new / old - 1| <= 2 %
    latency_p50_us: {rel: 0.05}
    hot_line_wait_ns: {abs: 50}   # |new - old| <= 50

``snapsim regress`` re-runs the experiment as stored in ``experiment.yaml`` (the input, not the
resolved configuration), so a change of the code *or* of the global cost model shows up. Every
point of the baseline must be present again and every compared column within its tolerance
(:func:`load_tolerances`); :func:`compare` lists what moved.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
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


def load_tolerances(directory: Path) -> dict[str, Tolerance]:
    """``tolerances.yaml`` of a baseline, or :data:`DEFAULT_TOLERANCES`."""
    path = directory / "tolerances.yaml"
    raw: Mapping[str, object] = DEFAULT_TOLERANCES
    source = str(path)
    if path.exists():
        raw = expect_mapping("", read_yaml(path) or {})
    tolerances = {}
    try:
        for column, value in raw.items():
            entry = expect_mapping(str(column), value)
            check_keys(entry, str(column), ("rel", "abs"), optional=("rel", "abs"))
            bounds = {k: expect_number(f"{column}.{k}", v) for k, v in entry.items()}
            if any(bound < 0 for bound in bounds.values()):
                raise ConfigError(str(column), "tolerances must not be negative")
            tolerances[str(column)] = Tolerance(**bounds)
    except ConfigError as exc:
        raise ConfigError(exc.key, exc.message, source) from None
    return tolerances


def compare(baseline: pd.DataFrame, new: pd.DataFrame,
            tolerances: Mapping[str, Tolerance]) -> pd.DataFrame:
    """Rows of what moved: point, column, baseline value, new value, change, tolerance."""
    keys = [k for k in MATCH_KEYS if k in baseline.columns and k in new.columns]
    merged = baseline.merge(new, on=keys, how="outer", suffixes=("_old", "_new"),
                            indicator=True)
    moved = []
    for _, row in merged.iterrows():
        point = " ".join(f"{k}={row[k]}" for k in ("algorithm", "clients", "idle_clients"))
        if row["_merge"] != "both":
            where = "baseline" if row["_merge"] == "left_only" else "new run"
            moved.append({"point": point, "column": "(point)", "baseline": "",
                          "new": "", "change": f"only in the {where}", "tolerance": ""})
            continue
        for column, tolerance in tolerances.items():
            if f"{column}_old" not in merged.columns or f"{column}_new" not in merged.columns:
                continue
            old, value = float(row[f"{column}_old"]), float(row[f"{column}_new"])
            if not tolerance.allows(old, value):
                change = f"{value / old - 1:+.2%}" if old else f"{value - old:+g}"
                moved.append({"point": point, "column": column, "baseline": f"{old:,.6g}",
                              "new": f"{value:,.6g}", "change": change,
                              "tolerance": tolerance.describe()})
    return pd.DataFrame(moved, columns=["point", "column", "baseline", "new", "change",
                                        "tolerance"])
