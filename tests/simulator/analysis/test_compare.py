"""Matching points and lines of two runs (``simulator.analysis.compare``) on small frames."""

from __future__ import annotations

import pandas as pd
import pytest

from simulator.analysis.compare import (
    NoCommonPointError,
    compare_curves,
    compare_lines,
    match_keys,
)


def curve(machine: str, algorithms: list[str], tps: list[float]) -> pd.DataFrame:
    return pd.DataFrame({"machine": machine, "algorithm": algorithms, "workload": "w",
                         "clients": 1, "idle_clients": [0, 10][:len(algorithms)],
                         "idle_kind": "idle", "seed": range(len(algorithms)), "root_seed": 0,
                         "tps": tps, "transactions": 10, "error": ""})


def test_shared_categorical_keys_match_and_disjoint_ones_are_compared() -> None:
    a = curve("m1", ["x", "x"], [100.0, 50.0])
    b = curve("m2", ["x", "x"], [150.0, 25.0])
    keys, differ = match_keys(a, b)
    assert keys == ["clients", "idle_clients", "root_seed", "algorithm", "workload", "idle_kind"]
    assert differ == ["machine"]
    ratio = compare_curves(a, b)
    assert ratio["ratio"].tolist() == [1.5, 0.5]
    assert ratio["change_pct"].tolist() == [50.0, -50.0]
    assert ratio["machine_a"].tolist() == ["m1", "m1"]


def test_failed_points_and_missing_grids_are_not_compared() -> None:
    a = curve("m", ["x", "x"], [100.0, 50.0])
    b = curve("m", ["x", "x"], [150.0, float("nan")])
    assert len(compare_curves(a, b)) == 1
    b["clients"] = 2
    with pytest.raises(NoCommonPointError):
        compare_curves(a, b)


def test_lines_are_per_transaction_and_a_missing_line_counts_zero() -> None:
    a = curve("m", ["x"], [100.0])
    b = curve("m", ["y"], [100.0])
    keys = ["machine", "algorithm", "workload", "clients", "idle_clients", "idle_kind", "seed"]
    lines_a = a[keys].assign(label=["L1"], remote_hitm=[20])
    lines_b = b[keys].assign(label=["L2"], remote_hitm=[5])
    changes = compare_lines(a, lines_a, b, lines_b)
    by_label = changes.set_index("label")
    values = ["per_txn_a", "per_txn_b", "change"]
    assert list(by_label.loc["L1", values]) == [2.0, 0.0, -2.0]
    assert list(by_label.loc["L2", values]) == [0.0, 0.5, 0.5]
    assert by_label.loc["L2", "algorithm_a"] == "x"
    assert by_label.loc["L1", "algorithm_b"] == "y"


def test_a_run_without_line_tables_still_compares() -> None:
    a = curve("m", ["x"], [100.0])
    b = curve("m", ["y"], [100.0])
    keys = ["machine", "algorithm", "workload", "clients", "idle_clients", "idle_kind", "seed"]
    lines_a = a[keys].assign(label=["L1"], remote_hitm=[20])
    changes = compare_lines(a, lines_a, b, pd.DataFrame(columns=["label"]))
    assert list(changes["per_txn_a"]) == [2.0]
    assert list(changes["per_txn_b"]) == [0.0]
