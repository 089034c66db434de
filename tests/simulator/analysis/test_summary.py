"""``curve_summary``: a synthetic curve's seeds summarised per point, against hand values."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from simulator.analysis.columns import (
    COLUMNS,
    NOT_SUMMARISED,
    POINT_KEYS,
    SUMMARY_KEYS,
    SUMMARY_STATISTICS,
    describe,
)
from simulator.analysis.intervals import CONFIDENCE
from simulator.analysis.summary import curve_summary, summarised_columns
from simulator.study.workload_model import model_columns, workload_model

T_2 = 4.302652729749  # Student's t, 97.5 % quantile, 2 degrees of freedom (tables)
T_1 = 12.70620473617  # the same, 1 degree of freedom


def row(algorithm: str, idle: int, root: int, tps: float, **extra: object) -> dict[str, object]:
    """A curve row of machine m, workload w, 1 client, the error column empty."""
    return {"machine": "m", "algorithm": algorithm, "workload": "w", "clients": 1,
            "idle_clients": idle, "idle_kind": "idle", "seed": 1000 * root + idle,
            "root_seed": root, "tps": tps, "latency_mean_us": 1e6 / tps,
            "remote_hitm": tps / 100, "tps_select": tps / 2, "duration_ms": 5.0,
            "warmup_ms": 2.0, "window_converged": True, "work_scale": 1.0, "error": "",
            **extra}


def make_curve() -> pd.DataFrame:
    """Point a (pre, 0 idle): 3 seeds of TPS 100, 110, 130; point b (pre, 100 idle): one seed
    of TPS 50 with no latency, one failed seed; point c (post, 0 idle): one seed."""
    return pd.DataFrame([
        row("pre", 0, 0, 100.0), row("pre", 0, 1, 110.0), row("pre", 0, 2, 130.0),
        row("pre", 100, 0, 50.0, latency_mean_us=math.nan, window_converged=False),
        row("pre", 100, 1, math.nan, error="RuntimeError: no transaction"),
        row("post", 0, 0, 200.0),
    ])


def test_one_row_per_point_in_the_curve_s_order_keyed_without_the_seed() -> None:
    summary = curve_summary(make_curve())
    assert list(summary.columns[:9]) == [*SUMMARY_KEYS, "n_seeds", "n_failed",
                                        "window_converged"]
    assert not {"seed", "root_seed"} & set(summary.columns)
    assert list(zip(summary["algorithm"], summary["idle_clients"], strict=True)) == [
        ("pre", 0), ("pre", 100), ("post", 0)]
    assert list(summary["n_seeds"]) == [3, 1, 1]
    assert list(summary["n_failed"]) == [0, 1, 0]


def test_three_seeds_give_the_mean_sd_and_t_interval_by_hand() -> None:
    first = curve_summary(make_curve()).iloc[0]
    # 100, 110, 130: mean 340/3, squared deviations 1600/9 + 100/9 + 2500/9 over 2 degrees
    mean = 340 / 3
    sd = math.sqrt((1600 + 100 + 2500) / 9 / 2)
    half = T_2 * sd / math.sqrt(3)
    assert first["tps_mean"] == pytest.approx(mean, rel=1e-12)
    assert first["tps_sd"] == pytest.approx(sd, rel=1e-12)
    assert first["tps_low"] == pytest.approx(mean - half, rel=1e-9)
    assert first["tps_high"] == pytest.approx(mean + half, rel=1e-9)
    assert first["remote_hitm_mean"] == pytest.approx(mean / 100, rel=1e-12)
    assert first["tps_select_high"] == pytest.approx((mean + half) / 2, rel=1e-9)
    latencies = 1e6 / np.array([100.0, 110.0, 130.0])
    assert first["latency_mean_us_mean"] == pytest.approx(latencies.mean(), rel=1e-12)
    assert first["latency_mean_us_sd"] == pytest.approx(latencies.std(ddof=1), rel=1e-12)


def test_two_seeds_use_t_with_one_degree_of_freedom() -> None:
    curve = make_curve().iloc[:2]  # TPS 100 and 110
    first = curve_summary(curve).iloc[0]
    half = T_1 * math.sqrt(50) / math.sqrt(2)
    assert (first["tps_low"], first["tps_high"]) == pytest.approx((105 - half, 105 + half),
                                                                  rel=1e-9)


def test_failed_seeds_are_counted_and_left_out_and_missing_values_dropped() -> None:
    curve = make_curve()
    curve.loc[4, "tps"] = 1e9  # a failed seed's values count for nothing, whatever they are
    second = curve_summary(curve).iloc[1]
    assert (second["n_seeds"], second["n_failed"]) == (1, 1)
    assert second["tps_mean"] == 50.0
    assert math.isnan(second["tps_sd"])
    assert math.isnan(second["tps_low"])
    assert math.isnan(second["tps_high"])
    assert math.isnan(second["latency_mean_us_mean"])  # its one successful seed has none
    assert not second["window_converged"]


def test_one_seed_has_its_value_as_mean_and_no_interval() -> None:
    last = curve_summary(make_curve()).iloc[2]
    assert (last["n_seeds"], last["tps_mean"]) == (1, 200.0)
    assert all(math.isnan(last[f"tps_{s}"]) for s in ("sd", "low", "high"))
    assert last["window_converged"]


def test_a_point_whose_seeds_all_failed_has_empty_statistics() -> None:
    curve = make_curve().iloc[[4]]
    summary = curve_summary(curve)
    assert len(summary) == 1
    assert (summary.iloc[0]["n_seeds"], summary.iloc[0]["n_failed"]) == (0, 1)
    assert summary.filter(like="tps_").isna().all(axis=None)
    assert summary.iloc[0]["window_converged"] is None


def test_an_empty_curve_gives_an_empty_summary() -> None:
    summary = curve_summary(make_curve().iloc[0:0])
    assert summary.empty
    assert {"n_seeds", "n_failed", "tps_mean"} <= set(summary.columns)


def test_the_summarised_columns_are_the_numeric_results() -> None:
    curve = make_curve()
    curve["error"] = math.nan  # as read back from a CSV of successful points: a float column
    assert summarised_columns(curve) == ["tps", "latency_mean_us", "remote_hitm", "tps_select"]
    summary = curve_summary(curve)
    assert [c for c in summary.columns if c.startswith("tps_")][:4] == [
        "tps_mean", "tps_sd", "tps_low", "tps_high"]
    for left_out in ("duration_ms", "warmup_ms", "work_scale", "error", "root_seed", "seed"):
        assert not [c for c in summary.columns if c.startswith(f"{left_out}_")], left_out


def test_measured_tps_is_carried_and_the_curve_left_alone() -> None:
    curve = make_curve().assign(measured_tps=[120.0, 120.0, 120.0, 40.0, 40.0, math.nan])
    before = curve.copy()
    summary = curve_summary(curve)
    pd.testing.assert_frame_equal(curve, before)
    assert list(summary["measured_tps"].fillna(-1)) == [120.0, 40.0, -1]
    assert "measured_tps_mean" not in summary.columns


def test_every_summary_column_is_documented() -> None:
    columns = model_columns(workload_model())  # the generic columns and the shipped model's
    table = columns.tables["curve_summary.csv"]
    curve_columns = columns.tables["curve.csv"]
    for key in SUMMARY_KEYS:
        assert table[key] == curve_columns[key] == COLUMNS["curve.csv"][key]
    for column, (unit, meaning) in curve_columns.items():
        if column in POINT_KEYS or column in NOT_SUMMARISED:
            continue
        for statistic in SUMMARY_STATISTICS:
            assert table[f"{column}_{statistic}"][0] == unit
            assert table[f"{column}_{statistic}"][1].endswith(meaning)
    for column in curve_summary(make_curve()).columns:
        assert all(columns.describe("curve_summary.csv", column)), column
    assert columns.describe("curve_summary.csv", "latency_mean_us_tpcb_low") == (
        "us", f"{SUMMARY_STATISTICS['low']} of: mean latency of the mix's script tpcb")
    assert columns.describe("curve_summary.csv", "error_mean") == (None, None)
    # the generic table alone leaves the model's columns undocumented
    assert describe("curve_summary.csv", "get_snapshot_us_mean") == (None, None)
    assert describe("curve.csv", "tps") == COLUMNS["curve.csv"]["tps"]
    assert f"{CONFIDENCE:.0%}".replace("%", " %") in SUMMARY_STATISTICS["low"]
