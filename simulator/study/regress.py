"""``snapsim regress BASELINE_DIR``: re-run a stored experiment and compare its curve.

A baseline is any output directory of ``snapsim run`` (or a committed copy of its
``experiment.yaml`` and ``curve.csv``), plus an optional ``tolerances.yaml``::

    tps: {rel: 0.02}              # |new / old - 1| <= 2 %
    latency_p50_us: {rel: 0.05}
    hot_line_wait_ns: {abs: 50}   # |new - old| <= 50

The experiment is re-run as stored in ``experiment.yaml`` (the input, not the resolved
configuration), so a change of the code *or* of the global cost model shows up; ``--set``
applies overrides as in ``snapsim run``. Every point of the baseline must be present again and
every compared column within its tolerance, else the command prints a table of what moved and
exits 1. ``--update`` writes the new curve (and the overridden experiment) as the baseline.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from simulator.analysis.tables import format_table
from simulator.config.values import check_keys, expect_mapping, expect_number
from simulator.config.yaml_io import read_yaml
from simulator.errors import ConfigError
from simulator.study.experiment import run
from simulator.study.experiment_file import (
    apply_overrides,
    dump_yaml,
    experiment_from_document,
    load_document,
)
from simulator.study.store import atomic_path

DEFAULT_TOLERANCES: dict[str, dict[str, float]] = {
    "tps": {"rel": 0.02},
    "latency_mean_us": {"rel": 0.05},
    "latency_p50_us": {"rel": 0.05},
}
MATCH_KEYS = ["machine", "algorithm", "workload", "clients", "idle_clients", "idle_kind",
              "root_seed"]
EXIT_OK, EXIT_MOVED = 0, 1


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


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``snapsim regress``."""
    parser.add_argument("baseline", metavar="BASELINE_DIR",
                        help="directory with experiment.yaml and curve.csv (a run's output)")
    parser.add_argument("--update", action="store_true",
                        help="write the new curve as the baseline instead of comparing")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="override an experiment key for the re-run")
    parser.add_argument("--jobs", type=int, default=1, metavar="N", help="local worker processes")


def main(args: argparse.Namespace) -> int:
    """``snapsim regress``."""
    directory = Path(args.baseline)
    experiment_path = directory / "experiment.yaml"
    curve_path = directory / "curve.csv"
    if not experiment_path.exists():
        raise ConfigError("BASELINE_DIR", f"{experiment_path} does not exist "
                          "(a baseline is the output directory of snapsim run)")
    tolerances = load_tolerances(directory)
    document, source = load_document(str(experiment_path))
    document = apply_overrides(document, args.set)
    experiment = experiment_from_document(document, source,
                                          default_name=directory.name)
    if not args.update and not curve_path.exists():
        raise ConfigError("BASELINE_DIR", f"{curve_path} does not exist; create it with --update")
    result = run(experiment, jobs=args.jobs)
    if args.update:
        with atomic_path(curve_path) as tmp:
            result.curve.to_csv(tmp, index=False)
        if args.set:
            with atomic_path(experiment_path) as tmp:
                tmp.write_text(dump_yaml(document), encoding="utf-8")
        print(f"updated the baseline {directory}/ ({len(result.curve)} points)")
        return EXIT_OK
    baseline = pd.read_csv(curve_path)
    moved = compare(baseline, result.curve, tolerances)
    if moved.empty:
        print(f"ok: {len(baseline)} points of {directory}/ within tolerance "
              f"({', '.join(f'{c} {t.describe()}' for c, t in tolerances.items())})")
        return EXIT_OK
    print(f"REGRESSION: {len(moved)} value(s) of {directory}/ moved beyond tolerance",
          file=sys.stderr)
    for line in format_table(list(moved.columns), moved.astype(str).values.tolist()):
        print(line)
    return EXIT_MOVED
