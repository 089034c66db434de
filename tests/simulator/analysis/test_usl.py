"""USL fits of synthetic curves, the curve grouping and beta by cache line (no simulation)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from simulator.analysis.usl import (
    LINE_TRANSFER_COLUMNS,
    fit_usl,
    line_transfers,
    usl_beta_by_line,
    usl_table,
    usl_throughput,
)

LAMBDA, ALPHA, BETA = 1200.0, 0.04, 0.0015
N = np.array([1, 2, 4, 8, 16, 24, 32, 48, 64], dtype=float)


def point(algorithm: str, clients: int, idle: int, tps: float,
          **extra: object) -> dict[str, object]:
    return {"machine": "m", "algorithm": algorithm, "workload": "w", "clients": clients,
            "idle_clients": idle, "idle_kind": "idle", "seed": f"{algorithm}/{clients}/{idle}",
            "tps": tps, **extra}


# --------------------------------------------------------------------------------- fit_usl


@pytest.mark.parametrize("start", [0, 2], ids=["with_n1", "without_n1"])
def test_fit_recovers_exact_parameters(start: int) -> None:
    n = N[start:]
    fit = fit_usl(n, usl_throughput(n, LAMBDA, ALPHA, BETA))
    assert fit.lambda_ == pytest.approx(LAMBDA, rel=1e-6)
    assert fit.alpha == pytest.approx(ALPHA, abs=1e-6)
    assert fit.beta == pytest.approx(BETA, abs=1e-6)
    assert fit.r2 == pytest.approx(1.0, abs=1e-9)
    assert fit.n_points == len(n)


def test_fit_of_noisy_data_is_close() -> None:
    rng = np.random.default_rng(7)
    n = np.repeat(N, 3)
    x = usl_throughput(n, LAMBDA, ALPHA, BETA) * rng.normal(1.0, 0.02, n.size)
    fit = fit_usl(n, x)
    assert fit.lambda_ == pytest.approx(LAMBDA, rel=0.05)
    assert fit.alpha == pytest.approx(ALPHA, abs=0.015)
    assert fit.beta == pytest.approx(BETA, rel=0.2)
    assert fit.peak_n == pytest.approx(math.sqrt((1 - ALPHA) / BETA), rel=0.15)
    assert fit.r2 > 0.95


def test_peak_is_at_the_usl_formula_and_is_the_maximum() -> None:
    fit = fit_usl(N, usl_throughput(N, LAMBDA, ALPHA, BETA))
    assert fit.peak_n == pytest.approx(math.sqrt((1 - ALPHA) / BETA), rel=1e-6)
    dense = np.linspace(1, 200, 20_000)
    assert fit.peak_x == pytest.approx(fit.predict(dense).max(), rel=1e-6)
    assert dense[np.argmax(fit.predict(dense))] == pytest.approx(fit.peak_n, abs=0.02)


def test_peak_without_coherency_cost_is_infinite() -> None:
    fit = fit_usl(N, usl_throughput(N, LAMBDA, ALPHA, 0.0))
    assert fit.beta == pytest.approx(0.0, abs=1e-12)
    assert fit.peak_n == math.inf
    assert fit.peak_x == pytest.approx(LAMBDA / ALPHA, rel=1e-6)


def test_a_curve_that_never_rises_peaks_at_one() -> None:
    fit = fit_usl(N, usl_throughput(N, LAMBDA, 1.5, 0.001))
    assert fit.alpha == pytest.approx(1.5, abs=1e-6)
    assert fit.peak_n == 1.0
    assert fit.peak_x == pytest.approx(LAMBDA, rel=1e-6)


def test_superlinear_data_gives_alpha_zero_not_negative() -> None:
    fit = fit_usl(N, usl_throughput(N, LAMBDA, -0.05, BETA))
    assert fit.alpha == 0.0
    assert fit.beta >= 0.0


@pytest.mark.parametrize(
    ("n", "x", "message"),
    [
        ([1, 1, 2, 2], [10, 10, 18, 18], "3 distinct"),
        ([1, 2], [10, 18], "3 distinct"),
        ([1, 2, 4], [10, 18], "length"),
        ([1, 2, 4], [10, 0, 30], "positive"),
        ([0, 2, 4], [10, 18, 30], ">= 1"),
        ([1, 2, 4], [10, np.nan, 30], "finite"),
    ],
)
def test_degenerate_inputs_raise(n: list[float], x: list[float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        fit_usl(n, x)


# --------------------------------------------------------------------------------- usl_table


def test_table_of_a_clients_sweep_fits_along_clients() -> None:
    rows = [point(a, int(c), 0, float(usl_throughput(c, LAMBDA, ALPHA, scale * BETA)))
            for a, scale in (("old", 1.0), ("new", 0.5)) for c in N]
    table = usl_table(pd.DataFrame(rows)).set_index("algorithm")
    assert list(table["axis"]) == ["clients", "clients"]
    assert table["clients"].isna().all()
    assert list(table["idle_clients"]) == [0, 0]
    assert table.loc["old", "beta"] == pytest.approx(BETA, abs=1e-9)
    assert table.loc["new", "beta"] == pytest.approx(BETA / 2, abs=1e-9)
    assert table.loc["old", "n_points"] == len(N)
    assert list(table["note"]) == ["", ""]


def test_table_of_an_idle_sweep_uses_total_connections() -> None:
    active = 4
    idle = [0, 100, 1000, 5000]
    rows = [point("old", active, i, float(usl_throughput(active + i, LAMBDA, 0.9, 1e-7)))
            for i in idle]
    table = usl_table(pd.DataFrame(rows))
    assert len(table) == 1
    row = table.iloc[0]
    assert row["axis"] == "idle_clients"
    assert row["clients"] == active
    assert pd.isna(row["idle_clients"])
    assert row["lambda_tps"] == pytest.approx(LAMBDA, rel=1e-6)
    assert row["alpha"] == pytest.approx(0.9, abs=1e-6)
    assert row["beta"] == pytest.approx(1e-7, abs=1e-9)


def test_table_of_a_grid_has_curves_along_both_axes_and_notes_short_ones() -> None:
    rows = [point("old", c, i, 1000.0 / (1 + c + i / 100)) for c in (1, 48) for i in (0, 100, 1000)]
    table = usl_table(pd.DataFrame(rows))
    by_axis = table.groupby("axis").size()
    assert by_axis["idle_clients"] == 2  # one per client count, 3 points each
    assert by_axis["clients"] == 3  # one per idle count, 2 points each
    short = table[table["axis"] == "clients"]
    assert short["beta"].isna().all()
    assert short["note"].str.contains("3 distinct").all()
    assert table.loc[table["axis"] == "idle_clients", "beta"].notna().all()


def test_table_groups_replicates_together() -> None:
    rows = [point("old", int(c), 0, float(usl_throughput(c, LAMBDA, ALPHA, BETA)), seed=s)
            for s in (1, 2) for c in N]
    table = usl_table(pd.DataFrame(rows))
    assert len(table) == 1
    assert table.iloc[0]["n_points"] == 2 * len(N)


# --------------------------------------------------------------------------------- beta by line


def test_line_transfers_count_cross_domain_hitm_once() -> None:
    lines = pd.DataFrame({"local_hit": [1], "local_hitm": [5], "cross_domain_hitm": [2],
                          "cross_domain_hit": [1], "remote_hit": [1], "remote_hitm": [3],
                          "invalidations": [4], "l1_hit": [100], "dram_local": [7]})
    assert "cross_domain_hitm" not in LINE_TRANSFER_COLUMNS
    assert line_transfers(lines).tolist() == [1 + 5 + 1 + 1 + 3 + 4]


def beta_fixture(
    growth: dict[str, float], drop_at: tuple[str, int] | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A clients curve with exact USL TPS and lines whose HITM per transaction grow linearly."""
    clients = [1, 2, 4, 8, 16]
    txns = 1000
    curve_rows, line_rows = [], []
    for c in clients:
        row = point("old", c, 0, float(usl_throughput(c, LAMBDA, ALPHA, BETA)), transactions=txns)
        curve_rows.append(row)
        keys = {k: row[k] for k in ("machine", "algorithm", "workload", "clients",
                                    "idle_clients", "idle_kind", "seed")}
        for label, slope in growth.items():
            if drop_at == (label, c):
                continue
            per_txn = 10.0 + slope * c
            line_rows.append({**keys, "label": label, "remote_hitm": per_txn * txns / 2,
                              "invalidations": per_txn * txns / 2, "l1_hit": 1e6 * c,
                              "fields_read": f"{label}.a", "fields_written": f"{label}.b"})
    return pd.DataFrame(curve_rows), pd.DataFrame(line_rows)


def test_beta_goes_to_the_line_whose_transfers_grow() -> None:
    curve, lines = beta_fixture({"hot": 3.0, "flat": 0.0, "cooling": -0.5})
    table = usl_beta_by_line(curve, lines).set_index("label")
    assert table.loc["hot", "beta_share"] == pytest.approx(1.0)
    assert table.loc["flat", "beta_share"] == 0.0
    assert table.loc["cooling", "beta_share"] == 0.0
    assert table.loc["hot", "slope_per_txn"] == pytest.approx(3.0)
    assert table.loc["cooling", "slope_per_txn"] == pytest.approx(-0.5)
    assert table.loc["hot", "beta"] == pytest.approx(BETA, rel=1e-6)
    assert table.loc["hot", "fields_read"] == "hot.a"
    assert table.loc["hot", "fields_written"] == "hot.b"
    assert table.index[0] == "hot"


def test_beta_shares_sum_to_one_in_proportion_to_slopes() -> None:
    curve, lines = beta_fixture({"a": 3.0, "b": 1.0, "c": 0.0})
    table = usl_beta_by_line(curve, lines).set_index("label")
    assert table["beta_share"].sum() == pytest.approx(1.0)
    assert table.loc["a", "beta_share"] == pytest.approx(0.75)
    assert table.loc["b", "beta_share"] == pytest.approx(0.25)
    assert table["beta"].sum() == pytest.approx(BETA, rel=1e-6)


def test_a_line_missing_at_a_point_counts_zero_there() -> None:
    curve, lines = beta_fixture({"a": 1.0, "late": 0.0}, drop_at=("late", 1))
    table = usl_beta_by_line(curve, lines).set_index("label")
    # "late" goes from 0 at N=1 to 10 per transaction from N=2 on: it grows.
    assert float(table["slope_per_txn"].loc["late"]) > 0
    assert table["beta_share"].sum() == pytest.approx(1.0)


def test_beta_by_line_needs_transactions() -> None:
    curve, lines = beta_fixture({"a": 1.0})
    with pytest.raises(ValueError, match="transactions"):
        usl_beta_by_line(curve.drop(columns="transactions"), lines)
